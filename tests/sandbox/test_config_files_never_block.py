"""The user's config files are read by name through one checked open (`regularfile.read_config_sync`): a FIFO or a
link to /dev/zero put there is a clear error naming the file (or, for the files that only ever add, nothing read),
never a daemon that waits for good or reads without end; a link to a regular file is followed (the user's to make)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ollie.agent.skills import read_skill
from ollie.backend.registry import environment
from ollie.config import load_agent_config
from ollie.errors import ConfigError
from ollie.mcp.config import load_user_servers
from ollie.sandbox.netsaved import read_saved
from ollie.sandbox.policy import load_policy


def _plant(file: Path, kind: str) -> None:
    file.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(file)  # nobody ever writes to it: an open or a read of it would wait for good
    else:
        file.symlink_to("/dev/zero")  # endless


@pytest.fixture
def config(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "config"
    path.mkdir()
    monkeypatch.setenv("OLLIE_CONFIG_DIR", str(path))
    return path


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_config_file_that_is_no_regular_file_is_an_error_naming_it(config, tmp_path, kind):
    for name, load in (("sandbox.yaml", lambda f: load_policy("default", cwd=tmp_path)),
                       ("mcp.json", lambda f: load_user_servers()),
                       ("agent.yaml", load_agent_config)):
        _plant(config / name, kind)
        with pytest.raises(ConfigError) as caught:
            load(config / name)
        assert f"{config / name} is not a regular file" in str(caught.value), caught.value
    skill = config / "skill"
    skill.mkdir()
    _plant(skill / "SKILL.md", kind)
    with pytest.raises(OSError, match="is not a regular file"):  # find_skills leaves such a skill out
        read_skill(skill)
    # The env file and the saved network answers only ever add: nothing is read from them.
    _plant(config / "env", kind)
    _plant(config / "network-allowed", kind)
    assert environment() == os.environ and read_saved() == ()


def test_a_linked_config_file_is_followed_and_an_oversized_one_refused(config, tmp_path):
    mine = tmp_path / "mine.env"
    mine.write_text("OLLIE_LINKED_SETTING=yes\n")
    (config / "env").symlink_to(mine)
    assert environment()["OLLIE_LINKED_SETTING"] == "yes"
    (config / "mcp.json").write_text(" " * (1024 * 1024 + 1))
    with pytest.raises(ConfigError, match=r"mcp\.json is larger than 1,048,576 bytes"):
        load_user_servers()
