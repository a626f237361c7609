"""`~user/...` in a path is expanded when the user exists and left as written when not, never a crash."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from agentkit import ToyServer, drain, roles

from ollie import paths
from ollie.agent.commands import run_command
from ollie.testing import Reply

NOBODY = "~ollie-no-such-user-x"


async def test_cwd_command_with_an_unknown_user(scripted_llm, make_core):
    core = await make_core(scripted_llm("openai"), toy=ToyServer())
    sub = core.bus.subscribe()
    out = await run_command(core, f"/cwd {NOBODY}/src")
    assert out.startswith("/cwd: no such directory:") and NOBODY in out
    assert [e.role for e in drain(sub)] == ["error"]
    with pytest.raises(ValueError, match="no such directory"):
        await core.set_cwd(f"{NOBODY}/src")


async def test_cwd_command_with_a_known_user_expands(scripted_llm, make_core, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "proj").mkdir()
    core = await make_core(scripted_llm("openai"), toy=ToyServer())
    assert await run_command(core, "/cwd ~/proj") == f"cwd: {tmp_path / 'proj'}"
    root = Path(os.path.expanduser("~root"))
    assert await run_command(core, "/cwd ~root") == f"cwd: {root.resolve()}"


def test_tools_path_and_dirs_with_an_unknown_user(monkeypatch):
    monkeypatch.setenv("OLLIE_TOOLS_PATH", f"{NOBODY}/tools")
    monkeypatch.setenv("OLLIE_SESSIONS_DIR", f"{NOBODY}/sessions")
    assert paths.tools_path()[0] == Path(f"{NOBODY}/tools")
    assert paths.sessions_dir() == Path(f"{NOBODY}/sessions")


async def test_a_file_tool_with_an_unknown_user_path_is_a_tool_error(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_read", "args": [f"{NOBODY}/x.txt"]}]})),
               Reply.text("done"))
    core = await make_core(srv, toy=None)  # the real execute server: the script runs sandboxed
    sub = core.bus.subscribe()
    result = await core.submit("read it")
    assert result.stop == "end"
    tool = roles(drain(sub), "tool")[0].content
    assert "no such file" in tool and "Traceback" not in tool
