"""A client that stops reading for 2 s: the daemon's loop keeps running (timeouts, interrupts), nothing is lost."""

from __future__ import annotations

import array
import contextlib
import fcntl
import os
import signal
import termios
import time

from bench.lspwire import LSPProcess
from ollie.testing import Reply
from tests.procs import new_mark, processes_with, wait_until

FLOOD_DELTAS = 30_000
PAUSE_S = 2.0
F_GETPIPE_SZ = 1032  # fcntl: a pipe's capacity


def pipe_is_full(fd: int) -> bool:
    """Whether the pipe is (about) full: the next message does not fit (59 of 64 KiB seen)."""
    unread = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, unread)
    return unread[0] >= fcntl.fcntl(fd, F_GETPIPE_SZ) * 3 // 4


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
        wait_until(lambda: processes_with(mark_stopped), "the long tool never started")

        # The client stops reading while one session floods it with deltas.
        daemon.pause_reading()
        paused_at = time.perf_counter()
        asked_before = len(srv.chat_requests)
        srv.script(Reply(text=flood_text(), chunk_size=6))
        flooded = daemon.request_async("ollie/submit", {"session": flood_session, "text": "flood"})
        wait_until(lambda: len(srv.chat_requests) > asked_before, "the flood was never asked for")
        out = daemon.proc.stdout
        assert out is not None
        wait_until(lambda: pipe_is_full(out.fileno()), "the unread output never filled the pipe")

        # Another session's tool times out after 1 s: it must end although nothing is read. A frozen loop would
        # hold it until the client reads again, which it does only after; its result, read then, says it was the
        # timeout that ended it (the waits are events, not a time budget: a loaded machine is slow, never frozen).
        srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": f"exec sleep 30.{mark_timed}"}],
                                                      "timeout": 1})), Reply.text("timed out"))
        timed_out = daemon.request_async("ollie/submit", {"session": timed, "text": "time out"})
        wait_until(lambda: processes_with(mark_timed), "the timed tool never started")
        wait_until(lambda: not processes_with(mark_timed), "the timed tool outlived its timeout")

        # An interrupt of the third session stops its tool, the client still reading nothing.
        answer = daemon.request_async("ollie/interrupt", {"session": stopped})
        wait_until(lambda: not processes_with(mark_stopped), "the interrupted tool still runs")
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
