"""Two daemons on two 'machines' (separate HOMEs) share sessions through one PostgreSQL store."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import LiteralString

import pytest
import pytest_asyncio
from pygls.exceptions import JsonRpcException

from ollie.sessions.pg.log import read_rounds
from ollie.testing import Reply
from tests.teams.conftest import lapse_lease, share_with_backend, team_daemons

# A test of the module's `team`: it runs in the module's event loop, where the team's daemons' clients live.
in_team = pytest.mark.asyncio(loop_scope="module")


def _alice_env(llm, store_url: str) -> dict[str, str]:
    return {**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "alice"}


def _bob_env(llm, store_url: str) -> dict[str, str]:
    """Bob's: a member of team backend, in `ask`."""
    return {**llm.env(approval="ask"), "OLLIE_STORE": store_url, "OLLIE_USER": "bob", "OLLIE_TEAMS": "backend"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def _team(pg_server, tmp_path_factory, _team_llm) -> AsyncIterator[SimpleNamespace]:
    """One store and pair of daemons (alice's laptop, bob's) for the module's tests of a session alice shares and bob
    resumes, forks or lists, each test in sessions of its own (starting the pair was most of each)."""
    store_url = pg_server.schema_url()
    async with team_daemons(tmp_path_factory.mktemp("team")) as start:
        yield SimpleNamespace(store_url=store_url, laptop=await start("laptop", _alice_env(_team_llm, store_url)),
                              bob=await start("bob", _bob_env(_team_llm, store_url)))


@pytest.fixture
def team(_team: SimpleNamespace, team_llm) -> SimpleNamespace:
    """The module's team, its scripted server (`llm`) with this test's requests alone."""
    return SimpleNamespace(**vars(_team), llm=team_llm)


async def _error(daemon, method: str, params: dict) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as caught:
        await daemon.request(method, params)
    return caught.value


def _texts(context: dict) -> list[str]:
    return [m.get("content") or "" for m in context["messages"]]


async def test_a_session_started_on_one_daemon_is_listed_and_resumed_whole_on_another(
        start_daemon, store_url, scripted_llm):
    llm = scripted_llm("openai")
    llm.script(Reply.text("first answer"), Reply.text("second answer"), Reply.text("third answer"))
    team = {**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "alice"}
    laptop = await start_daemon("laptop", team)
    started = await laptop.request("ollie/session/new", {"title": "shared work"})
    sid = started["session"]
    assert (await laptop.request("ollie/submit", {"session": sid, "text": "first question"}))["reply"] == "first answer"
    assert (await laptop.request("ollie/submit", {"session": sid, "text": "second question"}))["reply"] == \
        "second answer"

    buildbox = await start_daemon("buildbox", team)
    listed = {s["id"]: s for s in (await buildbox.request("ollie/session/list", {}))["sessions"]}
    assert listed[sid]["title"] == "shared work" and listed[sid]["lastTurnResult"] == "end"
    assert listed[sid]["live"] is False  # not live in this daemon

    # Live on the laptop: the build box is told where, and does not take it.
    err = await _error(buildbox, "ollie/session/load", {"session": sid})
    assert err.code == -32007 and "live on" in err.message and "user alice" in err.message, err.message

    # Closed on the laptop: resumed on the build box with the whole history, and carried on there.
    assert await laptop.request("ollie/session/close", {"session": sid}) == {}
    loaded = await buildbox.request("ollie/session/load", {"session": sid})
    assert loaded["session"] == sid and loaded["info"]["title"] == "shared work"
    texts = _texts(await buildbox.request("ollie/context", {"session": sid}))
    assert ["first question", "first answer", "second question", "second answer"] == \
        [t for t in texts if "question" in t or "answer" in t]
    assert (await buildbox.request("ollie/submit", {"session": sid, "text": "third question"}))["reply"] == \
        "third answer"
    # And the laptop, now the other machine, is refused while the build box holds it.
    err = await _error(laptop, "ollie/session/load", {"session": sid})
    assert err.code == -32007

    # Another user on the same store neither sees nor loads alice's session.
    other = await start_daemon("bob", {**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "bob"})
    assert sid not in [s["id"] for s in (await other.request("ollie/session/list", {}))["sessions"]]
    err = await _error(other, "ollie/session/load", {"session": sid})
    assert err.code == -32001


async def test_a_killed_daemons_session_is_taken_over_after_its_lease_lapses(start_daemon, store_url, scripted_llm,
                                                                            monkeypatch):
    monkeypatch.setenv("OLLIE_USER", "alice")  # this process reads alice's rounds below
    llm = scripted_llm("openai")
    llm.script(Reply.text("before the crash"), Reply.text("after the takeover"))
    # The buildbox asks right after the kill and must still find the lease held: with a heartbeat every TTL/3, the
    # lease outlives the kill by 2/3 of the TTL at least, here 13 s (a loaded machine took over 4 s to ask).
    team = {**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "alice", "OLLIE_LEASE_TTL": "20"}
    laptop = await start_daemon("laptop", team)
    buildbox = await start_daemon("buildbox", team)
    sid = (await laptop.request("ollie/session/new", {}))["session"]
    await laptop.request("ollie/submit", {"session": sid, "text": "the question"})
    # The round is written in the background: once it is committed, a crash cannot take it back.
    while b"before the crash" not in (read_rounds(store_url, sid) or b""):
        await asyncio.sleep(0.01)
    laptop.client._server.kill()  # kill -9: no close, no release; the lease must lapse
    err = await _error(buildbox, "ollie/session/load", {"session": sid})
    assert err.code == -32007 and f"pid {laptop.client._server.pid}" in err.message

    await laptop.client._server.wait()  # gone: no heartbeat of its own lands after the one aged below
    lapse_lease(store_url, sid, 20)  # (the test sat it out: 13-20 s)
    await buildbox.request("ollie/session/load", {"session": sid})
    texts = _texts(await buildbox.request("ollie/context", {"session": sid}))
    assert [t for t in texts if t in ("the question", "before the crash")] == ["the question", "before the crash"]
    assert (await buildbox.request("ollie/submit", {"session": sid, "text": "go on"}))["reply"] == "after the takeover"


async def test_a_resume_that_fails_to_start_gives_the_lease_back(start_daemon, store_url, scripted_llm, monkeypatch):
    from ollie.backend.types import Message
    from ollie.sessions import persist
    from ollie.sessions.registry import Registry
    from ollie.sessions.session import Session
    from ollie.sessions.types import Channel, Request

    registry = Registry(store_url)
    session = Session()
    try:  # a session of an agent this machine does not have
        registry.ensure(Request(id=session.id, user_id="alice", agent_id="ghost", channel=Channel.LSP))
    finally:
        registry.close()
    monkeypatch.setenv("OLLIE_STORE", store_url)
    monkeypatch.setenv("OLLIE_USER", "alice")  # this process acts for alice, whose session it is
    log, _ = persist.open_session("unused", session.id)
    session.messages.append(Message("user", "hello"))
    log.save(session)
    log.close()

    daemon = await start_daemon("box", {**scripted_llm("openai").env(), "OLLIE_STORE": store_url,
                                        "OLLIE_USER": "alice"})
    err = await _error(daemon, "ollie/session/load", {"session": session.id})
    assert "ghost" in err.message
    log, resumed = persist.open_session("unused", session.id)  # not leased by the daemon that failed
    assert [m.content for m in resumed.messages] == ["hello"]
    log.close()


async def test_a_team_member_sees_where_a_shared_session_is_live_and_is_told_why_it_cannot_change_it(
        start_daemon, store_url, scripted_llm):
    import socket


    llm = scripted_llm("openai")
    llm.script(Reply.text("an answer"))
    laptop = await start_daemon("laptop", {**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "alice"})
    sid = (await laptop.request("ollie/session/new", {"title": "the migration"}))["session"]
    await laptop.request("ollie/submit", {"session": sid, "text": "a question"})
    share_with_backend(store_url, sid)  # what `ollie store share` does

    bob = await start_daemon("bob", {**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "bob",
                                     "OLLIE_TEAMS": "backend"})
    where = f"{socket.gethostname()} (pid {laptop.client._server.pid})"
    listed: dict = {}
    for _ in range(600):  # the laptop leases the session with its first (background) write (30 s: a loaded machine)
        listed = {s["id"]: s for s in (await bob.request("ollie/session/list", {}))["sessions"]}
        if listed[sid]["liveOn"]:
            break
        await asyncio.sleep(0.05)
    assert (listed[sid]["live"], listed[sid]["liveOn"]) == (False, where)
    assert (listed[sid]["owner"], listed[sid]["team"]) == ("alice", "backend")  # whose, shared to which team
    own = {s["id"]: s for s in (await laptop.request("ollie/session/list", {}))["sessions"]}
    assert (own[sid]["live"], own[sid]["liveOn"]) == (True, None)  # live here, not elsewhere

    for method, params in (("ollie/session/rename", {"session": sid, "title": "mine now"}),
                           ("ollie/session/archive", {"session": sid})):
        err = await _error(bob, method, params)
        assert err.code == -32008, (method, err.code, err.message)
        assert err.message == (f"forbidden: session {sid} is shared with team 'backend' to read and resume: "
                               "only its owner (alice) may rename, archive or share it"), err.message
    assert (await laptop.request("ollie/session/list", {}))["sessions"][0]["title"] == "the migration"
    # Bob cannot close it on alice's laptop, as the owner's own message says: he is told what he can do, and can.
    err = await _error(bob, "ollie/session/load", {"session": sid})
    assert err.code == -32007 and "close it there first" not in err.message, err.message
    assert ": ask alice to close it there, or fork it to go on in a session of your own; " in err.message, err.message
    forked = await bob.request("ollie/session/fork", {"session": sid})
    assert forked["session"] != sid and forked["info"]["title"] == "the migration (fork)"

    assert await laptop.request("ollie/session/close", {"session": sid}) == {}  # the lease goes with it
    listed = {s["id"]: s for s in (await bob.request("ollie/session/list", {}))["sessions"]}
    assert listed[sid]["liveOn"] is None


@in_team
async def test_a_team_member_resumes_a_shared_session_but_cannot_change_its_agent_mode_or_history(team):
    llm, store_url = team.llm, team.store_url
    sid = await _shared_by_alice(team.laptop, store_url, llm)
    llm.script(Reply.text("bob's answer"))
    bob = team.bob
    await bob.request("ollie/session/load", {"session": sid})
    # Resuming is allowed: bob carries the conversation on.
    assert (await bob.request("ollie/submit", {"session": sid, "text": "bob's question"}))["reply"] == "bob's answer"
    before = await bob.request("ollie/state", {"session": sid})
    err = await _error(bob, "ollie/setApproval", {"session": sid, "approval": "read-only"})
    assert err.code == -32008 and "only its owner may change its approval mode" in err.message, err.message
    err = await _error(bob, "ollie/rewind", {"session": sid, "turn": 1})
    assert err.code == -32008 and "only its owner may rewind it" in err.message, err.message
    for command, what in (("/agent yolo", "change its agent"), ("/clear", "clear its history"),
                          ("/rewind 1", "rewind it"), ("/rewind undo", "rewind it")):
        said = await bob.request("ollie/submit", {"session": sid, "text": command})
        assert f"only its owner may {what}" in str(said), said
    state = await bob.request("ollie/state", {"session": sid})
    assert (state["agent"], state["approval"]) == (before["agent"], before["approval"]), state
    texts = _texts(await bob.request("ollie/context", {"session": sid}))
    assert "alice's question" in texts and "bob's answer" in texts


async def test_a_team_member_cannot_undo_compact_or_move_a_teammates_session(start_daemon, store_url, scripted_llm):
    # Bob could still change Alice's session: his undo saved a note to her model in her history, /compact rewrote
    # her history, /cwd and ollie/setCwd saved his directory as the session's.
    llm = scripted_llm("openai")
    sid = await _shared_by_alice(await start_daemon("laptop", _alice_env(llm, store_url)), store_url, llm)
    bob = await start_daemon("bob", {**llm.env(approval="auto"), "OLLIE_STORE": store_url, "OLLIE_USER": "bob",
                                     "OLLIE_TEAMS": "backend"})  # his own mode: his step runs unasked
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": "echo bob > notes.txt", "language": "bash"}]})),
               Reply.text("done"))
    await bob.request("ollie/session/load", {"session": sid})
    assert (await bob.request("ollie/submit", {"session": sid, "text": "write notes"}, timeout=60))["reply"] == "done"
    assert (bob.home / "ws" / "notes.txt").read_text() == "bob\n"
    err = await _error(bob, "ollie/review/undo", {"session": sid, "path": "notes.txt"})
    assert err.code == -32008 and "only its owner may undo its changes" in err.message, err.message
    assert (bob.home / "ws" / "notes.txt").read_text() == "bob\n"
    elsewhere = bob.home / "elsewhere"
    elsewhere.mkdir()
    err = await _error(bob, "ollie/setCwd", {"session": sid, "cwd": str(elsewhere)})
    assert err.code == -32008 and "only its owner may change its directory" in err.message, err.message
    asked = len(llm.chat_requests)
    for command, what in (("/compact", "compact its history"), (f"/cwd {elsewhere}", "change its directory")):
        said = await bob.request("ollie/submit", {"session": sid, "text": command})
        assert f"only its owner may {what}" in str(said), said
    assert len(llm.chat_requests) == asked  # no summary asked for
    shown = await bob.request("ollie/submit", {"session": sid, "text": "/cwd"})  # showing it is no change
    assert f"cwd: {bob.home / 'ws'}" in str(shown), shown
    texts = _texts(await bob.request("ollie/context", {"session": sid}))
    assert "alice's question" in texts and "done" in texts and not any("undid" in t for t in texts), texts


@in_team
async def test_the_owner_rewinds_a_session_kept_in_the_store(team):
    # The rewind's way back is kept beside the session logs, a dir a store's sessions never made: each rewind failed.
    team.llm.script(Reply.text("an answer"))
    laptop = team.laptop
    sid = (await laptop.request("ollie/session/new", {}))["session"]
    await laptop.request("ollie/submit", {"session": sid, "text": "a question"})
    rewound = await laptop.request("ollie/submit", {"session": sid, "text": "/rewind"})
    assert rewound["reply"].startswith("rewound to before turn 1:"), rewound
    assert _texts(await laptop.request("ollie/context", {"session": sid})) == []
    undone = await laptop.request("ollie/submit", {"session": sid, "text": "/rewind undo"})
    assert undone["reply"].startswith("rewind undone: turn 1 back"), undone
    assert _texts(await laptop.request("ollie/context", {"session": sid}))[:2] == ["a question", "an answer"]


async def _shared_by_alice(laptop, store_url, llm, *, agent: str = "default", approval: str = "") -> str:
    """A session of alice's on `laptop` in `agent` (and `approval`), one turn run ("alice's answer"), closed and
    shared to team backend."""
    llm.script(Reply.text("alice's answer"))
    sid = (await laptop.request("ollie/session/new", {"agent": agent, "title": "the migration"}))["session"]
    if approval:
        await laptop.request("ollie/setApproval", {"session": sid, "approval": approval})
    await laptop.request("ollie/submit", {"session": sid, "text": "alice's question"})
    assert await laptop.request("ollie/session/close", {"session": sid}) == {}
    share_with_backend(store_url, sid)
    return sid


def _store_write(store_url: str, statement: LiteralString, params: tuple = ()) -> None:
    """Write to the team store as a member who can write it, past ollie (rows no ollie writes)."""
    import psycopg

    with psycopg.connect(store_url) as conn:
        conn.execute(statement, params)


@in_team
async def test_a_teammates_session_resumed_runs_in_the_resumers_own_approval_mode(team):
    # Alice may run her session in `auto`; Bob resuming it took her mode: a step ran unasked with Bob's rights (as a
    # fork did, fixed before). Her choice is no licence for his steps.
    llm, store_url = team.llm, team.store_url
    sid = await _shared_by_alice(team.laptop, store_url, llm, approval="auto")
    bob = team.bob
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": "echo pwned > planted", "language": "bash"}]})),
               Reply.text("done"))
    await bob.request("ollie/session/load", {"session": sid})
    assert (await bob.request("ollie/state", {"session": sid}))["approval"] == "ask"  # his own mode, not hers
    assert (await bob.request("ollie/submit", {"session": sid, "text": "go on"}, timeout=60))["reply"] == "done"
    assert not (bob.home / "ws" / "planted").exists()  # asked (nobody answers here), so not run


@in_team
async def test_a_teammates_unsandboxed_session_runs_no_turn_for_another_user(team):
    # Alice may run her own session unsandboxed (`yolo`); Bob resuming it got that agent unasked: the model's next step
    # (steered by her history) ran with Bob's full rights. A switch to such an agent is asked; this is refused.
    llm, store_url = team.llm, team.store_url
    sid = await _shared_by_alice(team.laptop, store_url, llm, agent="yolo", approval="auto")
    bob = team.bob
    await bob.request("ollie/session/load", {"session": sid})
    said = await bob.request("ollie/submit", {"session": sid, "text": "go on"}, timeout=60)
    assert said["stop"] == "error" and "runs agent 'yolo' without a sandbox" in said.get("error", ""), said
    assert len(llm.chat_requests) == 1  # alice's turn only: the model was never asked for Bob's


@in_team
async def test_a_teammates_session_takes_no_prompt_before_its_record_says_whose_it_is(team):
    # Bob's load listed the session as soon as it was built, before its record (read from the store) said it is
    # Alice's: a prompt sent meanwhile ran as hers would, in her `yolo` agent and `auto` mode, with Bob's rights.
    import psycopg

    llm, store_url = team.llm, team.store_url
    sid = await _shared_by_alice(team.laptop, store_url, llm, agent="yolo", approval="auto")
    bob = team.bob
    with psycopg.connect(store_url) as held:  # the record's lock held: Bob's load waits for its record there
        held.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"id\x1f{sid}",))
        load = asyncio.ensure_future(bob.request("ollie/session/load", {"session": sid}, timeout=60))
        with psycopg.connect(store_url, autocommit=True) as watch:
            while not watch.execute("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").fetchone():
                await asyncio.sleep(0.05)
        err = await _error(bob, "ollie/submit", {"session": sid, "text": "go on"})
        assert err.code == -32001, err  # not there yet
    await load
    assert len(llm.chat_requests) == 1  # alice's turn only


# An agent whose prompt commands and hooks run outside the sandbox (as `yolo`'s do): each leaves a mark in $HOME,
# which a sandboxed command may not write.
DEPLOY_AGENT = {
    "description": "deploys: its commands run unsandboxed",
    "prompt": ["echo the deploy agent", 'echo ran > "$HOME/prompt-ran"'],
    "sandbox": "none",
    "commandSandbox": "none",
    "hooks": {"agentSpawn": 'echo ran > "$HOME/hook-ran"'},
}


def install_agent(home, name: str, config: dict) -> None:
    """Put agent config `name` in the user config dir of the machine whose HOME is `home`."""
    import json

    agents = home / "config" / "ollie" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / f"{name}.json").write_text(json.dumps(config))


async def test_a_teammates_unsandboxed_agent_runs_its_prompt_commands_and_hooks_sandboxed_for_another_user(
        start_daemon, store_url, scripted_llm, tmp_path):
    # Alice may let her agent's prompt commands and hooks run unsandboxed; Bob's load of her session ran its
    # agentSpawn hook, and his `ollie/context` its prompt commands, outside the sandbox with his rights.
    for home in ("laptop", "bob"):
        install_agent(tmp_path / home, "deploy", DEPLOY_AGENT)
    llm = scripted_llm("openai")
    sid = await _shared_by_alice(await start_daemon("laptop", _alice_env(llm, store_url)), store_url, llm, agent="deploy")
    assert {p.name for p in (tmp_path / "laptop").glob("*-ran")} == {"prompt-ran", "hook-ran"}  # hers ran free
    bob = await start_daemon("bob", _bob_env(llm, store_url))
    await bob.request("ollie/session/load", {"session": sid})
    context = await bob.request("ollie/context", {"session": sid})
    assert "the deploy agent" in context["systemPrompt"], context["systemPrompt"]  # they ran, sandboxed
    assert not list(bob.home.glob("*-ran"))
    said = await bob.request("ollie/submit", {"session": sid, "text": "/context"})
    assert "run sandboxed (readonly) for you" in said["reply"], said


async def test_a_teammates_malformed_session_record_leaves_the_others_listed(start_daemon, store_url, scripted_llm):
    # A team member who can write the store shared rows no ollie writes (a 5000-byte title, a time past year 9999,
    # an unknown kind): every listing that met one failed whole, so nobody on the team could list (or pick) any.
    llm = scripted_llm("openai")
    sid = await _shared_by_alice(await start_daemon("laptop", _alice_env(llm, store_url)), store_url, llm)
    _store_write(store_url,
                 "INSERT INTO sessions (id, agent_id, user_id, kind, title, team, created_at, last_active) VALUES "
                 "('1-long', 'default', 'alice', 'chat', repeat('x', 5000), 'backend', 1, 1), "
                 "('1-late', 'default', 'alice', 'chat', 'late', 'backend', 9e18, 9e18), "
                 "('1-boss', 'default', 'alice', 'boss', 'bossy', 'backend', 1, 1)")
    bob = await start_daemon("bob", _bob_env(llm, store_url))
    listed = [s["id"] for s in (await bob.request("ollie/session/list", {}))["sessions"]]
    assert listed == [sid], listed


@in_team
@pytest.mark.parametrize("leads", ["too long", "out"])
async def test_a_teammates_record_naming_an_agent_no_file_can_have_is_refused_by_name(team, tmp_path, leads):
    # A record's agent name is looked up as `<name>.json`: one longer than a file name can be failed the load with
    # the system's "[Errno 36] File name too long", an internal error, not what was wrong. One with a `/` led out of
    # the agents dirs to a config of a checkout's (its prompt commands unsandboxed: `commandSandbox: none`), and no
    # test saw that check dropped.
    llm, store_url = team.llm, team.store_url
    (tmp_path / "evil.json").write_text(json.dumps({"prompt": ["echo owned"], "commandSandbox": "none"}))
    name = "a" * 300 if leads == "too long" else "../" * 24 + str(tmp_path / "evil").lstrip("/")
    sid = await _shared_by_alice(team.laptop, store_url, llm)
    _store_write(store_url, "UPDATE sessions SET agent_id = %s WHERE id = %s", (name, sid))
    bob = team.bob
    err = await _error(bob, "ollie/session/load", {"session": sid})
    assert "invalid agent name" in err.message and "Errno" not in err.message, (err.code, err.message)


@in_team
async def test_a_lease_stamped_ahead_of_the_stores_clock_holds_no_session(team):
    # A team member who can write the store stamped a lease on Bob's own session with a heartbeat a century ahead:
    # only the store's clock stamps heartbeats, yet it never lapsed, so no machine could resume the session again.
    llm, store_url = team.llm, team.store_url
    llm.script(Reply.text("bob's answer"))
    bob = team.bob
    sid = (await bob.request("ollie/session/new", {"title": "mine"}))["session"]
    await bob.request("ollie/submit", {"session": sid, "text": "bob's question"})
    assert await bob.request("ollie/session/close", {"session": sid}) == {}
    _store_write(store_url,
                 "INSERT INTO session_leases (session_id, holder, host, pid, user_id, acquired_at, heartbeat_at) "
                 "VALUES (%s, 'forged', 'nowhere', 1, 'alice', now(), now() + interval '100 years')", (sid,))
    listed = {s["id"]: s for s in (await bob.request("ollie/session/list", {}))["sessions"]}
    assert listed[sid]["liveOn"] is None, listed[sid]
    await bob.request("ollie/session/load", {"session": sid})
    assert "bob's answer" in _texts(await bob.request("ollie/context", {"session": sid}))


@in_team
async def test_a_fork_of_a_teammates_session_is_the_forkers_own_in_his_mode_agent_and_folder(team):
    # As ACP's session/fork: Alice's `auto` and unsandboxed `yolo` are no licence for the steps of Bob's fork, and the
    # directory her log names is not where his fork works (it could name one of his).
    llm, store_url = team.llm, team.store_url
    sid = await _shared_by_alice(team.laptop, store_url, llm, agent="yolo", approval="auto")
    bob = team.bob
    forked = await bob.request("ollie/session/fork", {"session": sid})
    assert forked["info"]["owner"] == "bob" and forked["info"]["title"] == "the migration (fork)", forked
    state = await bob.request("ollie/state", {"session": forked["session"]})
    assert (state["approval"], state["agent"]) == ("ask", "default"), state
    assert state["cwd"] == str((bob.home / "ws").resolve()), state
    assert "alice's question" in _texts(await bob.request("ollie/context", {"session": forked["session"]}))


async def test_continue_session_goes_on_with_ones_own_session_not_a_teammates_newer_shared_one(
        start_daemon, store_url, scripted_llm):
    # eglot's `continueSession`: Alice's session, started in Bob's workspace path (a checkout path they share) and
    # shared to his team after his own there, was the one Bob's reconnect went on with, her history his context.
    llm = scripted_llm("openai")
    llm.script(Reply.text("bob's answer"), Reply.text("noted"))
    bob_env = {**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "bob", "OLLIE_TEAMS": "backend"}
    bob = await start_daemon("bob", bob_env)
    own = (await bob.request("ollie/session/new", {}))["session"]
    assert (await bob.request("ollie/submit", {"session": own, "text": "bob's question"}))["reply"] == "bob's answer"
    assert await bob.request("ollie/session/close", {"session": own}) == {}
    alice = await start_daemon("bob", {**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "alice"})  # his path
    hers = (await alice.request("ollie/session/new", {}))["session"]
    assert (await alice.request("ollie/submit", {"session": hers, "text": "remember 9"}))["reply"] == "noted"
    assert await alice.request("ollie/session/close", {"session": hers}) == {}
    share_with_backend(store_url, hers)

    again = await start_daemon("bob", bob_env, {"continueSession": True})
    texts = _texts(await again.request("ollie/context", {}))
    assert "bob's question" in texts and "remember 9" not in texts, texts


@in_team
async def test_a_teammates_last_round_nested_past_the_recursion_limit_still_lets_sessions_be_listed_and_loaded(team):
    # session/list counts each listed session's turns from its last round's meta line (saved_turns): a teammate's
    # hand-written one nested 100,000 deep raised RecursionError out of the parse, so every team member's listing
    # failed, and the load too. A line that does not parse is skipped (listing) or dropped as a torn round (load).
    llm, store_url = team.llm, team.store_url
    sid = await _shared_by_alice(team.laptop, store_url, llm)
    _store_write(store_url,
                 "INSERT INTO session_rounds (session_id, seq, epoch, data, user_id) SELECT session_id, seq + 1, "
                 "epoch, convert_to('{\"t\":\"meta\",\"n\":1,\"meta\":' || repeat('[', 100000) || "
                 "repeat(']', 100000) || '}' || chr(10), 'UTF8'), 'alice' FROM session_rounds "
                 "WHERE session_id = %s ORDER BY seq DESC LIMIT 1", (sid,))
    bob = team.bob
    listed = {s["id"]: s for s in (await bob.request("ollie/session/list", {}))["sessions"]}
    assert listed[sid]["turns"] == 0, listed  # its last round holds no meta ollie wrote
    await bob.request("ollie/session/load", {"session": sid})


async def test_a_teammate_goes_on_in_a_session_whose_owners_daemon_froze_and_the_woken_owner_deletes_no_turn(
        start_daemon, store_url, scripted_llm):
    # A member's daemon frozen (a suspended laptop) while it holds a shared session's lease: once the lease lapses a
    # teammate resumes it and carries it on; the owner's daemon, woken, saves nothing over his turn.
    llm = scripted_llm("openai", check=False)
    llm.script(Reply.text("alice's answer"), Reply.text("bob's answer"), Reply.text("alice's late answer"))
    ttl = {"OLLIE_STORE": store_url, "OLLIE_LEASE_TTL": "3"}
    laptop = await start_daemon("laptop", {**llm.env(), **ttl, "OLLIE_USER": "alice"})
    sid = (await laptop.request("ollie/session/new", {"title": "the migration"}))["session"]
    await laptop.request("ollie/submit", {"session": sid, "text": "alice's question"})
    share_with_backend(store_url, sid)
    while b"alice's answer" not in (read_rounds(store_url, sid) or b""):
        await asyncio.sleep(0.01)
    bob = await start_daemon("bob", {**llm.env(), **ttl, "OLLIE_USER": "bob", "OLLIE_TEAMS": "backend"})
    frozen = laptop.client._server.pid
    os.kill(frozen, signal.SIGSTOP)
    try:
        lapse_lease(store_url, sid, 3)  # (the test sat it out)
        await bob.request("ollie/session/load", {"session": sid})
        assert (await bob.request("ollie/submit", {"session": sid, "text": "bob's question"}))["reply"] == \
            "bob's answer"
        while b"bob's answer" not in (read_rounds(store_url, sid) or b""):
            await asyncio.sleep(0.01)
    finally:
        os.kill(frozen, signal.SIGCONT)
    # Woken, the owner's daemon runs no turn there (or, begun before its heartbeat knew, saves none), and says why.
    said = await laptop.request("ollie/submit", {"session": sid, "text": "alice again"}, timeout=60)
    deadline = asyncio.get_running_loop().time() + 60
    while not any("lease lapsed" in e for e in laptop.errors(sid)):
        assert said["stop"] in ("end", "error") and asyncio.get_running_loop().time() < deadline, said
        await asyncio.sleep(0.05)
    await laptop.request("ollie/session/close", {"session": sid}, timeout=60)
    saved = read_rounds(store_url, sid) or b""
    assert b"alice's answer" in saved and b"bob's answer" in saved and b"alice again" not in saved, saved
    assert saved.index(b"alice's answer") < saved.index(b"bob's answer")
