"""A workspace's MCP server gets a HOME of that workspace's, never the one of a user's server of the same name."""

from __future__ import annotations

import json
import os
import sys
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


def test_a_hostile_pyvenv_cfg_does_not_widen_the_servers_reads(tmp_path: Path) -> None:
    # A workspace venv whose pyvenv.cfg says `home = /x`: its base installation would be "/" (all readable).
    venv = tmp_path / "ws" / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("#!/bin/sh\n")
    (venv / "bin" / "python").chmod(0o755)
    for home in ("/x", "/bin", str(Path.home() / "bin"), "/usr/bin/../../x"):
        (venv / "pyvenv.cfg").write_text(f"home = {home}\n")
        found = stdio._installation(str(venv / "bin" / "python"), {})
        assert found == [venv], (home, found)
    real = Path(os.path.realpath(sys.executable)).parent  # a real interpreter's bin dir is still honoured
    (venv / "pyvenv.cfg").write_text(f"home = {real}\n")
    if not Path.home().is_relative_to(real.parent):
        assert stdio._installation(str(venv / "bin" / "python"), {}) == [venv, real.parent]


def test_the_approval_shows_what_widens_the_servers_reads() -> None:
    from ollie.mcp.attach import command_line
    from ollie.mcp.config import ServerSpec

    spec = ServerSpec("fmt", command="npx", args=("-y", "x" * 300, "/home/someone/other-project"), cwd="/work",
                      env={"NODE_OPTIONS": "--require /tmp/evil.js"}, source="/ws/.mcp.json")
    shown = command_line(spec)
    assert "/home/someone/other-project" in shown and "/work" in shown and "NODE_OPTIONS" in shown


def test_the_approval_shows_escapes_and_bidi_overrides_as_escapes() -> None:
    # A workspace entry's ESC sequence could blank part of the command line in a terminal, a right-to-left
    # override make `evil.js` read `sj.live` in an editor: what the user approves shows each as \uXXXX.
    from ollie.mcp.attach import command_line
    from ollie.mcp.config import ServerSpec

    spec = ServerSpec("fmt", command="node\x1b[8m", args=("ok", "\u202esj.live", "a\x1b[2Kb"), cwd="/w\x1b[1A",
                      env={"X\x1b[0m": "1"}, source="/ws/.mcp.json")
    shown = command_line(spec)
    assert "\x1b" not in shown and "\u202e" not in shown, shown
    assert shown.count("\\u001b") == 4 and "\\u202e" in shown and " ok " in shown, shown


def test_a_server_name_ending_in_a_newline_is_refused_by_name(tmp_path: Path) -> None:
    # Red team round 22: the name check's `$` also matched before a final newline, so `"github\n"` passed as a name
    # of letters and digits (a server listed, asked about and given a home under a name no user could type).
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"github\n": {"command": "npx"}}}))
    warnings: list[str] = []
    assert read_workspace_servers(tmp_path, warnings) == {}
    assert len(warnings) == 1 and "a server name is letters, digits" in warnings[0], warnings
