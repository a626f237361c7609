"""A session's title reaches the client as the daemon gives it (`ollie/state`, `ollie/stateChanged`), no asking."""

from __future__ import annotations

import asyncio

from ollie.testing import Reply
from tests.procs import eventually


def _titles(wire: list[tuple[str, object]]) -> list[str]:
    return [params["title"] for kind, params in wire if kind == "state" and isinstance(params, dict)]


async def test_the_first_prompt_titles_the_session_during_its_turn_and_a_rename_at_once(shared_daemon, llm):
    # Bug: the title was only in `session/list`, which a client asked when a turn ended: VS Code's header said "New
    # chat" all through the session's first turn.
    llm.script(Reply(text="ab", chunk_size=1, delay=30))  # the reply's first word comes after 30 s: interrupted
    daemon = await shared_daemon(env=llm.env())
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
    listed = (await daemon.request("ollie/session/list", {}))["sessions"]
    assert [s["title"] for s in listed if s["id"] == sid] == ["Waves"], listed

    # A resumed session has its saved title.
    await daemon.request("ollie/session/close", {"session": sid})
    await daemon.request("ollie/session/load", {"session": sid})
    assert (await daemon.request("ollie/state", {"session": sid}))["title"] == "Waves"


async def test_a_rewind_of_every_turn_takes_back_the_first_prompt_s_title_and_its_undo_gives_it_back(start_daemon, llm):
    # Bug: the session kept the words of a prompt no longer in it (Neovim's statusline showed them over an empty
    # chat), and its next first prompt gave it no title.
    llm.script(Reply.text("waves"), Reply.text("more waves"), Reply.text("sky"), Reply.text("named"))
    daemon = await start_daemon(env=llm.env())
    sid = (await daemon.request("ollie/submit", {"text": "Write a haiku about the sea"}))["session"]
    await daemon.request("ollie/submit", {"text": "and another"})

    async def title_is(title: str) -> None:
        await eventually(lambda: daemon.states and daemon.states[-1]["title"] == title, f"the title {title!r}")
        assert (await daemon.request("ollie/state", {}))["title"] == title
        listed = (await daemon.request("ollie/session/list", {}))["sessions"]
        # Emptied, it is listed untitled while its rewind can be undone (the way back after a restart: nvimuser32).
        mine = [s for s in listed if s["id"] == sid]
        assert [s["title"] for s in mine] == [title] and (title or mine[0]["rewindUndo"] is True), listed

    await daemon.request("ollie/rewind", {"turn": 2})
    await title_is("Write a haiku about the sea")  # a turn is left: its prompt still titles the session
    await daemon.request("ollie/rewind", {"undo": True})
    await daemon.request("ollie/rewind", {"turn": 1})
    await title_is("")  # as a fresh session
    await daemon.request("ollie/rewind", {"undo": True})
    await title_is("Write a haiku about the sea")
    await daemon.request("ollie/command", {"line": "/rewind 1"})
    await title_is("")
    await daemon.request("ollie/submit", {"text": "Describe the sky"})  # the new first prompt titles it
    await title_is("Describe the sky")

    # Resumed by another daemon: its saved title is still known for the first prompt's words.
    await daemon.client.shutdown_session()
    daemon = await start_daemon(env=llm.env(), init_options={"session": sid}, workspace=daemon.workspace)
    assert (await daemon.request("ollie/state", {}))["title"] == "Describe the sky"
    await daemon.request("ollie/rewind", {"turn": 1})
    await title_is("")
    # Undone in a daemon started since (a window reload): the prompt it puts back titles it again (it stayed "",
    # the chat's header "New chat" over the conversation back, the first prompt's words known only to the old daemon).
    await daemon.client.shutdown_session()
    daemon = await start_daemon(env=llm.env(), init_options={"session": sid}, workspace=daemon.workspace)
    await daemon.request("ollie/rewind", {"undo": True})
    await title_is("Describe the sky")

    # A name someone gave stays.
    await daemon.request("ollie/session/rename", {"session": sid, "title": "Sky"})
    await daemon.request("ollie/submit", {"text": "once more"})
    await daemon.request("ollie/rewind", {"turn": 1})
    await title_is("Sky")
    assert not [e for e in daemon.events if e["role"] == "rewind"], "the engine's rewind event is not on the wire"


async def test_a_clear_or_an_agent_switch_takes_back_the_first_prompt_s_title(shared_daemon, llm):
    # Bug: after `/clear` or `/agent plan` (which clears) the emptied session kept its first prompt's words as its
    # title (Neovim's statusline and tab label showed "· hi there" over an empty chat), and its next first prompt
    # gave it none.
    llm.script(Reply.text("hello"), Reply.text("sky"))
    daemon = await shared_daemon(env=llm.env())
    sid = (await daemon.request("ollie/submit", {"text": "hi there"}))["session"]

    async def title_is(title: str) -> None:
        await eventually(lambda: daemon.states and daemon.states[-1]["title"] == title, f"the title {title!r}")
        assert (await daemon.request("ollie/state", {}))["title"] == title
        listed = (await daemon.request("ollie/session/list", {}))["sessions"]
        # Emptied, it is not listed, as the terminal's /sessions leaves it out (Neovim's listed "(no prompt yet)").
        assert [s["title"] for s in listed if s["id"] == sid] == ([title] if title else []), listed

    await title_is("hi there")
    await daemon.request("ollie/command", {"line": "/clear"})
    await title_is("")
    await daemon.request("ollie/submit", {"text": "Describe the sky"})  # the new first prompt titles it
    await title_is("Describe the sky")
    assert (await daemon.request("ollie/submit", {"text": "/agent plan"}))["reply"].startswith("agent: plan")
    await title_is("")

    # A name someone gave stays.
    await daemon.request("ollie/session/rename", {"session": sid, "title": "Sky"})
    await daemon.request("ollie/command", {"line": "/clear"})
    await title_is("Sky")
