"""The validated-policy cache: a second start reads no YAML and builds no pydantic model, and no cache entry
(stale, tampered, planted or unreadable) ever changes what a policy file grants."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ollie import validcache
from ollie.errors import ConfigError
from ollie.sandbox import policy_cache
from ollie.sandbox.policy_cache import load_spec

NARROW = """
filesystem:
  ro: ["/usr"]
  rw: ["{CWD}"]
network:
  enabled: false
  connect_tcp: ["443"]
limits:
  processes: 64
"""
WIDE = NARROW.replace('rw: ["{CWD}"]', 'rw: ["{CWD}", "{HOME}"]')


def cache_key(text: str) -> str:
    return validcache.cache_key(text, policy_cache._CODE)


def cache_dir() -> Path:
    return validcache.cache_dir(policy_cache.KIND)


def entry(text: str) -> Path:
    return cache_dir() / f"{cache_key(text)}.json"


def test_a_second_process_loads_the_policy_without_yaml_or_pydantic(tmp_path):
    (tmp_path / "work").mkdir()
    policy = tmp_path / "p.yaml"
    policy.write_text(NARROW, encoding="utf-8")
    probe = textwrap.dedent(f"""
        import json, sys
        from pathlib import Path
        from ollie.sandbox.policy import parse_policy
        text = Path({str(policy)!r}).read_text()
        p = parse_policy(text, source="p.yaml", name="p", cwd=Path({str(tmp_path / "work")!r}))
        print(json.dumps({{"rw": [str(x) for x in p.rw], "ro": [str(x) for x in p.ro],
                          "net": [p.network.enabled, list(p.network.connect_tcp)], "procs": p.max_processes,
                          "yaml": "yaml" in sys.modules, "pydantic": "pydantic" in sys.modules}}))
    """)
    runs = [json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                                      env=dict(os.environ)).stdout) for _ in range(2)]
    first, second = runs
    assert first["yaml"] and first["pydantic"]  # nothing cached yet: the full validation ran
    assert not second["yaml"] and not second["pydantic"]  # cached: neither is imported
    assert {k: v for k, v in first.items() if k not in ("yaml", "pydantic")} == \
        {k: v for k, v in second.items() if k not in ("yaml", "pydantic")}
    assert second["rw"] == [str(tmp_path / "work")] and second["net"] == [False, [443]] and second["procs"] == 64
    assert entry(NARROW).is_file() and entry(NARROW).stat().st_mode & 0o077 == 0


def test_a_changed_file_is_validated_again_never_served_from_the_old_entry():
    narrow = load_spec(NARROW, "p.yaml")
    assert entry(NARROW).is_file()
    wide = load_spec(WIDE, "p.yaml")
    assert narrow.filesystem.rw == ("{CWD}",) and wide.filesystem.rw == ("{CWD}", "{HOME}")
    assert load_spec(NARROW, "p.yaml") == narrow


def _plant(text: str, spec: dict, *, key: str | None = None, mode: int = 0o600) -> None:
    path = entry(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"key": key or cache_key(text), "data": spec}), encoding="utf-8")
    path.chmod(mode)


def _widened(text: str) -> dict:
    load_spec(text, "p.yaml")
    data = json.loads(entry(text).read_text(encoding="utf-8"))["data"]
    data["filesystem"]["rw"].append("/")
    data["network"]["enabled"] = True
    return data


@pytest.mark.parametrize("tamper", ["group-writable", "wrong key", "bad type", "extra key", "bool as int",
                                    "port out of range", "not json"])
def test_a_tampered_or_malformed_entry_is_ignored_and_the_file_decides(tamper):
    spec = _widened(NARROW)
    if tamper == "group-writable":
        _plant(NARROW, spec, mode=0o620)
    elif tamper == "wrong key":
        _plant(NARROW, spec, key=cache_key(WIDE))
    elif tamper == "bad type":
        spec["limits"]["processes"] = "64"
        _plant(NARROW, spec)
    elif tamper == "extra key":
        spec["network"]["anything"] = True
        _plant(NARROW, spec)
    elif tamper == "bool as int":
        spec["network"]["enabled"] = 1
        _plant(NARROW, spec)
    elif tamper == "port out of range":
        spec["network"]["connect_tcp"] = [0]
        _plant(NARROW, spec)
    else:
        entry(NARROW).write_text("{not json", encoding="utf-8")
    got = load_spec(NARROW, "p.yaml")
    assert got.filesystem.rw == ("{CWD}",) and got.network.enabled is False and got.processes == 64
    # The slow path rewrote a good entry over the bad one.
    assert json.loads(entry(NARROW).read_text(encoding="utf-8"))["data"]["filesystem"]["rw"] == ["{CWD}"]


def test_an_entry_in_the_workspace_is_never_read(tmp_path, monkeypatch):
    """A project cannot plant a cache: entries live only in the user's cache dir."""
    workspace = tmp_path / "project"
    (workspace / ".cache" / "ollie" / "policies").mkdir(parents=True)
    monkeypatch.chdir(workspace)
    assert not cache_dir().is_relative_to(workspace)
    planted = workspace / ".cache" / "ollie" / "policies" / f"{cache_key(NARROW)}.json"
    planted.write_text(json.dumps({"key": cache_key(NARROW), "data": {"bogus": True}}), encoding="utf-8")
    assert load_spec(NARROW, "p.yaml").filesystem.rw == ("{CWD}",)


def test_errors_name_the_file_and_key_and_an_invalid_file_is_never_cached():
    bad = "network:\n  connect_tcp: [70000]\n  surprise: 1\n"
    for _ in range(2):  # the same message every time: nothing was cached for it
        with pytest.raises(ConfigError) as caught:
            load_spec(bad, "/etc/x/sandbox.yaml")
        message = str(caught.value)
        assert message.startswith("/etc/x/sandbox.yaml: ")
        assert "key 'network.connect_tcp[0]'" in message and "key 'network.surprise': unknown key" in message
    assert not entry(bad).exists()
    with pytest.raises(ConfigError, match=r"x\.yaml: invalid YAML at line 1"):
        load_spec("filesystem: [", "x.yaml")


def test_an_unwritable_cache_dir_costs_speed_not_the_policy(monkeypatch, tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache dir would be", encoding="utf-8")
    monkeypatch.setattr(validcache, "cache_dir", lambda kind: blocked / kind)
    assert load_spec(NARROW, "p.yaml").processes == 64
