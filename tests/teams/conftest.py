"""Fixtures of the team tests: a real PostgreSQL server, a fresh store per test, daemons with HOMEs of their own."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import urllib.parse
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features

from ollie.testing import ScriptedLLMServer
from tests.acp.conftest import start_agent  # noqa: F401  (the fixture: `ollie acp` on a store)
from tests.lsp.conftest import client_converter
from tests.teams.pgserver import shared_server


@pytest.fixture(scope="session")
def pg_server():
    """One real PostgreSQL server for the whole run (stopped at exit)."""
    return shared_server()


@pytest.fixture(scope="module")
def _team_llm() -> Iterator[ScriptedLLMServer]:
    """The scripted server of a module's team: daemons or agents started once for the module's tests."""
    with ScriptedLLMServer("openai") as llm:
        yield llm


@pytest.fixture
def team_llm(_team_llm: ScriptedLLMServer) -> Iterator[ScriptedLLMServer]:
    """The module team's server, with this test's requests alone; its script must be used up by the test's end."""
    _team_llm.reset()
    yield _team_llm
    _team_llm.assert_done()


@pytest.fixture
def store_url(pg_server) -> Any:
    """A fresh, empty store (its own schema of the shared server); this process's pools closed after."""
    from ollie.sessions.pg import log as pg_log

    yield pg_server.schema_url()
    pg_log.close_all()


# docs/TEAM.md's set-up of a role per person, run by the tables' owner (here the superuser) once they exist.
TEAM_GRANTS = """
GRANT USAGE ON SCHEMA {schema} TO ollie_team;
GRANT SELECT ON ollie_schema TO ollie_team;
GRANT SELECT, INSERT, UPDATE, DELETE ON sessions, session_rounds, session_compactions, session_leases TO ollie_team;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO ollie_team
"""
PEOPLE = ("alice", "bob", "mallory")


def grant_team(store_url: str) -> None:
    """Make the roles of a team of three (once per server) and grant them the store's tables, as TEAM.md says."""
    import psycopg

    schema = store_url.rpartition("%3D")[2]
    with psycopg.connect(store_url, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'ollie_team'").fetchone() is None:
            conn.execute("CREATE ROLE ollie_team NOLOGIN")
            for person in PEOPLE:
                conn.execute(f"CREATE ROLE {person} LOGIN PASSWORD '{password_of(store_url)}' IN ROLE ollie_team")
        for statement in TEAM_GRANTS.format(schema=schema).split(";"):
            conn.execute(statement)  # type: ignore[arg-type]  # built, not literal, SQL
        if conn.execute("SELECT pg_catalog.to_regprocedure('ollie_touch_shared(text)')").fetchone()[0]:  # schema 6
            conn.execute("GRANT EXECUTE ON FUNCTION ollie_touch_shared(TEXT) TO ollie_team")


def password_of(store_url: str) -> str:
    """The test server's password, which every role made for a test logs in with."""
    return urllib.parse.urlsplit(store_url).password or ""


def role_url(store_url: str, role: str) -> str:
    """The store's URL for another role of the server (the server's password: `password_of`)."""
    return store_url.replace("postgresql://postgres:", f"postgresql://{role}:", 1)


@pytest.fixture
def team_store(store_url) -> Callable[[str], str]:
    """A store migrated by its owner (the superuser) with roles alice, bob and mallory: `url(role)` is theirs."""
    from ollie.sessions.pg.store import PgStore

    PgStore(store_url).close()
    grant_team(store_url)
    return lambda role: role_url(store_url, role)


def home_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a process on 'another machine': its own HOME and XDG dirs, no OLLIE_* but `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OLLIE_", "XDG_"))}
    env["HOME"] = str(home)
    for var, sub in (("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state"),
                     ("XDG_CACHE_HOME", "cache")):
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(home / sub)
    env["OLLIE_APPROVAL"] = "auto"
    return {**env, **extra}


def share_with_backend(store_url: str, session_id: str) -> None:
    """Share alice's session `session_id` with team backend, as `ollie store share` does."""
    from ollie.sessions.registry import Registry
    from ollie.sessions.types import Scope

    registry = Registry(store_url)
    try:
        registry.share(Scope(user_id="alice"), session_id, "backend")
    finally:
        registry.close()


def lapse_lease(store_url: str, session_id: str, ttl_s: int) -> None:
    """The session's lease (of `ttl_s`) just lapsed: its last heartbeat a TTL ago, as if its holder (dead or stopped)
    had renewed it no more for a TTL, which the test then need not sit out (a lapse that comes later fails it)."""
    with psycopg.connect(store_url, autocommit=True) as conn:
        conn.execute("UPDATE session_leases SET heartbeat_at = now() - make_interval(secs => %s) WHERE session_id = %s",
                     (ttl_s, session_id))


class Daemon:
    """A daemon subprocess and its pytest-lsp client."""

    def __init__(self, client: LanguageClient, home: Path) -> None:
        self.client = client
        self.home = home

    def errors(self, session: str) -> list[str]:
        """The `error` events of a session received so far (what the chat shows as errors)."""
        return [e["content"] for e in self.client.ollie_events  # type: ignore[attr-defined]
                if e["session"] == session and e["role"] == "error"]

    async def request(self, method: str, params: Any = None, *, timeout: float = 30) -> Any:
        """Send a request and wait for its result (errors raise JsonRpcException)."""
        return await asyncio.wait_for(self.client.protocol.send_request_async(method, params), timeout)


@contextlib.asynccontextmanager
async def team_daemons(base: Path) -> AsyncIterator[Callable[..., Any]]:
    """A factory: `await start("a", env)` starts a daemon with HOME base/a (its workspace base/a/ws); all are shut
    down when the block ends."""
    started: list[Daemon] = []

    async def start(name: str, env: dict[str, str], init_options: Any = None) -> Daemon:
        home = base / name
        workspace = home / "ws"
        workspace.mkdir(parents=True, exist_ok=True)

        def make_client() -> LanguageClient:
            client = LanguageClient(converter_factory=client_converter)
            register_lsp_features(client)
            client.ollie_events = []  # type: ignore[attr-defined]

            @client.feature("ollie/event")
            def on_event(params: Any) -> None:
                client.ollie_events.append(params)  # type: ignore[attr-defined]

            return client

        config = ClientServerConfig(server_command=[sys.executable, "-m", "ollie_lsp"], client_factory=make_client,
                                    server_env=home_env(home, **env))
        client = await config.start()
        daemon = Daemon(client, home)
        started.append(daemon)
        await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(), initialization_options=init_options,
            root_uri=workspace.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")])), 60)  # a hang's bound
        return daemon

    yield start
    for daemon in started:
        try:
            await asyncio.wait_for(daemon.client.shutdown_session(), 20)
        except Exception:  # noqa: BLE001 - a daemon a test killed or that already exited
            pass
        await daemon.client.stop()


@pytest_asyncio.fixture
async def start_daemon(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """A factory: `await start_daemon("a", env)` starts a daemon with HOME tmp/a (its workspace tmp/a/ws); all are
    shut down after."""
    async with team_daemons(tmp_path) as start:
        yield start


def store_at_version(store_url: str, monkeypatch: pytest.MonkeyPatch, version: int, *rows: str) -> None:
    """Make the tables of schema `version` (its migrations, as ollie ran them then) on a bare store, then `rows` (SQL
    statements); this process then opens stores as the tables' owner, whoever runs the tests."""
    from ollie.sessions import types
    from ollie.sessions.schema import MIGRATIONS

    monkeypatch.setattr(types, "_role", "")  # restored after: a role's store names this process's user
    monkeypatch.delenv("OLLIE_USER", raising=False)
    with psycopg.connect(store_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE ollie_schema (version INTEGER NOT NULL)")
        conn.execute(f"INSERT INTO ollie_schema VALUES ({int(version)})")
        for migration in MIGRATIONS[:version]:
            for statement in migration.statements(postgres=True):
                conn.execute(statement)  # the schema's own statements
        for row in rows:
            conn.execute(row)
