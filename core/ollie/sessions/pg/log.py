"""Session logs in PostgreSQL: the records of the file format, one row per round, under a lease.

A round (what SessionFile would append to its file) is one row inserted by one statement, so a crash
loses at most that round; a snapshot replaces the rows in one transaction. Writes run in order on the
log's own thread so `save` never waits on the network; after a failed write (`on_failure`) the queued
rounds are dropped and the next save writes the whole session again. A teammate's rounds in a shared session (whose
log only its owner rewrites) wait instead, and the next save appends them after the log's last round, in order.
"""

from __future__ import annotations

import atexit
import logging
import secrets
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from ollie.sessions.errors import ForbiddenError, SessionError, owners_only
from ollie.sessions.location import user_teams
from ollie.sessions.logformat import META_TAIL_BYTES, describe_rounds, last_meta
from ollie.sessions.pg.lease import LeaseLostError, Leases
from ollie.sessions.pg.store import PgConn, PgStore, StoreUnavailableError
from ollie.sessions.session import Session
from ollie.sessions.types import os_user

log = logging.getLogger("ollie.sessions.pg")

# One statement, one transaction: the round lands only while this process holds the lease (the lease row
# locked until it commits, so a takeover waits for it) and only after the round it follows, of the same epoch
# (a snapshot starts a new epoch: a writer that missed it appends nothing).
_INSERT_ROUND = """
INSERT INTO session_rounds (session_id, seq, epoch, data, user_id)
SELECT ?, ?, ?, ?, ?
WHERE EXISTS (SELECT 1 FROM session_leases WHERE session_id = ? AND holder = ? FOR SHARE)
  AND EXISTS (SELECT 1 FROM session_rounds WHERE session_id = ? AND seq = ? AND epoch = ?)
"""


# A session is this process's to list and resume unless its registry record names another user and is not
# shared to one of this process's team channels (TEAM.md): the terminal's `--session` and `/sessions` reach
# the log without asking the registry. A log with no record (a registry call failed) is its writer's alone.
_VISIBLE = ("NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = {id} AND s.user_id <> ? "
            "AND NOT (s.team <> '' AND s.team = ANY(pg_catalog.string_to_array(?, ',')))) "
            "AND (EXISTS (SELECT 1 FROM sessions s WHERE s.id = {id}) "
            "OR NOT EXISTS (SELECT 1 FROM session_rounds r WHERE r.session_id = {id} AND r.user_id <> ?))")


def _reader() -> tuple[str, str, str]:
    """The parameters of `_VISIBLE`: this process's user, its team channels (comma-joined), its user again."""
    user = os_user()
    return user, ",".join(user_teams()), user


class LogReplacedError(SessionError):
    """Another writer replaced the session's log since this one last wrote: its round was not appended."""


class LogWriteError(SessionError):
    """A write of the session's log failed (the database said why)."""


class GuestWriteError(LogWriteError):
    """A teammate's rounds no longer follow the shared session's log (its owner wrote since): they cannot be saved."""

    final = True  # no later save retries: the log writes nothing until the session is opened again


_stores: dict[str, tuple[PgStore, Leases]] = {}
_stores_lock = threading.Lock()
# The logs open in this process: a read drains their queued writes first (a process reads its own writes).
_open: weakref.WeakSet[PgRounds] = weakref.WeakSet()


def shared(url: str) -> tuple[PgStore, Leases]:
    """This process's store and leases for `url` (opened, and migrated, on first use)."""
    with _stores_lock:
        found = _stores.get(url)
        if found is None:
            store = PgStore(url, max_size=8)
            found = _stores[url] = (store, Leases(store, user=os_user()))
        return found


def close_all() -> None:
    """Release every lease and close every store this process opened (at exit, and between tests)."""
    for rounds in list(_open):
        rounds.shutdown()
    with _stores_lock:
        opened = list(_stores.values())
        _stores.clear()
    for store, leases in opened:
        leases.close()
        store.close()


atexit.register(close_all)


class PgRounds:
    """The rows of one session's log (a SessionFile's `storage`); reading it to resume takes the lease."""

    def __init__(self, url: str, session_id: str, *, author: str = "") -> None:
        # This process's earlier logs of the session finish their queued writes first: two writers of one
        # session (a close and a reopen) each on its own thread would otherwise land in either order.
        drain(url, session_id)
        self.url = url
        self.session_id = session_id
        self.store, self.leases = shared(url)
        # Whom the rounds it writes name: this process's user, or whose sessions `ollie store import --user` copies.
        self.author = author or self.leases.user
        self.on_failure: Callable[[BaseException], None] = lambda exc: None
        self._failing = False  # the last write failed (on the writer thread): the next failure is not told again
        self._seq = 0
        self._epoch = 0
        self._broken_epoch: int | None = None  # the writer's: rounds of this epoch cannot land (one failed)
        # This log took the lease (its read, or its first snapshot): a later write may only keep it, never take it
        # again, for another process may have resumed the session and written meanwhile (a laptop suspended past
        # the TTL). Once lost, nothing is written until the log is read again.
        self._holding = False
        self._lost: LeaseLostError | GuestWriteError | None = None
        # A teammate's rounds not stored yet, in order (the writer's): after a failed write (`_gap`) they wait for the
        # next save, which appends them after the log's last round if that is still the one they follow.
        self._unsaved: list[bytes] = []
        self._gap = False
        # Set by `read`: the session's owner when it is another user (a teammate's shared session, TEAM.md): its log is
        # theirs to replace, this process only appends to it (the server refuses the rest from schema 6).
        self.owner = ""
        self._writer: ThreadPoolExecutor | None = None
        self._last: Future[None] | None = None  # the last write queued
        self._failure: BaseException | None = None
        # The last meta the reader wrote itself (`read`), when others wrote rows too: see keep_own_settings.
        self._own_meta: dict[str, object] | None = None
        _open.add(self)

    def read(self) -> bytes | None:
        """Take the lease (SessionLeasedError when the session is live elsewhere), then every round in order."""
        drain(self.url, self.session_id)
        with self.store.transaction() as conn:
            user, teams, _ = _reader()
            sid = self.session_id
            visible = conn.execute(f"SELECT 1 WHERE {_VISIBLE.format(id='?')}", (sid, user, teams, sid, sid, user))
            if visible.fetchone() is None:
                raise ForbiddenError(f"session {self.session_id} belongs to another user")
            self.leases.acquire(conn, self.session_id)
            recorded = conn.execute("SELECT user_id FROM sessions WHERE id = ?", (sid,)).fetchone()
            rows = conn.execute("SELECT seq, epoch, data, user_id FROM session_rounds WHERE session_id = ? "
                                "ORDER BY seq", (self.session_id,)).fetchall()
        self._lost = None
        self._unsaved, self._gap = [], False
        self.owner = str(recorded[0]) if recorded is not None and recorded[0] != user else ""
        self._holding = bool(rows)
        if not rows:
            self.leases.release(self.session_id)
            return None
        self._seq, self._epoch = int(rows[-1][0]), int(rows[-1][1])
        self._own_meta = None
        if any(r[3] != user for r in rows):
            self._own_meta = next((meta for r in reversed(rows) if r[3] == user and (meta := last_meta(bytes(r[2])))),
                                  {})
        return b"".join(bytes(r[2]) for r in rows)

    def keep_own_settings(self, session: Session) -> None:
        """After `read`: the approval mode, "always" answers, backend and model the reader itself last saved; rows
        another user wrote into the session (a teammate's, in a shared one) name none of them for the reader."""
        if self._own_meta is None:
            return
        always = self._own_meta.get("approval_always")
        session.approval, session.backend, session.model = (
            v if isinstance(v := self._own_meta.get(key), str) else "" for key in ("approval", "backend", "model"))
        session.approval_always = always if isinstance(always, list) and all(isinstance(a, str) for a in always) else []

    def append(self, payload: bytes) -> None:
        """Queue one round after the last one (dropped by the writer when an earlier one of its epoch failed; in a
        teammate's session kept for the next save instead, see `_append_guest`)."""
        if self.owner:
            self._submit(self._guarded, None, self._append_guest, payload)
            return
        self._seq += 1
        self._submit(self._guarded, self._epoch, self._insert_round, self._seq, self._epoch, payload)

    def replace(self, payload: bytes) -> None:
        """Queue a snapshot replacing every round (a new epoch): it heals an earlier failure, so that is forgotten.
        ReadOnlyError in a teammate's session: its log is its owner's to replace."""
        if self.owner:
            raise owners_only(self.session_id, self.owner, "rewrite its history")
        self._failure = None
        self._seq, self._epoch = 1, secrets.randbits(62)
        self._submit(self._guarded, self._epoch, self._replace_rounds, self._epoch, payload)

    def add_compaction(self, payload: bytes) -> None:
        """Queue a pre-compaction history (kept for recovery)."""
        self._submit(self._guarded, None, self._insert_compaction, payload)

    def exists(self) -> bool:
        """Whether the session has saved rounds."""
        return last_round(self.url, self.session_id) != b""

    def flush(self) -> None:
        """Wait until every write so far is done; raise the first failure not yet raised."""
        self._wait()
        failure, self._failure = self._failure, None  # raised once (no snapshot has rewritten the log since)
        if failure is not None:
            raise failure

    def close(self) -> None:
        """Flush, stop the writer, give up the lease."""
        try:
            self.flush()
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        """Stop the writer (after its queue) and give up the lease, raising nothing."""
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None
        if self.leases.holds(self.session_id):
            try:
                self.leases.release(self.session_id)
            except SessionError as exc:
                log.warning("could not release the lease of %s: %s", self.session_id, exc)

    def pending(self) -> Future[None] | None:
        """A future done once the writes queued so far are; None when they are done already (nothing to wait for)."""
        if self._writer is None or self._last is None or self._last.done():
            return None
        return self._writer.submit(lambda: None)  # not the write's own future: a waiter may cancel this one

    def cut_off(self) -> SessionError | None:
        """Why nothing more is saved from this log (another process took its lease over, a teammate's rounds were cut
        off), as far as its finished writes and the heartbeat know; None while its saves go on (never blocks)."""
        if self._lost is None and self._holding and not self.leases.holds(self.session_id):
            return LeaseLostError(self._lapsed(""))  # the heartbeat found it taken over: the next write would
        return self._lost

    # --- the writer thread --------------------------------------------------

    def _wait(self) -> None:
        if self._writer is not None:
            self._writer.submit(lambda: None).result()

    def _submit(self, fn: Callable[..., None], *args: object) -> None:
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"ollie-log-{self.session_id}")
        self._last = self._writer.submit(fn, *args)

    def _guarded(self, epoch: int | None, fn: Callable[..., None], *args: object) -> None:
        """Run one write of `epoch` (None: one no later write depends on, or a teammate's round, which keeps what
        failed for the next save); a failure is reported now and raised by `flush`."""
        if self._lost is not None:
            self._failure = self._failure or self._lost  # told once already; `flush` (and so `close`) raises it
            return
        if epoch is not None and epoch == self._broken_epoch:
            return  # a round after a failed one cannot land: the next save writes the whole session
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - reported through on_failure, raised by flush, and logged
            log.error("session save failed: %s", exc, extra={"session": self.session_id})
            if epoch is not None:
                self._broken_epoch = epoch
                if epoch != self._epoch and self._lost is None:
                    return  # a snapshot is queued already: it writes what this failed to (a lost lease: it cannot)
            error = exc if isinstance(exc, SessionError) else LogWriteError(f"session {self.session_id}: saving "
                                                                            f"failed: {exc}")
            if self._failure is None:
                self._failure = error
            # The store down is told the user once a run of failures (each later round's said it again); why a save
            # can never land (a lease taken over, the log replaced) every time. Every one makes the next save whole.
            error.again = self._failing and (not isinstance(exc, SessionError) or isinstance(exc, StoreUnavailableError))
            self._failing = True
            self.on_failure(error)
            return
        self._failing = False

    def _append_guest(self, payload: bytes) -> None:
        """Store a teammate's round after the unsaved ones before it, in order. No snapshot of theirs may heal a gap
        (the log is its owner's to replace), so a failed round waits here and the next save tries again."""
        self._unsaved.append(payload)
        while self._unsaved:
            if self._gap:
                self._catch_up()
                continue
            try:
                self._insert_round(self._seq + 1, self._epoch, self._unsaved[0])
            except LeaseLostError:
                raise
            except LogReplacedError:
                self._catch_up()  # the round it follows is gone: GuestWriteError, saying why
                self._gap = True
                raise  # it was there when looked at again (a race): the next save looks again
            except Exception:
                self._gap = True  # the store down, the write refused: the next save looks at the log again
                raise
            self._seq += 1
            del self._unsaved[0]
            self._failure = None  # what failed before is stored now: closing has nothing to report

    def _catch_up(self) -> None:
        """After a teammate's failed write: drop the unsaved rounds the store took after all (a commit whose answer
        was lost); GuestWriteError when the log no longer ends with the round the rest follow (its owner wrote)."""
        sid = self.session_id
        with self.store.reading() as conn:
            rows = conn.execute("SELECT seq, epoch, data, user_id FROM session_rounds WHERE session_id = ? AND seq >= ? "
                                "ORDER BY seq", (sid, self._seq)).fetchall()
        if not rows or (int(rows[0][0]), int(rows[0][1])) != (self._seq, self._epoch):
            raise self._cut_off(f"{self.owner} rewrote its log (/compact, /clear or /rewind) after your last saved "
                                "message")
        later = rows[1:]
        stored = 0
        while (stored < min(len(later), len(self._unsaved)) and int(later[stored][1]) == self._epoch
               and later[stored][3] == self.author and bytes(later[stored][2]) == self._unsaved[stored]):
            stored += 1
        if stored < len(later):
            writers = " and ".join(sorted({str(r[3]) for r in later[stored:]}))
            raise self._cut_off(f"{writers} wrote to it after your last saved message")
        self._seq += stored
        del self._unsaved[:stored]
        self._gap = False

    def _cut_off(self, why: str) -> GuestWriteError:
        """A teammate's unsaved rounds cannot follow the log any more: from now on this log writes nothing."""
        self._lost = GuestWriteError(
            f"session {self.session_id}: your {describe_rounds(self._unsaved)} could not be saved: {why}, and the session "
            f"is {self.owner}'s, so only they may rewrite its log. Nothing more of yours is saved to it; what you wrote "
            "stays in this session until you close it: open it again to carry on from what is stored")
        self._unsaved = []
        return self._lost

    def _insert_round(self, seq: int, epoch: int, payload: bytes) -> None:
        sid = self.session_id
        with self.store.connection() as conn:
            cursor = conn.execute(_INSERT_ROUND, (sid, seq, epoch, payload, self.author, sid, self.leases.holder,
                                                  sid, seq - 1, epoch))
            if cursor.rowcount == 1:
                return
            held = conn.execute("SELECT 1 FROM session_leases WHERE session_id = ? AND holder = ?",
                                (sid, self.leases.holder)).fetchone()
        if held is None:
            raise self._lose()
        raise LogReplacedError(f"session {sid}: another writer replaced the log; the next save writes it whole")

    def _lose(self) -> LeaseLostError:
        """The lease is gone: from now on this log writes nothing (the session is another process's)."""
        self._lost = LeaseLostError(self._lapsed(
            f" (your {describe_rounds(self._unsaved)} could not be saved)" if self._unsaved else ""))
        self._unsaved = []
        return self._lost

    def _lapsed(self, unsaved: str) -> str:
        return (f"session {self.session_id}: this process's lease lapsed (it was stopped or cut off for longer than "
                f"{self.leases.ttl:.0f} s) and another process took the session over{unsaved}; nothing more is saved "
                "from here: open the session again to continue from what is stored")

    def _keep_lease(self, conn: PgConn) -> None:
        """Renew the lease this log holds (locking its row until the commit), or LeaseLostError when it is gone."""
        kept = conn.execute("UPDATE session_leases SET heartbeat_at = now() WHERE session_id = ? AND holder = ? "
                            "RETURNING 1", (self.session_id, self.leases.holder)).fetchone()
        if kept is None:
            raise self._lose()

    def _replace_rounds(self, epoch: int, payload: bytes) -> None:
        with self.store.transaction() as conn:
            if self._holding:
                self._keep_lease(conn)
            else:
                self.leases.acquire(conn, self.session_id)
                self._holding = True
            conn.execute("DELETE FROM session_rounds WHERE session_id = ?", (self.session_id,))
            conn.execute("INSERT INTO session_rounds (session_id, seq, epoch, data, user_id) VALUES (?, 1, ?, ?, ?)",
                         (self.session_id, epoch, payload, self.author))

    def _insert_compaction(self, payload: bytes) -> None:
        with self.store.connection() as conn:
            conn.execute("INSERT INTO session_compactions (session_id, data) VALUES (?, ?)", (self.session_id, payload))


def drain(url: str, session_id: str | None = None) -> None:
    """Wait for this process's queued writes (of one session, or all) to the store at `url`."""
    for rounds in list(_open):
        if rounds.url == url and session_id in (None, rounds.session_id):
            rounds._wait()


def close_logs(url: str, session_id: str) -> None:
    """Close this process's logs of the session: their writes stored, the lease given up."""
    for rounds in list(_open):
        if rounds.url == url and rounds.session_id == session_id:
            rounds.close()


# --- reads without a lease (listings, read-only loads) ---------------------------------------------


def read_rounds(url: str, session_id: str) -> bytes | None:
    """Every round of the session in order (None when it is not saved)."""
    drain(url, session_id)
    store, _ = shared(url)
    with store.reading() as conn:
        rows = conn.execute("SELECT data FROM session_rounds WHERE session_id = ? ORDER BY seq",
                            (session_id,)).fetchall()
    return b"".join(bytes(r[0]) for r in rows) if rows else None


def last_round(url: str, session_id: str, *, anyone: bool = False) -> bytes:
    """The end of the last round the session's owner wrote (b"" when it is not saved), where its latest meta is: at
    most what read_meta reads of a file (a round may be any size: another process wrote it, and every listing reads
    it). A teammate's later rounds are left out: the directory and title listings show are the owner's, not theirs
    (the last round of all only when the owner wrote none: a log an older `ollie store import` copied names
    its importer). `anyone`: the last round of all, whoever wrote it (how many turns the session has had)."""
    drain(url, session_id)
    store, _ = shared(url)
    tail = "SELECT substring(data FROM greatest(octet_length(data) - ? + 1, 1)) FROM session_rounds r WHERE session_id = ?"
    with store.reading() as conn:
        row = None if anyone else conn.execute(
            f"{tail} AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = r.session_id AND s.user_id <> r.user_id) "
            "ORDER BY seq DESC LIMIT 1", (META_TAIL_BYTES, session_id)).fetchone()
        if row is None:
            row = conn.execute(f"{tail} ORDER BY seq DESC LIMIT 1", (META_TAIL_BYTES, session_id)).fetchone()
    return bytes(row[0]) if row else b""


def saved_ids(url: str) -> list[str]:
    """The ids of the sessions with saved rounds (this user's and its teams')."""
    drain(url)
    store, _ = shared(url)
    with store.reading() as conn:
        return [r[0] for r in conn.execute(f"SELECT DISTINCT session_id FROM session_rounds WHERE "
                                           f"{_VISIBLE.format(id='session_rounds.session_id')}", _reader())]
