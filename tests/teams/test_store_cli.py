"""`ollie store migrate|status|import|share` and `ollie doctor`'s store check, as a user runs them."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from ollie.backend.types import Message
from ollie.cli.doctor import check_store
from ollie.sessions import persist as persist_mod
from ollie.sessions.persist import SessionFile
from ollie.sessions.pg.store import PgStore
from ollie.sessions.registry import Registry
from ollie.sessions.schema import SCHEMA_VERSION, StoreVersionError
from ollie.sessions.session import Session
from ollie.sessions.types import Channel, Kind, Request, Scope
from tests.teams.conftest import home_env


def ollie(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ollie.cli", *args], capture_output=True, text=True, timeout=60,
                          env=home_env(home, **env))


def test_migrate_runs_the_versions_once_and_a_newer_store_is_refused(store_url, tmp_path):
    first = ollie(tmp_path, "store", "migrate", OLLIE_STORE=store_url)
    assert first.returncode == 0 and f"migrated from version 0 to {SCHEMA_VERSION}" in first.stdout, first
    again = ollie(tmp_path, "store", "migrate", OLLIE_STORE=store_url)
    assert f"already at version {SCHEMA_VERSION}" in again.stdout, again
    status = ollie(tmp_path, "store", "status", OLLIE_STORE=store_url)
    assert "(PostgreSQL)" in status.stdout and f"schema version {SCHEMA_VERSION}" in status.stdout, status
    local = ollie(tmp_path, "store", "status")  # OLLIE_STORE unset: the embedded default
    assert "sessions.db (SQLite; session files in" in local.stdout, local

    store = PgStore(store_url, migrate=False)
    try:
        with store.connection() as conn:
            conn.execute("UPDATE ollie_schema SET version = ?", (SCHEMA_VERSION + 1,))
    finally:
        store.close()
    refused = ollie(tmp_path, "store", "migrate", OLLIE_STORE=store_url)
    assert refused.returncode == 2 and "newer than this ollie" in refused.stderr and "upgrade ollie" in refused.stderr
    with pytest.raises(StoreVersionError, match="newer"):
        Registry(store_url)
    doctor = check_store({"OLLIE_STORE": store_url})
    assert not doctor.ok and "newer" in doctor.detail and doctor.fix == "upgrade ollie on this machine"


def test_a_sqlite_store_of_version_1_is_migrated_on_open_keeping_its_rows(tmp_path):
    import sqlite3

    from ollie.sessions.schema import MIGRATIONS

    path = tmp_path / "sessions.db"
    conn = sqlite3.connect(path)
    for statement in MIGRATIONS[0].statements(postgres=False):
        conn.execute(statement)
    conn.execute("INSERT INTO sessions (id, agent_id, user_id, kind, created_at, last_active) "
                 "VALUES ('1700000000000000000-abcdef', 'coding', 'alice', 'chat', 1, 1)")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    registry = Registry(path)
    try:
        assert [i.id for i in registry.page(Scope(user_id="alice"))[0]] == ["1700000000000000000-abcdef"]
        registry.share(Scope(user_id="alice"), "1700000000000000000-abcdef", "backend")  # the v2 column is there
    finally:
        registry.close()
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def _local_sessions(root: Path) -> list[str]:
    """Two sessions of alice (and one of bob) in a local registry and session files, as a laptop has them."""
    registry = Registry(root / "sessions.db")
    ids = []
    try:
        for user, title in (("alice", "first"), ("alice", "second"), ("bob", "bob's")):
            info = registry.ensure(Request(user_id=user, agent_id="coding", kind=Kind.CHAT, channel=Channel.CLI,
                                           title=title))
            if user == "alice":
                ids.append(info.id)
                session = Session(id=info.id)
                session.messages += [Message("user", f"{title} question"), Message("assistant", f"{title} answer")]
                SessionFile(root / "sessions", info.id).save(session)
    finally:
        registry.close()
    return ids


def test_import_copies_a_users_local_sessions_once_and_share_opens_one_to_a_team(store_url, tmp_path, monkeypatch):
    ids = _local_sessions(tmp_path / "local")
    args = ("store", "import", "--user", "alice", "--registry", str(tmp_path / "local" / "sessions.db"),
            "--sessions-dir", str(tmp_path / "local" / "sessions"))
    # Run by another user of the machine (OLLIE_USER: who runs it, as the OS login name would): --user says whose.
    done = ollie(tmp_path, *args, OLLIE_STORE=store_url, OLLIE_USER="carol")
    assert done.returncode == 0, done
    assert "imported 2 session record(s) and 2 session log(s); 0 already in the store" in done.stdout
    with psycopg.connect(store_url) as conn:  # her rounds name her, not the importer
        assert conn.execute("SELECT DISTINCT user_id FROM session_rounds").fetchall() == [("alice",)]
    again = ollie(tmp_path, *args, OLLIE_STORE=store_url)
    assert "imported 0 session record(s) and 0 session log(s); 4 already in the store" in again.stdout, again

    registry = Registry(store_url)
    try:
        assert sorted(i.title for i in registry.page(Scope(user_id="alice"))[0]) == ["first", "second"]
        assert registry.page(Scope(user_id="bob"))[0] == []  # only alice's were imported
    finally:
        registry.close()
    monkeypatch.setenv("OLLIE_STORE", store_url)
    assert [m.content for m in persist_mod.load("unused", ids[0]).messages] == ["first question", "first answer"]

    shared = ollie(tmp_path, "store", "share", ids[1], "backend", OLLIE_STORE=store_url, OLLIE_USER="alice")
    assert shared.returncode == 0 and "shared to team backend" in shared.stdout, shared
    refused = ollie(tmp_path, "store", "share", ids[0], "backend", OLLIE_STORE=store_url, OLLIE_USER="bob")
    assert refused.returncode == 2 and "belongs to another user" in refused.stderr, refused
    monkeypatch.setenv("OLLIE_TEAMS", "backend")  # bob's: read as his registry opens
    member = Registry(store_url)
    try:
        assert [i.title for i in member.page(Scope(user_id="bob"))[0]] == ["second"]
    finally:
        member.close()


def test_doctor_checks_the_store(store_url, tmp_path):
    assert check_store({}).ok and "OLLIE_STORE is not set" in check_store({}).detail
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    down = check_store({"OLLIE_STORE": f"postgresql://alice:secret@127.0.0.1:{port}/ollie"})
    assert not down.ok and "secret" not in down.detail and "alice:***@" in down.detail and "start the server" in down.fix
    wrong = check_store({"OLLIE_STORE": "mysql://x"})
    assert not wrong.ok and "postgresql://" in wrong.fix
    report = ollie(tmp_path, "doctor", OLLIE_STORE=store_url, OLLIE_BACKEND="openai", OLLIE_OPENAI_URL="http://127.0.0.1:9")
    assert "ok   store: PostgreSQL at postgresql://postgres:***@127.0.0.1:" in report.stdout, report.stdout


def test_an_unreachable_store_is_an_os_error_so_sessions_run_unlisted():
    from ollie.sessions.pg.store import StoreUnavailableError

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(StoreUnavailableError, match=f"127.0.0.1:{port}") as caught:
        Registry(f"postgresql://alice:secret@127.0.0.1:{port}/ollie", busy_timeout_s=1.0)
    # The engine's recorder treats an OSError as "registry unavailable": the session runs, unlisted.
    assert isinstance(caught.value, OSError) and "secret" not in str(caught.value)


def test_import_never_copies_another_users_session_and_gives_record_less_files_an_owner(store_url, tmp_path):
    root = tmp_path / "local"
    registry = Registry(root / "sessions.db")
    try:
        bobs = registry.ensure(Request(user_id="bob", agent_id="coding", kind=Kind.CHAT, channel=Channel.CLI,
                                       title="bob's secret")).id
    finally:
        registry.close()
    old = Session()  # a terminal session from before the registry: a file, no record
    for sid, text in ((bobs, "bob's secret question"), (old.id, "alice's old question")):
        session = Session(id=sid, title=text)
        session.messages.append(Message("user", text))
        SessionFile(root / "sessions", sid).save(session)

    done = ollie(tmp_path, "store", "import", "--user", "alice", "--registry", str(root / "sessions.db"),
                 "--sessions-dir", str(root / "sessions"), OLLIE_STORE=store_url)
    assert done.returncode == 1, done  # something was left behind, and said why
    assert "imported 0 session record(s) and 1 session log(s)" in done.stdout, done.stdout
    assert f"not imported: log {bobs}: another user's session" in done.stdout, done.stdout

    for user in ("alice", "bob"):
        member = Registry(store_url)
        try:
            listed = [i.id for i in member.page(Scope(user_id=user))[0]]
        finally:
            member.close()
        assert listed == ([old.id] if user == "alice" else []), (user, listed)  # the old file is alice's now
    bob_reads = ollie(tmp_path, "-p", "show me", "--session", old.id, "--no-preflight", OLLIE_STORE=store_url,
                      OLLIE_USER="bob")
    assert bob_reads.returncode != 0 and "alice's old question" not in bob_reads.stdout + bob_reads.stderr
    assert "belongs to another user" in bob_reads.stderr, bob_reads.stderr


def test_import_for_another_user_than_the_stores_role_is_refused_saying_how(team_store, tmp_path):
    _local_sessions(tmp_path / "local")
    done = ollie(tmp_path, "store", "import", "--user", "alice", "--registry", str(tmp_path / "local" / "sessions.db"),
                 "--sessions-dir", str(tmp_path / "local" / "sessions"), OLLIE_STORE=team_store("bob"))
    assert done.returncode == 2, done
    assert "cannot import alice's sessions: " in done.stderr and "connects as role 'bob', which the server lets " \
        "write only rows naming bob: import them as alice's role" in done.stderr, done.stderr
    with psycopg.connect(team_store("postgres")) as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM session_rounds").fetchone() == (0,)
