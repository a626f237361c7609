"""`ollie acp` on a PostgreSQL store: a session live in one agent is refused by another, naming where; then resumed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from types import SimpleNamespace

import acp
import pytest
import pytest_asyncio

from ollie.testing import Reply
from tests.acp.conftest import AGENT_COMMAND, XDG_DIRS, Agent, _spawn, child_env
from tests.teams.conftest import share_with_backend

# A test of the module's `team`: it runs in the module's event loop, where the team's agents' connections live.
in_team = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def _team(pg_server, tmp_path_factory, _team_llm) -> AsyncIterator[SimpleNamespace]:
    """One store and pair of agents (alice's, in the default agent; bob's, of team backend) for the module's tests of a
    session alice shares and bob resumes, each test in sessions and folders of its own."""
    home = tmp_path_factory.mktemp("team")
    store_url = pg_server.schema_url()
    env = {k: v for k, v in child_env(_team_llm.env()).items() if k != "XDG_RUNTIME_DIR"}
    env.update({var: str(home / sub) for var, sub in XDG_DIRS.items()}, OLLIE_STORE=store_url)
    async with AsyncExitStack() as stack:
        yield SimpleNamespace(store_url=store_url, alice=await _spawn(
            stack, env={**env, "OLLIE_USER": "alice"}, workspace=home, command=[*AGENT_COMMAND, "--agent", "default"]),
            bob=await _spawn(stack, env={**env, "OLLIE_USER": "bob", "OLLIE_TEAMS": "backend"}, workspace=home))


@pytest.fixture
def team(_team: SimpleNamespace, team_llm, tmp_path: Path) -> SimpleNamespace:
    """The module's team as this test's: each agent with a fresh client record and a workspace of its own, the
    scripted server (`llm`) with this test's requests alone."""
    views = {}
    for name in ("alice", "bob"):
        shared = getattr(_team, name)
        shared.client.reset()
        (tmp_path / name).mkdir()
        views[name] = Agent(shared.conn, shared.proc, shared.client, tmp_path / name)
    return SimpleNamespace(store_url=_team.store_url, llm=team_llm, **views)


async def test_a_session_live_in_one_acp_agent_is_named_then_resumed_whole_in_another(
        start_agent, scripted_llm, store_url, tmp_path):
    llm = scripted_llm("openai")
    llm.script(Reply.text("first answer"), Reply.text("second answer"))
    team = {**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "alice"}
    laptop = await start_agent(env=team)
    sid = await laptop.new()
    assert (await laptop.prompt(sid, "first question")).stop_reason == "end_turn"

    # Another machine: its own data dir (this machine's live-session locks are not its business; the lease is).
    buildbox = await start_agent(env={**team, "XDG_DATA_HOME": str(tmp_path / "buildbox-data")})
    with pytest.raises(acp.RequestError) as caught:
        await asyncio.wait_for(buildbox.conn.load_session(cwd=str(buildbox.workspace), session_id=sid,
                                                          mcp_servers=[]), 30)
    assert caught.value.code == -32007, caught.value
    assert "session is live elsewhere" in str(caught.value) and "user alice" in str(caught.value), caught.value

    await asyncio.wait_for(laptop.conn.close_session(session_id=sid), 30)  # stores its rounds, gives the lease up
    await asyncio.wait_for(buildbox.conn.load_session(cwd=str(buildbox.workspace), session_id=sid, mcp_servers=[]), 30)
    assert buildbox.client.text(sid, "user_message_chunk") == "first question"
    assert buildbox.client.text(sid) == "first answer"
    assert (await buildbox.prompt(sid, "second question")).stop_reason == "end_turn"
    assert any("first answer" in str(m.get("content")) for m in llm.requests[-1].body["messages"])


async def test_a_teammates_shared_session_is_listed_with_whose_and_which_team(
        start_agent, scripted_llm, store_url, tmp_path):

    llm = scripted_llm("openai")
    llm.script(Reply.text("on it"))
    alice = await start_agent(env={**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "alice"})
    sid = await alice.new()
    await alice.prompt(sid, "migrate the schema")
    share_with_backend(store_url, sid)  # what `ollie store share` does
    bob = await start_agent(env={**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "bob", "OLLIE_TEAMS": "backend",
                                 "XDG_DATA_HOME": str(tmp_path / "bob-data")})
    listed = await asyncio.wait_for(bob.conn.list_sessions(), 30)
    titles = {s.session_id: s.title for s in listed.sessions}
    assert titles[sid] == "migrate the schema (alice's, team backend)", titles
    own = await asyncio.wait_for(alice.conn.list_sessions(), 30)
    assert {s.session_id: s.title for s in own.sessions}[sid] == "migrate the schema"  # hers: no note
    # Red team 53: her record's title is hers to write (any row of the store): its line break and U+202E reached Bob's
    # client (Zed's thread list) as they were, a line of its own and the rest reversed; Zed names the thread by it too.
    import psycopg

    with psycopg.connect(store_url) as conn:
        conn.execute("UPDATE sessions SET title = %s WHERE id = %s", ("fix\n(bob's) \u202eon", sid))
    listed = await asyncio.wait_for(bob.conn.list_sessions(), 30)
    titles = {s.session_id: s.title for s in listed.sessions}
    assert titles[sid] == "fix\\n(bob's) \\u202eon (alice's, team backend)", titles
    await asyncio.wait_for(alice.conn.close_session(session_id=sid), 30)
    await asyncio.wait_for(bob.conn.load_session(cwd=str(bob.workspace), session_id=sid, mcp_servers=[]), 30)
    assert [u.title for u in await bob.updates(sid, "session_info_update")] == ["fix\\n(bob's) \\u202eon"]


async def _shared_by_alice(start_agent, llm, store_url, *, agent: str = "default", mode: str = ""):
    """Alice's agent and her session in `agent` (and `mode`): one turn run ("alice's answer"), closed, shared to team
    backend."""
    alice = await start_agent(env={**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "alice"},
                              command=[*AGENT_COMMAND, "--agent", agent])
    return alice, await _share(alice, llm, store_url, mode=mode)


async def _share(alice, llm, store_url, *, mode: str = "") -> str:
    """Alice's session (in her workspace): one turn run ("alice's answer"), closed, shared to team backend."""
    llm.script(Reply.text("alice's answer"))
    sid = await alice.new()
    if mode:
        await asyncio.wait_for(alice.conn.set_session_mode(session_id=sid, mode_id=mode), 30)
    await alice.prompt(sid, "alice's question")
    await asyncio.wait_for(alice.conn.close_session(session_id=sid), 30)
    share_with_backend(store_url, sid)
    return sid


@in_team
async def test_a_team_member_resumes_a_shared_session_but_cannot_change_its_mode_or_agent(team):
    llm, store_url, alice, bob = team.llm, team.store_url, team.alice, team.bob
    sid = await _share(alice, llm, store_url)
    await asyncio.wait_for(bob.conn.load_session(cwd=str(bob.workspace), session_id=sid, mcp_servers=[]), 30)
    assert bob.client.text(sid) == "alice's answer"
    for change in (bob.conn.set_session_mode(session_id=sid, mode_id="auto"),
                   bob.conn.set_config_option(config_id="agent", session_id=sid, value="yolo")):
        with pytest.raises(acp.RequestError) as caught:
            await asyncio.wait_for(change, 30)
        assert caught.value.code == -32008 and "only its owner may" in str(caught.value), caught.value


@in_team
async def test_a_model_picked_in_a_teammates_session_is_kept_for_the_picker_alone(team):
    # The model is kept with the session for its resume; each user's own pick, as the approval mode is: Bob's would
    # have become Alice's on her next resume.
    llm, store_url, alice, bob = team.llm, team.store_url, team.alice, team.bob
    llm.models["bobs-model"] = 8192
    sid = await _share(alice, llm, store_url)
    llm.script(Reply.text("bob's answer"), Reply.text("alice again"))
    await asyncio.wait_for(bob.conn.load_session(cwd=str(bob.workspace), session_id=sid, mcp_servers=[]), 30)
    await asyncio.wait_for(bob.conn.set_config_option(config_id="model", session_id=sid, value="bobs-model"), 30)
    await bob.prompt(sid, "bob's question")
    await asyncio.wait_for(bob.conn.close_session(session_id=sid), 30)
    resumed = await asyncio.wait_for(alice.conn.resume_session(cwd=str(alice.workspace), session_id=sid,
                                                               mcp_servers=[]), 30)
    assert {o.id: o.current_value for o in resumed.config_options}["model"] == "scripted-model"
    await alice.prompt(sid, "alice's next question")
    assert [r.body["model"] for r in llm.chat_requests] == ["scripted-model", "bobs-model", "scripted-model"]


@in_team
async def test_a_team_members_resume_leaves_the_sessions_directory_and_title_the_owners(team):
    # Bob's resume saved his checkout's directory as the session's: Alice's list of her directory's sessions lost it.
    # His `/rn` retitled her saved session.
    llm, store_url, alice, bob = team.llm, team.store_url, team.alice, team.bob
    sid = await _share(alice, llm, store_url)
    llm.script(Reply.text("bob's answer"))
    assert bob.workspace != alice.workspace
    await asyncio.wait_for(bob.conn.load_session(cwd=str(bob.workspace), session_id=sid, mcp_servers=[]), 30)
    await bob.prompt(sid, "bob's question")
    await bob.prompt(sid, "/rn bob's title")
    assert "only its owner may rename it" in bob.client.text(sid), bob.client.text(sid)
    await asyncio.wait_for(bob.conn.close_session(session_id=sid), 30)
    listed = await asyncio.wait_for(alice.conn.list_sessions(cwd=str(alice.workspace)), 30)
    assert [s.session_id for s in listed.sessions] == [sid], listed


async def test_a_fork_of_a_teammates_session_does_not_take_their_approval_mode_or_unsandboxed_agent(
        start_agent, scripted_llm, store_url, tmp_path):
    # Alice may run her own session in `auto`, and unsandboxed (`yolo`); Bob forking it (a new session of his, in his
    # directory) gets his own default mode and agent, not hers: her choice is no licence for steps run with Bob's
    # rights (the fork took her `yolo` unasked, where a switch to it is asked).
    from acp.schema import SessionConfigOptionSelect

    from tests.acp.conftest import AGENT_COMMAND

    llm = scripted_llm("openai")
    llm.script(Reply.text("alice's answer"), Reply.text("bob's answer"))
    alice = await start_agent(env={**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "alice"},
                              command=[*AGENT_COMMAND, "--agent", "yolo"])
    sid = await alice.new()
    await alice.prompt(sid, "alice's question")
    await asyncio.wait_for(alice.conn.set_session_mode(session_id=sid, mode_id="auto"), 30)
    await asyncio.wait_for(alice.conn.close_session(session_id=sid), 30)
    share_with_backend(store_url, sid)

    bob = await start_agent(env={**llm.env(approval="ask"), "OLLIE_STORE": store_url, "OLLIE_USER": "bob",
                                 "OLLIE_TEAMS": "backend", "XDG_DATA_HOME": str(tmp_path / "bob-data")})
    own = await asyncio.wait_for(bob.conn.new_session(cwd=str(bob.workspace), mcp_servers=[]), 30)
    forked = await asyncio.wait_for(bob.conn.fork_session(session_id=sid, cwd=str(bob.workspace), mcp_servers=[]), 30)
    assert forked.modes.current_mode_id == own.modes.current_mode_id != "auto", forked.modes
    agents = [o for o in forked.config_options or [] if isinstance(o, SessionConfigOptionSelect) and o.id == "agent"]
    assert [a.current_value for a in agents] == ["default"], agents
    await bob.prompt(forked.session_id, "bob's question")  # the conversation itself did come over
    assert any("alice's answer" in str(m.get("content")) for m in llm.requests[-1].body["messages"])


async def test_a_teammates_unsandboxed_agent_runs_its_prompt_commands_and_hooks_sandboxed_on_load_resume_and_fork(
        start_agent, scripted_llm, store_url, tmp_path):
    # Alice may let her agent's prompt commands and hooks run unsandboxed; Bob's session/load (and resume) of her
    # session ran its agentSpawn hook, and his `/context` its prompt commands, outside the sandbox with his rights.
    from tests.acp.conftest import AGENT_COMMAND
    from tests.teams.conftest import home_env
    from tests.teams.test_two_daemons import DEPLOY_AGENT, install_agent

    llm = scripted_llm("openai")
    llm.script(Reply.text("alice's answer"))
    homes = {user: tmp_path / user for user in ("alice", "bob")}
    for home in homes.values():
        install_agent(home, "deploy", DEPLOY_AGENT)
    alice = await start_agent(env=home_env(homes["alice"], **llm.env(), OLLIE_STORE=store_url, OLLIE_USER="alice"),
                              command=[*AGENT_COMMAND, "--agent", "deploy"])
    sid = await alice.new()
    await alice.prompt(sid, "alice's question")
    await asyncio.wait_for(alice.conn.close_session(session_id=sid), 30)
    assert {p.name for p in homes["alice"].glob("*-ran")} == {"prompt-ran", "hook-ran"}  # hers ran free
    share_with_backend(store_url, sid)

    bob = await start_agent(env=home_env(homes["bob"], **llm.env(), OLLIE_STORE=store_url, OLLIE_USER="bob",
                                         OLLIE_TEAMS="backend"))
    for reopen in (bob.conn.load_session, bob.conn.resume_session):
        await asyncio.wait_for(reopen(cwd=str(bob.workspace), session_id=sid, mcp_servers=[]), 30)
        await bob.prompt(sid, "/context")
        assert "run sandboxed (readonly) for you" in bob.client.text(sid), bob.client.text(sid)
        assert not list(homes["bob"].glob("*-ran"))
        await asyncio.wait_for(bob.conn.close_session(session_id=sid), 30)
    forked = await asyncio.wait_for(bob.conn.fork_session(session_id=sid, cwd=str(bob.workspace), mcp_servers=[]), 30)
    await bob.prompt(forked.session_id, "/sp")  # the fork is Bob's, in his own agent: nothing of `deploy` runs
    assert not list(homes["bob"].glob("*-ran"))


async def test_a_teammates_session_takes_no_prompt_before_its_record_says_whose_it_is(
        start_agent, scripted_llm, store_url, tmp_path):
    # A prompt Bob's client sends while his session/load of Alice's session still waits for its record must not run
    # as hers would (in her `yolo` agent and `auto` mode, with Bob's rights): the session is not open yet.
    import psycopg

    llm = scripted_llm("openai")
    alice, sid = await _shared_by_alice(start_agent, llm, store_url, agent="yolo", mode="auto")
    bob = await start_agent(env={**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "bob", "OLLIE_TEAMS": "backend",
                                 "XDG_DATA_HOME": str(tmp_path / "bob-data")})
    with psycopg.connect(store_url) as held:  # the record's lock held: Bob's load waits for its record there
        held.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"id\x1f{sid}",))
        load = asyncio.ensure_future(asyncio.wait_for(
            bob.conn.load_session(cwd=str(bob.workspace), session_id=sid, mcp_servers=[]), 60))
        with psycopg.connect(store_url, autocommit=True) as watch:
            while not watch.execute("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").fetchone():
                assert not load.done(), load.result()
                await asyncio.sleep(0.05)
        with pytest.raises(acp.RequestError) as caught:
            await bob.prompt(sid, "go on")
        assert caught.value.code == -32602 and "no open session" in str(caught.value.data), caught.value  # not yet
    await load
    assert len(llm.chat_requests) == 1  # alice's turn only
    said = await bob.prompt(sid, "go on")  # once open, it is known as hers: her unsandboxed agent runs no turn for Bob
    assert said.stop_reason == "end_turn" and "without a sandbox" in bob.client.text(sid), bob.client.text(sid)
    assert len(llm.chat_requests) == 1


async def test_a_teammates_huge_last_round_is_not_fetched_to_list_sessions(start_agent, scripted_llm, store_url):
    # A listing reads each session's latest meta from its last round: a file's last 256 KiB, but a store's whole last
    # round, so a teammate's hand-written 64 MiB round cost every team member's session/list (and /sessions) 64 MiB
    # of transfer and twice that of memory, on each call.
    import psycopg

    llm = scripted_llm("openai")
    alice, sid = await _shared_by_alice(start_agent, llm, store_url)
    bob = await start_agent(env={**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "bob", "OLLIE_TEAMS": "backend"})

    def peak_kib() -> int:  # the agent's peak resident memory so far
        status = Path(f"/proc/{bob.proc.pid}/status").read_text()
        return int(status.split("VmHWM:")[1].split()[0])

    await asyncio.wait_for(bob.conn.list_sessions(), 30)  # the store connected and its modules loaded
    before = peak_kib()
    with psycopg.connect(store_url) as conn:
        conn.execute("INSERT INTO session_rounds (session_id, seq, epoch, data, user_id) SELECT session_id, seq + 1, "
                     "epoch, convert_to(repeat('x', 64 * 1024 * 1024), 'UTF8'), 'alice' FROM session_rounds "
                     "WHERE session_id = %s ORDER BY seq DESC LIMIT 1", (sid,))
    listed = await asyncio.wait_for(bob.conn.list_sessions(), 30)
    assert [s.session_id for s in listed.sessions] == [sid]
    assert peak_kib() - before < 16 * 1024, (before, peak_kib())


async def test_a_teammates_last_round_nested_past_the_recursion_limit_still_lets_sessions_be_listed(
        start_agent, scripted_llm, store_url):
    # A listing parses each session's latest meta line from its last round: a teammate's hand-written one nested
    # 100,000 deep raised RecursionError out of the parse, so every team member's session/list failed, hers listed
    # or not (ollie never writes such a line: json.dumps cannot either). A line that does not parse is skipped.
    import psycopg

    llm = scripted_llm("openai")
    alice, sid = await _shared_by_alice(start_agent, llm, store_url)
    bob = await start_agent(env={**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "bob", "OLLIE_TEAMS": "backend"})
    with psycopg.connect(store_url) as conn:
        conn.execute("INSERT INTO session_rounds (session_id, seq, epoch, data, user_id) SELECT session_id, seq + 1, "
                     "epoch, convert_to('{\"t\":\"meta\",\"n\":1,\"meta\":' || repeat('[', 100000) || "
                     "repeat(']', 100000) || '}' || chr(10), 'UTF8'), 'alice' FROM session_rounds "
                     "WHERE session_id = %s ORDER BY seq DESC LIMIT 1", (sid,))
    listed = await asyncio.wait_for(bob.conn.list_sessions(), 30)
    assert [s.session_id for s in listed.sessions] == [sid]
    await asyncio.wait_for(bob.conn.load_session(cwd=str(bob.workspace), session_id=sid, mcp_servers=[]), 30)


async def test_a_teammates_session_whose_record_is_malformed_is_not_loaded_as_ones_own(
        start_agent, scripted_llm, store_url):
    # Alice may run her session in `auto`; a record of it no ollie writes (a 5,000-byte title) made Bob's
    # session/load read it as no record at all, so the session opened as his own: in her `auto` mode, its steps unasked.
    import psycopg

    llm = scripted_llm("openai")
    alice, sid = await _shared_by_alice(start_agent, llm, store_url, mode="auto")
    with psycopg.connect(store_url) as conn:
        conn.execute("UPDATE sessions SET title = repeat('x', 5000) WHERE id = %s", (sid,))
    bob = await start_agent(env={**llm.env(approval="ask"), "OLLIE_STORE": store_url, "OLLIE_USER": "bob",
                                 "OLLIE_TEAMS": "backend"})
    with pytest.raises(acp.RequestError) as caught:
        await asyncio.wait_for(bob.conn.load_session(cwd=str(bob.workspace), session_id=sid, mcp_servers=[]), 30)
    assert caught.value.code == -32602, caught.value
    assert "at most 1,000 bytes of UTF-8 (this one has 5,000)" in str(caught.value.data), caught.value


async def test_session_list_pages_past_a_teammates_hand_written_records(start_agent, scripted_llm, store_url):
    # Pages went by row count: a shared row no ollie writes, which the registry leaves out, ended every team member's
    # listing after its first page, or shifted the next page's start by one, and a session was never listed.
    import psycopg

    from tests.acp.conftest import HAND_COLUMNS, hand_written_sessions

    llm = scripted_llm("openai")
    bob = await start_agent(env={**llm.env(), "OLLIE_STORE": store_url, "OLLIE_USER": "bob", "OLLIE_TEAMS": "backend"})
    assert await bob.list_pages() == [[]]  # the store's schema made
    rows, listed = hand_written_sessions("alice")
    with psycopg.connect(store_url) as conn, conn.cursor() as cur:
        cur.executemany(f"INSERT INTO sessions {HAND_COLUMNS} VALUES (%s, %s, %s, %s, %s, %s, %s)", rows)
        conn.execute("UPDATE sessions SET team = 'backend'")
    assert await bob.list_pages() == [listed[:50], listed[50:100], listed[100:]]
