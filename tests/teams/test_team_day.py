"""A day of two people of one team, each on a daemon of their own, on a PostgreSQL server that blips and restarts."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from collections.abc import Iterator

import psycopg
import pytest
from pygls.exceptions import JsonRpcException

from ollie.sessions.pg import log as pg_log
from ollie.testing import Reply
from tests.teams.conftest import lapse_lease, share_with_backend
from tests.teams.pgserver import PgServer, pg_bin


@pytest.fixture
def own_server() -> Iterator[PgServer]:
    """A server of this test's own: it is cut off and stopped mid-turn."""
    server = PgServer()
    yield server
    pg_log.close_all()
    server.stop()


def _listed(answer: dict) -> dict:
    return {s["id"]: s for s in answer["sessions"]}


async def _texts(daemon, sid: str) -> list[str]:
    return [m.get("content") or "" for m in (await daemon.request("ollie/context", {"session": sid}))["messages"]
            if m["role"] in ("user", "assistant")]


async def _team(start_daemon, url: str, llm) -> tuple:
    alice = await start_daemon("alice", {**llm.env(), "OLLIE_STORE": url, "OLLIE_USER": "alice"})
    bob = await start_daemon("bob", {**llm.env(), "OLLIE_STORE": url, "OLLIE_USER": "bob", "OLLIE_TEAMS": "backend"})
    return alice, bob


async def test_a_teammates_turns_in_a_shared_session_are_counted_in_both_listings(start_daemon, store_url,
                                                                                  scripted_llm):
    # session/list counted the turns of the owner's last round alone: after bob's two turns in alice's session both
    # listings said 1 where its load said 3 (the title and directory listed stay hers).
    llm = scripted_llm("openai")
    llm.script(Reply.text("a1"), Reply.text("b1"), Reply.text("b2"))
    alice, bob = await _team(start_daemon, store_url, llm)
    sid = (await alice.request("ollie/session/new", {"title": "the migration"}))["session"]
    await alice.request("ollie/submit", {"session": sid, "text": "q1"})
    share_with_backend(store_url, sid)
    await alice.request("ollie/session/close", {"session": sid})
    await bob.request("ollie/session/load", {"session": sid})
    for text in ("bq1", "bq2"):
        await bob.request("ollie/submit", {"session": sid, "text": text})
    await bob.request("ollie/session/close", {"session": sid})  # his rounds all written before it answers
    for daemon in (bob, alice):
        info = _listed(await daemon.request("ollie/session/list", {}))[sid]
        assert (info["turns"], info["title"], info["owner"]) == (3, "the migration", "alice"), info
    assert (await alice.request("ollie/session/load", {"session": sid}))["info"]["turns"] == 3


async def test_a_day_of_blips_a_restart_and_a_frozen_daemon_loses_and_repeats_nothing(start_daemon, own_server,
                                                                                      scripted_llm):
    url = own_server.url
    llm = scripted_llm("openai")
    holds = [threading.Event() for _ in range(3)]
    llm.script(Reply.text("a1"), Reply.text("a2", hold=holds[0]), Reply.text("a3", hold=holds[1]),
               Reply.text("a4"), Reply.text("b1", hold=holds[2]))
    alice, bob = await _team(start_daemon, url, llm)
    sid = (await alice.request("ollie/session/new", {"title": "the migration"}))["session"]
    await alice.request("ollie/submit", {"session": sid, "text": "q1"})
    share_with_backend(url, sid)

    async def mid_turn(text: str, requests: int, cut) -> dict:
        """Alice's turn, with `cut` done while its answer streams (the model's `requests`th request)."""
        turn = asyncio.ensure_future(alice.request("ollie/submit", {"session": sid, "text": text}, timeout=120))
        while len(llm.chat_requests) < requests:
            await asyncio.sleep(0.01)  # the scripted server has the request: its answer streams
        cut()
        holds[requests - 2].set()
        return await turn

    # A network blip while alice's turn streams: every connection of the server cut.
    def blip() -> None:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                          "AND backend_type = 'client backend'")

    assert (await mid_turn("q2", 2, blip))["reply"] == "a2"
    # The database stopped while her next turn streams, started again after it ended: its rounds wait, then land.
    pg_ctl = pg_bin("pg_ctl")
    options = f"-p {own_server.port} -k {own_server.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
    stop = (pg_ctl, "-D", str(own_server.data), "-m", "fast", "-w", "stop")
    assert (await mid_turn("q3", 3, lambda: own_server._run(*stop)))["reply"] == "a3"
    err = None
    try:
        await bob.request("ollie/session/list", {}, timeout=60)
    except Exception as exc:  # noqa: BLE001
        err = exc
    assert err is not None and "store unavailable" in str(err) and "OLLIE_STORE=" in str(err), err
    own_server._run(pg_ctl, "-D", str(own_server.data), "-o", options, "-l", str(own_server.dir / "log"), "-w",
                    "start")
    assert (await alice.request("ollie/submit", {"session": sid, "text": "q4"}, timeout=60))["reply"] == "a4"
    # Told once, while it was down, what is being done; the blip was not worth a word.
    told = alice.errors(sid)
    assert len(told) == 1 and "Connection refused" in told[0] and told[0].endswith("retrying at the next save"), told
    # Bob reads along: her four turns listed once written, and forked, each once.
    while _listed(await bob.request("ollie/session/list", {}))[sid]["turns"] != 4:
        await asyncio.sleep(0.05)
    fork = (await bob.request("ollie/session/fork", {"session": sid}))["session"]
    assert await _texts(bob, fork) == ["q1", "a1", "q2", "a2", "q3", "a3", "q4", "a4"]
    # Bob's daemon frozen while his turn streams (a suspended laptop, shorter than the lease); meanwhile alice renames
    # and archives her session. Woken, his turn ends and is saved; the listings say what each did.
    pid = bob.client._server.pid
    turn = asyncio.ensure_future(bob.request("ollie/submit", {"session": fork, "text": "bq1"}, timeout=120))
    while len(llm.chat_requests) < 5:
        await asyncio.sleep(0.01)
    os.kill(pid, signal.SIGSTOP)
    try:
        holds[2].set()
        await alice.request("ollie/session/rename", {"session": sid, "title": "the migration, done"})
        await alice.request("ollie/session/archive", {"session": sid})
    finally:
        os.kill(pid, signal.SIGCONT)
    assert (await turn)["reply"] == "b1" and bob.errors(fork) == []
    await bob.request("ollie/session/close", {"session": fork})
    await alice.request("ollie/session/close", {"session": sid})
    mine = _listed(await bob.request("ollie/session/list", {"includeArchived": True}))
    assert (mine[fork]["title"], mine[fork]["turns"], mine[fork]["owner"]) == ("the migration (fork)", 5, "bob")
    assert (mine[sid]["title"], mine[sid]["turns"], mine[sid]["archived"]) == ("the migration, done", 4, True)
    assert sid not in _listed(await bob.request("ollie/session/list", {}))
    assert fork not in _listed(await alice.request("ollie/session/list", {"includeArchived": True}))  # his own
    # What is stored is each turn once, in order: her session's from the store, his fork's from a load.
    await bob.request("ollie/session/load", {"session": fork})
    assert await _texts(bob, fork) == ["q1", "a1", "q2", "a2", "q3", "a3", "q4", "a4", "bq1", "b1"]
    await alice.request("ollie/session/unarchive", {"session": sid})
    await alice.request("ollie/session/load", {"session": sid})
    assert await _texts(alice, sid) == ["q1", "a1", "q2", "a2", "q3", "a3", "q4", "a4"]


async def test_a_fork_of_a_session_answering_on_a_teammates_daemon_leaves_the_running_turn_out(
        start_daemon, start_agent, store_url, scripted_llm):
    # The fork copied the prompt of alice's turn still answering on her daemon (saved as it came) and counted it a turn:
    # bob's conversation went on from a question with no answer, his next prompt right after hers.
    llm = scripted_llm("openai")
    holds = [threading.Event(), threading.Event()]
    llm.script(Reply.text("a1", hold=holds[0]), Reply.text("a2", hold=holds[1]), Reply.text("b1"), Reply.text("b2"))
    alice, bob = await _team(start_daemon, store_url, llm)
    sid = (await alice.request("ollie/session/new", {"title": "the migration"}))["session"]
    share_with_backend(store_url, sid)

    async def answering(text: str, requests: int) -> asyncio.Future:
        turn = asyncio.ensure_future(alice.request("ollie/submit", {"session": sid, "text": text}, timeout=60))
        while len(llm.chat_requests) < requests:
            await asyncio.sleep(0.01)  # the model has the request: the turn answers
        while _listed(await bob.request("ollie/session/list", {})).get(sid, {}).get("turns") != requests:
            await asyncio.sleep(0.05)  # its prompt is stored
        return turn

    first = await answering("q1", 1)
    with pytest.raises(JsonRpcException) as caught:
        await bob.request("ollie/session/fork", {"session": sid})
    assert caught.value.code == -32602 and "params: session: session " in caught.value.message and \
        "runs its first turn" in caught.value.message, caught.value.message
    holds[0].set()
    await first
    second = await answering("q2", 2)
    fork = await bob.request("ollie/session/fork", {"session": sid})
    assert fork["info"]["turns"] == 1 and await _texts(bob, fork["session"]) == ["q1", "a1"]
    with pytest.raises(JsonRpcException) as caught:
        await bob.request("ollie/session/fork", {"session": sid, "turn": 2})
    assert caught.value.code == -32602 and "turn 2 has not ended" in caught.value.message, caught.value.message
    # His ACP agent forks it the same way.
    agent = await start_agent(env={**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "bob", "OLLIE_TEAMS": "backend"})
    forked = await asyncio.wait_for(agent.conn.fork_session(session_id=sid, cwd=str(agent.workspace), mcp_servers=[]),
                                    30)
    holds[1].set()
    await second
    asked = []
    assert (await bob.request("ollie/submit", {"session": fork["session"], "text": "bq1"}))["reply"] == "b1"
    asked.append(llm.chat_requests[-1])
    assert (await agent.prompt(forked.session_id, "bq2")).stop_reason == "end_turn"
    asked.append(llm.chat_requests[-1])
    for request, prompt in zip(asked, ("bq1", "bq2"), strict=True):
        assert [m["content"] for m in request.body["messages"] if m["role"] != "system"] == ["q1", "a1", prompt]


async def test_a_daemon_frozen_mid_commit_holds_no_teammate_up_past_its_lease(start_daemon, store_url, scripted_llm,
                                                                              monkeypatch):
    # Stopped inside a transaction (a laptop suspended mid-commit), a daemon kept its lease row locked for as long as
    # it stayed stopped: the other machine's load, once the lease lapsed, waited on it, and with it every request of
    # that daemon's registry thread. The server now ends such a connection once it idles past a lease.
    from ollie.sessions.pg.store import PgStore, StoreUnavailableError

    monkeypatch.setenv("OLLIE_LEASE_TTL", "3")
    llm = scripted_llm("openai")
    llm.script(Reply.text("a1"), Reply.text("a2"))
    team = {**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "alice", "OLLIE_LEASE_TTL": "3"}
    laptop = await start_daemon("laptop", team)
    desk = await start_daemon("desk", team)
    sid = (await laptop.request("ollie/session/new", {"title": "the migration"}))["session"]
    await laptop.request("ollie/submit", {"session": sid, "text": "q1"})
    frozen = PgStore(store_url, migrate=False)  # the laptop's connection, as ollie opens it, stopped mid-commit

    def leased() -> bool:
        with frozen.reading() as seen:
            return seen.execute("SELECT 1 FROM session_leases WHERE session_id = ?", (sid,)).fetchone() is not None

    # The laptop's store writes its lease in a thread of its own, after the turn's answer (CI read it too soon once).
    deadline = asyncio.get_running_loop().time() + 30
    while not leased():
        assert asyncio.get_running_loop().time() < deadline, "the laptop never took the session's lease"
        await asyncio.sleep(0.05)
    commit = frozen.transaction()
    conn = commit.__enter__()
    pid = laptop.client._server.pid
    try:
        assert conn.execute("SELECT 1 FROM session_leases WHERE session_id = ? FOR UPDATE", (sid,)).fetchone()
        os.kill(pid, signal.SIGSTOP)  # and its heartbeat with it: the lease lapses
        while True:
            try:
                loaded = await desk.request("ollie/session/load", {"session": sid}, timeout=30)
                break
            except JsonRpcException as exc:
                assert exc.code == -32007, exc  # live on the laptop until its lease lapses
                await asyncio.sleep(0.2)
        assert loaded["info"]["turns"] == 1
        assert (await desk.request("ollie/submit", {"session": sid, "text": "q2"}))["reply"] == "a2"
        with pytest.raises(StoreUnavailableError, match="idle-in-transaction"):
            commit.__exit__(None, None, None)  # woken, its transaction is gone: nothing it held is written
    finally:
        os.kill(pid, signal.SIGCONT)
        with contextlib.suppress(Exception):  # a failed test's transaction, still open: the pool waits for it
            commit.__exit__(None, None, None)
        frozen.close()


async def test_a_daemon_whose_session_was_taken_over_runs_no_turn_it_cannot_save(start_daemon, store_url, scripted_llm,
                                                                                  monkeypatch):
    # Woken after its lease lapsed and the desk took the session over, the laptop answered every later turn and saved
    # none: the user was told of the first only. A turn it knows it cannot save is refused before it runs (the first,
    # when the laptop cannot know yet, is answered and told as its save is refused), and the desk's turn stays.
    monkeypatch.setenv("OLLIE_USER", "alice")  # this process reads alice's rounds below
    llm = scripted_llm("openai", check=False)
    llm.script(Reply.text("a1"), Reply.text("desk answer"), Reply.text("late answer"), Reply.text("later answer"))
    team = {**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "alice", "OLLIE_LEASE_TTL": "3"}
    laptop = await start_daemon("laptop", team)
    desk = await start_daemon("desk", team)
    sid = (await laptop.request("ollie/session/new", {"title": "the migration"}))["session"]
    assert (await laptop.request("ollie/submit", {"session": sid, "text": "q1"}))["reply"] == "a1"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while b"a1" not in (pg_log.read_rounds(store_url, sid) or b""):  # written on the log's thread, after the answer
        assert loop.time() < deadline
        await asyncio.sleep(0.05)
    pid = laptop.client._server.pid
    os.kill(pid, signal.SIGSTOP)  # a suspended laptop: its heartbeat stops, the lease lapses
    try:
        lapse_lease(store_url, sid, 3)  # (the test sat it out)
        await desk.request("ollie/session/load", {"session": sid}, timeout=30)
        assert (await desk.request("ollie/submit", {"session": sid, "text": "desk question"}))["reply"] == "desk answer"
    finally:
        os.kill(pid, signal.SIGCONT)
    for text in ("late question", "later question"):
        told = len(laptop.errors(sid))
        answer = await laptop.request("ollie/submit", {"session": sid, "text": text}, timeout=60)
        deadline = loop.time() + 30
        while len(laptop.errors(sid)) == told:  # refused: said with the answer; answered: said once its save failed
            assert loop.time() < deadline, (text, answer, laptop.errors(sid))
            await asyncio.sleep(0.05)
        said = laptop.errors(sid)[-1]
        assert "lease lapsed" in said and "open the session again" in said, said
        if answer["stop"] == "error":
            assert answer["reply"] == "" and answer["error"] == said, answer
        else:
            assert text == "late question", answer  # only the first can be answered: the laptop knows by then
    saved = pg_log.read_rounds(store_url, sid) or b""
    assert b"desk answer" in saved and b"late question" not in saved and b"later question" not in saved, saved
