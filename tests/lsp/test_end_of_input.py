"""A client that leaves (stdin closed, or `exit`) right after a request still gets the whole answer."""

from __future__ import annotations

import asyncio

import pytest
from pygls.exceptions import JsonRpcException

from ollie.testing import Reply

# A -32602 naming the field with what was sent: many times what the pipe holds (64 KiB).
CWD = "/nowhere/" + ("d" * 200 + "/") * 4500


@pytest.mark.parametrize("leave", ["close stdin", "exit"])
async def test_a_client_that_leaves_right_after_a_request_gets_its_whole_answer(start_daemon, leave):
    daemon = await start_daemon()
    protocol, server = daemon.client.protocol, daemon.client._server
    answer = asyncio.wrap_future(protocol.send_request("ollie/session/new", {"cwd": CWD}))
    if leave == "exit":
        protocol.notify("exit", None)
    else:
        server.stdin.close()
    with pytest.raises(JsonRpcException) as caught:
        await asyncio.wait_for(answer, 30)
    assert caught.value.code == -32602 and f"{CWD} is not an existing directory" in caught.value.message, \
        str(caught.value)[:300]
    await asyncio.wait_for(server.wait(), 30)


async def test_stdin_closed_during_a_turn_interrupts_it_and_the_submit_is_answered(start_daemon, llm):
    llm.script(Reply(text="word " * 3000, chunk_size=5, delay=0.1))  # ~5 minutes of streaming
    daemon = await start_daemon(env=llm.env())
    answer = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "talk"}))
    await daemon.wait_events(lambda events: any(e["role"] == "assistant" for e in events))
    daemon.client._server.stdin.close()
    assert (await asyncio.wait_for(answer, 30))["stop"] == "interrupted"
    await asyncio.wait_for(daemon.client._server.wait(), 30)
