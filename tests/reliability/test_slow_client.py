"""A client that stops reading for 2 s: the daemon's loop keeps running (timeouts, interrupts), nothing is lost."""

from __future__ import annotations

import contextlib
import os
import signal
import time

from bench.lspwire import LSPProcess
from ollie.testing import Reply
from tests.procs import new_mark, processes_with

FLOOD_DELTAS = 30_000
PAUSE_S = 2.0
# The budget for a timer or an interrupt while the client reads nothing, plus /proc polling.
ON_TIME_S = 0.1 + 0.05


def wait_until(predicate, *, timeout: float = 20.0, every_s: float = 0.005) -> float:
    """Poll until `predicate()` holds; the perf_counter at that moment."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition never met")
        time.sleep(every_s)
    return time.perf_counter()


def kill_marked(*marks: str) -> None:
    for mark in marks:
        for pid in processes_with(mark):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def flood_text() -> str:
    return "".join(f"{i:05d}|" for i in range(FLOOD_DELTAS))


def test_a_client_that_stops_reading_freezes_no_timer_and_loses_nothing(start_daemon, scripted_llm):
    srv = scripted_llm("openai")
    daemon: LSPProcess = start_daemon(env=srv.env())
    flood_session = daemon.request("ollie/state", {}, timeout=60)["session"]
    timed = daemon.request("ollie/session/new", {}, timeout=60)["session"]
    stopped = daemon.request("ollie/session/new", {}, timeout=60)["session"]
    mark_timed, mark_stopped = new_mark(), new_mark()
    try:
        # A tool that runs until it is interrupted, started while the client still reads.
        srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": f"exec sleep 30.{mark_stopped}"}],
                                                      "timeout": 60})))
        interrupted = daemon.request_async("ollie/submit", {"session": stopped, "text": "run long"})
        wait_until(lambda: processes_with(mark_stopped))

        # The client stops reading while one session floods it with deltas.
        daemon.pause_reading()
        paused_at = time.perf_counter()
        asked_before = len(srv.chat_requests)
        srv.script(Reply(text=flood_text(), chunk_size=6))
        flooded = daemon.request_async("ollie/submit", {"session": flood_session, "text": "flood"})
        wait_until(lambda: len(srv.chat_requests) > asked_before)
        time.sleep(0.3)  # the daemon's pipe to the client is full well before this

        # Another session's tool times out after 1 s: it must end on time although nothing is read.
        srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": f"exec sleep 30.{mark_timed}"}],
                                                      "timeout": 1})), Reply.text("timed out"))
        timed_out = daemon.request_async("ollie/submit", {"session": timed, "text": "time out"})
        started = wait_until(lambda: processes_with(mark_timed))
        ended = wait_until(lambda: not processes_with(mark_timed), timeout=10)
        assert 0.8 <= ended - started <= 1.0 + ON_TIME_S, f"the 1 s tool timeout fired after {ended - started:.3f} s"

        # An interrupt of the third session stops its tool at once.
        asked = time.perf_counter()
        answer = daemon.request_async("ollie/interrupt", {"session": stopped})
        gone = wait_until(lambda: not processes_with(mark_stopped), timeout=10)
        assert gone - asked <= ON_TIME_S, f"the interrupt took {gone - asked:.3f} s to stop the tool"
        assert not answer.done.is_set() and not flooded.done.is_set(), "the client read nothing meanwhile"

        time.sleep(max(0.0, PAUSE_S - (time.perf_counter() - paused_at)))
        daemon.resume_reading()
        assert answer.result(30) == {"interrupted": True}
        assert interrupted.result(30)["stop"] == "interrupted"
        assert timed_out.result(30)["reply"] == "timed out"
        assert flooded.result(60)["reply"] == flood_text()
    finally:
        kill_marked(mark_timed, mark_stopped)
    # Nothing lost and nothing reordered: the flood's text arrives whole, its events numbered without a gap.
    events = daemon.events(flood_session)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    deltas = [e["content"] for e in events if e["role"] == "assistant"]
    assert "".join(deltas) == flood_text()
    # Past the output bound the deltas waited in the session, joined: far fewer notifications than deltas.
    assert len(deltas) < FLOOD_DELTAS // 2, len(deltas)
    tool_results = [e["content"] for e in daemon.events(timed) if e["role"] == "tool"]
    assert tool_results and "timed out" in tool_results[0].lower(), tool_results
    assert daemon.request("ollie/state", {"session": flood_session})["state"] == "idle"
