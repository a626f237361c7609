"""The first turn asks the model's context length (`GET /models`) while the agent's prompt commands still run,
instead of after them: the request a user waits for leaves sooner, and still only once the prompt is ready."""

from __future__ import annotations

import asyncio
import os

from agentkit import ToyServer, write_agent

from ollie.testing import Reply
from tests.procs import eventually


async def test_the_context_length_is_asked_while_the_prompt_commands_run(scripted_llm, make_core, agents_dir,
                                                                        workdir):
    srv = scripted_llm("openai")
    srv.script(Reply.text("hello"))
    # The prompt command runs until the test writes to its pipe: the request is asked while it still runs.
    os.mkfifo(workdir / "go")
    write_agent(agents_dir, "slowprompt", prompt=["read line < go; echo the slow fragment"])
    core = await make_core(srv, toy=ToyServer(), agent="slowprompt")
    turn = asyncio.ensure_future(core.submit("hi"))
    await eventually(lambda: turn.done() or any(r.method == "GET" and r.path == "/v1/models" for r in list(srv.requests)),
                     "GET /models")
    assert not turn.done(), "the context length was not asked while the prompt commands ran"
    assert not srv.chat_requests  # the chat request still waits for the prompt
    writer = await asyncio.to_thread(os.open, workdir / "go", os.O_WRONLY)  # the command reads it already
    os.write(writer, b"go\n")
    os.close(writer)
    result = await turn
    assert result.stop == "end" and result.reply == "hello"
    system = srv.chat_requests[0].body["messages"][0]
    assert system["role"] == "system" and "the slow fragment" in system["content"]
    assert core.context_info()["limit"] > 0


async def test_a_fresh_sessions_first_request_does_not_wait_for_the_context_length(scripted_llm, make_core):
    """Nothing to strip yet: the model is asked at once; the turn still ends knowing the model's context length."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("hello"))
    core = await make_core(srv, toy=ToyServer())
    srv.models_gate.clear()  # a slow GET /models
    try:
        turn = asyncio.ensure_future(core.submit("hi"))
        await eventually(lambda: srv.chat_requests or turn.done(), "the chat request while /models is unanswered")
        assert srv.chat_requests, "the first request waited for GET /models"
        assert not turn.done()  # the turn ends once the context length is known
    finally:
        srv.models_gate.set()
    result = await turn
    assert result.stop == "end" and result.reply == "hello"
    assert core.context_info()["limit"] > 0
