"""sandbox.yaml loading: templates, skipped paths, named policies, overrides, and errors naming file and key."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ollie import paths
from ollie.errors import ConfigError
from ollie.paths import policy_file
from ollie.sandbox.policy import load_policy, parse_policy

ALL_TEMPLATES = """
filesystem:
  ro: ["{HOME}/h", "{XDG_CONFIG_HOME}/c", "{XDG_DATA_HOME}/d", "{XDG_CACHE_HOME}/k", "{XDG_STATE_HOME}/s",
       "{XDG_RUNTIME_DIR}/r", "{OLLIE_CFG_PATH}/cfg", "{OLLIE_DATA_PATH}/data"]
  rox: ["{OLLIE_TOOLS_DIRS}"]
  rw: ["{CWD}", "{TMPDIR}", "{CWD}/missing"]
"""


def make_dirs(*dirs: Path) -> None:
    """Create every dir (with parents)."""
    for directory in dirs:
        directory.mkdir(parents=True, exist_ok=True)


def test_every_template_variable_expands(tmp_path, monkeypatch):
    env = {"HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp"),
           "XDG_CONFIG_HOME": str(tmp_path / "xc"), "XDG_DATA_HOME": str(tmp_path / "xd"),
           "XDG_CACHE_HOME": str(tmp_path / "xk"), "XDG_STATE_HOME": str(tmp_path / "xs"),
           "XDG_RUNTIME_DIR": str(tmp_path / "xr")}
    monkeypatch.setenv("XDG_CONFIG_HOME", env["XDG_CONFIG_HOME"])
    monkeypatch.setenv("XDG_DATA_HOME", env["XDG_DATA_HOME"])
    monkeypatch.setenv("OLLIE_TOOLS_PATH", f"{tmp_path / 't1'}:{tmp_path / 't2'}")
    cwd = tmp_path / "project"
    expected_ro = [tmp_path / "home/h", tmp_path / "xc/c", tmp_path / "xd/d", tmp_path / "xk/k", tmp_path / "xs/s",
                   tmp_path / "xr/r", paths.config_dir() / "cfg", paths.data_dir() / "data"]
    tools = [tmp_path / "t1", tmp_path / "t2", paths.config_dir() / "tools"]
    make_dirs(cwd, tmp_path / "tmp", *expected_ro, *tools)
    policy = parse_policy(ALL_TEMPLATES, source="x.yaml", name="x", cwd=cwd, env=env)
    assert list(policy.ro) == expected_ro
    assert list(policy.rox)[:3] == tools and policy.rox[3] == paths.bundled("tools")
    assert list(policy.rw) == [cwd, tmp_path / "tmp"]  # {CWD}/missing does not exist: skipped


def test_template_defaults_follow_home(tmp_path):
    home = tmp_path / "home"
    make_dirs(home / ".config", home / ".cache", tmp_path / "cwd")
    text = 'filesystem: {ro: ["{XDG_CONFIG_HOME}", "{XDG_CACHE_HOME}", "{TMPDIR}"]}\n'
    environ = {"HOME": str(home), "XDG_CONFIG_HOME": "", "XDG_CACHE_HOME": "relative/not/allowed", "TMPDIR": ""}
    policy = parse_policy(text, source="x.yaml", name="x", cwd=tmp_path / "cwd", env=environ)
    assert policy.ro == (home / ".config", home / ".cache", Path("/tmp"))


def test_default_policy_is_the_bundled_file_expanded(tmp_path):
    policy = load_policy("default", cwd=tmp_path, env={"TMPDIR": str(tmp_path)})
    assert policy.source == paths.bundled("sandbox.yaml")
    assert tmp_path in policy.rwx and Path("/usr") in policy.rox and Path("/etc") in policy.ro
    assert policy.best_effort and not policy.network.restricted
    assert not any(p == paths.config_dir() for p in policy.readable())


def test_user_policy_overrides_the_bundled_one(tmp_path):
    user_file = paths.config_dir() / "sandbox.yaml"
    user_file.parent.mkdir(parents=True, exist_ok=True)
    user_file.write_text("filesystem: {ro: ['{CWD}']}\nnetwork: {enabled: false}\n")
    policy = load_policy(cwd=tmp_path)
    assert policy.source == user_file
    assert policy.ro == (tmp_path,) and policy.rw == () and policy.rox == ()
    assert policy.network.restricted


def test_named_policies_user_dir_then_bundled(tmp_path):
    assert load_policy("readonly", cwd=tmp_path).source == paths.bundled("sandboxes") / "readonly.yaml"
    assert load_policy("nonet", cwd=tmp_path).network.enabled is False
    mine = paths.config_dir() / "sandbox" / "readonly.yaml"
    mine.parent.mkdir(parents=True)
    mine.write_text("filesystem: {rw: ['{CWD}']}\n")
    policy = load_policy("readonly", cwd=tmp_path)
    assert (policy.source, policy.rw) == (mine, (tmp_path,))


_PROBLEM = """
import sys
from pathlib import Path
from ollie.tools.execute.server import ExecuteServer
for name in sys.argv[2:]:
    print(repr(ExecuteServer(cwd=Path(sys.argv[1]), session_id="1700000000000000000-p", sandbox=name).policy_problem()))
print("yaml" in sys.modules, "ollie.sandbox.policy" in sys.modules)
"""


def test_the_check_as_a_session_opens_reads_only_a_policy_the_user_wrote(tmp_path):
    # ollie's own files load (the tests above): checking them at every session's opening loaded PyYAML and the
    # policy's modules (~1.3 MiB of a daemon's first request) for a warning that cannot come.
    def problems(*names: str) -> list[str]:
        out = subprocess.run([sys.executable, "-c", _PROBLEM, str(tmp_path), *names], capture_output=True, text=True,
                             timeout=60, check=True)
        return out.stdout.split("\n")[:-1]

    assert problems("default", "readonly", "nonet") == ["''", "''", "''", "False False"]
    user_file = paths.config_dir() / "sandbox.yaml"
    user_file.parent.mkdir(parents=True, exist_ok=True)
    user_file.write_text("netwrok: {}\n")
    said = problems("default", "nope")
    assert said[0] == repr(f"{user_file}: key 'netwrok': unknown key; fix the file: no step runs until it loads")
    assert said[1].startswith("\"sandbox policy 'nope' not found") and said[2] == "True True"


def test_unknown_or_invalid_policy_names_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="sandbox policy 'nope' not found"):
        load_policy("nope", cwd=tmp_path)
    for bad in ("../etc", "a/b", ".hidden", ""):
        with pytest.raises(ConfigError, match="invalid sandbox policy name"):
            policy_file(bad)


@pytest.mark.parametrize(("text", "key", "detail"), [
    ("filesystem: {rw: '/tmp'}\n", "filesystem.rw", "expected an array, got a string"),
    ("filesystem: {rw: ['/tmp', 3]}\n", "filesystem.rw[1]", "expected a string, got an integer"),
    ("filesystem: {rwz: []}\n", "filesystem.rwz", "unknown key"),
    ("network: {connect_tcp: [80, 70000]}\n", "network.connect_tcp[1]", "must be <= 65535, got 70000"),
    ("network: {enabled: 'yes please'}\n", "network.enabled", "expected a boolean, got a string"),
    ("general: {best_effort: 1}\n", "general.best_effort", "expected a boolean, got an integer"),
    ("general: {log_level: loud}\n", "general.log_level", "must be one of"),
    ("advanced: {ldd: []}\n", "advanced.ldd", "expected a boolean, got an array"),
    ("limits: {processes: 0}\n", "limits.processes", "must be >= 1, got 0"),
    ("filesystem: {ro: ['{NOPE}/x']}\n", "filesystem.ro[0]", "unknown template variable {NOPE}"),
    ("filesystem: {ro: ['relative/dir']}\n", "filesystem.ro[0]", "not an absolute path"),
    ("env: ['1BAD=x']\n", "env[0]", "KEY=VALUE"),
    ("surprise: true\n", "surprise", "unknown key"),
])
def test_malformed_policy_names_file_and_key(tmp_path, text, key, detail):
    file = paths.config_dir() / "sandbox.yaml"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_policy(cwd=tmp_path)
    message = str(info.value)
    assert message.startswith(f"{file}: ") and f"key '{key}'" in message and detail in message, message


def test_invalid_yaml_names_file_and_line(tmp_path):
    file = paths.config_dir() / "sandbox.yaml"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text("filesystem:\n  ro: [/usr\n")
    with pytest.raises(ConfigError, match=rf"^{file}: invalid YAML at line \d+ column \d+"):
        load_policy(cwd=tmp_path)
    file.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="must be a YAML mapping"):
        load_policy(cwd=tmp_path)


@pytest.mark.parametrize("text", ["", "\n", "# everything commented out\n# general: {}\n"])
def test_an_empty_policy_file_fails_closed_naming_it(tmp_path, text):
    file = paths.config_dir() / "sandbox.yaml"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text)
    # Every default would leave the network open and best_effort on: refused instead, naming the file.
    with pytest.raises(ConfigError, match=rf"^{file}: the sandbox policy is empty"):
        load_policy(cwd=tmp_path)


def test_add_exec_and_env_entries(tmp_path, monkeypatch):
    monkeypatch.setenv("PASSED_THROUGH", "from-daemon")
    text = ("filesystem: {ro: ['{CWD}'], rw: ['{TMPDIR}']}\nadvanced: {add_exec: true}\n"
            "env: ['A=1', 'WHERE={CWD}', 'PASSED_THROUGH', 'ABSENT']\n")
    (tmp_path / "t").mkdir()
    policy = parse_policy(text, source="x.yaml", name="x", cwd=tmp_path, env={"TMPDIR": str(tmp_path / "t")})
    assert (policy.ro, policy.rox, policy.rw, policy.rwx) == ((), (tmp_path,), (), (tmp_path / "t",))
    assert dict(policy.env) == {"A": "1", "WHERE": str(tmp_path), "PASSED_THROUGH": "from-daemon"}
    assert policy.child_env({"A": "0", "B": "2"}) == {"A": "1", "B": "2", "WHERE": str(tmp_path),
                                                      "PASSED_THROUGH": "from-daemon"}


# --- confinement beyond Landlock: which .git goes read-only, network.unix, and best_effort warnings ---

def test_extended_policy_grants_extra_existing_paths(tmp_path):
    policy = load_policy("default", cwd=tmp_path)
    plan_dir = tmp_path.parent / f"{tmp_path.name}-plan"
    plan_dir.mkdir()
    wider = policy.extended(rw=[plan_dir, tmp_path.parent / "missing"])
    assert plan_dir in wider.writable() and plan_dir not in policy.writable()
    assert tmp_path.parent / "missing" not in wider.rw


from ollie.sandbox import seccomp_filter  # noqa: E402
from ollie.sandbox.errors import SandboxUnavailableError  # noqa: E402
from ollie.sandbox.rules import readonly_git, ruleset_for  # noqa: E402
from ollie.sandbox.seccomp_filter import filter_bpf  # noqa: E402

PROJECT_POLICY = 'filesystem: {rwx: ["{CWD}", "{TMPDIR}"], ro: ["/usr"]}\n'


def project_policy(tmp_path: Path, cwd: Path, text: str = PROJECT_POLICY):
    """A policy granting `cwd` and tmp_path/scratch (as {TMPDIR}) rwx."""
    (tmp_path / "scratch").mkdir(exist_ok=True)
    return parse_policy(text, source="t.yaml", name="t", cwd=cwd, env={"TMPDIR": str(tmp_path / "scratch")})


def test_git_of_a_writable_root_is_read_only(tmp_path):
    work = tmp_path / "work"
    make_dirs(work / ".git" / "hooks", tmp_path / "scratch" / ".git")
    policy = project_policy(tmp_path, work)
    assert readonly_git(policy) == [str(work / ".git"), str(tmp_path / "scratch" / ".git")]


def test_no_git_no_binds_and_a_git_outside_the_writable_roots_is_left_alone(tmp_path):
    make_dirs(tmp_path / "work", tmp_path / ".git")  # the parent repo: not writable by this policy
    assert readonly_git(project_policy(tmp_path, tmp_path / "work")) == []


def test_repository_around_a_subdirectory_project_is_found(tmp_path):
    # {CWD} is repo/sub and {TMPDIR} is tmp_path, so repo/.git is writable through {TMPDIR}.
    make_dirs(tmp_path / "repo" / ".git", tmp_path / "repo" / "sub")
    policy = parse_policy(PROJECT_POLICY, source="t.yaml", name="t", cwd=tmp_path / "repo" / "sub",
                          env={"TMPDIR": str(tmp_path)})
    assert str(tmp_path / "repo" / ".git") in readonly_git(policy)


def test_worktree_pointer_and_its_repository(tmp_path):
    make_dirs(tmp_path / "scratch" / "main" / ".git" / "worktrees" / "wt", tmp_path / "work")
    (tmp_path / "work" / ".git").write_text(f"gitdir: {tmp_path}/scratch/main/.git/worktrees/wt\n")
    policy = project_policy(tmp_path, tmp_path / "work")
    # The pointer file itself, and the main repository it points into (writable through {TMPDIR}).
    assert readonly_git(policy) == [str(tmp_path / "work" / ".git"), str(tmp_path / "scratch" / "main" / ".git")]


def test_ruleset_carries_binds_seccomp_and_best_effort(tmp_path):
    make_dirs(tmp_path / "work" / ".git")
    spec, warnings = ruleset_for(project_policy(tmp_path, tmp_path / "work"), 7)
    assert spec is not None
    assert warnings == [] and spec["readonly_binds"] == [str(tmp_path / "work" / ".git")]
    assert str(tmp_path / "work") in spec["writable"]
    assert spec["best_effort"] is True and len(spec["seccomp"]) > 100


def test_no_mount_namespace_warns_that_git_is_writable_or_refuses(tmp_path, monkeypatch):
    make_dirs(tmp_path / "work" / ".git")
    monkeypatch.setenv("OLLIE_SANDBOX_MOUNTNS", "0")
    spec, warnings = ruleset_for(project_policy(tmp_path, tmp_path / "work"), 7)
    assert spec is not None
    assert spec["readonly_binds"] == [] and spec["writable"] is None
    assert warnings == [f"no mount namespace: {tmp_path}/work/.git, modes, owners, times and xattrs of files "
                        "outside the writable paths writable by the sandboxed code (best_effort)"]
    strict = project_policy(tmp_path, tmp_path / "work", "general: {best_effort: false}\n" + PROJECT_POLICY)
    with pytest.raises(SandboxUnavailableError, match="no mount namespace"):
        ruleset_for(strict, 7)


def test_no_seccomp_warns_or_refuses(tmp_path, monkeypatch):
    monkeypatch.setenv("OLLIE_SANDBOX_SECCOMP", "0")
    spec, warnings = ruleset_for(project_policy(tmp_path, tmp_path), 7)
    assert spec["seccomp"] is None and warnings[0].startswith("seccomp unavailable")
    strict = project_policy(tmp_path, tmp_path, "general: {best_effort: false}\n" + PROJECT_POLICY)
    with pytest.raises(SandboxUnavailableError, match="seccomp unavailable"):
        ruleset_for(strict, 7)


def test_network_unix_defaults_off_and_picks_the_filter(tmp_path):
    assert project_policy(tmp_path, tmp_path).network.unix is False
    allowed = project_policy(tmp_path, tmp_path, PROJECT_POLICY + "network: {unix: true}\n")
    assert allowed.network.unix is True
    default_spec, _ = ruleset_for(project_policy(tmp_path, tmp_path), 7)
    unix_spec, _ = ruleset_for(allowed, 7)
    assert default_spec["seccomp"] != unix_spec["seccomp"]
    with pytest.raises(ConfigError, match="network.unix"):
        project_policy(tmp_path, tmp_path, "network: {unix: 'yes'}\n")


def test_filters_differ_per_network_mode_and_kill_other_arches():
    assert len({filter_bpf(mode, False) for mode in ("none", "tcp", "all")}) == 3
    with tempfile.TemporaryFile("w+") as out:  # libseccomp's readable pseudo-code of the filter
        seccomp_filter._build("none", False).export_pfc(out)
        out.seek(0)
        pfc = out.read()
    assert "invalid architecture action\naction KILL_PROCESS" in pfc
    assert 'syscall "clone3"' in pfc and "ERRNO(38)" in pfc


TIOCSTI = r"""
import errno, fcntl, os, termios
from ollie.sandbox import seccomp_filter
leader, follower = os.openpty()
fcntl.ioctl(follower, termios.TIOCSCTTY, 0)  # its own terminal: the kernel lets the owner push input into it
seccomp_filter._build("all", True).load()
try:
    fcntl.ioctl(follower, termios.TIOCSTI, b"x")
    print("PUSHED")
except OSError as exc:
    print("denied", errno.errorcode[exc.errno])
"""


def test_the_filter_refuses_pushing_input_into_a_terminal():
    """TIOCSTI types into a terminal as if its user had (a step that held the user's would run commands in their
    shell). A step cannot open a pty (Landlock), so the filter alone is tried, in a process whose controlling
    terminal is its own pty, where the kernel allows it (unless dev.tty.legacy_tiocsti is off: EIO, not EPERM)."""
    done = subprocess.run([sys.executable, "-c", TIOCSTI], capture_output=True, text=True, timeout=60,
                          start_new_session=True)
    assert done.stdout.strip() == "denied EPERM", done.stdout + done.stderr


def test_a_planted_git_file_cannot_loop_or_block_the_daemon(tmp_path):
    work = tmp_path / "work"
    make_dirs(work)
    (work / ".git").write_text("gitdir: .git\n")  # points at itself
    assert readonly_git(project_policy(tmp_path, tmp_path / "work")) == [str(work / ".git")]
    (work / ".git").unlink()
    os.mkfifo(work / ".git")  # nobody ever writes to it: reading it would hang
    assert readonly_git(project_policy(tmp_path, tmp_path / "work")) == [str(work / ".git")]
