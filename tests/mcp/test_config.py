"""mcp.json's per-server `timeout`: milliseconds, as other clients' `mcpServers` say it."""

from __future__ import annotations

import pytest

from ollie.errors import ConfigError
from ollie.mcp.config import parse_servers


def test_a_servers_timeout_is_milliseconds_with_a_default_of_two_minutes() -> None:
    servers = parse_servers({"mcpServers": {"a": {"command": "x", "timeout": 1500},
                                            "b": {"url": "https://mcp.example.com/mcp"}}}, "mcp.json")
    assert (servers["a"].timeout, servers["b"].timeout) == (1.5, 120.0)


@pytest.mark.parametrize("bad", [0, -5, "30s", True])
def test_a_bad_timeout_is_named_with_its_key(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"^mcp.json: mcpServers\.a\.timeout: "):
        parse_servers({"mcpServers": {"a": {"command": "x", "timeout": bad}}}, "mcp.json")
