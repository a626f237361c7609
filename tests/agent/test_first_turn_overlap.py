"""The first turn asks the model's context length (`GET /models`) while the agent's prompt commands still run,
instead of after them: the request a user waits for leaves sooner, and still only once the prompt is ready."""

from __future__ import annotations

import asyncio
import time

from agentkit import ToyServer, write_agent

from ollie.testing import Reply


async def test_the_context_length_is_asked_while_the_prompt_commands_run(scripted_llm, make_core, agents_dir):
    srv = scripted_llm("openai")
    srv.script(Reply.text("hello"))
    write_agent(agents_dir, "slowprompt", prompt=["sleep 1.5; echo the slow fragment"])
    core = await make_core(srv, toy=ToyServer(), agent="slowprompt")
    started = time.monotonic()
    turn = asyncio.ensure_future(core.submit("hi"))

    def asked() -> bool:
        return any(r.method == "GET" and r.path == "/v1/models" for r in list(srv.requests))

    while not asked() and time.monotonic() - started < 1.2 and not turn.done():
        await asyncio.sleep(0.02)
    assert asked(), "the context length was not asked while the prompt commands ran"
    assert not srv.chat_requests and not turn.done()  # the chat request still waits for the prompt
    result = await turn
    assert result.stop == "end" and result.reply == "hello"
    assert time.monotonic() - started >= 1.5
    system = srv.chat_requests[0].body["messages"][0]
    assert system["role"] == "system" and "the slow fragment" in system["content"]
    assert core.context_info()["limit"] > 0
