"""What a user sees when the store cannot be reached, and the backups TEAM.md prescribes, on a real server."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from ollie.backend.types import Message
from ollie.sessions import persist
from ollie.sessions.pg.server import _bin
from ollie.sessions.pg.store import PgStore, StoreUnavailableError
from tests.teams.conftest import home_env

_databases = iter(range(1, 1000))


@pytest.fixture
def database(pg_server) -> Iterator[tuple[str, object]]:
    """A database of its own (a store on it can be cut off without touching the other tests); (URL, admin)."""
    name = f"outage_{next(_databases)}_{time.monotonic_ns() % 10**6}"
    admin = psycopg.connect(pg_server.url, autocommit=True)
    admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield pg_server.url.rsplit("/", 1)[0] + "/" + name, admin
    admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
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
    url = pg_server.url.rsplit("/", 1)[0] + "/no_such_db?password=hunter2"
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError) as caught:
        PgStore(url, busy_timeout_s=10.0)
    assert time.monotonic() - started < 3  # not the pool's 10 s of retries
    message = str(caught.value)
    assert message.startswith("session store OLLIE_STORE=postgresql://postgres@")
    assert 'database "no_such_db" does not exist' in message and "hunter2" not in message and "password=***" in message

    run = subprocess.run([sys.executable, "-m", "ollie.cli", "-p", "hi", "--no-preflight"], capture_output=True,
                         text=True, timeout=60, env=home_env(tmp_path, OLLIE_STORE=url))
    assert run.returncode != 0 and "OLLIE_STORE=" in run.stderr and "does not exist" in run.stderr, run.stderr
    assert "hunter2" not in run.stderr and "error connecting in 'ollie-store'" not in run.stderr  # no pool noise


def test_a_store_found_down_fails_fast_until_it_is_back(database):
    url, admin = database
    store = PgStore(url, busy_timeout_s=1.0)
    try:
        _allow(admin, url, False)
        with pytest.raises(StoreUnavailableError, match="not currently accepting connections"):
            store.version()  # the first call waits out the pool once, then says why
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError, match="not currently accepting connections"):
            store.version()
        assert time.monotonic() - started < 0.5  # found down: not another wait on the pool
        _allow(admin, url, True)
        started = time.monotonic()
        assert store.version() > 0  # back: served at once, while the pool is still in its reconnect back-off
        with store.transaction() as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        assert time.monotonic() - started < 1
        deadline = time.monotonic() + 5
        while store._down.is_set():  # and the pool is back in use soon after, not after its reconnect back-off
            assert time.monotonic() < deadline
            store.version()
            time.sleep(0.05)
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
        subprocess.run([_bin("pg_dump"), "-Fc", "--exclude-table-data=session_leases", "-d", url], stdout=out,
                       check=True, timeout=60)
    restored = url + "_restored"
    admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(restored.rsplit("/", 1)[1])))
    try:
        subprocess.run([_bin("pg_restore"), "--clean", "--if-exists", "-d", restored, str(dump)], check=True,
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
