"""A model server that fails a request, through `ollie acp` and real HTTP: a rate limit or a server error is retried
(the client told so, the vendor's Retry-After kept), a cancel ends the wait (one unreachable fails at once: test_env_file.py)."""

from __future__ import annotations

import asyncio
import time

import pytest

from ollie.testing import Reply
from ollie_acp.updates import open_fence


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


async def test_a_reply_cut_off_by_a_dropped_stream_is_marked_cut_and_its_code_block_closed(shared_agent, llm) -> None:
    # ACP takes no text back: Zed showed the dropped attempt's text as the start of the answer, and the retry's words
    # inside the code block it left open.
    llm.script(Reply.drop(after=2, text="Here it is:\n```python\nprint('hi')\n```\n", chunk_size=24),
               Reply.text("The answer."))
    agent = await shared_agent()
    sid = await agent.new()
    assert (await agent.prompt(sid, "show me")).stop_reason == "end_turn"
    assert len(llm.chat_requests) == 2
    text = agent.client.text(sid)
    assert text.startswith("Here it is:\n```python\npr\n```\n\n… the model request failed: "), text
    assert text.endswith("; retry 1/3 in 2.00s; the reply above was cut off: the retry answers anew"
                         "\n\nThe answer."), text
    # The next turn's request dropped before any text: the answer before it was cut off by nothing.
    llm.script(Reply.drop(after=0), Reply.text("Again."))
    assert (await agent.prompt(sid, "again")).stop_reason == "end_turn"
    assert agent.client.text(sid).removeprefix(text).endswith("; retry 1/3 in 2.00s\n\nAgain."), agent.client.text(sid)


async def test_a_cut_attempts_thinking_is_closed_and_marked_cut_a_thought_apart_from_the_retrys(shared_agent,
                                                                                                   llm) -> None:
    # Its text was marked cut and its code block closed, its thinking not: it stopped mid-word, a code block it opened
    # took in the retry's thinking, and nothing said the retry thought anew.
    llm.script(Reply.drop(after=3, reasoning="Try this:\n```sh\nls -la\n", text="", chunk_size=8),
               Reply(reasoning="Thinking anew.", text="The answer."))
    agent = await shared_agent()
    sid = await agent.new()
    assert (await agent.prompt(sid, "think")).stop_reason == "end_turn"
    runs: list[list[str]] = []  # the agent's chunks, each run of one kind joined as a client joins them
    for update in agent.client.of(sid):
        if update.session_update.startswith("agent_"):
            if runs and runs[-1][0] == update.session_update:
                runs[-1][1] += update.content.text
            else:
                runs.append([update.session_update, update.content.text])
    assert [kind for kind, _ in runs] == ["agent_thought_chunk", "agent_message_chunk"] * 2
    assert runs[0][1] == "Try this:\n```sh\n```\n\n(cut off: the retry thinks anew)" and runs[2][1] == "Thinking anew."
    # No text streamed: the note says nothing was cut of the reply.
    assert agent.client.text(sid).endswith("; retry 1/3 in 2.00s\n\nThe answer."), agent.client.text(sid)


async def test_each_retry_says_what_its_own_attempt_cut_off(shared_agent, llm) -> None:
    # The first attempt stops at a line's end in a code block: its fence closes on the next line (no blank line added
    # to the block). The second streamed nothing and the third only a blank line: neither cut a reply off, nor does
    # either close the first's block again.
    llm.script(Reply.drop(after=2, text="Code:\n```\nx = 1\n", chunk_size=10), Reply.drop(after=0),
               Reply.drop(after=2, text="\n\nlater", chunk_size=2), Reply.text("Done."))
    agent = await shared_agent()
    sid = await agent.new()
    assert (await agent.prompt(sid, "show me")).stop_reason == "end_turn"
    assert len(llm.chat_requests) == 4
    text = agent.client.text(sid)
    assert text.startswith("Code:\n```\n```\n\n… the model request failed: "), text
    assert text.count("```") == 2 and text.count("the reply above was cut off") == 1, text
    assert text.endswith("Done."), text


@pytest.mark.parametrize(("text", "left"), [("```py\nx\n```\n", ""), ("```\nx\n```py\n", "```"),
                                           ("~~~~\nx\n~~~\n", "~~~~"), ("```\n~~~\n", "```"), ("no code", "")])
def test_the_code_block_a_cut_attempt_leaves_open_is_found_as_commonmark_closes_them(text, left) -> None:
    assert open_fence(text) == left


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

