"""Fixtures of the session tests: a registry on a private store (SQLite, and PostgreSQL) with a stepping clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ollie.sessions.registry import Registry
from tests.teams.pgserver import shared_server

STORES = ["sqlite", "postgresql"]


class SteppingClock:
    """Each reading is one second after the previous, so 'most recent' is unambiguous."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def clock() -> SteppingClock:
    return SteppingClock()


@pytest.fixture(scope="session")
def pg_server():
    """One real PostgreSQL server for the whole run (stopped at exit)."""
    return shared_server()


@pytest.fixture(params=STORES)
def db_path(request, tmp_path):
    """The store of one test: a SQLite file, or a fresh schema of the shared PostgreSQL server (as a URL)."""
    if request.param == "sqlite":
        return tmp_path / "sessions.db"
    return request.getfixturevalue("pg_server").schema_url()


@pytest.fixture
def registry(db_path, clock):
    reg = Registry(db_path, clock=clock, busy_timeout_s=5.0)
    yield reg
    reg.close()


@pytest.fixture(params=["files", "postgresql"])
def log_store(request, monkeypatch):
    """Where session logs go: "" for files in the sessions dir, else OLLIE_STORE's fresh PostgreSQL schema."""
    if request.param == "files":
        yield ""
        return
    from ollie.sessions.pg import log as pg_log

    url = request.getfixturevalue("pg_server").schema_url()
    monkeypatch.setenv("OLLIE_STORE", url)
    yield url
    pg_log.close_all()
