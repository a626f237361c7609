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


HOSTILE_REPLIES = {
    # Each backtracked (or re-scanned the reply) quadratically on the event loop: 16,000 spaces held it a minute.
    "spaces in a tag": "<tool_call>a" + " " * 200_000 + "b",
    "spaces in a fence's head": "```" + " " * 200_000 + "y",
    "openings never closed": "</function>" + "<function=execute_code>" * 20_000,
    "markers without calls": "[TOOL_CALLS]" * 100_000,
    # json raised RecursionError (not a decode error): the turn failed.
    "nesting too deep": "<tool_call>" + "[" * 100_000,
}


@pytest.mark.timeout(120)
async def test_a_hostile_reply_is_read_in_linear_time_and_kept_as_text(scripted_llm, tmp_path):
    srv = scripted_llm("openai")
    srv.script(*(Reply(text=text, chunk_size=65536) for text in HOSTILE_REPLIES.values()))
    core = await Core.create(cwd=tmp_path, env=srv.env(), sessions_dir=tmp_path / "sessions")
    try:
        for name, text in HOSTILE_REPLIES.items():
            result = await core.submit(name)
            assert (result.stop, result.reply) == ("end", text.strip()), name
    finally:
        await core.close()
