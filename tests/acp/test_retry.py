"""A model server that fails a request, through `ollie acp` and real HTTP: a rate limit or a server error is retried
(the client told so, the vendor's Retry-After kept), a cancel ends the wait (one unreachable fails at once: test_env_file.py)."""

from __future__ import annotations

import asyncio
import time

import pytest

from ollie.testing import Reply


@pytest.mark.parametrize("fault", [Reply.error(429, retry_after=6), Reply.error(500)], ids=["429", "500"])
async def test_a_failed_model_request_is_retried_and_the_prompt_answers(shared_agent, llm, fault) -> None:
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": "true"}]}), text="Checking first."), fault,
               Reply.text("answered after the retry"))
    agent = await shared_agent()
    sid = await agent.new()
    started = time.monotonic()
    assert (await agent.prompt(sid, "check it")).stop_reason == "end_turn"
    waited = time.monotonic() - started
    # The backoff waits 5 s first; a 429's Retry-After of 6 s is kept, not cut to the backoff.
    assert waited >= (6 if fault.status == 429 else 5), waited
    assert len(llm.chat_requests) == 3
    what = ("the model's server is limiting requests (rate limit)" if fault.status == 429
            else "the model request failed")
    # Told as it waits, a paragraph of its own between the step and the answer; the step ended as it ran.
    text = agent.client.text(sid)
    assert text.startswith(f"Checking first.\n\n… {what}: ") and text.endswith(
        f"; retry 1/3 in {6 if fault.status == 429 else 5}.00s\n\nanswered after the retry"), text
    assert [u.status for u in agent.client.of(sid, "tool_call_update")] == ["in_progress", "completed"]


async def test_a_cancel_ends_the_wait_for_a_retry(shared_agent, llm) -> None:
    # A vendor asking for a minute: the user cancels as the client says so, and the prompt answers at once.
    llm.script(Reply.error(429, retry_after=60))
    agent = await shared_agent()
    sid = await agent.new()
    prompt = asyncio.ensure_future(agent.prompt(sid, "hi"))
    deadline = time.monotonic() + 30
    while "retry 1/3 in 60.00s" not in agent.client.text(sid):
        assert time.monotonic() < deadline and not prompt.done(), agent.client.text(sid)
        await asyncio.sleep(0.01)
    await agent.conn.cancel(session_id=sid)
    assert (await asyncio.wait_for(prompt, 20)).stop_reason == "cancelled"
    llm.script(Reply.text("next one"))
    assert (await agent.prompt(sid, "again")).stop_reason == "end_turn"
    assert agent.client.text(sid).endswith("\n\nnext one")
    assert len(llm.chat_requests) == 2  # the cancelled retry never asked

