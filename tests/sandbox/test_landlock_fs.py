"""Filesystem rules under real Landlock: allowed paths work, everything else fails (EACCES; a write outside the
writable paths meets the step's read-only view first: EROFS), escapes fail."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import textwrap

import pytest

from ollie.sandbox.rules import landlock_abi
from ollie.sandbox.spawn import spawn_sandboxed

pytestmark = pytest.mark.skipif(landlock_abi() < 1, reason="needs a kernel with Landlock")

DENIED = "Permission denied"
READ_ONLY = "Read-only file system"  # a write outside the writable paths: the step's read-only view (EROFS)


def denials(err: str) -> int:
    """How many refusals `err` reports, by Landlock (EACCES) or the read-only view (EROFS)."""
    return err.count(DENIED) + err.count(READ_ONLY)


def denied(err: str) -> bool:
    """Whether `err` reports a refusal."""
    return denials(err) > 0


def test_landlock_abi_is_the_kernels(monkeypatch):
    from ollie.sandbox.landlock import kernel_abi

    monkeypatch.delenv("OLLIE_LANDLOCK_ABI", raising=False)
    assert landlock_abi() == kernel_abi() >= 1  # 7 on the project's machines
    monkeypatch.setenv("OLLIE_LANDLOCK_ABI", "1")
    assert landlock_abi() == 1
    monkeypatch.setenv("OLLIE_LANDLOCK_ABI", "99")
    assert landlock_abi() == kernel_abi()


async def test_writes_inside_rw_paths_work(ws):
    script = "echo a > in_cwd && mkdir sub && echo b > sub/f && echo c > \"$TMPDIR/scratch_file\" && echo d > /dev/null"
    status, _, err = await ws.bash(script, ws.default_policy())
    assert status == 0, err
    assert (ws.work / "in_cwd").read_text() == "a\n"
    assert (ws.work / "sub" / "f").read_text() == "b\n"
    assert (ws.scratch / "scratch_file").read_text() == "c\n"


async def test_write_outside_rw_paths_is_denied(ws):
    target = ws.outside / "new"
    status, _, err = await ws.bash(f"echo x > {target}", ws.default_policy())
    assert status != 0 and denied(err)
    assert not target.exists()


async def test_overwrite_truncate_and_delete_outside_are_denied(ws):
    secret = ws.outside / "secret"
    for script in (f"echo x >> {secret}", f": > {secret}", f"rm -f {secret}", f"mkdir {ws.outside}/d",
                   f"mv {secret} {ws.work}/stolen"):
        status, _, err = await ws.bash(script, ws.default_policy())
        assert status != 0, script
        assert denied(err) or "Invalid cross-device link" in err, (script, err)
    assert secret.read_text() == "secret\n"
    assert not (ws.outside / "d").exists()


async def test_a_truncate_by_name_outside_is_denied_without_the_read_only_view(ws, monkeypatch):
    # truncate(2) takes a name, opens nothing: only Landlock's TRUNCATE right (ABI 3) mediates it, and without a mount
    # namespace (best_effort) no read-only view stands behind it; root's own rights allow it everywhere.
    if landlock_abi() < 3:
        pytest.skip("needs Landlock ABI >= 3")
    monkeypatch.setenv("OLLIE_SANDBOX_MOUNTNS", "0")
    secret = ws.outside / "secret"
    status, _, err = await ws.run(["python3", "-I", "-S", "-c", f"import os; os.truncate({str(secret)!r}, 0)"],
                                  ws.default_policy())
    assert status != 0 and denied(err), err
    assert secret.read_text() == "secret\n"


async def test_read_inside_ro_paths_works_and_outside_is_denied(ws):
    (ws.work / "mine").write_text("mine\n")
    status, out, err = await ws.bash("cat mine /etc/hostname > /dev/null && cat mine", ws.default_policy())
    assert (status, out) == (0, "mine\n"), err
    status, out, err = await ws.bash(f"cat {ws.outside}/secret", ws.default_policy())
    assert status != 0 and denied(err) and "secret" not in out
    status, out, err = await ws.bash(f"ls {ws.outside}", ws.default_policy())
    assert status != 0 and denied(err)


@pytest.mark.parametrize("pidns", ["default", "0"])
async def test_daemon_process_files_are_not_readable(ws, monkeypatch, pidns):
    # In its own PID namespace a step cannot even name the daemon's /proc entries; without one
    # (as where namespaces are unavailable) Landlock narrows /proc to the step's own.
    if pidns == "0":
        monkeypatch.setenv("OLLIE_SANDBOX_PIDNS", "0")
    daemon = os.getpid()
    status, out, err = await ws.bash(f"cat /proc/{daemon}/environ; cat /proc/{daemon}/cmdline", ws.default_policy())
    assert status != 0 and out == "", (out, err)
    for name in ("environ", "cmdline"):
        error = err.split(f"/proc/{daemon}/{name}: ", 1)[1].splitlines()[0]
        assert error in ((DENIED,) if pidns == "0" else (DENIED, "No such file or directory")), err


async def test_escape_through_dotdot(ws):
    status, _, err = await ws.bash("echo x > ../outside/new; cat ../outside/secret", ws.default_policy())
    assert denials(err) == 2
    assert not (ws.outside / "new").exists()


async def test_escape_through_symlinks(ws):
    (ws.work / "planted").symlink_to(ws.outside)
    script = "ln -s ../outside made && echo x > made/new1; echo x > planted/new2; cat planted/secret"
    status, out, err = await ws.bash(script, ws.default_policy())
    assert denials(err) == 3, err
    assert "secret" not in out
    assert list(ws.outside.iterdir()) == [ws.outside / "secret"]


async def test_escape_through_proc_self_root(ws):
    status, out, err = await ws.bash(f"echo x > /proc/self/root{ws.outside}/new; cat /proc/self/root{ws.outside}/secret",
                                     ws.default_policy())
    assert denials(err) == 2, err
    assert not (ws.outside / "new").exists() and "secret" not in out


async def test_escape_through_hard_link(ws):
    status, _, err = await ws.bash(f"ln {ws.outside}/secret hard && echo pwned > hard", ws.default_policy())
    assert status != 0
    assert "Invalid cross-device link" in err or denied(err), err
    assert not (ws.work / "hard").exists()
    assert (ws.outside / "secret").read_text() == "secret\n"


async def test_escape_by_cd_root_then_relative_write(ws):
    relative = str(ws.outside / "new").lstrip("/")
    status, _, err = await ws.bash(f"cd / && echo x > {relative}", ws.default_policy())
    assert status != 0 and denied(err)
    assert not (ws.outside / "new").exists()


async def test_escape_with_python_os_open(ws):
    code = textwrap.dedent(f"""
        import os
        for path, flags in (({str(ws.outside / 'new')!r}, os.O_WRONLY | os.O_CREAT),
                            ({str(ws.outside / 'secret')!r}, os.O_RDONLY),
                            ({str(ws.outside / 'secret')!r}, os.O_WRONLY | os.O_TRUNC),
                            ("ok", os.O_WRONLY | os.O_CREAT)):
            try:
                os.close(os.open(path, flags, 0o600))
                print("opened", path)
            except OSError as exc:  # EACCES (Landlock) or EROFS (a write outside the writable paths)
                print("denied", exc.errno)
    """)
    status, out, err = await ws.run(["python3", "-I", "-S", "-c", code], ws.default_policy())
    assert status == 0, err
    assert out.splitlines() == ["denied 30", "denied 13", "denied 30", "opened ok"]
    assert (ws.outside / "secret").read_text() == "secret\n"


async def test_exec_outside_rox_paths_is_denied(ws):
    script = ws.outside / "run.sh"
    script.write_text("#!/bin/sh\necho ran\n")
    script.chmod(0o755)
    status, out, err = await ws.bash(str(script), ws.default_policy())
    assert status != 0 and denied(err) and "ran" not in out
    # Nor from a path it may only read (`ro`, not `rox`): reading grants no exec.
    readable = ws.policy(f'filesystem: {{rox: ["/usr", "/bin", "/lib", "/lib64"], ro: ["{ws.outside}"]}}\n')
    status, out, err = await ws.bash(f"read -r first < {script} && {script}", readable)
    assert status != 0 and denied(err) and "ran" not in out, err


async def test_no_policy_runs_unsandboxed(ws):
    status, out, err = await ws.bash(f"echo x > {ws.outside}/new && cat {ws.outside}/secret", None)
    assert (status, out) == (0, "secret\n"), err
    assert (ws.outside / "new").read_text() == "x\n"


async def test_readonly_policy_protects_the_project(ws):
    from ollie.sandbox.policy import load_policy

    (ws.work / "file").write_text("keep\n")
    policy = load_policy("readonly", cwd=ws.work, env={"TMPDIR": str(ws.scratch)})
    status, out, err = await ws.bash("cat file; echo x > file; echo y > \"$TMPDIR/t\"", policy)
    assert out == "keep\n" and denied(err)
    assert (ws.work / "file").read_text() == "keep\n"
    assert (ws.scratch / "t").read_text() == "y\n"


async def test_default_policy_runs_the_projects_own_scripts(ws):
    venv_bin = ws.work / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    for script in (ws.work / "run.sh", venv_bin / "tool"):
        script.write_text("#!/bin/sh\necho ran\n")
        script.chmod(0o755)
    status, out, err = await ws.bash("./run.sh && .venv/bin/tool", ws.default_policy())
    assert (status, out) == (0, "ran\nran\n"), err


async def test_add_exec_allows_running_project_scripts(ws):
    script = ws.work / "run.sh"
    script.write_text("#!/bin/sh\necho ran\n")
    script.chmod(0o755)
    plain = ws.policy('filesystem: {rox: ["/usr", "/bin", "/lib", "/lib64"], rw: ["{CWD}"]}\n')
    status, _, err = await ws.bash("./run.sh", plain)
    assert status != 0 and denied(err)
    policy = ws.policy('filesystem: {rox: ["/usr", "/bin", "/lib", "/lib64"], rw: ["{CWD}"]}\n'
                       "advanced: {add_exec: true}\n")
    status, out, err = await ws.bash("./run.sh", policy)
    assert (status, out) == (0, "ran\n"), err


async def test_ldd_grants_only_the_program_and_its_libraries(ws):
    bare = ws.policy("filesystem: {rw: ['{CWD}']}\n")
    with pytest.raises(PermissionError):
        await ws.run(["/usr/bin/true"], bare)
    with_ldd = ws.policy("filesystem: {rw: ['{CWD}']}\nadvanced: {ldd: true}\n")
    status, _, err = await ws.run(["/usr/bin/true"], with_ldd)
    assert status == 0, err
    status, _, err = await ws.run(["/usr/bin/cat", "/etc/hostname"], with_ldd)
    assert status != 0 and denied(err)


HOSTILE_MAIN = textwrap.dedent("""
    #include <stdio.h>
    int main(int argc, char **argv) {
        char buf[64] = {0};
        FILE *f = fopen(argv[1], "r");
        if (!f) { perror("open"); return 1; }
        fread(buf, 1, sizeof buf - 1, f);
        puts(buf);
        return 0;
    }
""")


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
async def test_ldd_output_forged_by_a_library_name_grants_nothing_more(ws):
    # A program the step built needs a library named "x\n\tz => <outside> (0x1)" (a relative path: the step
    # provides it in the workspace, so the program runs). ldd, run by the daemon unsandboxed, prints that name as
    # a line of its own; the daemon read "<outside>" as a library and granted the directory read+execute.
    placeholder = "lib" + "a" * 200 + ".so"
    build = ws.root / "build"
    build.mkdir()
    (build / "lib.c").write_text("int ollie_placeholder;\n")
    (build / "main.c").write_text(HOSTILE_MAIN)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(build / placeholder), str(build / "lib.c")], check=True)
    subprocess.run(["gcc", "-o", str(build / "main"), str(build / "main.c"), "-L", str(build), "-Wl,--no-as-needed",
                    f"-l:{placeholder}"], check=True)
    forged = f"x\n\tz => {ws.outside} (0x1)"
    data = (build / "main").read_bytes()
    assert data.count(placeholder.encode()) == 1 and len(forged) < len(placeholder)
    program = ws.work / "main"
    program.write_bytes(data.replace(placeholder.encode(), forged.encode().ljust(len(placeholder), b"\0")))
    program.chmod(0o755)
    library = ws.work / forged  # where the program's loader finds it, from the step's cwd
    library.parent.mkdir(parents=True)
    shutil.copy(build / placeholder, library)
    # Since round 34 ldd never runs on a program a step could write (the next test): it runs where the policy lets it.
    policy = ws.policy('filesystem: {rox: ["/usr", "/bin", "/lib", "/lib64"], rwx: ["{CWD}"]}\n'
                       "advanced: {ldd: true}\n")
    (ws.work / "hello").write_text("hello")
    status, out, err = await ws.run([str(program), "hello"], policy)
    assert (status, out) == (0, "hello\n"), err
    status, out, err = await ws.run([str(program), str(ws.outside / "secret")], policy)
    assert "secret" not in out and denied(err), (status, out, err)


AUDITOR = textwrap.dedent("""
    #include <stdio.h>
    __attribute__((constructor)) static void ran(void) {
        FILE *f = fopen(MARK, "w");
        if (f) fclose(f);
    }
    unsigned int la_version(unsigned int version) { return version; }
""")


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
async def test_ldd_never_runs_a_program_a_step_could_write_nor_follows_its_link(ws):
    # Round 34: a step writes `.venv/bin/tool` (on the session's PATH) as a program whose DT_AUDIT names a library of
    # its own: the daemon's ldd (unsandboxed) had ld.so load that library, whose constructor ran with the user's rights.
    mark = ws.outside / "ran"
    bin_dir = ws.work / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (ws.root / "audit.c").write_text(AUDITOR)
    (ws.root / "main.c").write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", f"-DMARK=\"{mark}\"", "-o", str(ws.work / "audit.so"),
                    str(ws.root / "audit.c")], check=True)
    subprocess.run(["gcc", "-o", str(bin_dir / "tool"), str(ws.root / "main.c"),
                    f"-Wl,--audit={ws.work / 'audit.so'}"], check=True)
    env = {**ws.env, "PATH": f"{bin_dir}:{ws.env['PATH']}"}
    policy = ws.policy('filesystem: {rox: ["/usr", "/bin", "/lib", "/lib64"], rwx: ["{CWD}"]}\n'
                       "advanced: {ldd: true}\n")
    proc = await spawn_sandboxed(["tool"], policy=policy, cwd=ws.work, env=env)
    err = (await asyncio.wait_for(proc.communicate(limit_bytes=1 << 16), 20))[1]
    assert await proc.wait() == 0, err  # it ran, sandboxed: its auditor could not write outside
    assert not mark.exists()
    # Or it links `.venv/bin/helper` to a program of the user's no policy grants (a script holding a token), whose
    # `#!/usr/bin/env reader` then finds the step's own `reader` on PATH: ldd's grant was read+execute on the script.
    (ws.outside / "deploy").write_text("#!/usr/bin/env reader\n# token: secret\n")
    (bin_dir / "reader").write_text('#!/bin/sh\ncat "$1"\n')
    for script in (ws.outside / "deploy", bin_dir / "reader"):
        script.chmod(0o755)
    (bin_dir / "helper").symlink_to(ws.outside / "deploy")
    try:
        proc = await spawn_sandboxed(["helper"], policy=policy, cwd=ws.work, env=env)
        out = (await asyncio.wait_for(proc.communicate(limit_bytes=1 << 16), 20))[0]
    except PermissionError:  # the link leads where the policy grants nothing
        out = b""
    assert b"secret" not in out


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
@pytest.mark.parametrize(("bin_in", "mark"), [(".venv/bin", ".git"), ("bin", ".git"), ("bin", ".hg"), ("bin", ".jj"),
                                               ("bin", None)])
async def test_ldd_never_runs_a_program_in_a_project_environment_above_the_cwd(ws, monkeypatch, bin_in, mark):
    # Round 35 (round 34's left): the session works in `sub` of a project whose own `.venv/bin` is on its PATH (an
    # activated venv). This session's steps may write only `sub`, but another session's (or another daemon's), in
    # the project itself, writes `.venv/bin/tool` with a DT_AUDIT library: ldd, run unsandboxed, had its constructor
    # run with the user's rights. That other writer is the test itself, here. Round 36: the same with the plain `bin`
    # of a git project on PATH (direnv's `PATH_add bin`), which round 35 still gave to ldd. Round 37: the same in a
    # Mercurial or Jujutsu project, with no `.git` (round 36 trusted it). Round 39: the same in a project no VCS marks.
    from ollie import programs

    monkeypatch.setattr(programs, "_written", set())
    monkeypatch.setattr(programs, "_noted", set())
    if mark:
        (ws.work / mark).mkdir(exist_ok=True)
    mark = ws.outside / "ran"
    bin_dir = ws.work / bin_in
    bin_dir.mkdir(parents=True)
    sub = ws.work / "sub"
    sub.mkdir()
    (ws.root / "audit.c").write_text(AUDITOR)
    (ws.root / "main.c").write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", f"-DMARK=\"{mark}\"", "-o", str(bin_dir / "audit.so"),
                    str(ws.root / "audit.c")], check=True)
    subprocess.run(["gcc", "-o", str(bin_dir / "tool"), str(ws.root / "main.c"),
                    f"-Wl,--audit={bin_dir / 'audit.so'}"], check=True)
    env = {**ws.env, "PATH": f"{bin_dir}:{ws.env['PATH']}"}
    policy = ws.policy(f'filesystem: {{rox: ["/usr", "/bin", "/lib", "/lib64", "{bin_dir}"], rwx: ["{sub}"]}}\n'
                       "advanced: {ldd: true}\n")
    proc = await spawn_sandboxed(["tool"], policy=policy, cwd=sub, env=env)
    err = (await asyncio.wait_for(proc.communicate(limit_bytes=1 << 16), 20))[1]
    assert await proc.wait() == 0, err  # it ran, sandboxed: its auditor could not write outside
    assert not mark.exists()


async def test_ldd_grants_a_program_in_the_users_own_local_bin_when_home_is_a_dotfiles_work_tree(ws, monkeypatch):
    # Round 37: round 36 counted every `.git` above a program as a project another daemon may write, so with $HOME a
    # git work tree (a dotfiles repo) no program of `~/.local/bin` was granted any more: a legit setup broken. No step
    # is ever granted a root holding $HOME, and no project lives in its hidden entries: they are granted again; a
    # project kept in $HOME (`~/proj/bin`) is still one.
    from ollie import programs

    monkeypatch.setattr(programs, "_written", set())
    monkeypatch.setattr(programs, "_noted", set())
    home = ws.root / "home"
    monkeypatch.setenv("HOME", str(home))
    (home / ".git").mkdir(parents=True)
    bins = [home / ".local" / "bin", home / "proj" / "bin"]
    for bin_dir in bins:
        bin_dir.mkdir(parents=True)
        shutil.copy("/usr/bin/true", bin_dir / "tool")
    policy = ws.policy("filesystem: {rw: ['{CWD}']}\nadvanced: {ldd: true}\n")
    env = {**ws.env, "PATH": f"{bins[0]}:{ws.env['PATH']}"}
    proc = await spawn_sandboxed(["tool"], policy=policy, cwd=ws.work, env=env)
    assert await asyncio.wait_for(proc.wait(), 20) == 0
    with pytest.raises(PermissionError):  # the policy grants nothing of it: only ldd could have
        await spawn_sandboxed(["tool"], policy=policy, cwd=ws.work, env={**env, "PATH": f"{bins[1]}:{ws.env['PATH']}"})


async def test_ldds_walk_of_the_program_found_never_holds_the_loop(ws, monkeypatch):
    # Round 37: `library_rules` walked the program's path (realpath, a lexists per level up the tree) on the loop: a
    # hung mount, or 2,000 levels a step made, held every session and editor request meanwhile.
    from ollie.sandbox.ldd import library_rules
    from tests.stalls import StalledWalk

    monkeypatch.setenv("HOME", str(ws.root))  # the user's own `~/outside/bin`: no project's above the cwd (round 39)
    bin_dir = ws.outside / "bin"
    bin_dir.mkdir()
    shutil.copy("/usr/bin/true", bin_dir / "tool")
    stall = StalledWalk(monkeypatch, bin_dir / "tool")
    rules = await stall.walked_off_the_loop(library_rules("tool", {"PATH": str(bin_dir)}, ws.work))
    assert rules and rules[0][0] == str(bin_dir / "tool")


async def test_common_shell_idioms_work_under_the_default_policy(ws):
    script = textwrap.dedent("""
        set -e
        cat <<'END' > heredoc.txt
        from a heredoc
        END
        echo "$(cat heredoc.txt)" | tr a-z A-Z
        cat <(echo substituted)
        echo quiet > /dev/null
        head -c 4 /dev/urandom | wc -c
        python3 -I -S -c 'import sys; print(sys.version_info[0])'
        perl -e 'print "perl\\n"'
        ls | sort
        yes | head -n 1
    """)
    status, out, err = await ws.bash(script, ws.default_policy())
    assert (status, err) == (0, "")  # no "Broken pipe" from yes: SIGPIPE is back to its default
    assert out.splitlines() == ["FROM A HEREDOC", "substituted", "4", "3", "perl", "heredoc.txt", "y"]
