"""`ollie acp`'s wire: a line that is not JSON is answered -32700 (id null) and the connection goes on."""

from __future__ import annotations

import asyncio


async def test_a_malformed_line_answers_parse_error_and_the_session_goes_on(start_agent, llm) -> None:
    agent = await start_agent(env=llm.env())
    agent.proc.stdin.write(b'{"jsonrpc": "2.0", "id": 7, "method": \n')
    await agent.proc.stdin.drain()
    for _ in range(3000):  # the answer comes without any other request to wait on
        if any("error" in m for m in agent.wire):
            break
        await asyncio.sleep(0.01)
    errors = [m for m in agent.wire if "error" in m]
    assert [(e["id"], e["error"]["code"]) for e in errors] == [(None, -32700)], errors
    assert errors[0]["error"]["message"].startswith("Parse error")
    assert await agent.new()  # the connection still works
