"""Outside its writable paths a step sees a read-only filesystem: Landlock does not mediate chmod, chown,
utime or xattrs, which the read-only mounts of its namespace refuse (EROFS), for root too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ollie.sandbox.rules import landlock_abi

pytestmark = pytest.mark.skipif(landlock_abi() < 1, reason="needs a kernel with Landlock")

# Each metadata change on each path given: `chmod outside ok` or `chmod outside 30` (the errno).
PROBE = """
import os, sys
ops = {"chmod": lambda p: os.chmod(p, 0o640), "chown": lambda p: os.chown(p, os.getuid(), os.getgid()),
       "utime": lambda p: os.utime(p, (0, 0)), "setxattr": lambda p: os.setxattr(p, "user.ollie", b"x")}
for name, op in ops.items():
    for where, path in zip(("outside", "inside"), sys.argv[1:]):
        try:
            op(path)
            print(name, where, "ok")
        except OSError as exc:
            print(name, where, exc.errno)
"""
EXPECTED = {f"{op} outside 30" for op in ("chmod", "chown", "utime", "setxattr")} | {
    f"{op} inside ok" for op in ("chmod", "chown", "utime", "setxattr")}


def xattrs_work(path) -> bool:
    try:
        os.setxattr(path, "user.probe", b"1")
    except OSError:
        return False
    return True


async def test_metadata_outside_the_writable_paths_is_read_only_even_for_root(ws, monkeypatch):
    target, inside = ws.outside / "secret", ws.work / "mine"
    inside.write_text("mine\n")
    if not xattrs_work(target):
        pytest.skip("this filesystem has no user xattrs")
    before = os.stat(target)
    status, out, err = await ws.run(["python3", "-I", "-S", "-c", PROBE, str(target), str(inside)],
                                    ws.default_policy())
    assert status == 0, err
    assert set(out.split("\n")) - {""} == EXPECTED, out
    after = os.stat(target)
    assert (after.st_mode, after.st_mtime_ns) == (before.st_mode, before.st_mtime_ns)
    assert "user.ollie" not in os.listxattr(target)
    # The hole it closes: without the read-only view (no mount namespace, best_effort) they all went through.
    monkeypatch.setenv("OLLIE_SANDBOX_MOUNTNS", "0")
    status, out, err = await ws.run(["python3", "-I", "-S", "-c", PROBE, str(target)], ws.default_policy())
    assert "chmod outside ok" in out, (out, err)


async def test_the_step_still_writes_where_it_may_and_reads_everywhere_it_may(ws):
    (ws.work / "sub").mkdir()
    script = (f"echo a > made && mkdir -p sub/deeper && echo b > sub/deeper/f && mv made moved && "
              f"echo t > {ws.scratch}/tmpfile && rm {ws.scratch}/tmpfile && cat /etc/hostname >/dev/null && "
              f"echo c > /dev/null && cat moved sub/deeper/f")
    status, out, err = await ws.bash(script, ws.default_policy())
    assert (status, out) == (0, "a\nb\n"), err


def test_kernels_without_mount_setattr_get_the_same_view_by_remounts(ws):
    """Before Linux 5.12 the view is one read-only remount per mount point: the same answers."""
    import subprocess
    import sys

    from ollie.sandbox import confine

    inside = ws.work / "mine"
    inside.write_text("mine\n")
    code = f"""
import importlib.util, os, sys
spec = importlib.util.spec_from_file_location("siblings", {str(Path(confine.__file__).with_name("siblings.py"))!r})
siblings = importlib.util.module_from_spec(spec); sys.modules["_ollie_siblings"] = siblings
spec.loader.exec_module(siblings)
confine = siblings.load("confine")
confine._set_readonly = lambda *args: False  # as ENOSYS answers there
os.chdir({str(ws.work)!r})
confine.private_mounts([], writable=[{str(ws.work)!r}])
sys.argv[1:] = [{str(ws.outside / "secret")!r}, {str(inside)!r}]
exec(compile({PROBE!r}, "probe", "exec"))
"""
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = set(done.stdout.split("\n")) - {""}
    if "setxattr inside ok" not in lines:
        lines = {line for line in lines if not line.startswith("setxattr")}
    assert lines <= EXPECTED and {"chmod outside 30", "chmod inside ok", "utime outside 30"} <= lines, done.stdout


# A step's process confined as the fork server confines it, which says when its first mount comes ("swap": its
# rules' paths checked by then) and when its mounts are made ("back"), and waits there while the test (another
# process, in another mount namespace) swaps the path; then it probes both trees.
SWAPPED_CONFINE = """
import importlib.util, json, os, sys
spec = importlib.util.spec_from_file_location("siblings", sys.argv[1])
siblings = importlib.util.module_from_spec(spec); sys.modules["_ollie_siblings"] = siblings
spec.loader.exec_module(siblings)
confine = siblings.load("confine")
ruleset, outside, inside = json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]

def ask(word):
    print(word, flush=True)
    assert sys.stdin.readline() == "done\\n"

mounted_by, applied_by = confine._mount, confine.landlock.apply_ruleset
def swap_then_mount(*args):
    if confine._mount is swap_then_mount:
        ask("swap")
        confine._mount = mounted_by
    mounted_by(*args)
def back_then_apply(spec, opened=None):
    ask("back")
    return applied_by(spec, opened)
confine._mount, confine.landlock.apply_ruleset = swap_then_mount, back_then_apply
confine.apply(ruleset)
for name, op in (("chmod outside", lambda: os.chmod(outside, 0o640)),
                 ("write inside", lambda: open(inside, "w").write("step"))):
    try:
        op()
        print(name, "ok", flush=True)
    except OSError as exc:
        print(name, exc.errno, flush=True)
"""


def _swapped_as_told(child, work: Path, moves: dict[str, list[tuple[str, str]]]) -> list[str]:
    """What the confined child said, line by line; at each line naming a move, those renames in `work` (another
    step's), then "done" to the child. Returns once it closed its output."""
    said = []
    for line in child.stdout:
        said.append(line.strip())
        for old, new in moves.get(said[-1], []):
            os.rename(work / old, work / new)
        if said[-1] in moves:
            child.stdin.write("done\n")
            child.stdin.flush()
    return said


def test_a_writable_path_swapped_for_a_link_after_its_rules_opened_never_makes_the_link_target_writable(ws):
    """Round 31: a user's policy lists `shared`, inside a tree another step may write. That step swaps it for a link
    to a tree outside once the step's rules are checked (its path still led where its lock was taken) and back before
    Landlock comes: the read-only view's writable bind of `shared` must be the directory the rule was opened on, never
    the link's target (whose modes, times and xattrs Landlock does not guard)."""
    import json
    import subprocess
    import sys

    from ollie.sandbox import confine, writers
    from ollie.sandbox.rules import ruleset_for

    (ws.work / "shared").mkdir()
    policy = ws.policy('filesystem: {rox: ["/usr", "/bin", "/lib", "/lib64"], rw: ["{CWD}/shared"]}\n')
    ruleset, _ = ruleset_for(policy, landlock_abi())
    assert ruleset is not None and ruleset["writable"] is not None
    ruleset.update(pinned=writers.places(policy.writable()), seccomp=None,
                   pid_namespace=False, netns=None)
    secret = ws.outside / "secret"
    os.chmod(secret, 0o600)
    child = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", SWAPPED_CONFINE, str(Path(confine.__file__).with_name("siblings.py")),
         json.dumps(ruleset), str(secret), str(ws.work / "shared" / "note")],
        cwd=ws.work, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None
    moves = {"swap": [("shared", "shared.was"), ("shared.link", "shared")],
             "back": [("shared", "shared.link"), ("shared.was", "shared")]}
    os.symlink(ws.outside, ws.work / "shared.link")
    said = _swapped_as_told(child, ws.work, moves)
    assert child.wait(timeout=60) == 0, child.stderr.read()
    assert said == ["swap", "back", "chmod outside 30", "write inside ok"]
    assert os.stat(secret).st_mode & 0o777 == 0o600


def test_a_git_dir_swapped_for_a_link_after_it_was_found_is_never_left_writable(ws):
    """Round 33: the step's `.git` is bound read-only (so no hook or config it plants runs as the user); a step that
    may write the work tree swaps `.git` for a link to a decoy repository once the step's rules are checked and back
    before Landlock comes. The bind was made by name: the decoy was made read-only, the real `.git` left writable."""
    import json
    import subprocess
    import sys

    from ollie.sandbox import confine, writers
    from ollie.sandbox.rules import ruleset_for

    (ws.work / ".git" / "hooks").mkdir(parents=True)
    (decoy := ws.outside / "decoy" / ".git").mkdir(parents=True)
    policy = ws.policy('filesystem: {rox: ["/usr", "/bin", "/lib", "/lib64"], rw: ["{CWD}"]}\n')
    ruleset, _ = ruleset_for(policy, landlock_abi())
    assert ruleset is not None and ruleset["readonly_binds"] == [str(ws.work / ".git")]
    ruleset.update(pinned=writers.places(policy.writable()), seccomp=None, pid_namespace=False, netns=None)
    hook = ws.work / ".git" / "hooks" / "pre-commit"
    child = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", SWAPPED_CONFINE, str(Path(confine.__file__).with_name("siblings.py")),
         json.dumps(ruleset), str(decoy), str(hook)],
        cwd=ws.work, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None
    moves = {"swap": [(".git", ".git.was"), (".git.link", ".git")], "back": [(".git", ".git.link"), (".git.was", ".git")]}
    os.symlink(decoy, ws.work / ".git.link")
    said = _swapped_as_told(child, ws.work, moves)
    refused = child.wait(timeout=60) != 0
    assert not hook.exists(), said
    # Refused at the bind (never a warning and a writable `.git`, though the policy is best effort).
    err = child.stderr.read()
    assert refused and said == ["swap"] and ".git is now a link" in err and "(best_effort)" not in err, (said, err)


# As SWAPPED_CONFINE, but it says "swap" once its working directory was read, before it is entered again through the
# new binds; then the step writes `note` there, by its relative name.
SWAPPED_CWD = """
import importlib.util, json, os, sys
spec = importlib.util.spec_from_file_location("siblings", sys.argv[1])
siblings = importlib.util.module_from_spec(spec); sys.modules["_ollie_siblings"] = siblings
spec.loader.exec_module(siblings)
confine = siblings.load("confine")
read = os.getcwd
def read_then_swap():
    cwd = read()
    print("swap", flush=True)
    assert sys.stdin.readline() == "done\\n"
    return cwd
os.getcwd = read_then_swap
confine.apply(json.loads(sys.argv[2]))
os.getcwd = read
open("note", "w").write("step")
print("wrote in", os.getcwd(), flush=True)
"""


def test_a_dir_on_the_way_to_the_cwd_swapped_for_a_link_as_it_is_entered_again_is_never_followed(ws):
    """Round 33: the step's cwd is entered again after the read-only view's binds, by its name: a step that may write
    the work tree swaps a directory on the way for a link to another at that instant, and the step's relative writes
    land there."""
    import json
    import subprocess
    import sys

    from ollie.sandbox import confine, writers
    from ollie.sandbox.rules import ruleset_for

    (sub := ws.work / "sub").mkdir()
    (elsewhere := ws.work / "elsewhere").mkdir()
    policy = ws.policy('filesystem: {rox: ["/usr", "/bin", "/lib", "/lib64"], rw: ["{CWD}"]}\n')
    ruleset, _ = ruleset_for(policy, landlock_abi())
    assert ruleset is not None and ruleset["writable"] is not None
    ruleset.update(pinned=writers.places(policy.writable()), seccomp=None, pid_namespace=False, netns=None)
    child = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", SWAPPED_CWD, str(Path(confine.__file__).with_name("siblings.py")),
         json.dumps(ruleset)], cwd=sub, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None
    said = []
    for line in child.stdout:
        said.append(line.strip())
        if said[-1] == "swap":
            sub.rename(ws.work / "sub.was")
            sub.symlink_to(elsewhere)
            child.stdin.write("done\n")
            child.stdin.flush()
    refused = child.wait(timeout=60) != 0
    assert said == ["swap"] and not (elsewhere / "note").exists(), said
    err = child.stderr.read()
    assert refused and "sub is now a link" in err and "(best_effort)" not in err, err  # refused, not warned


# A real step, as the daemon spawns one, run in `work` under a policy that may write it; prints its status and stderr.
STEP_IN_WORK = """
import asyncio, sys
from pathlib import Path
from ollie.sandbox.policy import parse_policy
from ollie.sandbox.spawn import spawn_sandboxed

async def main(work, tmp):
    policy = parse_policy('filesystem: {rox: ["/usr", "/bin", "/lib", "/lib64"], rw: ["{CWD}"]}', source="p.yaml",
                          name="p", cwd=Path(work), env={"TMPDIR": tmp})
    proc = await spawn_sandboxed(["bash", "-c", sys.argv[3]], policy=policy, cwd=Path(work),
                                 env={"PATH": "/usr/bin:/bin", "TMPDIR": tmp})
    _, err, _ = await proc.communicate(limit_bytes=1 << 20)
    print(await proc.wait(), err.decode())

asyncio.run(main(*sys.argv[1:3]))
"""


def test_a_read_only_mount_inside_a_writable_path_stays_read_only_for_the_step(ws):
    """Round 32: a mount the user cannot write (a container's `:ro` volume inside the project, a read-only bind the user
    made) lies beneath a path the step may write. The read-only view made each writable path's mounts writable, those
    below it too: the step wrote where its user could not."""
    import subprocess
    import sys

    kept = ws.work / "kept"
    kept.mkdir()
    (kept / "file").write_text("kept\n")
    # A mount namespace of the test's own (a user namespace too: as any user), where `kept` is read-only.
    mount_ro = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && ! touch "$0/try" 2>/dev/null && exec "$@"'
    script = "echo step > kept/file; touch kept/new; echo ok > mine"
    done = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private", "sh", "-c",
                           mount_ro, str(kept), sys.executable, "-c", STEP_IN_WORK, str(ws.work), str(ws.scratch),
                           script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (ws.work / "mine").read_text() == "ok\n", done.stdout  # the writable path stays writable
    assert (kept / "file").read_text() == "kept\n" and not (kept / "new").exists(), done.stdout
    assert "Read-only file system" in done.stdout, done.stdout
