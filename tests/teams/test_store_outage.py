"""What a user sees when the store cannot be reached, and the backups TEAM.md prescribes, on a real server."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import acp
import psycopg
import pytest
from psycopg import sql
from psycopg_pool import PoolTimeout
from pygls.exceptions import JsonRpcException

from ollie.backend.types import Message
from ollie.sessions import persist
from ollie.sessions.pg.log import read_rounds
from ollie.sessions.pg.store import PgStore, StoreUnavailableError
from ollie.testing import Reply
from tests.teams.conftest import home_env
from tests.teams.pgserver import pg_bin
from tests.teams.test_engine_store import _user_texts
from tests.teams.test_guest_saves import HER_FOUR_TURNS, teammate_turns
from tests.teams.test_roles import _session_id

_databases = iter(range(1, 1000))


@pytest.fixture
def database(pg_server) -> Iterator[tuple[str, object]]:
    """A database of its own (a store on it can be cut off without touching the other tests); (URL, admin).

    This process's stores are closed after, and the database dropped only when nothing is connected to it any more:
    a pool left open (a log's shared store, `read_rounds`) failed the drop, where it had reconnected to the dropped
    database for minutes of the worker's later tests."""
    from ollie.sessions.pg import log as pg_log

    name = f"outage_{next(_databases)}_{time.monotonic_ns() % 10**6}"
    admin = psycopg.connect(pg_server.url, autocommit=True)
    admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield pg_server.url.rsplit("/", 1)[0] + "/" + name, admin
    pg_log.close_all()
    # Not FORCE: the server waits for closed connections' backends to end, and refuses while one is still open.
    admin.execute(sql.SQL("DROP DATABASE {}").format(sql.Identifier(name)))
    admin.close()


def _allow(admin: psycopg.Connection, url: str, allow: bool) -> None:
    """Let connections in, or refuse them and drop those open: the server down, as far as this store can tell."""
    name = url.rsplit("/", 1)[1]
    admin.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS {}").format(
        sql.Identifier(name), sql.SQL("true" if allow else "false")))
    if not allow:
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
        while admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (name,)).fetchone() != (0,):
            time.sleep(0.01)  # terminate only signals the backends: wait until they are gone


def test_a_bad_store_url_fails_at_once_naming_the_key_and_the_servers_reason(pg_server, tmp_path):
    url = f"postgresql://postgres@127.0.0.1:{pg_server.port}/no_such_db?password={pg_server.password}"
    with pytest.raises(StoreUnavailableError) as caught:
        PgStore(url, busy_timeout_s=10.0)
    message = str(caught.value)  # the server's reason, at once: not the pool's "cannot connect within 10 s"
    assert message.startswith("session store OLLIE_STORE=postgresql://postgres@")
    assert 'database "no_such_db" does not exist' in message and pg_server.password not in message
    assert "password=***" in message

    run = subprocess.run([sys.executable, "-m", "ollie.cli", "-p", "hi", "--no-preflight"], capture_output=True,
                         text=True, timeout=60, env=home_env(tmp_path, OLLIE_STORE=url))
    assert run.returncode != 0 and "OLLIE_STORE=" in run.stderr and "does not exist" in run.stderr, run.stderr
    assert pg_server.password not in run.stderr and "error connecting in 'ollie-store'" not in run.stderr  # no pool noise


def test_a_store_found_down_fails_fast_until_it_is_back(database, monkeypatch):
    url, admin = database
    store = PgStore(url, busy_timeout_s=1.0)
    # Each wait for one of the pool's connections that ran out (the real pool still serves the others).
    waits_out: list[PoolTimeout] = []
    getconn = store._pool.getconn

    def counted_getconn(*args: Any, **kwargs: Any) -> Any:
        try:
            return getconn(*args, **kwargs)
        except PoolTimeout as exc:
            waits_out.append(exc)
            raise

    monkeypatch.setattr(store._pool, "getconn", counted_getconn)
    try:
        _allow(admin, url, False)
        with pytest.raises(StoreUnavailableError, match="not currently accepting connections"):
            store.version()  # the first call waits out the pool once, then says why
        assert len(waits_out) == 1
        with pytest.raises(StoreUnavailableError, match="not currently accepting connections"):
            store.version()
        assert len(waits_out) == 1  # found down: not another wait on the pool
        _allow(admin, url, True)
        assert store.version() > 0  # back: served at once, while the pool is still in its reconnect back-off
        with store.transaction() as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        assert len(waits_out) == 1  # neither waited the pool out
        store._pool.wait(timeout=30)  # the pool has its connection again (the calls above had it connect now)...
        store.version()
        assert not store._down.is_set()  # ...and the next call is back on it
    finally:
        store.close()


def test_the_backup_of_team_md_restores_into_a_new_database_with_every_session(database, pg_server, monkeypatch,
                                                                               tmp_path: Path):
    url, admin = database
    monkeypatch.setenv("OLLIE_STORE", url)
    monkeypatch.setenv("OLLIE_USER", "alice")
    log, session = persist.open_session("unused", None)  # leased by this process: a lease row to leave behind
    session.messages += [Message("user", "back me up"), Message("assistant", "done")]
    log.save(session)
    log.flush()

    dump = tmp_path / "ollie.dump"
    # TEAM.md's commands, literally: the dump leaves the leases' rows out; the restore goes into a new database.
    with dump.open("wb") as out:
        subprocess.run([pg_bin("pg_dump"), "-Fc", "--exclude-table-data=session_leases", "-d", url], stdout=out,
                       check=True, timeout=60)
    restored = url + "_restored"
    admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(restored.rsplit("/", 1)[1])))
    try:
        subprocess.run([pg_bin("pg_restore"), "--clean", "--if-exists", "-d", restored, str(dump)], check=True,
                       capture_output=True, timeout=60)
        with psycopg.connect(restored) as conn:
            assert conn.execute("SELECT count(*) FROM session_leases").fetchone() == (0,)  # none came along
        log.close()
        monkeypatch.setenv("OLLIE_STORE", restored)
        resumed_log, resumed = persist.open_session("unused", session.id)
        assert [m.content for m in resumed.messages] == ["back me up", "done"]
        resumed_log.close()
    finally:
        from ollie.sessions.pg import log as pg_log

        pg_log.close_all()
        admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(restored.rsplit("/", 1)[1])))



def _actionable(message: str) -> None:
    """A store-down message a user can act on: which store, the server's reason; no class name or traceback."""
    assert message.startswith("store unavailable: ") and "OLLIE_STORE=" in message, message
    assert "not currently accepting connections" in message, message
    assert "Error" not in message and "Traceback" not in message, message


async def test_a_store_down_reaches_daemon_and_acp_clients_as_store_unavailable(database, start_daemon, start_agent,
                                                                                 scripted_llm):
    url, admin = database
    llm = scripted_llm("openai", check=False)
    team = {**llm.env(), "OLLIE_STORE": url, "OLLIE_USER": "alice"}
    daemon = await start_daemon("laptop", team)
    sid = (await daemon.request("ollie/session/new", {"title": "kept"}))["session"]
    agent = await start_agent(env=team)
    _allow(admin, url, False)
    try:
        for method, params in (("ollie/session/list", {}), ("ollie/session/rename", {"session": sid, "title": "x"}),
                               ("ollie/session/load", {"session": "1700000000000000000-abcdef"})):
            with pytest.raises(JsonRpcException) as caught:
                await daemon.request(method, params, timeout=60)
            assert caught.value.code == -32009, (method, caught.value.code, caught.value.message)
            _actionable(caught.value.message)
            assert not (caught.value.data or {}).get("traceback"), caught.value.data
        for call in (lambda: agent.conn.list_sessions(),
                     lambda: agent.conn.load_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[])):
            with pytest.raises(acp.RequestError) as refused:
                await asyncio.wait_for(call(), 60)
            assert refused.value.code == -32009, refused.value
            _actionable(str(refused.value))
    finally:
        _allow(admin, url, True)
    # Back: the same requests are served again, by the same daemon.
    listed = (await daemon.request("ollie/session/list", {}, timeout=60))["sessions"]
    assert sid in [s["id"] for s in listed]



NOT_SAVED = "was closed without saving its latest messages"


def _recorded(url: str) -> bool:
    """Whether a session's record is in the store at `url`."""
    with psycopg.connect(url, autocommit=True) as conn:
        made = conn.execute("SELECT pg_catalog.to_regclass('sessions') IS NOT NULL").fetchone() == (True,)
        return made and conn.execute("SELECT EXISTS (SELECT 1 FROM sessions)").fetchone() == (True,)


async def _saved_with(url: str, session_id: str, text: bytes) -> bytes:
    """The session's stored rounds once they hold `text` (fails after 60 s)."""
    deadline = time.monotonic() + 60
    while True:
        saved = await asyncio.to_thread(read_rounds, url, session_id)
        if saved and text in saved:
            return saved
        assert time.monotonic() < deadline, (session_id, saved)
        await asyncio.sleep(0.05)


async def test_a_session_closed_while_the_store_is_down_tells_the_user_and_keeps_what_was_saved(
        database, start_daemon, start_agent, scripted_llm, tmp_path):
    url, admin = database
    llm = scripted_llm("openai", check=False)
    llm.script(Reply.text("first answer"), Reply.text("acp first"), Reply.text("second answer"),
               Reply.text("acp second"))
    team = {**llm.env(), "OLLIE_STORE": url, "OLLIE_USER": "alice"}
    daemon = await start_daemon("laptop", team)
    sid = (await daemon.request("ollie/session/new", {"title": "kept"}))["session"]
    assert (await daemon.request("ollie/submit", {"session": sid, "text": "q1"}))["reply"] == "first answer"
    agent = await start_agent(env=team)
    acp_sid = await agent.new()
    assert (await agent.prompt(acp_sid, "acp q1")).stop_reason == "end_turn"
    # Each daemon writes its rounds on the log's own thread (a save never waits on the network): wait for them.
    saved = await _saved_with(url, sid, b"first answer")
    acp_saved = await _saved_with(url, acp_sid, b"acp first")

    _allow(admin, url, False)
    try:
        assert (await daemon.request("ollie/submit", {"session": sid, "text": "q2"}, timeout=60))["stop"] == "end"
        assert await daemon.request("ollie/session/close", {"session": sid}, timeout=60) == {}
        # The daemon: the session is gone from the client, so a message says what was not saved.
        shown = [m.message for m in daemon.client.messages]
        assert any(NOT_SAVED in m and sid in m and "What it had saved before is kept" in m
                   and "not currently accepting connections" in m for m in shown), shown
        # ACP: the line comes in the session before the close answers.
        assert (await agent.prompt(acp_sid, "acp q2", timeout=60)).stop_reason == "end_turn"
        await asyncio.wait_for(agent.conn.close_session(session_id=acp_sid), 60)
        told = agent.client.text(acp_sid)
        assert NOT_SAVED in told and acp_sid in told, told
    finally:
        _allow(admin, url, True)
    # Nothing stored before the outage was lost.
    assert read_rounds(url, sid) == saved and read_rounds(url, acp_sid) == acp_saved


async def test_ollie_p_says_when_its_session_could_not_be_saved_at_the_end(database, scripted_llm, tmp_path):
    url, admin = database
    llm = scripted_llm("openai", check=False)
    # The answer's end waits until the store is down: a fixed delay let a loaded machine finish the turn first.
    held = threading.Event()
    llm.script(Reply.text("a slow answer", hold=held))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ollie.cli", "-p", "hello", "--no-preflight", stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=home_env(tmp_path, **llm.env(), OLLIE_STORE=url))
    try:
        # The turn has started and the session's record is in the store (its registry open): now it goes down. (Down
        # while the registry was still opening, as the turn's first request often came first, its pool tried on for
        # its whole 10 s before the turn went on.)
        for _ in range(600):
            if llm.chat_requests and await asyncio.to_thread(_recorded, url):
                break
            await asyncio.sleep(0.05)
        _allow(admin, url, False)
        held.set()
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        _allow(admin, url, True)
    assert b"a slow answer" in out
    assert NOT_SAVED.encode() in err and b"What it had saved before is kept" in err, err.decode()[-3000:]


def test_a_teammates_round_the_store_was_down_for_is_saved_by_her_next_save_and_so_are_the_next_two(
        database, scripted_llm, tmp_path, monkeypatch):
    # After one round of hers failed to save (the server down a moment), nothing more of hers was saved to his session
    # until she opened it again. A store of one role for the team: the server lets anyone write; ollie appends only.
    url, admin = database
    llm = scripted_llm("openai", check=False)
    llm.script(Reply.text("noted"))
    bob = home_env(tmp_path / "bob", **llm.env(), OLLIE_STORE=url, OLLIE_USER="bob")
    sid = _session_id(subprocess.run([sys.executable, "-m", "ollie.cli", "-p", "remember 9", "--no-preflight"],
                                     capture_output=True, text=True, timeout=60, env=bob))
    shared = subprocess.run([sys.executable, "-m", "ollie.cli", "store", "share", sid, "backend"], capture_output=True,
                            text=True, timeout=60, env=bob)
    assert shared.returncode == 0, shared.stderr
    log, _, turn, reported = teammate_turns(url, sid, monkeypatch, user="alice")
    turn("her first")
    log.flush()
    _allow(admin, url, False)
    try:
        for text in ("her second", "her third"):  # two rounds the server is down for: told once (each told it)
            turn(text)
            with pytest.raises(StoreUnavailableError, match="not currently accepting connections"):
                log.flush()
    finally:
        _allow(admin, url, True)
    assert len(reported) == 1 and reported[0].endswith("retrying at the next save"), reported
    turn("her fourth")
    log.flush()  # raises nothing: the rounds that failed are stored now
    log.close()
    assert _user_texts(url, sid) == ["remember 9", "noted", *HER_FOUR_TURNS]
    assert len(reported) == 1, reported


async def _alices_session(start_daemon, url: str, llm) -> tuple[Any, str]:
    """Alice's daemon on the store at `url`, and a new session of hers ("kept")."""
    daemon = await start_daemon("laptop", {**llm.env(), "OLLIE_STORE": url, "OLLIE_USER": "alice"})
    return daemon, (await daemon.request("ollie/session/new", {"title": "kept"}))["session"]


async def test_a_store_that_hangs_holds_no_change_of_approval(database, start_daemon, scripted_llm):
    # Every write method reads the session's record first (is it archived?): a store that does not answer (here
    # another connection holds the sessions table) held `ollie/setApproval` with it, with no bound.
    url, _ = database
    llm = scripted_llm("openai", check=False)
    llm.script(Reply.text("first answer"))
    daemon, sid = await _alices_session(start_daemon, url, llm)
    assert (await daemon.request("ollie/submit", {"session": sid, "text": "q1"}))["reply"] == "first answer"
    with psycopg.connect(url) as holder:
        holder.execute("LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE")
        assert await daemon.request("ollie/setApproval", {"session": sid, "approval": "read-only"}, timeout=20) == {}
        assert (await daemon.request("ollie/state", {"session": sid}, timeout=20))["approval"] == "read-only"


async def test_a_submit_sent_before_the_stop_is_dropped_while_its_archive_check_waits(database, start_daemon,
                                                                                     scripted_llm):
    # A submit reads the session's record before it waits for its turn (is it archived?): a Stop that came while
    # that read was under way left it out of the submits it drops, and it ran once the stopped turn ended. Here the
    # read waits on a locked table; on a loaded machine it was a few ms of a sqlite read (seen once in CI).
    url, _ = database
    llm = scripted_llm("openai")
    held = threading.Event()  # the answer streams until the Stop, however slow the machine (~8 s of it could end first)
    llm.script(Reply(text="word " * 80, chunk_size=5, hold=held))
    daemon, sid = await _alices_session(start_daemon, url, llm)
    first = asyncio.ensure_future(daemon.request("ollie/submit", {"session": sid, "text": "talk a lot"}))
    deadline = time.monotonic() + 20
    while not any(e["role"] == "assistant" for e in daemon.client.ollie_events):  # type: ignore[attr-defined]
        assert time.monotonic() < deadline and not first.done()
        await asyncio.sleep(0.01)
    with psycopg.connect(url) as holder:
        holder.execute("LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE")
        second = asyncio.ensure_future(daemon.request("ollie/submit", {"session": sid, "text": "then this"}))
        await daemon.request("ollie/state", {"session": sid})  # a round trip: the second submit arrived
        assert await daemon.request("ollie/interrupt", {"session": sid}, timeout=20) == {"interrupted": True}
    assert [(await r)["stop"] for r in (first, second)] == ["interrupted", "interrupted"]
    held.set()  # the server's end
    assert len(llm.chat_requests) == 1


@pytest.mark.parametrize("method", ["ollie/queue", "ollie/inject"])
async def test_a_prompt_queued_before_the_stop_is_held_though_its_archive_check_waits(database, start_daemon,
                                                                                    scripted_llm, method):
    # A queue (or an inject) reads the session's record first, as a submit does: one sent before a Stop that came
    # while that read was under way was queued after the stop held the queue, so it ran after the next turn.
    url, _ = database
    llm = scripted_llm("openai")
    held = threading.Event()  # the answer streams until the Stop, however slow the machine (~8 s of it could end first)
    llm.script(Reply(text="word " * 80, chunk_size=5, hold=held), Reply(text="next answer"))
    daemon, sid = await _alices_session(start_daemon, url, llm)
    first = asyncio.ensure_future(daemon.request("ollie/submit", {"session": sid, "text": "talk a lot"}))
    events = daemon.client.ollie_events  # type: ignore[attr-defined]
    deadline = time.monotonic() + 20
    while not any(e["role"] == "assistant" for e in events):
        assert time.monotonic() < deadline and not first.done()
        await asyncio.sleep(0.01)
    seen = {"seen": max(e["seq"] for e in events)} if method == "ollie/queue" else {}
    with psycopg.connect(url) as holder:
        holder.execute("LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE")
        sent = asyncio.ensure_future(daemon.request(method, {"session": sid, "text": "then this", **seen}))
        await daemon.request("ollie/state", {"session": sid})  # a round trip: the queue arrived
        assert await daemon.request("ollie/interrupt", {"session": sid}, timeout=20) == {"interrupted": True}
    await sent
    assert (await first)["stop"] == "interrupted"
    held.set()  # the server's end
    state = await daemon.request("ollie/state", {"session": sid})
    assert (state["queuedPrompts"], state["queueHeld"]) == (["then this"], True)
    # Held as the Stop holds what is queued: the next prompt runs alone.
    assert (await daemon.request("ollie/submit", {"session": sid, "text": "next"}, timeout=20))["reply"] == "next answer"
    assert len(llm.chat_requests) == 2



def _drop_tables(admin: psycopg.Connection, url: str, holder: psycopg.Connection) -> None:
    """The store gone under its daemons (its tables dropped, as a teardown of a team's schema would)."""
    holder.execute("DROP TABLE session_rounds, sessions CASCADE")
    holder.commit()


@pytest.mark.parametrize("drop", [lambda admin, url, _: _allow(admin, url, False), _drop_tables],
                         ids=["server-drops-connections", "tables-dropped"])
async def test_a_store_that_drops_while_a_listing_counts_turns_answers_store_unavailable(database, start_daemon,
                                                                                          scripted_llm, drop):
    # session/list reads the page, then each listed session's turn count from its last round: a store gone between
    # the two (here while the count's read waits on a lock another connection holds) answered -32603 with psycopg's
    # text where its tables were dropped; every read of the listing answers -32009 naming the store.
    url, admin = database
    llm = scripted_llm("openai", check=False)
    llm.script(Reply.text("first answer"))
    daemon, sid = await _alices_session(start_daemon, url, llm)
    assert (await daemon.request("ollie/submit", {"session": sid, "text": "q1"}))["reply"] == "first answer"
    await _saved_with(url, sid, b"first answer")
    holder = psycopg.connect(url)  # a transaction of its own, left open until the store is gone
    holder.execute("LOCK TABLE session_rounds IN ACCESS EXCLUSIVE MODE")
    listing = asyncio.ensure_future(daemon.request("ollie/session/list", {}, timeout=60))
    waiting = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
    deadline = time.monotonic() + 30
    while holder.execute(waiting).fetchone() != (1,):  # the page is read; the count's read waits on the lock
        assert time.monotonic() < deadline and not listing.done()
        await asyncio.sleep(0.01)
    try:
        drop(admin, url, holder)
        with pytest.raises(JsonRpcException) as caught:
            await listing
    finally:
        holder.close()
        _allow(admin, url, True)
    assert caught.value.code == -32009, (caught.value.code, caught.value.message)
    assert caught.value.message.startswith("store unavailable: ") and "OLLIE_STORE=" in caught.value.message, \
        caught.value.message
    # The daemon keeps serving: the same request answered again (by the same code, where the tables are gone).
    with pytest.raises(JsonRpcException) if drop is _drop_tables else contextlib.nullcontext():
        listed = (await daemon.request("ollie/session/list", {}, timeout=60))["sessions"]
        assert [(s["id"], s["turns"]) for s in listed] == [(sid, 1)], listed


async def test_a_lock_held_outside_ollie_bounds_the_wait_and_names_its_holder(database, start_daemon, scripted_llm):
    # An admin's psql transaction holding a session's row (or a stuck migration) made the daemon wait for it without
    # bound: a rename never answered. The wait now ends after two leases (lock_timeout), saying who held the lock,
    # and the daemon serves on meanwhile and after.
    url, _ = database
    llm = scripted_llm("openai", check=False)
    daemon = await start_daemon("laptop", {**llm.env(), "OLLIE_STORE": url, "OLLIE_USER": "alice",
                                           "OLLIE_LEASE_TTL": "2"})
    sid = (await daemon.request("ollie/session/new", {"title": "kept"}))["session"]
    with psycopg.connect(url, application_name="admin's psql") as holder:
        assert holder.execute("SELECT 1 FROM sessions WHERE id = %s FOR UPDATE", (sid,)).fetchone()
        pid = holder.info.backend_pid
        with pytest.raises(JsonRpcException) as caught:
            await daemon.request("ollie/session/rename", {"session": sid, "title": "renamed"}, timeout=30)
        assert caught.value.code == -32009, (caught.value.code, caught.value.message)
        message = caught.value.message
        assert message.startswith("store unavailable: session store OLLIE_STORE=") and "gave up after 4 s" in message, \
            message
        assert f"held by postgres (admin's psql, pid {pid})" in message, message
        assert [s["title"] for s in (await daemon.request("ollie/session/list", {}))["sessions"]] == ["kept"]
    assert await daemon.request("ollie/session/rename", {"session": sid, "title": "renamed"}) == {}
    assert [s["title"] for s in (await daemon.request("ollie/session/list", {}))["sessions"]] == ["renamed"]
