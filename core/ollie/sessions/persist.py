"""Crash-safe, append-only storage of a Session: `{id}.jsonl` in the sessions dir.

The file is a snapshot followed by appended rounds, one JSON record per line:

    {"t": "head", "v": 1, "id": ...}        first line, written with the snapshot
    {"t": "m", "m": {message}}              a message appended to the history
    {"t": "e", "i": 3, "m": {message}}      message 3 changed in place (tier collapse)
    {"t": "meta", "n": 42, "meta": {...}}   commit: totals, task state; n = message count
        (+ "tracked": {"result_tiers": {id: tier or null}}: the changes of the maps
        that grow with the history; "tracked_full" when a map was replaced)

A round is written in one `write`, so its cost is its size, not the history's. Load applies records up to
the last `meta` (a torn last round is dropped; ollie.sessions.logparse reads a log). A rewritten history, or a
log much larger than it, gets a fresh snapshot written to a temporary file and renamed over the old one.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ollie import beneath
from ollie.backend.types import Message
from ollie.sessions import syncer
from ollie.sessions.errors import NotSavedError, SessionError
from ollie.sessions.location import store_url
from ollie.sessions.logformat import COMPACTION_SUFFIX as COMPACTION_SUFFIX
from ollie.sessions.logformat import FORMAT_VERSION as FORMAT_VERSION
from ollie.sessions.logformat import SessionFileCorruptError as SessionFileCorruptError
from ollie.sessions.logformat import SessionFileNotFoundError as SessionFileNotFoundError
from ollie.sessions.logformat import dumps, forget_changes, session_path, snapshot_records
from ollie.sessions.session import TRACKED_FIELDS, Session, TrackedDict, is_valid_session_id, validate_session_id

if TYPE_CHECKING:  # psycopg loads only with a PostgreSQL store
    from concurrent.futures import Future

    from ollie.sessions.pg.log import PgRounds

_fdatasync = getattr(os, "fdatasync", os.fsync)


class SessionFile:
    """The saved form of one session; `save` after every tool round, `load` to resume."""

    def __init__(
        self,
        sessions_dir: Path | str,
        session_id: str,
        *,
        sync: bool = True,
        compact_min_records: int = 1000,
        storage: PgRounds | None = None,
    ) -> None:
        self.sessions_dir = Path(sessions_dir)
        self.session_id = validate_session_id(session_id)
        self.path = session_path(self.sessions_dir, session_id)
        self.compaction_path = session_path(self.sessions_dir, session_id, COMPACTION_SUFFIX)
        # sync=False skips fdatasync: only for benchmarks of the CPU cost.
        self._sync = sync
        # The log is folded into a snapshot once its non-message records exceed
        # max(compact_min_records, 2 * messages): amortised O(1) per save.
        self._compact_min_records = compact_min_records
        self._lock = threading.Lock()
        self._bound = False  # True once the file on disk mirrors a known state of the session
        self._written = 0  # messages on disk
        self._offset = 0  # file size after the last commit
        self._overhead = 0  # edit/meta records since the last snapshot
        self._generation = 0
        self._list_ref: list[Message] | None = None
        self._first_ref: Message | None = None
        self._last_ref: Message | None = None
        self._inode = -1  # the file the offsets refer to
        self._swept = False  # stale temporary files of this session were looked for (once: see `_write_whole`)
        self._tracked_refs: dict[str, object] = {}
        self._taken = 0  # whole writes begun (`save_later`'s takes, `_write_snapshot`): only the last one's stands
        # The records go to `storage` instead of the file when given (OLLIE_STORE: PostgreSQL rows).
        self.storage = storage
        self._write_failed = False  # set from the storage's writer thread: no lock, a flag
        # Told (from the storage's writer thread) when a background write failed: the engine tells the user.
        self.on_error: Callable[[str], None] | None = None
        if storage is not None:
            storage.on_failure = self._on_write_failure

    # --- public API -------------------------------------------------------

    @property
    def owner(self) -> str:
        """The session's owner when it is another user's, shared with this one's team ("" when it is this user's):
        this process only appends rounds to its log, the owner alone rewrites it."""
        return self.storage.owner if self.storage is not None else ""

    def exists(self) -> bool:
        """Whether this session is saved."""
        return self.storage.exists() if self.storage is not None else self.path.exists()

    def load(self) -> Session:
        """Read the saved session; a torn or unfinished last round is dropped."""
        with self._lock:
            session, offset, overhead = _parsed(self._read_log(), self.session_id, self.path)
            if self.storage is not None:
                self.storage.keep_own_settings(session)
            self._bind(session, offset=offset, overhead=overhead)
            return session

    def pending(self) -> Future[None] | None:
        """A future done once a database log's queued writes are (None: none are pending, or a file's)."""
        return self.storage.pending() if self.storage is not None else None

    def cut_off(self) -> SessionError | None:
        """Why nothing more of the session is saved from here (a database log another process took over, as far as
        its finished writes know: see `pending`), None while its saves go on."""
        return self.storage.cut_off() if self.storage is not None else None

    def flush(self) -> None:
        """Wait until every save so far is stored (a file's rounds are synced in the background too)."""
        if self.storage is not None:
            self.storage.flush()
        elif self._sync:
            syncer.wait()

    def close(self) -> None:
        """Flush; a database log also gives up its lease, so another machine may resume the session."""
        if self.storage is not None:
            self.storage.close()
        elif self._sync:
            syncer.wait()

    def save(self, session: Session) -> None:
        """Persist what is new since the last save (a snapshot when the history was rewritten)."""
        if (write := self.save_later(session)) is not None:
            write()

    def save_later(self, session: Session) -> Callable[[], None] | None:
        """`save` in two parts for the event loop: a round is appended now (None returned); a snapshot's session
        is taken now (a copy of the list) and the function returned encodes and writes it (O(history): run it in
        a thread, before the next save; a save before it makes it stand down). Changes made meanwhile are the
        next save's."""
        with self._lock:
            self._check_id(session)
            if not self._needs_snapshot(session):
                with self._unsaved_on_error():
                    self._append(session)
                return None
            messages = session.messages
            taken = list(messages)
            meta = {k: list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v
                    for k, v in session.meta().items()}  # the loop may change the maps while the thread encodes
            refs = _tracked(session)
            generation = session.history_generation
            forget_changes(session)  # what changes from now on is the next save's
            self._bound = False  # a save before the write writes the whole session itself
            self._taken += 1
            ticket = self._taken

        def write() -> None:
            payload = b"".join(snapshot_records(self.session_id, taken, meta))
            with self._lock:
                if self._taken != ticket:  # a later save took the session whole: its write is the one to keep
                    return
                with self._unsaved_on_error():
                    self._write_whole(payload)
                self._bind_refs(messages, taken, generation, refs, offset=len(payload), overhead=0)

        return write

    def rewrite(self, session: Session) -> None:
        """Write a fresh snapshot of the whole session atomically, replacing the log."""
        with self._lock:
            self._check_id(session)
            self._write_snapshot(session)

    def write_compaction_snapshot(self, session: Session) -> Path:
        """Append the pre-compaction history to `{id}.compaction.jsonl` (for recovery); returns its path."""
        with self._lock:
            self._check_id(session)
            header = {"t": "compaction", "v": FORMAT_VERSION, "at": time.time(), "n": len(session.messages),
                      "meta": session.meta()}
            payload = dumps(header) + b"".join(dumps({"t": "m", "m": m.to_dict()}) for m in session.messages)
            if self.storage is not None:
                self.storage.add_compaction(payload)
                return self.compaction_path
            self.sessions_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            with open(os.open(self.compaction_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as out:
                out.write(payload)
                out.flush()
                if self._sync:
                    _fdatasync(out.fileno())
            return self.compaction_path

    # --- internals --------------------------------------------------------

    @contextlib.contextmanager
    def _unsaved_on_error(self) -> Iterator[None]:
        """A write that fails (the disk full, the directory gone) is noted for `release` to tell whoever closes it."""
        try:
            yield
        except OSError as exc:
            _unsaved[self.session_id] = exc
            raise
        _unsaved.pop(self.session_id, None)

    def _check_id(self, session: Session) -> None:
        if session.id != self.session_id:
            raise ValueError(f"session {session.id!r} cannot be saved in the file of {self.session_id!r}")

    def _needs_snapshot(self, session: Session) -> bool:
        """Whether appending would misrepresent the history (or the log is due for folding)."""
        if self._write_failed:
            self._write_failed = False
            return not self.owner  # a teammate's next round carries the unsaved ones (PgRounds): the log is the owner's
        if self.owner:
            return False  # a teammate's rounds are appended, never folded (the log is its owner's to rewrite)
        msgs, written = session.messages, self._written
        if not self._bound or session.history_generation != self._generation or msgs is not self._list_ref:
            return True
        if len(msgs) < written:
            return True
        # O(1) identity checks: a rewrite in place replaces the objects at the edges.
        if written and (msgs[0] is not self._first_ref or msgs[written - 1] is not self._last_ref):
            return True
        return self._overhead >= max(self._compact_min_records, 2 * len(msgs))

    def _append(self, session: Session) -> None:
        msgs = session.messages
        edited = sorted(i for i in session.edited_indices if i < self._written)
        records = [dumps({"t": "e", "i": i, "m": msgs[i].to_dict()}) for i in edited]
        records.extend(dumps({"t": "m", "m": m.to_dict()}) for m in msgs[self._written:])
        records.append(dumps(self._commit_record(session)))
        payload = b"".join(records)
        if not self._write_round(payload):
            # Replaced, cut or deleted behind our back: ours is the state to keep, whole.
            self._write_snapshot(session)
            return
        self._offset += len(payload)
        self._overhead += len(edited) + 1
        forget_changes(session)
        self._bind(session, offset=self._offset, overhead=self._overhead)

    # --- storage: the file, or `storage` (a database's rows, ollie.sessions.pg.log) ---------------------

    def _on_write_failure(self, error: BaseException) -> None:
        """A background write failed: the next save writes the whole session (and the user is told now)."""
        self._write_failed = True
        if self.on_error is not None and not getattr(error, "again", False):  # the store still down: told already
            retry = "" if getattr(error, "final", False) else "; retrying at the next save"
            self.on_error(f"session not saved: {error}{retry}")

    def _read_log(self) -> bytes:
        """The whole log (SessionFileNotFoundError when there is none)."""
        data = None
        if self.storage is not None:
            data = self.storage.read()
        else:
            with contextlib.suppress(FileNotFoundError), open(self.path, "rb") as f:
                self._inode = os.fstat(f.fileno()).st_ino
                data = f.read()
        if data is None:
            raise SessionFileNotFoundError(f"session {self.session_id} is not saved in {self.sessions_dir}")
        return data

    def _write_round(self, payload: bytes) -> bool:
        """Append one round after the last commit; False when the log is no longer the one we wrote."""
        if self.storage is not None:
            self.storage.append(payload)
            return True
        try:
            fd = os.open(self.path, os.O_WRONLY)
        except FileNotFoundError:
            return False  # deleted behind our back
        try:
            stat = os.fstat(fd)
            if stat.st_ino != self._inode or stat.st_size < self._offset:
                return False  # another writer replaced or cut the file
            # A failed earlier write (ENOSPC, a torn tail) leaves bytes past the
            # last commit: cut them so the log stays a clean sequence of commits.
            if stat.st_size > self._offset:
                os.ftruncate(fd, self._offset)
            os.lseek(fd, self._offset, os.SEEK_SET)
            view = memoryview(payload)
            while view:  # a write may take part of it (ENOSPC after some bytes): the rest, or the error
                view = view[os.write(fd, view):]
            if self._sync:  # on the sync thread: a save runs on the event loop, the disk's wait must not
                syncer.sync_later(os.dup(fd), self._on_sync_failure)
        finally:
            os.close(fd)
        return True

    def _on_sync_failure(self, error: OSError) -> None:
        """A round's background fdatasync failed: reported at close, and the next save writes the whole log."""
        _unsaved[self.session_id] = error
        self._on_write_failure(error)

    def _write_whole(self, payload: bytes) -> None:
        """Replace the log with `payload` atomically (a crash leaves the old log or the new)."""
        if self.storage is not None:
            self.storage.replace(payload)
            return
        self.sessions_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        # A new session's first save (on the event loop) has no log to protect: the disk's wait goes to the sync
        # thread, as an appended round's does (two fsyncs here were ~20 ms of a first turn on the loop).
        later = self._sync and not self.path.exists()
        swept, self._swept = self._swept, False  # a write cut short here leaves its temporary file: the next sweeps
        inode = beneath.write_bytes_sync(self.sessions_dir, self.path.name, payload, 0o600,
                                         sync=self._sync and not later)
        if later:  # fsync is the inode's: any fd of the file will do
            syncer.sync_later(os.open(self.path, os.O_RDONLY), self._on_sync_failure)
            syncer.sync_later(os.open(self.sessions_dir, os.O_RDONLY), self._on_sync_failure)
        # A process killed between writing its temporary file and the rename leaves it behind: looked for once
        # (not for a new session): listing a directory of thousands of sessions was half a save's CPU.
        for stale in () if later or swept else self.sessions_dir.glob(beneath.temporary(self.path.name)):
            stale.unlink(missing_ok=True)
        self._swept = True
        self._inode = inode

    def _write_snapshot(self, session: Session) -> None:
        payload = b"".join(snapshot_records(session.id, session.messages, session.meta()))
        self._write_whole(payload)
        self._taken += 1  # the session whole, as it is now: a snapshot `save_later` took before stands down
        forget_changes(session)
        self._bind(session, offset=len(payload), overhead=0)

    def _bind(self, session: Session, *, offset: int, overhead: int) -> None:
        msgs = session.messages
        self._bind_refs(msgs, msgs, session.history_generation, _tracked(session), offset=offset, overhead=overhead)

    def _bind_refs(self, msgs: list[Message], written: list[Message], generation: int, tracked: dict[str, object],
                   *, offset: int, overhead: int) -> None:
        """The file now holds `written` (the first messages of the list `msgs`) and the tracked maps `tracked`."""
        self._bound = True
        self._written = len(written)
        self._offset = offset
        self._overhead = overhead
        self._generation = generation
        self._list_ref = msgs
        self._first_ref = written[0] if written else None
        self._last_ref = written[-1] if written else None
        self._tracked_refs = tracked

    def _commit_record(self, session: Session) -> dict[str, Any]:
        """The closing record of a round: meta without the tracked maps, plus their changes."""
        meta = session.meta()
        record: dict[str, Any] = {"t": "meta", "n": len(session.messages), "meta": meta}
        for name in TRACKED_FIELDS:
            meta.pop(name, None)
            current: TrackedDict = getattr(session, name)  # one always: Session.__setattr__ keeps it so
            if current is not self._tracked_refs.get(name):
                record.setdefault("tracked_full", {})[name] = dict(current)
            elif current.changed_keys:
                record.setdefault("tracked", {})[name] = current.changes()
        return record


def _tracked(session: Session) -> dict[str, object]:
    """The session's tracked maps as objects: what a later save checks it still holds, to append their changes."""
    return {name: getattr(session, name, None) for name in TRACKED_FIELDS}


# Sessions whose last save to a file failed (id -> why): `release` reports them when they close.
_unsaved: dict[str, OSError] = {}
# Sessions loaded ahead of open_session (off the event loop, see `preload`): (store url, id) -> (log, session).
_preloaded: dict[tuple[str, str], tuple[SessionFile, Session]] = {}


def session_log(sessions_dir: Path | str, session_id: str, *, compact_min_records: int = 1000) -> SessionFile:
    """The log of a session: its file in `sessions_dir`, or its rows when OLLIE_STORE names PostgreSQL."""
    url = store_url()
    storage = None
    if url:
        from ollie.sessions.pg.log import PgRounds

        storage = PgRounds(url, validate_session_id(session_id))
    return SessionFile(sessions_dir, session_id, compact_min_records=compact_min_records, storage=storage)


def open_session(sessions_dir: Path | str, session_id: str | None) -> tuple[SessionFile, Session]:
    """The session to resume (or to start under `session_id`, or anew) and the log to save it with.

    Resuming from PostgreSQL takes the session's lease (SessionLeasedError when it is live elsewhere).
    """
    if not session_id:
        session = Session()
        return session_log(sessions_dir, session.id), session
    ahead = _preloaded.pop((store_url(), session_id), None)
    if ahead is not None:
        return ahead
    file = session_log(sessions_dir, session_id)  # ValueError for an id unfit for a file name
    # Saving through the log that loaded the session appends; a fresh one would rewrite it whole.
    try:
        return file, file.load()
    except SessionFileNotFoundError:
        return file, Session(id=session_id)


def preload(sessions_dir: Path | str, session_id: str | None) -> None:
    """open_session's work with a database store, done now in this thread (a daemon's worker), errors raised here.

    The store is connected (and migrated) and the session, when given, read and
    leased; the event loop's open_session then finds it done.
    """
    url = store_url()
    if url:
        from ollie.sessions.pg import log as pg_log

        pg_log.shared(url)
        if session_id:
            _preloaded[(url, session_id)] = open_session(sessions_dir, session_id)


def release(session_id: str) -> None:
    """After its Core closed (or failed to start): store what is queued and give up the lease (files: nothing).

    NotSavedError when the store did not take the last rounds; what was stored before stays whole.
    """
    failed = _unsaved.pop(session_id, None)
    url = store_url()
    if url:
        from ollie.sessions.pg import log as pg_log

        _preloaded.pop((url, session_id), None)
        try:
            pg_log.close_logs(url, session_id)
        except SessionError as exc:
            raise NotSavedError(not_saved(session_id, exc)) from exc
    if failed is not None:
        raise NotSavedError(not_saved(session_id, failed))


def not_saved(session_id: str, why: BaseException | str) -> str:
    """What to tell the user when a session closed without its latest messages saved."""
    return (f"session {session_id} was closed without saving its latest messages: {why}. "
            "What it had saved before is kept")


def load(sessions_dir: Path | str, session_id: str) -> Session:
    """Load a saved session (see `SessionFile.load`); from PostgreSQL without taking its lease."""
    url = store_url()
    if not url:
        return SessionFile(sessions_dir, session_id).load()
    from ollie.sessions.pg import log as pg_log
    data = pg_log.read_rounds(url, validate_session_id(session_id))
    if data is None:
        raise SessionFileNotFoundError(f"session {session_id} is not saved in the store")
    return _parsed(data, session_id, Path(session_id))[0]


def _parsed(data: bytes, session_id: str, path: Path) -> tuple[Session, int, int]:
    """The session a log holds, and its last commit's offset and overhead; a log of another session, or a field of the
    wrong type, is a corrupt file (named) as the parse's other faults are."""
    from ollie.sessions.logparse import parse  # with a saved session's load, not a new one's start
    messages, meta, offset, overhead = parse(data, path)
    if meta.get("id") not in (None, session_id):
        raise SessionFileCorruptError(f"{path}: holds session {meta['id']!r}")
    meta["id"] = session_id
    try:
        return Session.from_meta(meta, messages), offset, overhead
    except ValueError as exc:
        raise SessionFileCorruptError(f"{path}: {exc}") from None


def exists(sessions_dir: Path | str, session_id: str) -> bool:
    """Whether a session with this (valid) id is saved."""
    return is_valid_session_id(session_id) and session_log(sessions_dir, session_id).exists()
