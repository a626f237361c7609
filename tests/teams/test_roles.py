"""A role per person (docs/TEAM.md): the server lets a role write only rows naming itself, and ollie acts as it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from ollie.sessions.logformat import dumps, last_meta
from ollie.testing import Reply
from tests.teams.conftest import grant_team, home_env, role_url, store_at_version


def _terminals(tmp_path, llm, url):
    """`ollie(role, args, stdin, **env)`: the terminal as `role` on a machine of its own, connected as that role."""
    work = tmp_path / "work"
    work.mkdir()

    def ollie(role: str, args: list[str], stdin: str | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
        env = home_env(tmp_path / role, **{**llm.env(), **extra}, OLLIE_STORE=url(role))
        return subprocess.run([sys.executable, "-m", "ollie.cli", "--cwd", str(work), *args], env=env, input=stdin,
                              capture_output=True, text=True, timeout=60)

    return ollie


def _session_id(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    found = re.search(r"session (\d+-[0-9a-f]{6})", done.stderr)
    assert found, done.stderr
    return found.group(1)


def test_a_row_naming_another_user_is_refused_by_the_server(team_store, scripted_llm, tmp_path):
    # Row 380: with one role for the team, `UPDATE sessions SET user_id = 'bob'` over a session of Mallory's in `yolo`
    # and `auto` made it Bob's own, and his resume ran its turns as his. With a role each, the server refuses it.
    llm = scripted_llm("openai")
    llm.script(Reply.text("noted"), Reply.text("noted too"))
    ollie = _terminals(tmp_path, llm, team_store)
    hers = _session_id(ollie("mallory", ["-p", "plant it", "--approval", "auto"]))  # OLLIE_USER unset: her role's
    his = _session_id(ollie("bob", ["-p", "his own"], OLLIE_USER="bob"))  # OLLIE_USER naming his role: the same
    with psycopg.connect(team_store("postgres")) as conn:
        owners = dict(conn.execute("SELECT id, user_id FROM sessions").fetchall())
    assert owners == {hers: "mallory", his: "bob"}
    forged = [
        ("UPDATE sessions SET user_id = 'bob' WHERE id = %s", (hers,)),
        ("INSERT INTO sessions (id, agent_id, user_id, kind) VALUES ('1-abcdef', 'yolo', 'bob', 'chat')", ()),
        ("INSERT INTO session_rounds (session_id, seq, epoch, data, user_id) VALUES (%s, 99, 0, '', 'bob')", (hers,)),
        # Into his session, not shared with anyone: not even under her own name.
        ("INSERT INTO session_rounds (session_id, seq, epoch, data, user_id) VALUES (%s, 99, 0, '', 'mallory')", (his,)),
        ("INSERT INTO session_leases VALUES (%s, 'h', 'h', 1, 'mallory', now(), now())", (his,)),
        ("INSERT INTO session_leases VALUES (%s, 'h', 'h', 1, 'bob', now(), now())", (hers,)),
    ]
    with psycopg.connect(team_store("mallory"), autocommit=True) as conn:
        for statement, params in forged:
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
                conn.execute(statement, params)
        # What she may not change of his is out of her reach: no row changes.
        for statement in ("UPDATE sessions SET title = 'pwned' WHERE id = %s",
                          "UPDATE session_rounds SET user_id = 'mallory' WHERE session_id = %s",
                          "DELETE FROM session_rounds WHERE session_id = %s", "DELETE FROM sessions WHERE id = %s"):
            assert conn.execute(statement, (his,)).rowcount == 0
        assert conn.execute("UPDATE session_rounds SET user_id = 'bob' WHERE session_id = %s", (hers,)).rowcount == 0
        # Rounds planted under an id his ollie has yet to record (a log with no record is its writer's): no record of
        # his is made over them, so they never become part of a session of his.
        conn.execute("INSERT INTO session_rounds VALUES ('2-abcdef', 1, 0, '', 'mallory')")
    with psycopg.connect(team_store("bob"), autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute("INSERT INTO sessions (id, agent_id, user_id, kind) "
                         "VALUES ('2-abcdef', 'coding', 'bob', 'chat')")
    # Bob's ollie lists his session only, and never resumes hers as his.
    listed = ollie("bob", ["-p", "/sessions"])
    assert listed.returncode == 0 and his in listed.stdout and hers not in listed.stdout, listed.stdout
    refused = ollie("bob", ["-p", "go on", "--session", hers])
    assert refused.returncode == 2 and "belongs to another user" in refused.stderr, refused.stderr


def test_a_log_with_no_record_stays_its_writers(team_store):
    # Red team round 6: a log whose record could not be made (the server down at that moment) is its writer's, and no
    # record may be made over it; but Mallory made one of her own and moved it there (`UPDATE sessions SET id`): the
    # log was hers to resume, list and wipe. And one round of hers there made it no one's: Bob's resume refused it as
    # another user's. A record keeps its id (its other columns stay its owner's to change); only the writer of a log
    # with no record adds to it.
    with psycopg.connect(team_store("bob"), autocommit=True) as conn:
        conn.execute("INSERT INTO session_rounds VALUES ('5-aaaaaa', 1, 0, 'his work', 'bob')")
        conn.execute("INSERT INTO session_leases VALUES ('5-aaaaaa', 'h', 'h', 1, 'bob', now(), now())")
    with psycopg.connect(team_store("mallory"), autocommit=True) as conn:
        conn.execute("INSERT INTO sessions (id, agent_id, user_id, kind) VALUES ('7-cccccc', 'coding', 'mallory', 'chat')")
        conn.execute("INSERT INTO session_rounds VALUES ('9-eeeeee', 1, 0, 'hers', 'mallory')")  # her own, no record
        forged = [("UPDATE sessions SET id = '5-aaaaaa' WHERE id = '7-cccccc'"),
                  ("UPDATE sessions SET id = '8-dddddd' WHERE id = '7-cccccc'"),
                  ("INSERT INTO session_rounds VALUES ('5-aaaaaa', 2, 0, 'planted', 'mallory')"),
                  ("INSERT INTO session_compactions (session_id, data) VALUES ('5-aaaaaa', 'planted')"),
                  ("UPDATE session_leases SET holder = 'm', user_id = 'mallory' WHERE session_id = '5-aaaaaa'")]
        for statement in forged:
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
                conn.execute(statement)  # type: ignore[arg-type]  # literal SQL
        assert conn.execute("DELETE FROM session_rounds WHERE session_id = '5-aaaaaa'").rowcount == 0
        assert conn.execute("UPDATE sessions SET title = 'mine', team = 'core' WHERE id = '7-cccccc'").rowcount == 1
        conn.execute("INSERT INTO session_rounds VALUES ('9-eeeeee', 2, 0, 'hers too', 'mallory')")
    with psycopg.connect(team_store("postgres")) as conn:
        assert conn.execute("SELECT id, user_id FROM sessions").fetchall() == [("7-cccccc", "mallory")]
        assert conn.execute("SELECT session_id, data FROM session_rounds ORDER BY session_id, seq").fetchall() == [
            ("5-aaaaaa", b"his work"), ("9-eeeeee", b"hers"), ("9-eeeeee", b"hers too")]
        assert conn.execute("SELECT user_id FROM session_leases").fetchall() == [("bob",)]
        assert conn.execute("SELECT count(*) FROM session_compactions").fetchone() == (0,)


def test_functions_a_teammate_plants_in_the_schema_never_run_for_ollie(store_url, monkeypatch):
    # Red team round 6: a role that may create in a schema of the search path (public, before PostgreSQL 15) added
    # closer matches by argument type for functions ollie calls: the owner's next migration ran hers as the owner,
    # and a teammate's registry lock ran hers as him (a row naming him, written by her function). Ollie calls
    # pg_catalog's by name.
    from ollie.sessions import types
    from ollie.sessions.pg.store import PgStore
    from ollie.sessions.registry import Registry
    from ollie.sessions.schema import SCHEMA_VERSION
    from ollie.sessions.types import Channel, Request

    monkeypatch.setattr(types, "_role", "")  # restored after: a role's store names this process's user
    monkeypatch.delenv("OLLIE_USER", raising=False)
    PgStore(store_url).close()
    with psycopg.connect(store_url, autocommit=True) as conn:
        conn.execute("UPDATE ollie_schema SET version = 4")  # a migration is due: the owner will run it
        grant_team(store_url)
        conn.execute(f"GRANT CREATE ON SCHEMA {store_url.rpartition('%3D')[2]} TO ollie_team")
    with psycopg.connect(role_url(store_url, "mallory"), autocommit=True) as conn:
        conn.execute("CREATE TABLE planted (who TEXT)")
        conn.execute("GRANT INSERT ON planted TO PUBLIC")
        for function in ("pg_advisory_xact_lock(integer)", "hashtextextended(text, integer)"):
            conn.execute(f"CREATE FUNCTION {function} RETURNS bigint LANGUAGE plpgsql AS "  # type: ignore[arg-type]
                         "$$BEGIN INSERT INTO planted VALUES (current_user); RETURN 0; END$$")
    PgStore(store_url).close()  # the owner migrates
    bob = Registry(role_url(store_url, "bob"))
    try:
        bob.ensure(Request(id="1-abcdef", user_id="bob", agent_id="coding", kind="chat", channel=Channel.CLI))
    finally:
        bob.close()
    with psycopg.connect(store_url) as conn:
        assert conn.execute("SELECT who FROM planted").fetchall() == []
        assert conn.execute("SELECT version FROM ollie_schema").fetchall() == [(SCHEMA_VERSION,)]


def test_ollie_user_naming_another_user_than_the_role_is_refused_at_start(team_store, scripted_llm, tmp_path):
    llm = scripted_llm("openai", check=False)
    ollie = _terminals(tmp_path, llm, team_store)
    refused = ollie("mallory", ["-p", "hi"], OLLIE_USER="bob")
    assert refused.returncode == 2, refused.stderr
    assert "connected as role 'mallory'" in refused.stderr and "OLLIE_USER='bob' names another user" in refused.stderr
    assert not llm.chat_requests


def test_a_teammates_rows_in_a_shared_session_name_no_mode_or_always_answer_for_its_owner(
        team_store, scripted_llm, tmp_path):
    # Mallory may add rounds to Bob's session once he shares it (the server does not know who is in his team): one
    # naming `auto` and an "always" answer became his mode and answers when he resumed it, so her step ran unasked.
    llm = scripted_llm("openai", check=False)
    llm.script(Reply.text("noted"))
    ollie = _terminals(tmp_path, llm, team_store)
    sid = _session_id(ollie("bob", [], stdin="remember 9\n", OLLIE_APPROVAL="ask"))
    shared = subprocess.run([sys.executable, "-m", "ollie.cli", "store", "share", sid, "backend"], capture_output=True,
                            text=True, timeout=60, env=home_env(tmp_path / "bob", OLLIE_STORE=team_store("bob")))
    assert shared.returncode == 0, shared.stderr
    with psycopg.connect(team_store("mallory"), autocommit=True) as conn:
        seq, epoch, data = conn.execute("SELECT seq, epoch, data FROM session_rounds WHERE session_id = %s "
                                        "ORDER BY seq DESC LIMIT 1", (sid,)).fetchone()
        commit = json.loads(bytes(data).splitlines()[-1])
        assert commit["t"] == "meta" and last_meta(bytes(data))["approval"] != "auto"
        commit["meta"] |= {"approval": "auto", "approval_always": ["command:echo"]}
        conn.execute("INSERT INTO session_rounds (session_id, seq, epoch, data, user_id) VALUES (%s, %s, %s, %s, "
                     "'mallory')", (sid, seq + 1, epoch, dumps(commit)))
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": "echo pwned > planted", "language": "bash"}]})),
               Reply.text("done"))
    resumed = ollie("bob", ["-p", "go on", "--session", sid], OLLIE_APPROVAL="ask")
    assert "remember 9" in json.dumps(llm.chat_requests[-1].body["messages"]), resumed.stderr
    assert not (tmp_path / "work" / "planted").exists(), resumed.stdout + resumed.stderr


def test_a_store_of_the_previous_schema_with_rows_migrates_to_row_level_security(store_url, monkeypatch):
    from ollie.cli.doctor import check_store
    from ollie.sessions import types
    from ollie.sessions.pg.store import PgStore
    from ollie.sessions.registry import Registry
    from ollie.sessions.schema import SCHEMA_VERSION, StoreVersionError
    from ollie.sessions.types import Scope

    store_at_version(store_url, monkeypatch, 3,
                     "INSERT INTO sessions (id, agent_id, user_id, kind, title) VALUES "
                     "('1-aaaaaa', 'coding', 'bob', 'chat', 'his'), ('1-bbbbbb', 'coding', 'mallory', 'chat', 'hers')",
                     "INSERT INTO session_rounds VALUES ('1-aaaaaa', 1, 7, 'x', 'bob')")
    grant_team(store_url)
    # A role per person may not run DDL: it is told who may migrate the store.
    with pytest.raises(StoreVersionError, match="run `ollie store migrate` as the role that owns the tables"):
        PgStore(role_url(store_url, "bob"))
    assert PgStore(store_url).migrate() == (SCHEMA_VERSION, SCHEMA_VERSION)  # the owner's open migrated it
    grant_team(store_url)
    doctor = check_store({"OLLIE_STORE": role_url(store_url, "bob")})
    assert doctor.ok and "sessions are bob's, the role the server lets write only rows naming it" in doctor.detail
    bob = Registry(role_url(store_url, "bob"))
    try:
        assert types.os_user() == "bob"
        assert [i.title for i in bob.page(Scope(user_id="bob"))[0]] == ["his"]
        bob.rename(Scope(user_id="bob"), "1-aaaaaa", "still his")
    finally:
        bob.close()
    with psycopg.connect(role_url(store_url, "mallory"), autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE sessions SET user_id = 'bob' WHERE id = '1-bbbbbb'")
        rows = conn.execute("SELECT id, user_id, title FROM sessions ORDER BY id").fetchall()
        assert rows == [("1-aaaaaa", "bob", "still his"), ("1-bbbbbb", "mallory", "hers")]
        assert conn.execute("SELECT data FROM session_rounds").fetchall() == [(b"x",)]


async def test_daemons_connected_as_their_peoples_roles_act_as_them_and_carry_a_shared_session_on(
        start_daemon, team_store, scripted_llm, monkeypatch):
    from ollie.sessions import types
    from ollie.sessions.errors import ReadOnlyError
    from ollie.sessions.pg.log import PgRounds
    from ollie.sessions.registry import Registry
    from ollie.sessions.types import Scope

    llm = scripted_llm("openai")
    llm.script(Reply.text("first answer"), Reply.text("alice's answer"), Reply.text("third answer"))
    bob = await start_daemon("bob", {**llm.env(), "OLLIE_STORE": team_store("bob")})  # no OLLIE_USER: his role's
    sid = (await bob.request("ollie/session/new", {"title": "his work"}))["session"]
    assert (await bob.request("ollie/submit", {"session": sid, "text": "first question"}))["reply"] == "first answer"
    listed = {s["id"]: s for s in (await bob.request("ollie/session/list", {}))["sessions"]}
    assert listed[sid]["owner"] == "bob"
    assert await bob.request("ollie/session/close", {"session": sid}) == {}
    monkeypatch.setattr(types, "_role", "")  # restored after: bob's store names this process's user
    monkeypatch.delenv("OLLIE_USER", raising=False)
    registry = Registry(team_store("bob"))
    try:
        registry.share(Scope(user_id="bob"), sid, "backend")
    finally:
        registry.close()
    # A teammate's role writes her rounds (and her lease) into his shared session; his role carries it on after her.
    alice = await start_daemon("alice", {**llm.env(), "OLLIE_STORE": team_store("alice"), "OLLIE_TEAMS": "backend"})
    await alice.request("ollie/session/load", {"session": sid})
    assert (await alice.request("ollie/submit", {"session": sid, "text": "her question"}))["reply"] == "alice's answer"
    assert await alice.request("ollie/session/close", {"session": sid}) == {}
    await bob.request("ollie/session/load", {"session": sid})
    assert (await bob.request("ollie/submit", {"session": sid, "text": "third question"}))["reply"] == "third answer"
    texts = [m.get("content") or "" for m in (await bob.request("ollie/context", {"session": sid}))["messages"]]
    assert [t for t in texts if "question" in t or "answer" in t] == [
        "first question", "first answer", "her question", "alice's answer", "third question", "third answer"]

    def writers() -> list[str]:
        with psycopg.connect(team_store("postgres")) as conn:
            return [r[0] for r in conn.execute("SELECT user_id FROM session_rounds WHERE session_id = %s ORDER BY seq",
                                               (sid,))]

    assert "alice" in writers() and writers()[-1] == "bob" and set(writers()) == {"alice", "bob"}, writers()
    # His log is his to replace: her ollie refuses to (schema 6's server too: test_a_teammate_cannot_...).
    assert await bob.request("ollie/session/close", {"session": sid}) == {}
    monkeypatch.setenv("OLLIE_TEAMS", "backend")
    rounds = PgRounds(team_store("alice"), sid)
    whole = rounds.read()
    assert whole is not None and types.os_user() == "alice" and rounds.owner == "bob"
    with pytest.raises(ReadOnlyError, match="is bob's, shared with your team .* only its owner may rewrite its history"):
        rounds.replace(whole)
    rounds.close()
    assert "alice" in writers() and writers()[0] == "bob"


def test_another_user_of_the_machine_cannot_log_in_to_the_test_server(pg_server):
    """Mallory, a second OS user, connects to the test run's server on 127.0.0.1 as its superuser (Bug: trust auth let
    her in without a password: every test's store hers, and `COPY ... FROM PROGRAM` ran her commands as the server's
    OS user)."""
    from tests.asuser import run_as
    from tests.tools.test_os_users import ALICE

    said = run_as(ALICE, f"""
import psycopg
for user in ("postgres", "alice"):
    try:
        psycopg.connect("postgresql://" + user + "@127.0.0.1:{pg_server.port}/postgres", connect_timeout=10).close()
        print(user, "in")
    except psycopg.OperationalError as error:
        print(user, "refused:", error)
""", env={"PATH": "/usr/bin:/bin"}, cwd=Path("/"))
    assert said.count("refused:") == 2 and "password" in said, said
