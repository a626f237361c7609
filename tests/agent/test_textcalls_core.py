"""A model that writes its tool call as text still gets the tool run: real Core, scripted server, execute server."""

from __future__ import annotations

import json

import pytest

from ollie.agent.core import Core
from ollie.testing import Reply

STEP = {"steps": [{"code": "echo from-the-text-call", "language": "bash"}]}


@pytest.mark.parametrize(
    "written",
    [
        f'Running it.\n<tool_call>{{"name": "execute_code", "arguments": {json.dumps(STEP)}}}</tool_call>',
        f'[TOOL_CALLS][{{"name": "execute_code", "arguments": {json.dumps(STEP)}}}]',
        f"<function=execute_code>{json.dumps(STEP)}</function>",
    ],
)
async def test_text_tool_call_is_executed(written, scripted_llm, tmp_path):
    srv = scripted_llm("openai")
    srv.script(Reply.text(written), Reply.text("all done"))
    core = await Core.create(cwd=tmp_path, env=srv.env(), sessions_dir=tmp_path / "sessions")
    events = core.bus.subscribe()
    try:
        result = await core.submit("run the echo")
    finally:
        await core.close()
    assert (result.stop, result.reply) == ("end", "all done")
    seen = []
    while events.pending():
        event = events.get_nowait()
        if event is not None:
            seen.append(event)
    calls = [e for e in seen if e.role == "call"]
    assert [(e.name, json.loads(e.content)) for e in calls] == [("execute_code", STEP)]
    assert any(e.role == "tool" and "from-the-text-call" in e.content for e in seen)
    second_request = json.dumps(srv.chat_requests[1].body["messages"])
    assert "from-the-text-call" in second_request
