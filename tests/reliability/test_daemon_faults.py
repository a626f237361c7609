"""The daemon under hard faults: SIGKILL mid-turn then resume; a data dir that cannot be written."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import time
from pathlib import Path

import pytest

from bench.lspwire import RPCError
from ollie.testing import Reply
from tests.procs import new_mark, processes_with


def wait_file(path: Path, *, timeout: float = 20.0) -> str:
    """The text of `path` once something was written to it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


def last_user_text(request) -> str:
    """The content of the last user message of a recorded chat request."""
    return [m for m in request.body["messages"] if m["role"] == "user"][-1]["content"]


def test_sigkill_mid_turn_then_resume_keeps_the_running_call_closed(start_daemon, scripted_llm, workdir):
    # The step's `$$` is its PID namespace's, not a host pid: its sleep's argument marks it instead.
    mark = new_mark()
    srv = scripted_llm("openai")
    srv.script(
        Reply.tool_calls(("execute_code", {"steps": [{"code": "echo first-round-done"}]})),
        Reply.tool_calls(("execute_code", {"steps": [{"code": f"echo started > second.pid; exec sleep 30.{mark}"}],
                                           "timeout": 60})),
        Reply.text("resumed and answered"),
    )
    first = start_daemon(env=srv.env())
    session = first.request("ollie/state", {}, timeout=60)["session"]
    first.request_async("ollie/submit", {"text": "do two rounds"})
    wait_file(workdir / "second.pid")
    os.kill(first.pid, signal.SIGKILL)
    first.proc.wait(10)
    try:
        second = start_daemon(env=srv.env())
        loaded = second.request("ollie/session/load", {"session": session}, timeout=60)
        assert loaded["session"] == session
        messages = second.request("ollie/context", {"session": session})["messages"]
        # The call that ran as the daemon died is kept, closed (it lost the reply that made it, unsaved till its end).
        assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant", "tool"], messages
        assert messages[0]["content"].endswith("do two rounds")
        assert "first-round-done" in messages[2]["content"]
        assert messages[4]["content"].startswith("[interrupted before this call finished"), messages[4]
        result = second.request("ollie/submit", {"session": session, "text": "carry on"}, timeout=60)
        assert (result["stop"], result["reply"]) == ("end", "resumed and answered"), result
        sent = srv.chat_requests[-1].body["messages"]
        assert any("first-round-done" in str(m.get("content")) for m in sent)
        assert last_user_text(srv.chat_requests[-1]).endswith("carry on")
    finally:
        for pid in processes_with(mark):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_sessions_dir_that_cannot_be_created_gives_a_clear_error_and_the_daemon_serves_on(
        start_daemon, scripted_llm, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the sessions dir's parent should be\n")
    srv = scripted_llm("openai")
    srv.script(Reply.text("first answer"), Reply.text("second answer"))
    daemon = start_daemon(env={**srv.env(), "OLLIE_SESSIONS_DIR": str(blocker / "sessions")})
    result = daemon.request("ollie/submit", {"text": "hello"}, timeout=60)
    assert result["reply"] == "first answer"
    errors = [e["content"] for e in daemon.events() if e["role"] == "error"]
    assert errors and all("could not save the session" in e for e in errors), errors
    assert "Traceback" not in " ".join(errors)
    assert daemon.request("ollie/submit", {"text": "again"}, timeout=60)["reply"] == "second answer"
    assert daemon.request("ollie/state", {})["state"] == "idle"


def test_data_dir_that_cannot_be_created_gives_a_clear_error_and_the_daemon_serves_on(
        start_daemon, scripted_llm, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x\n")
    srv = scripted_llm("openai")
    srv.script(Reply.text("answered anyway"))
    daemon = start_daemon(env={**srv.env(), "OLLIE_DATA_DIR": str(blocker / "data")})
    try:
        result = daemon.request("ollie/submit", {"text": "hello"}, timeout=60)
    except RPCError as exc:
        pytest.fail(f"a data dir that cannot be written made the submit fail: {exc}")
    assert result["reply"] == "answered anyway"
    errors = [e["content"] for e in daemon.events() if e["role"] == "error"]
    assert errors and "Traceback" not in " ".join(errors), errors
    # The engine's one rule for a record that cannot be written: the turn is told, once (it was a log line alone).
    unlisted = [e for e in errors if "is not recorded in the session list" in e]
    assert len(unlisted) == 1 and str(blocker) in unlisted[0], errors
    with pytest.raises(RPCError) as listed:
        daemon.request("ollie/session/list", {})
    assert "Traceback" not in listed.value.message and str(blocker) in listed.value.message
    assert daemon.request("ollie/state", {})["state"] == "idle"


def _small_file_limit() -> None:
    # Disk full, as the writer sees it: writes past 256 KiB fail with EFBIG (Python ignores SIGXFSZ).
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, 256 * 1024))


def test_disk_full_while_saving_gives_a_clear_error_and_the_daemon_serves_on(start_daemon, scripted_llm):
    srv = scripted_llm("openai")
    big = "x" * 200_000
    srv.script(Reply.text("small answer"), Reply.text(big), Reply.text("after the full disk"))
    daemon = start_daemon(env=srv.env(), preexec_fn=_small_file_limit)
    assert daemon.request("ollie/submit", {"text": "one"}, timeout=60)["reply"] == "small answer"
    assert not [e for e in daemon.events() if e["role"] == "error"]
    big_result = daemon.request("ollie/submit", {"text": "two " + "y" * 100_000}, timeout=60)
    assert big_result["reply"] == big
    errors = [e["content"] for e in daemon.events() if e["role"] == "error"]
    assert errors and "could not save the session" in errors[0], errors
    assert "File too large" in errors[0] or "No space" in errors[0]
    result = daemon.request("ollie/submit", {"text": "three"}, timeout=60)
    assert result["reply"] == "after the full disk"
    assert daemon.alive()


def test_sigkill_while_the_first_reply_streams_keeps_the_prompt(start_daemon, scripted_llm):
    """Bug: the prompt was saved with the turn's first round, so a daemon killed while the reply streamed lost it."""
    srv = scripted_llm("openai")
    srv.script(Reply(text="a long answer that streams slowly " * 20, delay=0.05, chunk_size=4),
               Reply.text("answered after the restart"))
    first = start_daemon(env=srv.env())
    session = first.request("ollie/state", {}, timeout=60)["session"]
    first.request_async("ollie/submit", {"text": "One more story, please."})
    # Killed once the reply streams (its first delta is out).
    first.wait_for(lambda seen: any(m.get("method") == "ollie/event" and m["params"]["role"] == "assistant"
                                    for _, m in seen))
    os.kill(first.pid, signal.SIGKILL)
    first.proc.wait(10)
    second = start_daemon(env=srv.env())
    second.request("ollie/session/load", {"session": session}, timeout=60)
    messages = second.request("ollie/context", {"session": session})["messages"]
    assert [m["role"] for m in messages] == ["user"], messages
    assert messages[0]["content"].endswith("One more story, please.")
    result = second.request("ollie/submit", {"session": session, "text": "go on"}, timeout=60)
    assert (result["stop"], result["reply"]) == ("end", "answered after the restart"), result
    sent = [m for m in srv.chat_requests[-1].body["messages"] if m["role"] == "user"]
    assert sent[-2]["content"].endswith("One more story, please.") and sent[-1]["content"].endswith("go on")
