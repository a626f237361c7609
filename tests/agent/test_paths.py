"""The user's dirs: the XDG base dirs (a relative one ignored, as the spec asks), else under home."""

from __future__ import annotations

import subprocess
import sys

from ollie import paths


def test_the_user_dirs_follow_the_xdg_base_dirs_else_home(monkeypatch, tmp_path) -> None:
    for var in ("OLLIE_CONFIG_DIR", "OLLIE_DATA_DIR", "OLLIE_STATE_DIR", "OLLIE_SESSIONS_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")  # not absolute: ignored
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    assert paths.config_dir() == tmp_path / "config" / "ollie"
    assert paths.data_dir() == tmp_path / "home" / ".local" / "share" / "ollie"
    assert paths.sessions_dir() == tmp_path / "home" / ".local" / "share" / "ollie" / "sessions"
    assert paths.state_dir() == tmp_path / "home" / ".local" / "state" / "ollie"
    monkeypatch.setenv("OLLIE_CONFIG_DIR", str(tmp_path / "mine"))
    assert paths.config_dir() == tmp_path / "mine"


def test_the_user_dirs_load_no_library() -> None:
    # platformdirs answered the same on Linux, and its import was ~0.35 MiB of a daemon's RSS.
    code = "import sys; from ollie import paths; paths.config_dir(); print(sorted(sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "platformdirs" not in loaded
