"""sandbox.yaml loading: templates, skipped paths, named policies, overrides, and errors naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from ollie import paths
from ollie.errors import ConfigError
from ollie.sandbox import load_policy, parse_policy, policy_file

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


def test_unknown_or_invalid_policy_names_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="sandbox policy 'nope' not found"):
        load_policy("nope", cwd=tmp_path)
    for bad in ("../etc", "a/b", ".hidden", ""):
        with pytest.raises(ConfigError, match="invalid sandbox policy name"):
            policy_file(bad)


@pytest.mark.parametrize(("text", "key", "detail"), [
    ("filesystem: {rw: '/tmp'}\n", "filesystem.rw", "valid list"),
    ("filesystem: {rw: ['/tmp', 3]}\n", "filesystem.rw[1]", "valid string"),
    ("filesystem: {rwz: []}\n", "filesystem.rwz", "unknown key"),
    ("network: {connect_tcp: [80, 70000]}\n", "network.connect_tcp[1]", "less than or equal to 65535"),
    ("network: {enabled: 'yes please'}\n", "network.enabled", "valid boolean"),
    ("general: {best_effort: 1}\n", "general.best_effort", "valid boolean"),
    ("general: {log_level: loud}\n", "general.log_level", "must be one of"),
    ("advanced: {ldd: []}\n", "advanced.ldd", "valid boolean"),
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


def test_empty_file_denies_everything(tmp_path):
    policy = parse_policy("", source="empty.yaml", name="empty", cwd=tmp_path)
    assert policy.readable() == () and policy.best_effort


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
