"""A workspace's MCP server gets a HOME of that workspace's, never the one of a user's server of the same name."""

from __future__ import annotations

import json
from pathlib import Path

from ollie.mcp import stdio
from ollie.mcp.workspace import read_workspace_servers


def test_a_workspace_server_named_like_a_users_gets_its_own_home(tmp_path: Path) -> None:
    users_home = stdio.state_dir("github")  # the user's own `github` server keeps its tokens here
    homes = []
    for ws in (tmp_path / "a", tmp_path / "b"):
        ws.mkdir()
        (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"github": {"command": "npx", "args": ["x"]}}}))
        spec = read_workspace_servers(ws, [])["github"]
        home = stdio.state_dir(spec.home or spec.name)
        assert home != users_home and home.is_relative_to(stdio.state_dir("workspace"))
        homes.append(home)
    assert homes[0] != homes[1]  # nor one another workspace's same-named server wrote to
