"""Leases: a live session is held by one process at a time, kept by a heartbeat, taken over once it lapses.

The holder renews its row every third of the TTL; once `ttl` seconds pass without a heartbeat (by the
database's clock) another process may take over. Each round checks the lease in the same statement, so a
holder that lost it writes nothing.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ollie.sessions.errors import LiveElsewhereError, SessionError
from ollie.sessions.pg.store import ttl_s

if TYPE_CHECKING:
    from ollie.sessions.pg.store import PgConn, PgStore
    from ollie.sessions.store import Conn

log = logging.getLogger("ollie.sessions.lease")


# A lease is taken over once its heartbeat (the store's now() when written) is a TTL old, or more than a TTL ahead:
# no process wrote that (a statement begun after this one may be a little ahead), and it would never lapse.
_ACQUIRE = """
INSERT INTO session_leases (session_id, holder, host, pid, user_id, acquired_at, heartbeat_at)
VALUES (?, ?, ?, ?, ?, now(), now())
ON CONFLICT (session_id) DO UPDATE SET
    holder = EXCLUDED.holder, host = EXCLUDED.host, pid = EXCLUDED.pid, user_id = EXCLUDED.user_id,
    acquired_at = CASE WHEN session_leases.holder = EXCLUDED.holder THEN session_leases.acquired_at ELSE now() END,
    heartbeat_at = now()
WHERE session_leases.holder = EXCLUDED.holder
   OR session_leases.heartbeat_at NOT BETWEEN now() - pg_catalog.make_interval(secs => ?)
                                          AND now() + pg_catalog.make_interval(secs => ?)
RETURNING holder
"""


class SessionLeasedError(LiveElsewhereError):
    """The session is live in another process (the message names where); it can be taken over once that lapses."""


class LeaseLostError(LiveElsewhereError):
    """This process's lease on a session lapsed and another took the session over: its rounds are refused."""

    final = True  # no later save retries: the log writes nothing until the session is opened again


def live_elsewhere(conn: Conn, session_ids: Sequence[str]) -> dict[str, str]:
    """Of these sessions, those another process holds live (its lease not lapsed): id -> "<host> (pid <pid>)"."""
    rows = conn.execute(
        "SELECT session_id, host, pid FROM session_leases WHERE session_id = ANY(?) "
        "AND heartbeat_at BETWEEN now() - pg_catalog.make_interval(secs => ?) "
        "AND now() + pg_catalog.make_interval(secs => ?) "
        "AND NOT (host = ? AND pid = ?)",
        (list(session_ids), ttl_s(), ttl_s(), socket.gethostname(), os.getpid())).fetchall()
    return {str(sid): f"{host} (pid {pid})" for sid, host, pid in rows}


class Leases:
    """The leases one process holds in one store, and the thread that keeps them alive."""

    def __init__(self, store: PgStore, *, user: str) -> None:
        self.store = store
        self.user = user
        self.ttl = ttl_s()
        self.host = socket.gethostname()
        self.holder = f"{self.host}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._held: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self, conn: PgConn, session_id: str) -> None:
        """Hold `session_id` (again), or SessionLeasedError naming where it is live."""
        row = conn.execute(_ACQUIRE, (session_id, self.holder, self.host, os.getpid(), self.user, self.ttl,
                                      self.ttl)).fetchone()
        if row is None:
            other = conn.execute(
                "SELECT host, pid, user_id, acquired_at, heartbeat_at, now() FROM session_leases WHERE session_id = ?",
                (session_id,)).fetchone()
            if other is not None:
                host, pid, user, since, beat, now = other
                left = max(0.0, self.ttl - (now - beat).total_seconds())
                # A teammate cannot close it on another's machine: what they can do is ask, or fork it.
                ask = "close it there first" if user == self.user else \
                    f"ask {user} to close it there, or fork it to go on in a session of your own"
                raise SessionLeasedError(
                    f"session {session_id} is live on {host} (pid {pid}, user {user}) since "
                    f"{since.astimezone().isoformat(timespec='seconds')}: "
                    f"{ask}; if that process died, its lease lapses {left:.0f} s from now "
                    f"({self.ttl:.0f} s after its last heartbeat) and the session can then be resumed here")
            return self.acquire(conn, session_id)  # released between the two statements: try again
        with self._lock:
            self._held.add(session_id)
            if self._thread is None:
                self._thread = threading.Thread(target=self._beat, name="ollie-leases", daemon=True)
                self._thread.start()

    def holds(self, session_id: str) -> bool:
        """Whether this process holds the session's lease (as far as the last heartbeat knows)."""
        with self._lock:
            return session_id in self._held

    def release(self, session_id: str) -> None:
        """Give the lease up (if it is still ours): another process may resume the session at once."""
        with self._lock:
            self._held.discard(session_id)
        with self.store.connection() as conn:
            conn.execute("DELETE FROM session_leases WHERE session_id = ? AND holder = ?", (session_id, self.holder))

    def close(self) -> None:
        """Stop the heartbeat and release every lease held."""
        self._stop.set()
        with self._lock:
            held, self._held = list(self._held), set()
        if held:
            try:
                with self.store.connection() as conn:
                    conn.execute("DELETE FROM session_leases WHERE holder = ?", (self.holder,))
            except SessionError as exc:
                log.warning("could not release leases: %s", exc)

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            with self._lock:
                held = sorted(self._held)
            if not held:
                continue
            try:
                with self.store.connection() as conn:
                    kept = {r[0] for r in conn.execute(
                        "UPDATE session_leases SET heartbeat_at = now() WHERE holder = ? AND session_id = ANY(?) "
                        "RETURNING session_id", (self.holder, held))}
            except SessionError as exc:
                log.warning("lease heartbeat failed: %s", exc)
                continue
            lost = set(held) - kept
            if lost:
                log.warning("leases lost (taken over after lapsing): %s", ", ".join(sorted(lost)))
                with self._lock:
                    self._held -= lost
