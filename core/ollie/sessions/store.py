"""The registry's SQLite store: one file, WAL, every multi-step change in one BEGIN IMMEDIATE transaction."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import fields
from pathlib import Path

from ollie import paths
from ollie.sessions.errors import SessionError
from ollie.sessions.types import SessionRecord

SCHEMA_VERSION = 1
DB_NAME = "sessions.db"

COLUMNS = tuple(f.name for f in fields(SessionRecord))
SELECT = f"SELECT {', '.join(COLUMNS)}, binding FROM sessions"

_SCHEMA = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    group_id TEXT NOT NULL DEFAULT '',
    guest_id TEXT NOT NULL DEFAULT '',
    channel TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL,
    project_id TEXT NOT NULL DEFAULT '',
    title TEXT NOT NULL DEFAULT '',
    created_at INTEGER,
    last_active INTEGER,
    last_turn_started_at INTEGER,
    last_turn_completed_at INTEGER,
    last_turn_result TEXT NOT NULL DEFAULT '',
    last_viewed_at INTEGER,
    archived INTEGER NOT NULL DEFAULT 0,
    latest_seq INTEGER NOT NULL DEFAULT 0,
    -- The chat-channel binding this session serves, '' for none (Registry.resolve_chat_channel).
    binding TEXT NOT NULL DEFAULT ''
);
-- At most one active main per user and agent, and one active session per binding:
-- the database itself refuses a second one, whichever process tries.
CREATE UNIQUE INDEX sessions_one_main ON sessions(user_id, agent_id) WHERE kind = 'main' AND archived = 0;
CREATE UNIQUE INDEX sessions_one_binding ON sessions(binding) WHERE binding <> '' AND archived = 0;
CREATE INDEX sessions_by_owner ON sessions(user_id, agent_id, last_active);
CREATE INDEX sessions_by_agent ON sessions(agent_id, last_active);
"""


class StoreBusyError(SessionError):
    """The store stayed locked by another process for longer than the busy timeout."""


def default_path() -> Path:
    """The registry database: `<data dir>/sessions.db`."""
    return paths.data_dir() / DB_NAME


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class Store:
    """One SQLite connection guarded by a lock; safe across threads and across processes."""

    def __init__(self, path: Path | str | None = None, *, busy_timeout_s: float = 10.0) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._busy_timeout_s = busy_timeout_s
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(
            self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
        )
        # Sessions hold the user's conversations: readable by the user alone.
        with suppress(OSError):
            os.chmod(self.path, 0o600)
        self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        self._retry(lambda: self._conn.execute("PRAGMA journal_mode = WAL"))
        # NORMAL in WAL mode: a process crash loses nothing that was committed.
        self._conn.execute("PRAGMA synchronous = NORMAL")
        self._migrate()

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    def _retry(self, action: Callable[[], object]) -> object:
        """Run `action`, retrying while another process holds the lock, up to the busy timeout."""
        deadline = time.monotonic() + self._busy_timeout_s
        delay = 0.001
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
                if time.monotonic() >= deadline:
                    raise StoreBusyError(f"{self.path}: still locked after {self._busy_timeout_s} s") from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.05)

    def _migrate(self) -> None:
        with self.transaction() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise SessionError(f"{self.path}: schema version {version} is newer than this ollie ({SCHEMA_VERSION})")
            if version == 0:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _commit(self, conn: sqlite3.Connection) -> None:
        """COMMIT; a separate method so tests can simulate a lost acknowledgement."""
        conn.execute("COMMIT")

    @contextmanager
    def transaction(
        self, *, on_commit_failure: Callable[[str], Exception] | None = None
    ) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE): all or nothing.

        `on_commit_failure` builds the error raised when COMMIT itself fails, the
        one moment at which the outcome is unknown.
        """
        with self._lock:
            conn = self._conn
            self._retry(lambda: conn.execute("BEGIN IMMEDIATE"))
            try:
                yield conn
            except BaseException:
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
            try:
                self._retry(lambda: self._commit(conn))
            except (sqlite3.Error, StoreBusyError) as exc:
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                if on_commit_failure is not None:
                    raise on_commit_failure(str(exc)) from exc
                raise

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """The connection for reads (each statement sees one consistent snapshot in WAL mode)."""
        with self._lock:
            yield self._conn


def row_to_record(row: Sequence[object]) -> tuple[SessionRecord, str]:
    """A SELECT row as (record, binding)."""
    values = dict(zip(COLUMNS, row[: len(COLUMNS)], strict=True))
    values["archived"] = bool(values["archived"])
    return SessionRecord(**values), str(row[len(COLUMNS)])  # type: ignore[arg-type]


def fetch(conn: sqlite3.Connection, session_id: str) -> tuple[SessionRecord, str] | None:
    """The row of one session, or None."""
    row = conn.execute(f"{SELECT} WHERE id = ?", (session_id,)).fetchone()
    return row_to_record(row) if row else None


def fetch_where(conn: sqlite3.Connection, where: str, params: Sequence[object]) -> tuple[SessionRecord, str] | None:
    """The most recently active row matching `where`, or None."""
    row = conn.execute(f"{SELECT} WHERE {where} ORDER BY last_active DESC, id DESC LIMIT 1", params).fetchone()
    return row_to_record(row) if row else None


def select(
    conn: sqlite3.Connection, where: Sequence[str], params: Sequence[object], *, limit: int = 0, offset: int = 0
) -> list[SessionRecord]:
    """Rows matching all `where` clauses, most recently active first."""
    sql = f"{SELECT} WHERE {' AND '.join(where) or '1'} ORDER BY last_active DESC, id DESC"
    args = list(params)
    if limit or offset:
        sql += " LIMIT ? OFFSET ?"
        args += [limit if limit > 0 else -1, offset]
    return [row_to_record(row)[0] for row in conn.execute(sql, args)]


def insert(conn: sqlite3.Connection, record: SessionRecord, *, binding: str = "") -> None:
    """Insert one session row."""
    values = [getattr(record, c) for c in COLUMNS]
    values[COLUMNS.index("archived")] = int(record.archived)
    placeholders = ", ".join("?" for _ in range(len(COLUMNS) + 1))
    conn.execute(f"INSERT INTO sessions ({', '.join(COLUMNS)}, binding) VALUES ({placeholders})", [*values, binding])


def update(conn: sqlite3.Connection, session_id: str, **changes: object) -> None:
    """Set some columns of one session."""
    unknown = set(changes) - set(COLUMNS) - {"binding"}
    if unknown:
        raise ValueError(f"unknown columns {sorted(unknown)}")
    assignments = ", ".join(f"{name} = ?" for name in changes)
    values = [int(v) if isinstance(v, bool) else v for v in changes.values()]
    conn.execute(f"UPDATE sessions SET {assignments} WHERE id = ?", [*values, session_id])
