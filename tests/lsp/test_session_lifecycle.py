"""ollie/session/unarchive, sessions never prompted left out of ollie/session/list across daemon starts, and the
default session named before its first prompt."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time

from ollie import paths
from ollie.sessions.logindex import list_saved_files
from ollie.testing import Reply
from tests.procs import eventually

from .test_methods import rpc_error


async def listed_ids(daemon, **params) -> list[str]:
    return [s["id"] for s in (await daemon.request("ollie/session/list", params))["sessions"]]


async def test_an_archived_session_comes_back_listed_and_writable(shared_daemon, llm):
    llm.script(Reply.text("before"), Reply.text("after"))
    daemon = await shared_daemon(env=llm.env())
    sid = (await daemon.request("ollie/submit", {"text": "keep this one"}))["session"]
    assert await daemon.request("ollie/session/archive", {"session": sid}) == {}
    assert sid not in await listed_ids(daemon)
    archived = {s["id"]: s for s in (await daemon.request("ollie/session/list", {"includeArchived": True}))["sessions"]}
    assert archived[sid]["archived"] is True
    assert (await rpc_error(daemon, "ollie/submit", {"session": sid, "text": "x"})).code == -32002

    assert await daemon.request("ollie/session/unarchive", {"session": sid}) == {}
    assert await daemon.request("ollie/session/unarchive", {"session": sid}) == {}  # idempotent
    listed = {s["id"]: s for s in (await daemon.request("ollie/session/list", {}))["sessions"]}
    assert listed[sid]["archived"] is False and listed[sid]["title"] == "keep this one"
    assert (await daemon.request("ollie/state", {"session": sid}))["archived"] is False
    assert (await daemon.request("ollie/submit", {"session": sid, "text": "again"}))["reply"] == "after"

    # A saved (not live) archived session: unarchive, then load resumes it.
    assert await daemon.request("ollie/session/archive", {"session": sid}) == {}
    assert await daemon.request("ollie/session/close", {"session": sid}) == {}
    assert (await rpc_error(daemon, "ollie/session/load", {"session": sid})).code == -32002
    await daemon.request("ollie/session/unarchive", {"session": sid})
    loaded = await daemon.request("ollie/session/load", {"session": sid})
    assert loaded["info"]["archived"] is False
    assert len((await daemon.request("ollie/context", {"session": sid}))["messages"]) == 4

    assert (await rpc_error(daemon, "ollie/session/unarchive", {"session": "1700000000000000000-abcdef"})).code == -32001
    err = await rpc_error(daemon, "ollie/session/unarchive", {})
    assert err.code == -32602 and "session" in err.message


async def test_sessions_never_prompted_are_not_listed_across_restarts(start_daemon, llm, tmp_path):
    llm.script(Reply.text("hi"))
    first = await start_daemon(env=llm.env(), workspace=tmp_path / "ws")
    idle_default = (await first.request("ollie/state", {}))["session"]
    untitled = (await first.request("ollie/session/new", {}))["session"]
    named = (await first.request("ollie/session/new", {"title": "Planned work"}))["session"]
    assert await listed_ids(first) == [named]
    await first.request("ollie/command", {"session": untitled, "line": "!true"})  # a command is not a prompt
    assert untitled not in await listed_ids(first)
    await first.client.shutdown_session()

    second = await start_daemon(env=llm.env(), workspace=tmp_path / "ws")
    default = (await second.request("ollie/state", {}))["session"]
    assert default != idle_default
    assert await listed_ids(second) == [named]
    await second.request("ollie/submit", {"text": "first words here"})
    assert await listed_ids(second) == [default, named]  # listed from its first prompt on
    # What was never prompted is still saved: it loads by id.
    assert (await second.request("ollie/session/load", {"session": idle_default}))["session"] == idle_default


def _records() -> list[str]:
    """The ids of the registry's session records (none before its database is made)."""
    db = paths.data_dir() / "sessions.db"
    if not db.exists():
        return []
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return [row[0] for row in conn.execute("SELECT id FROM sessions")]


def test_the_terminals_session_listing_leaves_out_runs_nobody_typed_in(llm, tmp_path):
    from .test_cli import run_ollie

    llm.script(Reply.text("hi there"))
    work = tmp_path / "work"
    work.mkdir()

    def sessions() -> str:
        done = run_ollie(["-p", "/sessions", "--cwd", str(work)], env=llm.env())
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert sessions().startswith("no saved sessions")
    # `-p /sessions` needs no turn: it leaves no session behind (each run saved an empty one, and its record).
    assert not list_saved_files(paths.sessions_dir()) and not _records(), "a session left behind"
    assert run_ollie(["--cwd", str(work)], env=llm.env(), input="").returncode == 0  # opened, left at once
    assert sessions().startswith("no saved sessions")  # nor the listings' own runs
    prompted = run_ollie(["-p", "hello", "--cwd", str(work)], env=llm.env())
    assert "hi there" in prompted.stdout, prompted.stderr
    listed = sessions()
    assert listed.startswith("sessions (1):"), listed


async def test_a_session_runs_in_one_daemon_at_a_time(shared_daemon, start_daemon_beside, llm):
    """Two editor windows on one folder: the second daemon cannot resume the session the first runs (-32007 naming
    the other window), keeps its own, and resumes it once the first closed it."""
    llm.script(Reply.text("hi"))
    first = await shared_daemon(env=llm.env())
    second = await start_daemon_beside(env=llm.env(), workspace=first.workspace)
    sid = (await first.request("ollie/submit", {"text": "in the first window"}))["session"]
    err = await rpc_error(second, "ollie/session/load", {"session": sid})
    assert err.code == -32007 and "open in another editor window" in err.message
    assert f"(ollie-lsp pid {first.client._server.pid})" in err.message, err.message
    assert (await second.request("ollie/state", {}))["session"] != sid
    assert await first.request("ollie/session/close", {"session": sid}) == {}
    assert (await second.request("ollie/session/load", {"session": sid}))["session"] == sid
    assert len((await second.request("ollie/context", {"session": sid}))["messages"]) == 2


async def test_the_default_session_named_before_any_prompt_is_listed_by_its_name(start_daemon, llm):
    daemon = await start_daemon(env=llm.env())
    default = (await daemon.request("ollie/state", {}))["session"]  # its record is put off until it is needed
    assert await daemon.request("ollie/session/rename", {"session": default, "title": "Later"}) == {}
    listed = (await daemon.request("ollie/session/list", {}))["sessions"]
    assert [(s["id"], s["title"]) for s in listed] == [(default, "Later")]
    loaded = await daemon.request("ollie/session/load", {"session": default})
    assert loaded["info"]["title"] == "Later"


async def test_a_daemon_killed_once_the_first_prompt_is_saved_leaves_the_session_listed(start_daemon, llm, _private_dirs):
    """The registry is held locked (another process's write) for a second as the first prompt comes: the turn waits
    for the session's record, so once the prompt is in the log the record is too. Written beside the turn, a
    kill -9 then left a saved conversation that session/list and session/load did not know."""
    llm.script(Reply.text("kept"), Reply.text("still here"))
    daemon = await start_daemon(env=llm.env())
    sid = (await daemon.request("ollie/state", {}))["session"]
    db = _private_dirs / "data" / "ollie" / "sessions.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    asyncio.get_running_loop().call_later(1.0, holder.close)  # the other writer's transaction ends
    submit = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "remember this"}))
    log = _private_dirs / "data" / "ollie" / "sessions" / f"{sid}.jsonl"
    deadline = time.monotonic() + 30  # a bound: it returns once the prompt is saved
    while not (log.exists() and b"remember this" in log.read_bytes()):
        assert time.monotonic() < deadline, "the prompt was never saved"
        await asyncio.sleep(0.01)
    # Its model request out too (so the next daemon's turn is the second reply), the prompt saved long before.
    await eventually(lambda: len(llm.chat_requests) == 1, "the first turn's request")
    daemon.client._server.kill()  # SIGKILL: no shutdown, no last save
    with contextlib.suppress(Exception):
        await submit
    holder.close()

    again = await start_daemon(env=llm.env())
    assert sid in await listed_ids(again)
    assert (await again.request("ollie/session/load", {"session": sid}))["session"] == sid
    assert (await again.request("ollie/submit", {"session": sid, "text": "and?"}))["reply"] == "still here"


async def test_session_list_pages_by_cursor_past_hand_written_records_and_new_sessions(start_daemon, llm):
    """Pages went by offset: a session added between two pages pushed the last one listed onto the next page too
    (shown twice); the cursor names the last row read, so neither that nor a record left out shifts a page."""
    from tests.acp.conftest import store_hand_written_sessions

    listed = store_hand_written_sessions("alice")
    llm.script(Reply.text("new"))
    daemon = await start_daemon(env={**llm.env(), "OLLIE_USER": "alice"})
    pages, cursor = [], None
    while cursor is not None or not pages:
        page = await daemon.request("ollie/session/list", {"limit": 50, **({"cursor": cursor} if cursor else {})})
        pages.append([s["id"] for s in page["sessions"]])
        cursor = page["nextCursor"]
        if len(pages) == 1:  # a session added between pages lists first, above where the next page starts
            added = (await daemon.request("ollie/submit", {"text": "a new one"}))["session"]
    assert [sid for page in pages for sid in page] == listed and len(pages) == 3
    assert (await listed_ids(daemon, limit=2)) == [added]  # after the hand-written one dated past year 9999
    bad = await rpc_error(daemon, "ollie/session/list", {"cursor": "50"})  # an old offset, or none of ours
    assert bad.code == -32602 and "cursor: not a cursor of ollie's session list: '50'" in bad.message, bad.message


async def test_a_forged_cursor_is_invalid_params_naming_it_never_an_internal_error(shared_daemon, llm):
    """A cursor id with a lone surrogate failed the listing as an internal error (-32603: no UTF-8 for the store),
    one with a NUL in PostgreSQL the same; a megabyte of junk was echoed whole in the error."""
    daemon = await shared_daemon(env=llm.env())
    for cursor in ("1:\ud800", ":a\x00b", "x" * 1_000_000):
        bad = await rpc_error(daemon, "ollie/session/list", {"cursor": cursor})
        assert bad.code == -32602 and "cursor: not a cursor of ollie's session list" in bad.message, bad.message
        assert len(bad.message) < 300, len(bad.message)
    assert (await daemon.request("ollie/session/list", {"cursor": "1:" + "z" * 100_000}))["sessions"] == []


async def test_an_unknown_kind_in_the_listing_is_invalid_params_naming_that_entry(shared_daemon, llm):
    """PROTOCOL.md: -32602 names the field; the listing named `kind`, a param it has not (its own is `kinds`)."""
    daemon = await shared_daemon(env=llm.env())
    bad = await rpc_error(daemon, "ollie/session/list", {"kinds": ["chat", "chats"]})
    assert bad.code == -32602 and "kinds[1]: unknown session kind 'chats' (one of main, chat," in bad.message, bad.message


async def test_a_prompt_to_a_live_session_another_daemon_archived_is_refused_as_archived(shared_daemon,
                                                                                          start_daemon_beside, llm):
    # Archived by another client (a second editor window's daemon) while it runs here: the prompt ran and its turn
    # went into the archived session. The archive wins, as at a load: refused, nothing sent to the model.
    llm.script(Reply.text("first answer"))
    here = await shared_daemon(env=llm.env())
    sid = (await here.request("ollie/submit", {"text": "keep this one"}))["session"]
    there = await start_daemon_beside(env=llm.env())
    assert await there.request("ollie/session/archive", {"session": sid}) == {}
    asked = len(llm.requests)
    err = await rpc_error(here, "ollie/submit", {"session": sid, "text": "more"})
    assert (err.code, err.message) == (-32002, f"session is archived: {sid}"), err
    assert len(llm.requests) == asked
    assert (await here.request("ollie/state", {"session": sid}))["archived"] is True


async def test_every_write_to_a_live_session_another_daemon_archived_is_refused_as_archived(shared_daemon,
                                                                                            start_daemon_beside, llm):
    # Only submit read the record: a rewind, an undo, a cwd move... trusted this daemon's own flag and changed the
    # session another client had archived.
    from .test_steps import code, run_turn, started

    here = await started(shared_daemon, llm)
    notes = here.workspace / "notes.txt"
    notes.write_text("one\n")
    await run_turn(here, llm, code("printf 'two\\n' > notes.txt"))
    sid = (await here.request("ollie/state", {}))["session"]
    (elsewhere := here.workspace / "elsewhere").mkdir()
    there = await start_daemon_beside(env=llm.env())
    assert await there.request("ollie/session/archive", {"session": sid}) == {}
    for method, params in (("ollie/rewind", {}), ("ollie/review/undo", {"path": "notes.txt"}),
                           ("ollie/setCwd", {"cwd": str(elsewhere)}), ("ollie/setEnv", {"key": "A", "value": "b"}),
                           ("ollie/setApproval", {"approval": "ask"}), ("ollie/queue", {"text": "x"}),
                           ("ollie/inject", {"text": "x"}), ("ollie/popQueue", {}), ("ollie/queue/clear", {}),
                           ("ollie/queue/run", {}), ("ollie/command", {"line": "/clear"}),
                           ("ollie/setGenerationParams", {"params": {"temperature": 0.5}})):
        err = await rpc_error(here, method, {"session": sid, **params})
        assert (err.code, err.message) == (-32002, f"session is archived: {sid}"), (method, err)
    assert notes.read_text() == "two\n"  # neither rewound nor undone
    state = await here.request("ollie/state", {"session": sid})
    assert (state["cwd"], state["approval"], state["archived"]) == (str(here.workspace.resolve()), "auto", True)


async def test_a_session_is_resumed_in_the_agent_it_was_switched_to(shared_daemon, llm):
    # Bug: the session list kept the agent a session was made with (its record is made at the first prompt, from what
    # the session was opened with): `/agent plan` before or after it, and a resume ran the default agent again.
    llm.script(Reply(text="One."), Reply(text="Two."))
    daemon = await shared_daemon(env=llm.env())
    switched_first = (await daemon.request("ollie/session/new", {}))["session"]
    await daemon.request("ollie/command", {"session": switched_first, "line": "/agent plan"})
    await daemon.request("ollie/submit", {"session": switched_first, "text": "plan it"})
    prompted_first = (await daemon.request("ollie/session/new", {}))["session"]
    await daemon.request("ollie/submit", {"session": prompted_first, "text": "hi"})
    await daemon.request("ollie/command", {"session": prompted_first, "line": "/agent ask"})
    for sid, agent in ((switched_first, "plan"), (prompted_first, "ask")):
        await daemon.request("ollie/session/close", {"session": sid})
        await daemon.request("ollie/session/load", {"session": sid})
        assert (await daemon.request("ollie/state", {"session": sid}))["agent"] == agent
