"""A teammate carries a shared session on, never destroys or takes it over (schema 6, docs/TEAM.md): only the
session's owner replaces its log, a teammate's turn bumps only its last activity, listings read the owner's rounds."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import psycopg
import pytest

from ollie.agent.compaction import COMPACTION_PROMPT
from ollie.sessions.logformat import dumps
from ollie.testing import Reply
from tests.teams.conftest import grant_team, home_env, role_url, store_at_version
from tests.teams.test_roles import _session_id, _terminals

INSERT_ROUND = "INSERT INTO session_rounds (session_id, seq, epoch, data, user_id) VALUES (%s, %s, %s, %s, 'mallory')"


def _share(tmp_path, url: str, sid: str) -> None:
    """Bob shares his session with team backend (`ollie store share`)."""
    shared = subprocess.run([sys.executable, "-m", "ollie.cli", "store", "share", sid, "backend"], capture_output=True,
                            text=True, timeout=60, env=home_env(tmp_path / "bob", OLLIE_STORE=url))
    assert shared.returncode == 0, shared.stderr


def _record(url: str, sid: str) -> dict[str, object]:
    with psycopg.connect(url) as conn:
        cursor = conn.execute("SELECT * FROM sessions WHERE id = %s", (sid,))
        row = cursor.fetchone()
        assert row is not None and cursor.description is not None
        return {column.name: value for column, value in zip(cursor.description, row, strict=True)}


def _writers(url: str, sid: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("SELECT user_id FROM session_rounds WHERE session_id = %s ORDER BY seq",
                                           (sid,))]


def test_a_teammate_appends_to_a_shared_session_and_can_neither_delete_nor_replace_nor_steer_it(
        team_store, scripted_llm, tmp_path, monkeypatch):
    # Any role could delete or replace a session shared to a team (its log lost), put a round far ahead or of another
    # epoch (his next save refused, hers the log's last for good), and her last round named the directory and title
    # that `ollie acp`'s session/list and the terminal's listing took for his session.
    from ollie.sessions import types
    from ollie.sessions.logindex import read_meta

    llm = scripted_llm("openai")
    llm.script(Reply.text("noted"), Reply.text("mine"))
    ollie = _terminals(tmp_path, llm, team_store)
    sid = _session_id(ollie("bob", ["-p", "remember 9"]))
    unshared = _session_id(ollie("bob", ["-p", "private"]))
    _share(tmp_path, team_store("bob"), sid)
    his = _writers(team_store("postgres"), sid)
    with psycopg.connect(team_store("mallory"), autocommit=True) as conn:
        seq, epoch, data = conn.execute("SELECT seq, epoch, data FROM session_rounds WHERE session_id = %s "
                                        "ORDER BY seq DESC LIMIT 1", (sid,)).fetchone()
        commit = json.loads(bytes(data).splitlines()[-1])
        commit["meta"] |= {"cwd": "/tmp/planted", "title": "planted"}
        conn.execute(INSERT_ROUND, (sid, seq + 1, epoch, dumps(commit)))  # carrying it on: hers to do
        for at, of in ((seq + 2**40, epoch), (seq + 3, epoch), (seq + 2, epoch + 1)):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
                conn.execute(INSERT_ROUND, (sid, at, of, dumps(commit)))
        # No round of his log deletes, not even hers (a gap would cut his later rounds off), and none changes.
        for statement in ("DELETE FROM session_rounds WHERE session_id = %s",
                          "DELETE FROM session_rounds WHERE session_id = %s AND user_id = 'mallory'",
                          "UPDATE session_rounds SET data = '' WHERE session_id = %s",
                          "UPDATE sessions SET last_active = 9000000000000000 WHERE id = %s"):
            assert conn.execute(statement, (sid,)).rowcount == 0  # type: ignore[arg-type]  # literal SQL
        # The replace a compaction makes: her snapshot cannot go in over his rounds.
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"), conn.transaction():
            conn.execute("DELETE FROM session_rounds WHERE session_id = %s", (sid,))
            conn.execute(INSERT_ROUND, (sid, 1, 7, dumps(commit)))
    assert _writers(team_store("postgres"), sid) == [*his, "mallory"]
    # Listings take his session's directory and title from his own last round.
    monkeypatch.setattr(types, "_role", "")  # restored after: bob's store names this process's user
    monkeypatch.setenv("OLLIE_STORE", team_store("bob"))
    meta = read_meta(tmp_path, sid)
    assert meta["cwd"] == str(tmp_path / "work") and meta.get("title") != "planted", meta
    # Its last activity: bumped to now by the server's function, and nothing else of his record changes; not his
    # unshared session's.
    before, private = _record(team_store("postgres"), sid), _record(team_store("postgres"), unshared)
    with psycopg.connect(team_store("mallory"), autocommit=True) as conn:
        assert conn.execute("SELECT ollie_touch_shared(%s)", (unshared,)).fetchone() == (None,)
        started = time.time_ns() // 1000
        (bumped,) = conn.execute("SELECT ollie_touch_shared(%s)", (sid,)).fetchone()
    assert started - 5_000_000 <= bumped <= time.time_ns() // 1000 + 5_000_000  # the server's clock, a machine's
    assert _record(team_store("postgres"), sid) == {**before, "last_active": bumped}
    assert _record(team_store("postgres"), unshared) == private
    # His log stays his to replace, her round with it.
    with psycopg.connect(team_store("bob")) as conn:
        assert conn.execute("DELETE FROM session_rounds WHERE session_id = %s", (sid,)).rowcount == len(his) + 1
        conn.rollback()


def test_a_teammates_full_context_leaves_the_owners_log_whole_and_his_listing_shows_her_turn(
        team_store, scripted_llm, tmp_path):
    # The compaction her full context needed replaced his whole log with hers, and her turns left the session's last
    # activity as he last left it (the server refuses her his record), so his listing sank it below older work.
    llm = scripted_llm("openai", check=False)
    llm.script(Reply.text("noted"))
    ollie = _terminals(tmp_path, llm, team_store)
    sid = _session_id(ollie("bob", ["-p", "remember 9"]))
    _share(tmp_path, team_store("bob"), sid)
    his = _writers(team_store("postgres"), sid)
    before = _record(team_store("postgres"), sid)
    llm.script(Reply.context_overflow(), Reply.text(json.dumps({"goal": "g", "plan": []})), Reply.text("done"))
    hers = ollie("alice", ["-p", "make it big", "--session", sid], OLLIE_TEAMS="backend")
    assert f"cannot compact: session {sid} is bob's, shared with your team to read and resume: only its owner may " \
           "compact its history: ask them to /compact it" in hers.stderr, hers.stdout + hers.stderr
    assert not any(r.body["messages"][0].get("content") == COMPACTION_PROMPT for r in llm.chat_requests)
    writers = _writers(team_store("postgres"), sid)
    assert writers[:len(his)] == his and set(writers[len(his):]) == {"alice"}, writers
    after = _record(team_store("postgres"), sid)
    assert after["last_active"] > before["last_active"]  # type: ignore[operator]  # BIGINTs
    assert {k: v for k, v in after.items() if k != "last_active"} == {k: v for k, v in before.items()
                                                                      if k != "last_active"}
    # He resumes it whole: his question, her turn (answered by what is left of the script).
    resumed = ollie("bob", ["-p", "what was it?", "--session", sid])
    assert resumed.returncode == 0, resumed.stderr
    sent = json.dumps(llm.chat_requests[-1].body["messages"])
    assert "remember 9" in sent and "make it big" in sent


def test_a_store_of_schema_5_with_rows_migrates_to_owner_only_replacement(store_url, monkeypatch):
    from ollie.sessions.pg.store import PgStore
    from ollie.sessions.schema import SCHEMA_VERSION

    store_at_version(store_url, monkeypatch, 5,
                     "INSERT INTO sessions (id, agent_id, user_id, kind, title, team, last_active) VALUES "
                     "('1-aaaaaa', 'coding', 'bob', 'chat', 'his', 'backend', 1)",
                     "INSERT INTO session_rounds VALUES ('1-aaaaaa', 1, 7, 'his', 'bob'), "
                     "('1-aaaaaa', 2, 7, 'hers', 'mallory')")
    grant_team(store_url)
    with psycopg.connect(role_url(store_url, "mallory"), autocommit=True) as conn:
        assert conn.execute("SELECT to_regprocedure('ollie_touch_shared(text)')").fetchone() == (None,)
    assert PgStore(store_url).migrate() == (SCHEMA_VERSION, SCHEMA_VERSION)  # the owner's open migrated it
    grant_team(store_url)  # TEAM.md: the grants again after an upgrade (the new function)
    with psycopg.connect(role_url(store_url, "mallory"), autocommit=True) as conn:
        assert conn.execute("DELETE FROM session_rounds WHERE session_id = '1-aaaaaa'").rowcount == 0
        assert conn.execute("SELECT ollie_touch_shared('1-aaaaaa')").fetchone()[0] > 1
        assert conn.execute("SELECT seq, data, user_id FROM session_rounds ORDER BY seq").fetchall() == [
            (1, b"his", "bob"), (2, b"hers", "mallory")]
        assert conn.execute("SELECT title, user_id FROM sessions").fetchall() == [("his", "bob")]
    with psycopg.connect(role_url(store_url, "postgres")) as conn:
        assert conn.execute("SELECT version FROM ollie_schema").fetchone() == (SCHEMA_VERSION,)


def test_the_touch_function_is_not_steered_by_a_teammates_temporary_tables(team_store):
    # It runs as the tables' owner (SECURITY DEFINER): with the caller's search path, her pg_temp `sessions` (TEMP is
    # granted to every role) would be the table it changed, or a trap of hers; its path is pinned, pg_temp last.
    with psycopg.connect(team_store("bob"), autocommit=True) as conn:
        conn.execute("INSERT INTO sessions (id, agent_id, user_id, kind, team, last_active) "
                     "VALUES ('1-aaaaaa', 'coding', 'bob', 'chat', 'backend', 1)")
    with psycopg.connect(team_store("mallory"), autocommit=True) as conn:
        conn.execute("CREATE TEMP TABLE sessions (id TEXT, team TEXT, archived INTEGER, last_active BIGINT)")
        conn.execute("INSERT INTO sessions VALUES ('1-aaaaaa', 'backend', 0, 5)")
        (bumped,) = conn.execute("SELECT ollie_touch_shared('1-aaaaaa')").fetchone()
        assert conn.execute("SELECT last_active FROM pg_temp.sessions").fetchall() == [(5,)]
    assert bumped > 1 and _record(team_store("postgres"), "1-aaaaaa")["last_active"] == bumped
