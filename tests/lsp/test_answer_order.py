"""A request aimed at a session is answered after the events that session published meanwhile (PROTOCOL.md)."""

from __future__ import annotations

import asyncio
import threading

from lsprotocol import types

from ollie.testing import Reply


def events_of(wire: list[tuple[str, dict]], session: str) -> list[tuple[str, str]]:
    return [(params["role"], params["content"]) for kind, params in wire
            if kind == "event" and params["session"] == session]


async def test_a_commands_output_comes_before_its_answer_by_either_method(start_daemon, llm):
    # Once the prompt is ready a slash command ends without waiting: answered in the callback that read it, before
    # the events' task ran.
    daemon = await start_daemon(env=llm.env())
    session = (await daemon.request("ollie/state", {}))["session"]
    await daemon.request("ollie/context", {"session": session, "limit": 0})
    out, before = await daemon.request_in_order("ollie/command", {"session": session, "line": "/help"})
    assert [(role, content) for role, content in events_of(before, session)] == [("info", out["output"])]
    out, before = await daemon.request_in_order(types.WORKSPACE_EXECUTE_COMMAND, types.ExecuteCommandParams(
        command="ollie.command", arguments=[{"line": "/nosuchcommand"}]))
    assert [role for role, content in events_of(before, session)] == ["error"]
    assert "unknown command /nosuchcommand" in out["output"]
    out, before = await daemon.request_in_order("ollie/command", {"session": session, "line": "!echo shell"})
    assert [role for role, content in events_of(before, session) if "shell" in content] == ["exec"]


async def test_the_turns_a_queue_run_started_are_sent_before_its_answer(start_daemon, llm):
    # Their deltas come hot: the events' task joins them for 300 ms, after the turn ended and the handler returned.
    hold = threading.Event()  # the first answer streams until the interrupt
    llm.script(Reply.text("a slow answer", hold=hold), Reply.text("the queued answer", chunk_size=2))
    daemon = await start_daemon(env={**llm.env(), "OLLIE_LSP_COALESCE_MS": "300"})
    first = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "first"}))
    await daemon.wait_events(lambda evs: any(e["role"] == "assistant" for e in evs))
    assert await daemon.request("ollie/queue", {"text": "queued"}) == {"depth": 1}
    assert (await daemon.request("ollie/interrupt", {}))["interrupted"] is True
    hold.set()
    session = (await first)["session"]
    result, before = await daemon.request_in_order("ollie/queue/run", {"session": session})
    assert result == {"queued": []}
    sent = events_of(before, session)
    assert sent[0] == ("turn", "start") and sent[-1] == ("turn", "end")
    assert "".join(content for role, content in sent if role == "assistant") == "the queued answer"
