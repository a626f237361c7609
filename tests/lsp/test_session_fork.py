"""ollie/session/fork: a new session going on from a copy of another's conversation up to a turn, the source as it was."""

from __future__ import annotations

import asyncio
import threading

from ollie.testing import Reply

from .test_agent_switch_kept import edit, hunks
from .test_methods import rpc_error


async def said(daemon, session: str) -> list[tuple[str, str]]:
    """The session's conversation as (role, content) pairs."""
    messages = (await daemon.request("ollie/context", {"session": session}))["messages"]
    return [(m["role"], m["content"]) for m in messages]


TWO_TURNS = [("user", "first prompt"), ("assistant", "one"), ("user", "second prompt"), ("assistant", "two")]
THREE_TURNS = [*TWO_TURNS, ("user", "third prompt"), ("assistant", "three")]


async def test_a_fork_ends_at_the_turn_asked_leaves_the_source_and_resumes_with_only_its_history(
        start_daemon, llm, tmp_path):
    llm.script(Reply.text("one"), Reply.text("two"), Reply.text("three"), Reply.text("the fork's answer"),
               Reply.text("the source's answer"))
    workspace = tmp_path / "ws"
    daemon = await start_daemon(env=llm.env(), workspace=workspace)
    sid = (await daemon.request("ollie/submit", {"text": "first prompt"}))["session"]
    for text in ("second prompt", "third prompt"):
        await daemon.request("ollie/submit", {"session": sid, "text": text})
    source_state = await daemon.request("ollie/state", {"session": sid})
    # What a client's "fork from here" names: the turn a prompt of the history starts, and the turn a `turn` end ends.
    history = (await daemon.request("ollie/context", {"session": sid}))["messages"]
    assert [m.get("turn") for m in history] == [1, None, 2, None, 3, None]
    assert [e.get("turn") for e in daemon.events if e["role"] == "turn" and e["content"] != "start"] == [1, 2, 3]

    forked = await daemon.request("ollie/session/fork", {"session": sid, "turn": 2})
    fid = forked["session"]
    assert fid != sid
    assert forked["info"]["title"] == "first prompt (fork)" and forked["info"]["live"] is True
    assert forked["info"]["agent"] == source_state["agent"]
    assert await said(daemon, fid) == TWO_TURNS
    state = await daemon.request("ollie/state", {"session": fid})
    assert state["cwd"] == source_state["cwd"] and state["title"] == "first prompt (fork)"
    whole = (await daemon.request("ollie/session/fork", {"session": sid}))["session"]  # no turn: all of it
    assert await said(daemon, whole) == THREE_TURNS

    assert (await daemon.request("ollie/submit", {"session": fid, "text": "fork prompt"}))["reply"] == "the fork's answer"
    assert await said(daemon, sid) == THREE_TURNS  # the source is untouched, and still open
    assert (await daemon.request("ollie/submit", {"session": sid, "text": "source prompt"}))["reply"] == \
        "the source's answer"
    listed = {s["id"]: s["title"] for s in (await daemon.request("ollie/session/list", {}))["sessions"]}
    assert listed[sid] == "first prompt" and listed[fid] == "first prompt (fork)"
    await daemon.client.shutdown_session()

    again = await start_daemon(env=llm.env(), workspace=workspace)
    await again.request("ollie/session/load", {"session": fid})
    assert await said(again, fid) == [*TWO_TURNS, ("user", "fork prompt"), ("assistant", "the fork's answer")]
    # The copied history keeps its turns: the fork's own count on from them.
    history = (await again.request("ollie/context", {"session": fid}))["messages"]
    assert [m.get("turn") for m in history] == [1, None, 2, None, 3, None]


async def test_a_fork_of_a_running_session_takes_the_turns_that_ended(shared_daemon, llm):
    hold = threading.Event()
    llm.script(Reply.text("one"), Reply(text="slow two", chunk_size=2, hold=hold))
    daemon = await shared_daemon(env=llm.env())
    sid = (await daemon.request("ollie/submit", {"text": "first prompt"}))["session"]
    before = len(daemon.events)
    running = asyncio.ensure_future(daemon.request("ollie/submit", {"session": sid, "text": "second prompt"}))
    # Its reply began (held before its end): the prompt is saved, the reply is not whole.
    await daemon.wait_events(lambda evs: any(e["role"] == "assistant" for e in evs[before:]))
    try:
        fid = (await daemon.request("ollie/session/fork", {"session": sid}))["session"]
        assert await said(daemon, fid) == TWO_TURNS[:2]
        err = await rpc_error(daemon, "ollie/session/fork", {"session": sid, "turn": 2})
        assert err.code == -32602 and "turn: turn 2 has not ended" in err.message
    finally:
        hold.set()
    assert (await running)["reply"] == "slow two"
    assert await said(daemon, fid) == TWO_TURNS[:2]


async def test_bad_fork_params_are_named_and_the_daemon_keeps_serving(shared_daemon, llm):
    llm.script(Reply.text("one"))
    daemon = await shared_daemon(env=llm.env())
    sid = (await daemon.request("ollie/submit", {"text": "first prompt"}))["session"]
    listing = [s["id"] for s in (await daemon.request("ollie/session/list", {}))["sessions"]]
    assert sid in listing
    for params, field in (({}, "session"), ({"session": ""}, "session"), ({"session": sid, "turn": 0}, "turn"),
                          ({"session": sid, "turn": "2"}, "turn"), ({"session": sid, "turn": 2}, "turn")):
        err = await rpc_error(daemon, "ollie/session/fork", params)
        assert err.code == -32602 and err.message.removeprefix("Invalid params: ").startswith(field), (params, err.message)
    assert "no turn 2" in (await rpc_error(daemon, "ollie/session/fork", {"session": sid, "turn": 2})).message
    assert (await rpc_error(daemon, "ollie/session/fork", {"session": "1700000000000000000-abcdef"})).code == -32001
    assert (await daemon.request("ollie/state", {"session": sid}))["title"] == "first prompt"
    listed = [s["id"] for s in (await daemon.request("ollie/session/list", {}))["sessions"]]
    assert listed == listing  # a refused fork leaves no session behind (the shared daemon's others listed before too)


async def test_a_fork_reviews_the_turns_it_copied_and_its_own_apart(start_daemon, llm, tmp_path):
    # Bug: a fork's history had no "files changed" line for the turns it copied, and no review of them.
    llm.script(*edit("line 2\n", "LINE TWO\n"), *edit("line 5\n", "LINE FIVE\n"), *edit("line 7\n", "LINE SEVEN\n"))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 9)))
    daemon = await start_daemon(env={**llm.env(), "OLLIE_APPROVAL": "auto"}, workspace=ws)
    sid = (await daemon.request("ollie/submit", {"text": "edit line two"}))["session"]
    await daemon.request("ollie/submit", {"session": sid, "text": "edit line five"})

    fid = (await daemon.request("ollie/session/fork", {"session": sid, "turn": 1}))["session"]
    marks = [m.get("turnChanges") for m in (await daemon.request("ollie/context", {"session": fid}))["messages"]]
    assert marks == [None, None, None, {"turn": 1, "files": 1}], marks
    assert await hunks(daemon, fid, 1) == [["-line 2\n", "+LINE TWO\n"]]
    assert "no turn 2" in (await rpc_error(daemon, "ollie/changes", {"session": fid, "turn": 2})).message
    assert "came with this copy" in (await rpc_error(daemon, "ollie/rewind", {"session": fid, "turn": 1})).message

    # Its own turn is its turn 2: only its change; the source's turn 2 is still the source's.
    await daemon.request("ollie/submit", {"session": fid, "text": "edit line seven"})
    assert await hunks(daemon, fid, 2) == [["-line 7\n", "+LINE SEVEN\n"]]
    assert await hunks(daemon, sid, 2) == [["-line 5\n", "+LINE FIVE\n"]]
    assert await hunks(daemon, fid, 1) == [["-line 2\n", "+LINE TWO\n"]]
