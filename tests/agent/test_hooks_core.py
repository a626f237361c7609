"""Hooks configured in an agent file, driven through a real Core, scripted server and execute server."""

from __future__ import annotations

import json
from pathlib import Path

from ollie.agent.core import Core
from ollie.testing import Reply

TOUCH = {"steps": [{"code": "touch made-by-tool && echo tool-ran", "language": "bash"}]}


async def _core(tmp_path: Path, srv, hooks: dict, **extra: str) -> Core:
    agents = tmp_path / "agents"
    agents.mkdir(exist_ok=True)
    (agents / "hooked.json").write_text(json.dumps({"prompt": "You are a test agent.", "hooks": hooks, **extra}))
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return await Core.create(agent="hooked", cwd=work, env=srv.env(), sessions_dir=tmp_path / "sessions",
                             agents_dirs=[agents])


def _request_text(srv, index: int) -> str:
    return json.dumps(srv.chat_requests[index].body["messages"])


async def test_pretool_exit_two_blocks_the_call_and_tells_the_model_why(scripted_llm, tmp_path):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", TOUCH)), Reply.text("understood"))
    payload = tmp_path / "work" / "pretool.json"
    # The hook keeps its payload in the project: its agent grants its hooks the writable default policy.
    core = await _core(tmp_path, srv, {"preTool": [f"cat > {payload}", "echo 'no shell today' >&2; exit 2"]},
                       commandSandbox="default")
    try:
        result = await core.submit("make the file")
    finally:
        await core.close()
    assert result.reply == "understood"
    assert not (tmp_path / "work" / "made-by-tool").exists()
    assert "no shell today" in _request_text(srv, 1)
    seen = json.loads(payload.read_text())
    assert (seen["hook"], seen["tool"], seen["args"]) == ("preTool", "execute_code", TOUCH)


async def test_preturn_exit_zero_output_reaches_the_model(scripted_llm, tmp_path):
    srv = scripted_llm("openai")
    srv.script(Reply.text("ok"))
    core = await _core(tmp_path, srv, {"preTurn": ['echo "house rule: prompt was $OLLIE_PROMPT"']})
    try:
        await core.submit("say hi")
    finally:
        await core.close()
    assert "house rule: prompt was say hi" in _request_text(srv, 0)


async def test_failing_hook_is_a_warning_and_the_tool_still_runs(scripted_llm, tmp_path):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", TOUCH)), Reply.text("done"))
    core = await _core(tmp_path, srv, {"preTool": ["exit 7"]})
    events = core.bus.subscribe()
    try:
        await core.submit("make the file")
    finally:
        await core.close()
    assert (tmp_path / "work" / "made-by-tool").exists()
    infos = []
    while events.pending():
        event = events.get_nowait()
        if event is not None and event.role == "info":
            infos.append(event.content)
    assert any("exited 7" in text for text in infos)
