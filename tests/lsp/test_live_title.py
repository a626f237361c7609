"""A session's title reaches the client as the daemon gives it (`ollie/state`, `ollie/stateChanged`), no asking."""

from __future__ import annotations

import asyncio

from ollie.testing import Reply
from tests.procs import eventually


def _titles(wire: list[tuple[str, object]]) -> list[str]:
    return [params["title"] for kind, params in wire if kind == "state" and isinstance(params, dict)]


async def test_the_first_prompt_titles_the_session_during_its_turn_and_a_rename_at_once(start_daemon, llm):
    # Bug: the title was only in `session/list`, which a client asked when a turn ended: VS Code's header said "New
    # chat" all through the session's first turn.
    llm.script(Reply(text="ab", chunk_size=1, delay=30))  # the reply's first word comes after 30 s: interrupted
    daemon = await start_daemon(env=llm.env())
    state = await daemon.request("ollie/state", {})
    sid = state["session"]
    assert state["title"] == ""
    submit = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "Write a haiku about the sea"}, timeout=60))
    await daemon.wait_events(lambda _: any(s.get("title") == "Write a haiku about the sea" for s in daemon.states))
    assert not [e for e in daemon.events if e["role"] == "turn" and e["content"] != "start"], "the turn is still on"
    assert (await daemon.request("ollie/state", {}))["title"] == "Write a haiku about the sea"
    await eventually(lambda: len(llm.chat_requests) == 1, "the turn's model request")  # its reply is then taken
    await daemon.request("ollie/interrupt", {})
    assert (await submit)["stop"] == "interrupted"

    # A rename is told before its answer; `/rn` too.
    _, wire = await daemon.request_in_order("ollie/session/rename", {"session": sid, "title": "Sea haiku"})
    assert _titles(wire)[-1:] == ["Sea haiku"], wire
    _, wire = await daemon.request_in_order("ollie/command", {"session": sid, "line": "/rn Waves"})
    assert _titles(wire)[-1:] == ["Waves"], wire

    # A resumed session has its saved title.
    await daemon.request("ollie/session/close", {"session": sid})
    await daemon.request("ollie/session/load", {"session": sid})
    assert (await daemon.request("ollie/state", {"session": sid}))["title"] == "Waves"
