"""A Core on a PostgreSQL store: renames stay in the store, the loop never waits on it, a failed save is told at once."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest
import pytest_asyncio
from psycopg import sql

from ollie.agent.core import Core
from ollie.agent.limits import LoopLimits
from ollie.sessions import persist
from ollie.sessions.location import store_url
from ollie.testing import Reply
from tests.procs import eventually
from tests.teams.conftest import role_url

sys.path.insert(0, str(Path(__file__).parents[1] / "agent"))  # the engine tests' helpers (not a package)
from agentkit import FAST_LIMITS, ToyServer, drain, write_agent  # noqa: E402


@pytest_asyncio.fixture
async def make_core(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_url: str
                    ) -> AsyncIterator[Callable[..., Any]]:
    """`await make_core(llm, url)`: a Core with a toy tool server whose sessions live at the store `url`.

    (It asks for `store_url` so that it is closed before the store's pools are.)
    """
    agents = tmp_path / "agents"
    agents.mkdir()
    write_agent(agents, "default")
    (tmp_path / "work").mkdir()
    cores: list[Core] = []

    async def make(llm: Any, url: str) -> Core:
        monkeypatch.setenv("OLLIE_STORE", url)

        def tools(cwd: Path, session_id: str, env: dict[str, str]) -> Any:
            from ollie.tools.dispatcher import Dispatcher

            dispatcher = Dispatcher()
            dispatcher.add_server("toy", ToyServer())
            return dispatcher

        core = await Core.create(env=llm.env(), agents_dirs=[agents], dispatcher_factory=tools, cwd=tmp_path / "work",
                                 sessions_dir=tmp_path / "sessions", limits=LoopLimits(**FAST_LIMITS))
        cores.append(core)
        return core

    yield make
    for core in cores:
        await core.close()
        await asyncio.to_thread(persist.release, core.session_id)


def _lock_waiters(url: str, table: str) -> int:
    """How many transactions wait for a lock on `table` (of the store at `url`)."""
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = to_regclass(%s)",
                            (table,)).fetchone()[0]


def _user_texts(url: str, session_id: str) -> list[str]:
    """The conversation saved at the store `url` (OLLIE_STORE names it: persist.load reads from there)."""
    assert store_url() == url
    return [m.content for m in persist.load(Path(), session_id).messages if m.role in ("user", "assistant")]


async def test_sessions_lists_the_store_while_the_loop_keeps_running(make_core, scripted_llm, store_url):
    llm = scripted_llm("openai")
    llm.script(Reply.text("an answer"))
    core = await make_core(llm, store_url)
    await core.submit("a question")
    await asyncio.to_thread(core._host.session_file.flush)

    # Another connection holds the rounds table until the test lets go: a listing waits for it.
    locked, release = threading.Event(), threading.Event()

    def hold_the_table() -> None:
        with psycopg.connect(store_url) as conn:
            conn.execute("LOCK TABLE session_rounds IN ACCESS EXCLUSIVE MODE")
            locked.set()
            release.wait(30)  # a loop held by the listing never lets go: the listing then ends first, and fails below

    holder = threading.Thread(target=hold_the_table)
    holder.start()
    assert await asyncio.to_thread(locked.wait, 10)
    listing = asyncio.ensure_future(core.submit("/sessions"))
    try:
        # The listing waits on the table in the database while this coroutine still runs: off the loop.
        await eventually(lambda: _lock_waiters(store_url, "session_rounds"), "the listing waiting for the table")
        assert not listing.done()
    finally:
        release.set()
        await asyncio.to_thread(holder.join)
    result = await listing
    assert core.session_id in result.reply and result.reply.startswith("sessions (1):")


@pytest.fixture
def limited_url(pg_server, store_url) -> Any:
    """The test's store as a role of its own (not a superuser): the test can revoke what it may write."""
    schema = store_url.rsplit("%3D", 1)[1]
    role = f"r_{schema}"
    with psycopg.connect(pg_server.url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(role),
                                                                       sql.Literal(pg_server.password)))
        conn.execute(sql.SQL("GRANT ALL ON SCHEMA {} TO {}").format(sql.Identifier(schema), sql.Identifier(role)))
    url = role_url(store_url, role)

    def grant(allowed: bool) -> None:
        with psycopg.connect(pg_server.url, autocommit=True) as conn:
            statement = "GRANT INSERT ON {}.session_rounds TO {}" if allowed else \
                "REVOKE INSERT ON {}.session_rounds FROM {}"
            conn.execute(sql.SQL(statement).format(sql.Identifier(schema), sql.Identifier(role)))

    return url, grant


async def test_a_failed_background_save_is_told_at_once_and_the_next_save_writes_everything(
        make_core, scripted_llm, limited_url):
    url, grant = limited_url
    llm = scripted_llm("openai")
    llm.script(Reply.text("first answer"), Reply.text("second answer"), Reply.text("third answer"))
    core = await make_core(llm, url)
    sub = core.bus.subscribe()
    await core.submit("first question")
    await asyncio.to_thread(core._host.session_file.flush)

    grant(False)  # the database refuses this role's rounds from now on
    await core.submit("second question")
    errors: list[str] = []

    def told() -> bool:
        errors.extend(e.content for e in drain(sub) if e.role == "error")
        return bool(errors)

    await eventually(told, "the failed save told")  # once the writer thread tried it (5 s was short under load)
    assert errors and errors[0].startswith("session not saved:") and "permission denied" in errors[0], errors
    assert errors[0].endswith("retrying at the next save")
    # The turn saved twice (its prompt at its start, its end): once every write of it was tried, each failure was
    # told; the end's save was either tried on its own (a second failure) or, queued before the first one failed,
    # dropped behind it (a round cannot follow a missing one): which one depends on the writer thread's timing.
    await asyncio.to_thread(core._host.session_file.storage._wait)
    errors += [e.content for e in drain(sub) if e.role == "error"]
    assert len(errors) in (1, 2) and all(e.startswith("session not saved:") for e in errors), errors
    assert _user_texts(url, core.session_id) == ["first question", "first answer"]

    grant(True)
    await core.submit("third question")
    await asyncio.to_thread(core._host.session_file.flush)  # raises nothing: the snapshot healed the failure
    assert _user_texts(url, core.session_id) == ["first question", "first answer", "second question",
                                                 "second answer", "third question", "third answer"]
    assert not [e for e in drain(sub) if e.role == "error"]


def test_a_server_restart_between_rounds_costs_no_write(monkeypatch):
    from ollie.backend.types import Message
    from ollie.sessions.pg import log as pg_log
    from ollie.sessions.session import Session
    from tests.teams.pgserver import PgServer

    server = PgServer()  # its own: the test restarts it
    try:
        monkeypatch.setenv("OLLIE_STORE", server.url)
        session = Session()
        log, _ = persist.open_session("unused", session.id)
        reported: list[str] = []
        log.on_error = reported.append
        session.messages += [Message("user", "before the restart"), Message("assistant", "saved")]
        log.save(session)
        log.flush()
        server.restart()  # every pooled connection is dead now
        session.messages += [Message("user", "after the restart"), Message("assistant", "saved too")]
        log.save(session)
        log.flush()  # nothing to raise: the pool handed out a live connection
        assert reported == []
        assert [m.content for m in persist.load("unused", session.id).messages] == [
            "before the restart", "saved", "after the restart", "saved too"]
        log.close()
    finally:
        pg_log.close_all()
        server.stop()


async def test_sessions_with_none_saved_names_the_store_not_a_directory(make_core, scripted_llm, store_url, tmp_path):
    core = await make_core(scripted_llm("openai"), store_url)
    reply = (await core.submit("/sessions")).reply
    assert reply.startswith("no saved sessions in postgres"), reply
    assert str(tmp_path) not in reply


async def test_a_turn_begins_without_a_worker_thread_to_check_its_saves(make_core, scripted_llm, store_url):
    # Before each turn, whether the store still takes the session's saves (not once another process took it over) was
    # asked in a thread of the loop's pool, waiting there up to 5 s for the last turn's writes: a turn began only once a
    # thread was free, though nothing was pending, and one whose last saves were pending held a thread meanwhile.
    llm = scripted_llm("openai")
    llm.script(Reply.text("first"), Reply.text("second"), Reply.text("third"))
    core = await make_core(llm, store_url)
    assert (await core.submit("q1")).reply == "first"
    await asyncio.to_thread(core._host.session_file.flush)
    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(1, thread_name_prefix="test-pool"))
    locked, release = threading.Event(), threading.Event()

    def hold_the_table() -> None:
        with psycopg.connect(store_url) as conn:
            conn.execute("LOCK TABLE session_rounds IN ACCESS EXCLUSIVE MODE")
            locked.set()
            release.wait(60)

    async def begins_while_the_pool_is_busy(text: str, *, then: Callable[[], None] = lambda: None) -> Any:
        busy = threading.Event()
        taken = loop.run_in_executor(None, busy.wait, 60)  # the pool's one thread, busy with other work
        turns = core.bus.subscribe(frozenset({"turn"}))
        submitted = asyncio.ensure_future(core.submit(text))
        try:
            then()
            async with asyncio.timeout(30):
                while (await turns.get()).content != "start":
                    pass
        finally:
            turns.close()
            busy.set()
            await taken
        return await submitted

    holder = threading.Thread(target=hold_the_table)
    holder.start()
    try:
        assert await asyncio.to_thread(locked.wait, 10)
        assert (await begins_while_the_pool_is_busy("q2")).reply == "second"  # nothing pending: it begins at once
        # Its saves wait for the table: the next turn waits for them, on the loop, and begins once they are done.
        await eventually(lambda: _lock_waiters(store_url, "session_rounds"), "the last turn's save waiting")
        assert (await begins_while_the_pool_is_busy("q3", then=release.set)).reply == "third"
    finally:
        release.set()
        await asyncio.to_thread(holder.join)
    await asyncio.to_thread(core._host.session_file.flush)
    assert _user_texts(store_url, core.session_id) == ["q1", "first", "q2", "second", "q3", "third"]
