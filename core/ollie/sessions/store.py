"""The registry's store interface, and its embedded SQLite store: one file, WAL, BEGIN IMMEDIATE transactions."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import Any, Protocol

from ollie import paths
from ollie.sessions.errors import SessionError
from ollie.sessions.schema import pending
from ollie.sessions.types import COLUMNS, Info, SortKey

DB_NAME = "sessions.db"

# Besides an Info's columns: the team channel it is shared to ('' for none, Registry.share). Columns of schema 1
# no field names (group_id, guest_id, project_id, last_viewed_at, latest_seq, binding) keep their defaults.
SELECT = f"SELECT {', '.join(COLUMNS)}, team FROM sessions"


class Cursor(Protocol):
    """What a statement returns, in both stores (sqlite3's cursor, psycopg's)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Conn(Protocol):
    """A store connection inside a transaction or a read: `?` placeholders, duplicates as DuplicateError."""

    def execute(self, sql: str, params: Sequence[object] = ()) -> Cursor: ...


class DuplicateError(SessionError):
    """An insert the database refused as a duplicate: `what` is "id" or "main"."""

    def __init__(self, what: str, detail: str) -> None:
        super().__init__(detail)
        self.what = what


class StoreLike(Protocol):
    """What the registry needs of a store (SQLite here, PostgreSQL in ollie.sessions.pg.store)."""

    @property
    def location(self) -> str: ...

    def close(self) -> None: ...

    def transaction(self) -> AbstractContextManager[Conn]: ...

    def reading(self) -> AbstractContextManager[Conn]: ...

    def lock(self, conn: Conn, key: str) -> None: ...

    def touch_shared(self, conn: Conn, session_id: str) -> None: ...


class _SqliteConn:
    """sqlite3 with the store's common face (duplicates as DuplicateError)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[object] = ()) -> Cursor:
        try:
            return self._conn.execute(sql, params)
        except sqlite3.IntegrityError as exc:
            if "UNIQUE" not in str(exc):
                raise
            # Which uniqueness rule it broke: the one active main session of a user (its index names user_id), or the id.
            raise DuplicateError("main" if "sessions.user_id" in str(exc) else "id", str(exc)) from None


class StoreBusyError(SessionError):
    """The store stayed locked by another process for longer than the busy timeout."""


def default_path() -> Path:
    """The registry database: `<data dir>/sessions.db`."""
    return paths.data_dir() / DB_NAME


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
        self.migrate()

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
                if "locked" not in str(exc).lower() and "busy" not in str(exc).lower():
                    raise
                if time.monotonic() >= deadline:
                    raise StoreBusyError(f"{self.path}: still locked after {self._busy_timeout_s} s") from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.05)

    @property
    def location(self) -> str:
        """Where the store is, for messages: the database file."""
        return str(self.path)

    def version(self) -> int:
        """The schema version of the file."""
        with self.reading() as conn:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])

    def migrate(self) -> tuple[int, int]:
        """Bring the schema up to this ollie's version in one transaction (done on open); (before, after)."""
        with self.transaction() as conn:
            before = after = conn.execute("PRAGMA user_version").fetchone()[0]
            for migration in pending(before, str(self.path)):
                for statement in migration.statements(postgres=False):
                    conn.execute(statement)
                after = migration.version
                conn.execute(f"PRAGMA user_version = {after}")
        return before, after

    def lock(self, conn: Conn, key: str) -> None:
        """Serialise the rest of the transaction on `key`: BEGIN IMMEDIATE already serialises every writer."""

    def touch_shared(self, conn: Conn, session_id: str) -> None:
        """Bump the last activity of a record this role may not write: none here (one user's file, every row its)."""

    @contextmanager
    def transaction(self) -> Iterator[Conn]:
        """A write transaction (BEGIN IMMEDIATE): all or nothing."""
        with self._lock:
            conn = self._conn
            self._retry(lambda: conn.execute("BEGIN IMMEDIATE"))
            try:
                yield _SqliteConn(conn)
                self._retry(lambda: conn.execute("COMMIT"))
            except BaseException:  # the caller's failure, or the commit's
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise

    @contextmanager
    def reading(self) -> Iterator[Conn]:
        """The connection for reads (each statement sees one consistent snapshot in WAL mode)."""
        with self._lock:
            yield _SqliteConn(self._conn)


def row_info(row: Sequence[object]) -> Info:
    """A SELECT row as an Info, unvalidated (the registry validates what it hands on)."""
    return Info.from_row(dict(zip(COLUMNS, row[: len(COLUMNS)], strict=True)), team=str(row[len(COLUMNS)]))


def fetch(conn: Conn, session_id: str) -> Info | None:
    """The row of one session, or None."""
    row = conn.execute(f"{SELECT} WHERE id = ?", (session_id,)).fetchone()
    return row_info(row) if row else None


def after(key: SortKey) -> tuple[str, list[object]]:
    """The clause for the rows listed after `key`: a page's start that rows left out of a listing cannot shift."""
    active, session_id = key
    if active is None:
        return "(last_active IS NULL AND id < ?)", [session_id]
    return "(last_active < ? OR last_active IS NULL OR (last_active = ? AND id < ?))", [active, active, session_id]


def select(conn: Conn, where: Sequence[str], params: Sequence[object], *, limit: int = 0) -> list[Info]:
    """Rows matching all `where` clauses, most recently active first."""
    # NULLS LAST: PostgreSQL sorts NULL first in DESC, SQLite last; `after` needs one order in both.
    sql = f"{SELECT} WHERE {' AND '.join(where) or 'TRUE'} ORDER BY last_active DESC NULLS LAST, id DESC"
    args = list(params)
    if limit:
        sql += " LIMIT ?"
        args.append(limit)
    return [row_info(row) for row in conn.execute(sql, args)]


def insert(conn: Conn, info: Info) -> None:
    """Insert one session row, its team aside (DuplicateError naming the rule a duplicate breaks)."""
    values = info.row()
    values["archived"] = int(info.archived)
    placeholders = ", ".join("?" for _ in COLUMNS)
    conn.execute(f"INSERT INTO sessions ({', '.join(COLUMNS)}) VALUES ({placeholders})", [values[c] for c in COLUMNS])


def update(conn: Conn, session_id: str, **changes: object) -> int:
    """Set some columns of one session; how many rows changed (0: none, or one the server keeps from this role)."""
    unknown = set(changes) - set(COLUMNS) - {"team"}
    if unknown:
        raise ValueError(f"unknown columns {sorted(unknown)}")
    assignments = ", ".join(f"{name} = ?" for name in changes)
    values = [int(v) if isinstance(v, bool) else v for v in changes.values()]
    return conn.execute(f"UPDATE sessions SET {assignments} WHERE id = ?", [*values, session_id]).rowcount
