"""The registry's PostgreSQL store: a psycopg pool; each write one transaction, serialised per key where it must be.

psycopg is imported here only, so only a PostgreSQL store needs it. The calls
are synchronous, like the SQLite store's: the daemon and the engine run them on
their registry worker thread, never on the event loop.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool, PoolTimeout

from ollie.sessions.errors import SessionError
from ollie.sessions.location import STORE_VAR, USER_VAR, redact, setting
from ollie.sessions.pg.watchdog import Call, Watchdog
from ollie.sessions.schema import SCHEMA_VERSION, StoreVersionError, pending
from ollie.sessions.store import Conn, Cursor, DuplicateError, StoreBusyError
from ollie.sessions.types import act_as

# The pool reports each failed reconnect as a warning; with no handler Python would print it on the terminal's
# screen. Where ollie configures logging they still reach its log; the user hears of a failure from ollie itself.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())

# Functions are called by their pg_catalog names: a role that may create in a schema of the search path (public,
# before PostgreSQL 15) could add a closer match by argument type (`pg_advisory_xact_lock(integer)`), which then ran
# as whoever called it: the owner migrating, a teammate taking a lock.

# The key of the advisory lock that serialises migrations of one database (two daemons starting at once).
MIGRATION_LOCK = 0x011E5C4E


class StoreUnavailableError(SessionError, ConnectionError):
    """The PostgreSQL server cannot be reached (or dropped the connection). An OSError, as a missing file is."""


class StoreRefusedError(SessionError):
    """The server refused a statement to this role: a row naming another user (row-level security), a missing grant."""


class StoreIdentityError(SessionError):
    """OLLIE_USER names another user than the role the store authenticates this process as."""


# Why a call failed that the watchdog gave up on (see ollie.sessions.pg.watchdog).
SILENT = "no answer, nor to a new connection: timed out"

_DUPLICATES = {"sessions_pkey": "id", "sessions_one_main": "main"}


@functools.cache  # the registry has a few dozen statements
def _pg_sql(sql: str) -> str:
    """The registry's `?` placeholders as psycopg's `%s`."""
    return sql.replace("%", "%%").replace("?", "%s")


class PgConn:
    """A pooled psycopg connection with the store's common face."""

    def __init__(self, conn: psycopg.Connection[Any], where: str, call: Call | None = None) -> None:
        self.raw = conn
        self._where = where
        self._call = call

    def execute(self, sql: str, params: Sequence[object] = ()) -> Cursor:
        try:
            return self.raw.execute(_pg_sql(sql), list(params))  # type: ignore[arg-type]  # built, not literal, SQL
        except pg_errors.UniqueViolation as exc:
            constraint = exc.diag.constraint_name or ""
            raise DuplicateError(_DUPLICATES.get(constraint, constraint), str(exc)) from None
        except pg_errors.InsufficientPrivilege as exc:
            raise StoreRefusedError(f"{self._where}: the server refused it: {exc.diag.message_primary}") from None
        except pg_errors.LockNotAvailable:  # held past `lock_timeout` (see _bounded)
            raise StoreUnavailableError(f"session store {STORE_VAR}={self._where}: gave up after {2 * ttl_s():.0f} s "
                                        f"waiting for a lock {self._holders()} (end that transaction)") from None
        except (psycopg.OperationalError, pg_errors.IdleInTransactionSessionTimeout,  # (see _bounded)
                pg_errors.UndefinedTable) as exc:  # the store's tables dropped under it: gone, as a server down
            # The server's reason, not its echo of the statement (a line of SQL and a caret under it).
            reason = exc.diag.message_primary or " ".join(str(exc).split())
            if self._call is not None and self._call.dropped:
                reason = SILENT
            raise StoreUnavailableError(f"session store {STORE_VAR}={self._where}: {_what_to_do(reason)}") from exc

    def _holders(self) -> str:
        """Who holds the locks a statement waited on too long, as far as the server shows: the other connections to
        the database that hold locks and wait on none, the oldest transaction first (names escaped of line breaks)."""
        try:
            if self.raw.info.transaction_status == TransactionStatus.INERROR:
                self.raw.execute("ROLLBACK")  # the transaction is lost anyway; its caller's rollback finds none
            rows = self.raw.execute(_HOLDERS).fetchall()
        except psycopg.Error:
            rows = []
        named = [f"{' '.join(str(user).split())} ({' '.join(str(app).split())[:40] or 'no application name'}, "
                 f"pid {pid})" for user, app, pid in rows]
        return f"held by {', '.join(named)}" if named else "another connection holds"


# The connections holding a lock in this database, waiting on none, oldest transaction first (its start is shown only
# to the same role or a privileged one: others come after, by pid).
_HOLDERS = """
SELECT a.usename, a.application_name, a.pid FROM pg_catalog.pg_stat_activity a
WHERE a.datname = pg_catalog.current_database() AND a.pid <> pg_catalog.pg_backend_pid()
  AND EXISTS (SELECT 1 FROM pg_catalog.pg_locks l WHERE l.pid = a.pid AND l.granted AND l.locktype <> 'virtualxid')
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_locks l WHERE l.pid = a.pid AND NOT l.granted)
ORDER BY a.xact_start NULLS LAST, a.pid LIMIT 3
"""

TTL_VAR = "OLLIE_LEASE_TTL"
DEFAULT_TTL_S = 30.0


def ttl_s() -> float:
    """The lease TTL in seconds (OLLIE_LEASE_TTL, default 30): see ollie.sessions.pg.lease, and `_bounded`."""
    try:
        value = float(setting(TTL_VAR) or DEFAULT_TTL_S)
    except ValueError:
        return DEFAULT_TTL_S
    return value if value > 0 else DEFAULT_TTL_S


def _bounded(conn: psycopg.Connection[Any]) -> None:
    """Have the server end this connection when it idles in a transaction longer than a lease lasts: a process
    stopped mid-commit (a laptop suspended, a SIGSTOP) kept its row locks for as long as it stayed stopped, and every
    other process taking its lapsed lease over waited on them, its whole registry thread with it. And have a
    statement give up waiting for a lock after two leases: one held by something else (an admin's psql
    transaction, a stuck migration) held ollie without bound; an ollie frozen mid-commit is ended after one."""
    ttl_ms = int(ttl_s() * 1000)
    conn.execute("SELECT pg_catalog.set_config('idle_in_transaction_session_timeout', %s, false), "
                 "pg_catalog.set_config('lock_timeout', %s, false)", (f"{ttl_ms}ms", f"{2 * ttl_ms}ms"))


def _options(url: str, timeout_s: float) -> dict[str, Any]:
    """How to connect: autocommit, and a server that stops answering noticed within about a lease (`tcp_user_timeout`,
    keepalives: probed after a third of one). A host frozen or cut off the network acknowledges nothing, and a
    statement sent to it waited for TCP's retransmissions, a quarter of an hour, its thread (the registry's) stuck.
    A live server's long statement acknowledges each packet, so none of it is cut short. What the URL sets stands."""
    probe = max(1, int(ttl_s() / 3))
    given = conninfo_to_dict(url)
    bounds = {"keepalives": 1, "keepalives_idle": probe, "keepalives_interval": probe, "keepalives_count": 3,
              "tcp_user_timeout": int(ttl_s() * 1000), "connect_timeout": max(1, int(timeout_s))}
    return {"autocommit": True, **{key: value for key, value in bounds.items() if key not in given}}


def _connect(url: str, where: str, timeout_s: float) -> psycopg.Connection[Any]:
    """One connection outside the pool, or StoreUnavailableError at once with libpq's reason (a refused
    password, an unknown host, a server that is down): the pool would retry until its timeout and then say only
    that it timed out."""
    try:
        conn = psycopg.connect(url, **_options(url, timeout_s))
        try:
            _bounded(conn)
        except BaseException:
            conn.close()
            raise
        return conn
    except psycopg.Error as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        password = _password(url)
        if password:
            reason = reason.replace(password, "***")  # libpq quotes a malformed URL back whole
        raise StoreUnavailableError(f"session store {STORE_VAR}={where}: cannot connect: {_what_to_do(reason)}") from None


def _what_to_do(reason: str) -> str:
    """libpq's reason, and what to do when it is silence (the server's host frozen, or the network to it cut)."""
    if "timeout expired" in reason or "timed out" in reason:
        return (f"{reason}: the server stopped answering: check that its host is up and that this machine reaches it "
                "(ollie tries again at the next request)")
    return reason


def _password(url: str) -> str:
    """The password a URL carries ("" for none, or for a URL libpq cannot parse)."""
    try:
        return str(conninfo_to_dict(url).get("password") or "")
    except psycopg.Error:
        return ""


class PgStore:
    """A pool of connections to one PostgreSQL database (its schema migrated on open)."""

    def __init__(self, url: str, *, busy_timeout_s: float = 10.0, migrate: bool = True, max_size: int = 4) -> None:
        self.url = url
        self._busy_timeout_s = busy_timeout_s
        self._down = threading.Event()  # the server was found down: connect directly until the pool is back
        self._probe_timeout_s = min(2.0, busy_timeout_s)
        after = ttl_s() / 3
        self._watchdog = Watchdog(lambda: psycopg.connect(url, **_options(url, after)).close(), after, self._down.set)
        _connect(url, self.location, busy_timeout_s).close()
        # `check` on each checkout (an empty query, one round trip): after a server restart or a dropped
        # connection the pool hands out a fresh connection instead of one dead one per pooled slot.
        self._pool = ConnectionPool(url, min_size=1, max_size=max_size, open=False, timeout=busy_timeout_s, num_workers=1,
                                    kwargs=_options(url, busy_timeout_s),
                                    check=self._check, configure=_bounded, name="ollie-store")
        try:
            self._pool.open(wait=True, timeout=busy_timeout_s)
        except PoolTimeout as exc:
            self._pool.close()
            raise StoreUnavailableError(f"{self.location}: cannot connect within {busy_timeout_s} s") from exc
        try:
            if migrate:
                self.migrate()
            self.role = self._authenticated_role()
        except BaseException:
            self.close()
            raise

    def _authenticated_role(self) -> str:
        """The role this store authenticates this process as ("" when it does not: the tables' owner, a one-role
        team's, or no tables yet); sessions are then that role's (OLLIE_USER unset), and only its (StoreIdentityError)."""
        with self.connection() as conn:
            role, checked = conn.execute("SELECT current_user, pg_catalog.row_security_active("
                                         "pg_catalog.to_regclass('sessions'))").fetchone()
        if not checked:
            return ""
        named = setting(USER_VAR)
        if named and named != role:
            raise StoreIdentityError(
                f"session store {STORE_VAR}={self.location}: connected as role {role!r}, so sessions are {role}'s, "
                f"but {USER_VAR}={named!r} names another user: unset {USER_VAR} or set it to {role!r}")
        act_as(role)
        return str(role)

    @property
    def location(self) -> str:
        """Where the store is, for messages: the URL without its password."""
        return redact(self.url)

    def close(self) -> None:
        """Close every connection of the pool."""
        self._watchdog.close()
        self._pool.close()

    def _check(self, conn: psycopg.Connection[Any]) -> None:
        """The pool's check of a connection it hands out, watched as a call is."""
        with self._watchdog.watching(conn):
            ConnectionPool.check_connection(conn)

    @contextmanager
    def connection(self) -> Iterator[PgConn]:
        """A connection of the pool, in autocommit mode (each statement its own transaction).

        After a wait that found the server down, each call connects on its own until the pool has a connection
        again: refused at once while it is down, served at once when back (the pool alone would wait each time).
        """
        if self._watchdog.silent:  # until the watchdog's probe is answered again
            raise StoreUnavailableError(f"session store {STORE_VAR}={self.location}: {_what_to_do(SILENT)}")
        if self._down.is_set():
            with _connect(self.url, self.location, self._probe_timeout_s) as direct:
                if self._pool.get_stats().get("pool_available", 0):
                    self._down.clear()  # the pool has reconnected: back to it from the next call
                else:
                    self._pool.check()  # the server is back: have the pool connect now, not after its back-off
                with self._watchdog.watching(direct) as call:
                    yield PgConn(direct, self.location, call)
            return
        entered = False
        try:
            # A short wait: past it, a connection of its own tells at once whether the server is down.
            with self._pool.connection(timeout=self._probe_timeout_s) as conn:
                entered = True
                with self._watchdog.watching(conn) as call:
                    yield PgConn(conn, self.location, call)
        except PoolTimeout as exc:
            if entered:
                raise StoreBusyError(f"{self.location}: no connection free after {self._probe_timeout_s} s") from exc
            try:
                direct = _connect(self.url, self.location, self._probe_timeout_s)
            except StoreUnavailableError:
                self._down.set()
                raise
            with direct, self._watchdog.watching(direct) as call:  # the server answers: the pool is busy, or reconnecting
                yield PgConn(direct, self.location, call)
        except psycopg.OperationalError as exc:
            raise StoreUnavailableError(f"{self.location}: {exc}") from exc

    def version(self) -> int:
        """The schema version of the database (0 before the first migration)."""
        with self.connection() as conn:
            exists = conn.execute("SELECT pg_catalog.to_regclass('ollie_schema') IS NOT NULL").fetchone()[0]
            if not exists:
                return 0
            row = conn.execute("SELECT version FROM ollie_schema").fetchone()
            return int(row[0]) if row else 0

    def migrate(self) -> tuple[int, int]:
        """Bring the schema up to this ollie's version, in one transaction; (version before, version after)."""
        current = self.version()
        if not pending(current, self.location):
            return current, current  # no DDL: a role per person may not run any (docs/TEAM.md)
        try:
            return self._migrate()
        except StoreRefusedError as exc:
            raise StoreVersionError(
                f"{self.location}: the store's schema is version {current}, this ollie's {SCHEMA_VERSION}, and this "
                "role may not migrate it: run `ollie store migrate` as the role that owns the tables") from exc

    def _migrate(self) -> tuple[int, int]:
        with self.transaction() as conn:
            conn.execute("SELECT pg_catalog.pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            conn.execute("CREATE TABLE IF NOT EXISTS ollie_schema (version INTEGER NOT NULL)")
            row = conn.execute("SELECT version FROM ollie_schema").fetchone()
            before = int(row[0]) if row else 0
            if row is None:
                conn.execute("INSERT INTO ollie_schema (version) VALUES (0)")
            after = before
            for migration in pending(before, self.location):
                for statement in migration.statements(postgres=True):
                    conn.execute(statement)
                after = migration.version
            if after != before:
                conn.execute("UPDATE ollie_schema SET version = ?", (after,))
        return before, after

    @contextmanager
    def transaction(self) -> Iterator[PgConn]:
        """A write transaction: all or nothing."""
        with self.connection() as conn:
            conn.execute("BEGIN")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:  # the caller's failure, or the commit's
                with suppress(psycopg.Error):
                    conn.raw.execute("ROLLBACK")
                raise

    reading = connection  # for reads: each statement sees the database as committed when it starts

    def touch_shared(self, conn: Conn, session_id: str) -> None:
        """Bump the last activity of a teammate's shared session (its record is its owner's to write: the server's
        function sets only that, to now)."""
        conn.execute("SELECT ollie_touch_shared(?::text)", (session_id,))  # text: the one match by type

    def lock(self, conn: Conn, key: str) -> None:
        """Serialise the rest of the transaction with every other one locking `key`, on any machine.

        READ COMMITTED re-reads at each statement, so a read-then-write under the lock sees the last holder's commit.
        """
        conn.execute("SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended(?, 0))", (key,))
