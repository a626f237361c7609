"""Turns in time: interrupt latency, $/cancelRequest, queued submits, two sessions at once."""

from __future__ import annotations

import asyncio
import os
import threading

from lsprotocol import types

from ollie.testing import Reply
from tests.procs import eventually, new_mark, wait_for_processes, wait_no_processes

# A reply that streams for ~5 minutes (3,000 frames, 0.1 s apart) unless interrupted.
SLOW_TEXT = "word " * 3000
# An interrupted turn ends in milliseconds; what it interrupted would run for minutes. Ending within this ceiling,
# the turn was interrupted: it bounds a hang, not the machine's speed.
INTERRUPTED_WITHIN_S = 30


def slow_reply() -> Reply:
    return Reply(text=SLOW_TEXT, chunk_size=5, delay=0.1)


async def wait_running(daemon, session: str | None = None, *, timeout: float = 30) -> None:
    """Wait until the session's turn has begun streaming assistant text."""
    await daemon.wait_events(
        lambda evs: any(e["role"] == "assistant" and (session is None or e["session"] == session) for e in evs),
        timeout=timeout,
    )


async def test_interrupt_ends_a_streaming_turn(shared_daemon, llm):
    llm.script(slow_reply())
    daemon = await shared_daemon(env=llm.env())
    submit = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "talk a lot"}))
    await wait_running(daemon)
    assert await daemon.request("ollie/interrupt", {"reason": "enough"}) == {"interrupted": True}
    result = await asyncio.wait_for(submit, INTERRUPTED_WITHIN_S)
    assert result["stop"] == "interrupted"
    assert daemon.events[-1]["role"] == "turn" and daemon.events[-1]["content"] == "interrupted"
    state = await daemon.request("ollie/state", {})
    assert state["running"] is False and state["state"] == "idle"


async def test_interrupt_kills_a_running_tool(shared_daemon, llm):
    mark = new_mark()
    llm.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": f"sleep 600.{mark}", "language": "bash"}],
                                                    "timeout": 600})]))
    daemon = await shared_daemon(env=llm.env())
    submit = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "sleep"}))
    await wait_for_processes(mark)  # the tool runs
    assert (await daemon.request("ollie/interrupt", {}))["interrupted"] is True
    result = await asyncio.wait_for(submit, INTERRUPTED_WITHIN_S)
    assert result["stop"] == "interrupted"
    assert await wait_no_processes(mark) == []


async def test_cancel_request_interrupts_the_turn_and_still_answers(shared_daemon, llm):
    llm.script(slow_reply())
    daemon = await shared_daemon(env=llm.env())
    future = daemon.client.protocol.send_request("ollie/submit", {"session": daemon.session, "text": "talk a lot"})
    (msg_id,) = [k for k, f in daemon.client.protocol._request_futures.items() if f is future]
    await wait_running(daemon)
    daemon.client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
    result = await asyncio.wait_for(asyncio.wrap_future(future), INTERRUPTED_WITHIN_S)
    assert result["stop"] == "interrupted"
    assert (await daemon.request("ollie/state", {}))["running"] is False


async def test_a_submit_cancelled_while_its_session_is_built_answers_interrupted(start_daemon, llm):
    """The cancel comes while the daemon still builds the default session the submit waits for: the answer is
    stop "interrupted", as for any cancelled submit (PROTOCOL.md), not pygls' -32800, and no turn runs."""
    llm.script(Reply.text("never asked for"))
    daemon = await start_daemon(env=llm.env())
    result = await daemon.cancelled_at_once("ollie/submit", {"text": "hello"})
    assert result["stop"] == "interrupted"
    assert llm.chat_requests == []
    assert (await daemon.request("ollie/submit", {"text": "again"}))["reply"] == "never asked for"


async def test_a_submit_waits_behind_the_running_turn_and_can_be_cancelled_while_waiting(shared_daemon, llm):
    # The first turn's step reads a pipe the test writes only once the third's cancel was answered: that answer
    # comes while the first turn runs, however loaded the machine.
    mark = new_mark()
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": f"cat go.{mark}"}], "timeout": 600})),
               Reply.text("first answer"), Reply.text("second answer"))
    daemon = await shared_daemon(env=llm.env())
    go = daemon.workspace / f"go.{mark}"
    os.mkfifo(go)
    first = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "first"}))
    await wait_for_processes(mark)
    second = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "second"}))
    # A third one, cancelled while it waits: it never runs and answers "interrupted".
    third = daemon.client.protocol.send_request("ollie/submit", {"session": daemon.session, "text": "third"})
    (third_id,) = [k for k, f in daemon.client.protocol._request_futures.items() if f is third]
    # No wait: a cancel read before the submit's hook is in place is kept for it (ollie_lsp.protocol, ollie_lsp.server).
    daemon.client.protocol.notify("$/cancelRequest", types.CancelParams(id=third_id))
    third_result = await asyncio.wait_for(asyncio.wrap_future(third), 30)
    assert third_result["stop"] == "interrupted" and not first.done()
    writer = await asyncio.to_thread(os.open, go, os.O_WRONLY)  # the step reads it already
    os.write(writer, b"go\n")
    os.close(writer)
    r1 = await asyncio.wait_for(first, 30)
    r2 = await asyncio.wait_for(second, 30)
    assert r1["stop"] == "end" and r1["reply"] == "first answer"
    assert r2["stop"] == "end" and r2["reply"] == "second answer"
    edges = [e["content"] for e in daemon.events if e["role"] == "turn"]
    assert edges == ["start", "end", "start", "end"]
    users = [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"]
    assert users == ["first", "second"]


async def test_two_sessions_run_turns_at_the_same_time(start_daemon, llm):
    # Each reply streams and holds before its end: both sessions' text comes while neither turn has ended.
    hold = threading.Event()
    llm.script(Reply(text="a" * 60, chunk_size=2, hold=hold), Reply(text="b" * 60, chunk_size=2, hold=hold))
    daemon = await start_daemon(env=llm.env())
    default = (await daemon.request("ollie/state", {}))["session"]
    other = (await daemon.request("ollie/session/new", {}))["session"]
    submits = asyncio.gather(
        daemon.request("ollie/submit", {"text": "one"}),
        daemon.request("ollie/submit", {"session": other, "text": "two"}),
    )
    await daemon.wait_events(lambda evs: {e["session"] for e in evs if e["role"] == "assistant"} == {default, other})
    assert not submits.done()
    hold.set()
    r1, r2 = await submits
    assert {r1["session"], r2["session"]} == {default, other}
    assert {r1["reply"], r2["reply"]} == {"a" * 60, "b" * 60}
    for sid in (default, other):
        events = daemon.session_events(sid)
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))


async def test_cancelling_the_progress_interrupts_the_turn(shared_daemon, llm):
    llm.script(slow_reply())
    daemon = await shared_daemon(env=llm.env())
    submit = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "talk a lot"}))
    await wait_running(daemon)
    await eventually(lambda: daemon.client.progress_reports, "the turn's progress")
    (token,) = daemon.client.progress_reports
    assert daemon.client.progress_reports[token][0].cancellable is True
    daemon.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    result = await asyncio.wait_for(submit, INTERRUPTED_WITHIN_S)
    assert result["stop"] == "interrupted"
