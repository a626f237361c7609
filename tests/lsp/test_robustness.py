"""The daemon stays sound: stdout floods, handler exceptions, resume after restart, shutdown cleanup."""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from pygls.exceptions import JsonRpcException

from ollie.testing import Reply
from tests.procs import new_mark, outliving, wait_for_processes


async def test_tool_and_process_floods_do_not_corrupt_the_stream(start_daemon, scripted_llm, tmp_path):
    # A large context window, so the flood's (truncated) result does not trigger a compaction.
    llm = scripted_llm("openai", context_length=1_000_000)
    agents = tmp_path / "agents"
    agents.mkdir()
    # The hook writes straight into the daemon's own fd 1: if that were the JSON-RPC pipe, the client would choke.
    hook = ("printf 'Content-Length: 5\\r\\n\\r\\nJUNK{' > /proc/$PPID/fd/1; "
            "head -c 20000 /dev/zero | tr '\\0' x > /proc/$PPID/fd/1")
    # Unsandboxed on purpose ("commandSandbox": "none"): the default read-only sandbox would refuse /proc/$PPID.
    (agents / "noisy.json").write_text(json.dumps({"prompt": "You are a test agent.", "hooks": {"preTurn": hook},
                                                   "commandSandbox": "none"}))
    flood = {"steps": [{"code": "yes 'flood line to stdout' | head -n 200000; yes err | head -n 50000 >&2", "language": "bash"}]}
    llm.script(Reply(tool_calls=[("execute_code", flood)]), Reply.text("survived the flood"))
    daemon = await start_daemon(env={**llm.env(), "OLLIE_AGENTS_DIR": str(agents)}, init_options={"agent": "noisy"})
    result = await daemon.request("ollie/submit", {"text": "flood it"})
    assert result["stop"] == "end" and result["reply"] == "survived the flood"
    tool = next(e for e in daemon.events if e["role"] == "tool")
    assert "flood line to stdout" in tool["content"]
    assert len(tool["content"]) < 1_000_000
    events = daemon.events
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert (await daemon.request("ollie/state", {}))["agent"] == "noisy"
    assert daemon.client.error is None


async def test_a_failing_handler_answers_with_an_error_and_the_daemon_keeps_serving(start_daemon, llm, _private_dirs):
    llm.script(Reply.text("still here"))
    daemon = await start_daemon(env=llm.env())
    await daemon.request("ollie/session/list", {})  # the registry opened (its file made)
    # Corrupt the session registry under the running daemon: listing now fails inside the handler.
    db = _private_dirs / "data" / "ollie" / "sessions.db"
    assert db.exists()
    for suffix in ("", "-wal", "-shm"):
        path = db.with_name(db.name + suffix)
        if path.exists():
            path.write_bytes(b"this is not a database" * 1000)
    with pytest.raises(JsonRpcException) as caught:
        await daemon.request("ollie/session/list", {})
    assert caught.value.code == -32603
    # The failure's text, not the Python class that raised it, nor a traceback.
    assert caught.value.message and "Error" not in caught.value.message, caught.value.message
    assert not (caught.value.data or {}).get("traceback")
    result = await daemon.request("ollie/submit", {"text": "are you alive?"})
    assert result["reply"] == "still here"


async def test_a_saved_session_resumes_in_a_new_daemon(start_daemon, llm):
    llm.script(Reply.text("I will remember 42."), Reply.text("You said 42."), Reply.text("loaded"))
    first = await start_daemon(env=llm.env())
    result = await first.request("ollie/submit", {"text": "remember the number 42"})
    session = result["session"]
    await first.client.shutdown_session()

    second = await start_daemon(env=llm.env(), init_options={"session": session})
    state = await second.request("ollie/state", {})
    assert state["session"] == session
    context = await second.request("ollie/context", {})
    assert [m["content"] for m in context["messages"] if m["role"] == "user"] == ["remember the number 42"]
    result = await second.request("ollie/submit", {"text": "what number?"})
    assert result["session"] == session and result["reply"] == "You said 42."
    sent = [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] in ("user", "assistant")]
    assert sent[:2] == ["remember the number 42", "I will remember 42."]
    await second.client.shutdown_session()

    third = await start_daemon(env=llm.env())
    loaded = await third.request("ollie/session/load", {"session": session})
    assert loaded["session"] == session and loaded["info"]["id"] == session and loaded["info"]["live"] is True
    result = await third.request("ollie/submit", {"session": session, "text": "again"})
    assert result["reply"] == "loaded"
    assert len([m for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"]) == 3
    with pytest.raises(JsonRpcException) as caught:
        await third.request("ollie/session/load", {"session": "1700000000000000000-abcdef"})
    assert caught.value.code == -32001


async def _start_sleeper(start_daemon, llm):
    """A daemon whose turn runs a minute-long tool: (daemon, the pending submit, the tool's host pid)."""
    # The step's `$$` is its PID namespace's, not the host's: the sleep's argument marks it instead.
    mark = new_mark()
    code = f"exec sleep 60.{mark}"
    llm.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": code, "language": "bash"}], "timeout": 120})]))
    daemon = await start_daemon(env=llm.env())
    submit = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "sleep a minute"}))
    [pid] = await wait_for_processes(mark, timeout=60)  # a bound for a loaded machine: it returns once the step runs
    return daemon, submit, pid


async def test_shutdown_ends_tool_processes_and_saves_the_session(start_daemon, llm, _private_dirs):
    daemon, submit, pid = await _start_sleeper(start_daemon, llm)
    os.kill(pid, 0)  # alive
    session = (await daemon.request("ollie/state", {}))["session"]
    await asyncio.wait_for(daemon.client.shutdown_session(), 30)
    submit.cancel()
    assert await outliving([pid], 15) == [], "the tool process outlived the daemon"  # returns once it is gone
    saved = list((_private_dirs / "data" / "ollie" / "sessions").glob(f"{session}*"))
    assert saved, "the session was not saved"


async def test_a_vanished_client_still_gets_every_tool_process_ended(start_daemon, llm):
    daemon, _, pid = await _start_sleeper(start_daemon, llm)
    server = daemon.client._server
    server.stdin.close()  # the editor went away without shutdown/exit
    await asyncio.wait_for(server.wait(), 30)
    assert await outliving([pid], 30) == [], "the tool process outlived the daemon"  # it would sleep for minutes


async def test_a_session_the_disk_cannot_take_when_it_closes_is_said_and_what_was_saved_stays(
        start_daemon, llm, _private_dirs):
    import resource

    from ollie.sessions import persist

    llm.script(Reply.text("first answer"), Reply.text("second answer"))
    daemon = await start_daemon(env=llm.env())
    sid = (await daemon.request("ollie/submit", {"text": "q1"}))["session"]
    sessions = _private_dirs / "data" / "ollie" / "sessions"
    saved = (sessions / f"{sid}.jsonl").read_bytes()
    assert b"first answer" in saved
    # The disk is full for the daemon: no file of its may grow past the session's size now.
    pid = daemon.client._server.pid
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (len(saved) + 16, resource.RLIM_INFINITY))
    try:
        await daemon.request("ollie/submit", {"text": "q2"})
        assert await daemon.request("ollie/session/close", {"session": sid}) == {}
        for _ in range(600):  # 30 s at least, for a loaded machine: it returns once said
            shown = [m.message for m in daemon.client.messages]
            if any("was closed without saving its latest messages" in m for m in shown):
                break
            await asyncio.sleep(0.05)
        assert any(f"session {sid} was closed without saving its latest messages" in m and "File too large" in m
                   and "What it had saved before is kept" in m for m in shown), shown
    finally:
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    # What was saved before is all there: the first turn loads whole (a torn round after it is dropped).
    assert (sessions / f"{sid}.jsonl").read_bytes().startswith(saved)
    loaded = persist.load(sessions, sid)
    assert [m.content for m in loaded.messages][:2] == ["q1", "first answer"]


async def test_after_hostile_bytes_a_real_client_is_still_answered(start_daemon, llm):
    # pytest-lsp's client writes bytes no client library would: each earns an error, none ends the daemon.
    llm.script(Reply.text("still here"))
    daemon = await start_daemon(env=llm.env())
    writer = daemon.client.protocol.writer
    assert writer is not None
    for junk in (b"Content-Length: -3\r\n\r\n", b"Content-Length: 9\r\n\r\n\xff\xfe{}garbage",
                 b'Content-Length: 2\r\n\r\n[]', b"no headers at all\r\n\r\n"):
        writer.write(junk)
    result = await daemon.request("ollie/submit", {"text": "are you alive?"})
    assert result["reply"] == "still here"
