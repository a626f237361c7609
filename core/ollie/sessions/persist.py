"""Crash-safe, append-only storage of a Session: `{id}.jsonl` in the sessions dir.

The file is a snapshot followed by appended rounds, one JSON record per line:

    {"t": "head", "v": 1, "id": ...}        first line, written with the snapshot
    {"t": "m", "m": {message}}              a message appended to the history
    {"t": "e", "i": 3, "m": {message}}      message 3 changed in place (tier collapse)
    {"t": "meta", "n": 42, "meta": {...}}   commit: totals, task state; n = message count
        (+ "tracked": {"result_tiers": {id: tier or null}}: the changes of the maps
        that grow with the history; "tracked_full" when a map was replaced)

A save writes its records and the closing `meta` in one `write` and fdatasyncs,
so the cost of a round is the size of the round, not of the history. Load
applies records up to the last `meta` and drops whatever follows it (the round
that was being written when the process died, possibly a torn line). When the
history was rewritten (compaction, /clear) or the log has grown much larger
than the history, the next save writes a fresh snapshot to a temporary file
and renames it over the old one, so a crash leaves either the old file or the new.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ollie.backend.types import Message
from ollie.errors import OllieError
from ollie.sessions.session import TRACKED_FIELDS, Session, TrackedDict, is_valid_session_id, validate_session_id

FORMAT_VERSION = 1
SUFFIX = ".jsonl"
COMPACTION_SUFFIX = ".compaction.jsonl"
# How much of a session file's end read_meta reads (a meta record is far smaller).
META_TAIL_BYTES = 256 * 1024

_fdatasync = getattr(os, "fdatasync", os.fsync)


class SessionFileError(OllieError):
    """A saved session cannot be read or written."""


class SessionFileNotFoundError(SessionFileError, FileNotFoundError):
    """No session with this id is saved."""


class SessionFileCorruptError(SessionFileError):
    """A saved session file is damaged before its last record (not a torn tail)."""


def _dumps(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def _fsync_dir(path: Path) -> None:
    """Make a rename or a file creation in `path` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _session_path(sessions_dir: Path, session_id: str, suffix: str = SUFFIX) -> Path:
    return Path(sessions_dir) / f"{validate_session_id(session_id)}{suffix}"


class SessionFile:
    """The saved form of one session; `save` after every tool round, `load` to resume."""

    def __init__(
        self,
        sessions_dir: Path | str,
        session_id: str,
        *,
        sync: bool = True,
        compact_min_records: int = 1000,
    ) -> None:
        self.sessions_dir = Path(sessions_dir)
        self.session_id = validate_session_id(session_id)
        self.path = _session_path(self.sessions_dir, session_id)
        self.compaction_path = _session_path(self.sessions_dir, session_id, COMPACTION_SUFFIX)
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
        self._tracked_refs: dict[str, object] = {}

    # --- public API -------------------------------------------------------

    def exists(self) -> bool:
        """Whether this session is saved."""
        return self.path.exists()

    def delete(self) -> None:
        """Remove the saved session and its compaction snapshots (missing files are fine)."""
        with self._lock:
            for path in (self.path, self.compaction_path):
                path.unlink(missing_ok=True)
            self._bound = False

    def load(self) -> Session:
        """Read the saved session; a torn or unfinished last round is dropped."""
        with self._lock:
            try:
                with open(self.path, "rb") as f:
                    inode = os.fstat(f.fileno()).st_ino
                    data = f.read()
            except FileNotFoundError:
                raise SessionFileNotFoundError(f"session {self.session_id} is not saved in {self.sessions_dir}") from None
            messages, meta, offset, overhead = _parse(data, self.path)
            if meta.get("id") not in (None, self.session_id):
                raise SessionFileCorruptError(f"{self.path}: holds session {meta.get('id')!r}")
            meta["id"] = self.session_id
            session = Session.from_meta(meta, messages)
            self._bind(session, written=len(messages), offset=offset, overhead=overhead)
            self._inode = inode
            return session

    def save(self, session: Session) -> None:
        """Persist what is new since the last save (a snapshot when the history was rewritten)."""
        with self._lock:
            self._check_id(session)
            if self._needs_snapshot(session):
                self._write_snapshot(session)
                return
            self._append(session)

    def rewrite(self, session: Session) -> None:
        """Write a fresh snapshot of the whole session atomically, replacing the log."""
        with self._lock:
            self._check_id(session)
            self._write_snapshot(session)

    def write_compaction_snapshot(self, session: Session) -> Path:
        """Append the pre-compaction history to `{id}.compaction.jsonl` (for recovery); returns its path."""
        with self._lock:
            self._check_id(session)
            self.sessions_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            header = {"t": "compaction", "v": FORMAT_VERSION, "at": time.time(), "n": len(session.messages),
                      "meta": session.meta()}
            payload = _dumps(header) + b"".join(_dumps({"t": "m", "m": m.to_dict()}) for m in session.messages)
            fd = os.open(self.compaction_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                _write_all(fd, payload)
                if self._sync:
                    _fdatasync(fd)
            finally:
                os.close(fd)
            return self.compaction_path

    # --- internals --------------------------------------------------------

    def _check_id(self, session: Session) -> None:
        if session.id != self.session_id:
            raise ValueError(f"session {session.id!r} cannot be saved in the file of {self.session_id!r}")

    def _needs_snapshot(self, session: Session) -> bool:
        """Whether appending would misrepresent the history (or the log is due for folding)."""
        msgs = session.messages
        if not self._bound or session.history_generation != self._generation or msgs is not self._list_ref:
            return True
        if len(msgs) < self._written:
            return True
        # O(1) identity checks: a rewrite in place replaces the objects at the edges.
        if self._written and (msgs[0] is not self._first_ref or msgs[self._written - 1] is not self._last_ref):
            return True
        return self._overhead >= max(self._compact_min_records, 2 * len(msgs))

    def _append(self, session: Session) -> None:
        msgs = session.messages
        edited = sorted(i for i in session.edited_indices if i < self._written)
        records = [_dumps({"t": "e", "i": i, "m": msgs[i].to_dict()}) for i in edited]
        records.extend(_dumps({"t": "m", "m": m.to_dict()}) for m in msgs[self._written:])
        records.append(_dumps(self._commit_record(session)))
        payload = b"".join(records)
        try:
            fd = os.open(self.path, os.O_WRONLY)
        except FileNotFoundError:
            # Deleted behind our back: start over with a full snapshot.
            self._write_snapshot(session)
            return
        try:
            stat = os.fstat(fd)
            if stat.st_ino != self._inode or stat.st_size < self._offset:
                # Another writer replaced or cut the file: ours is the state to keep, whole.
                os.close(fd)
                fd = -1
                self._write_snapshot(session)
                return
            # A failed earlier write (ENOSPC, a torn tail) leaves bytes past the
            # last commit: cut them so the log stays a clean sequence of commits.
            if stat.st_size > self._offset:
                os.ftruncate(fd, self._offset)
            os.lseek(fd, self._offset, os.SEEK_SET)
            _write_all(fd, payload)
            if self._sync:
                _fdatasync(fd)
        finally:
            if fd >= 0:
                os.close(fd)
        self._offset += len(payload)
        self._overhead += len(edited) + 1
        _forget_changes(session)
        self._bind(session, written=len(msgs), offset=self._offset, overhead=self._overhead)

    def _write_snapshot(self, session: Session) -> None:
        self.sessions_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        payload = b"".join(_snapshot_records(session))
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            _write_all(fd, payload)
            if self._sync:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        inode = os.fstat(fd).st_ino
        os.close(fd)
        os.replace(tmp, self.path)
        if self._sync:
            _fsync_dir(self.sessions_dir)
        # A process killed between writing its temporary file and the rename leaves it behind.
        for stale in self.sessions_dir.glob(f".{self.path.name}.*.tmp"):
            stale.unlink(missing_ok=True)
        _forget_changes(session)
        self._bind(session, written=len(session.messages), offset=len(payload), overhead=0)
        self._inode = inode

    def _bind(self, session: Session, *, written: int, offset: int, overhead: int) -> None:
        msgs = session.messages
        self._bound = True
        self._written = written
        self._offset = offset
        self._overhead = overhead
        self._generation = session.history_generation
        self._list_ref = msgs
        self._first_ref = msgs[0] if written else None
        self._last_ref = msgs[written - 1] if written else None
        self._tracked_refs = {name: getattr(session, name, None) for name in TRACKED_FIELDS}

    def _commit_record(self, session: Session) -> dict[str, Any]:
        """The closing record of a round: meta without the tracked maps, plus their changes."""
        meta = session.meta()
        record: dict[str, Any] = {"t": "meta", "n": len(session.messages), "meta": meta}
        for name in TRACKED_FIELDS:
            meta.pop(name, None)
            current = getattr(session, name, None)
            if not isinstance(current, TrackedDict):
                continue
            if current is not self._tracked_refs.get(name):
                record.setdefault("tracked_full", {})[name] = dict(current)
            elif current.changed_keys:
                record.setdefault("tracked", {})[name] = current.changes()
        return record


def _forget_changes(session: Session) -> None:
    """After a successful write: nothing of the session is pending any more."""
    session.edited_indices.clear()
    for name in TRACKED_FIELDS:
        current = getattr(session, name, None)
        if isinstance(current, TrackedDict):
            current.changed_keys.clear()


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view):]


def _snapshot_records(session: Session) -> Iterator[bytes]:
    yield _dumps({"t": "head", "v": FORMAT_VERSION, "id": session.id})
    for message in session.messages:
        yield _dumps({"t": "m", "m": message.to_dict()})
    yield _dumps({"t": "meta", "n": len(session.messages), "meta": session.meta()})


def _apply_tracked(tracked: dict[str, dict[str, Any]], record: dict[str, Any]) -> None:
    """Bring the tracked maps up to a commit record: whole maps first, then changes (None removes)."""
    meta = record.get("meta") or {}
    for name in TRACKED_FIELDS:
        if name in meta:  # a snapshot's commit carries the whole map
            tracked[name] = dict(meta[name])
        if name in record.get("tracked_full", {}):
            tracked[name] = dict(record["tracked_full"][name])
        for key, value in record.get("tracked", {}).get(name, {}).items():
            if value is None:
                tracked.setdefault(name, {}).pop(key, None)
            else:
                tracked.setdefault(name, {})[key] = value


def _parse(data: bytes, path: Path) -> tuple[list[Message], dict[str, Any], int, int]:
    """Apply the records up to the last complete commit: (messages, meta, commit offset, overhead)."""
    messages: list[Message] = []
    pending: list[dict[str, Any]] = []
    committed: tuple[list[Message], dict[str, Any], int, int] | None = None
    tracked: dict[str, dict[str, Any]] = {}
    overhead = 0
    pos = 0
    lines = data.split(b"\n")
    last_index = len(lines) - 1
    for index, line in enumerate(lines):
        end = pos + len(line) + 1
        if index == last_index:
            # No newline after it: a torn write (or nothing at all).
            break
        try:
            record = json.loads(line)
            kind = record["t"]
        except (ValueError, TypeError, KeyError):
            if index == last_index - 1:
                break  # a garbled final line: the round being written died
            raise SessionFileCorruptError(f"{path}: unreadable record on line {index + 1}") from None
        if index == 0:
            if kind != "head":
                raise SessionFileCorruptError(f"{path}: not a session file (no header)")
            if record.get("v", 0) > FORMAT_VERSION:
                raise SessionFileError(f"{path}: format version {record['v']} is newer than this ollie")
        elif kind == "meta":
            try:
                for rec in pending:
                    message = Message.from_dict(rec["m"])
                    if rec["t"] == "m":
                        messages.append(message)
                    else:
                        messages[rec["i"]] = message
                        overhead += 1
            except (KeyError, IndexError, TypeError) as exc:
                raise SessionFileCorruptError(f"{path}: bad record before line {index + 1}: {exc}") from None
            if record.get("n") != len(messages):
                raise SessionFileCorruptError(
                    f"{path}: commit on line {index + 1} counts {record.get('n')} messages, found {len(messages)}"
                )
            pending = []
            overhead += 1
            meta = record.get("meta") or {}
            _apply_tracked(tracked, record)
            # Pending records are applied only at a commit, so `messages` is always a committed state.
            committed = (messages, dict(meta), end, overhead)
        elif kind in ("m", "e"):
            pending.append(record)
        pos = end
    if committed is None:
        raise SessionFileCorruptError(f"{path}: no complete snapshot")
    # Like `messages`, `tracked` changes only at a commit: it is the committed state.
    committed[1].update(tracked)
    return committed


def open_session(sessions_dir: Path | str, session_id: str | None) -> tuple[SessionFile, Session]:
    """The session to resume (or to start under `session_id`, or anew) and the SessionFile to save it with."""
    if not session_id:
        session = Session()
        return SessionFile(sessions_dir, session.id), session
    file = SessionFile(sessions_dir, session_id)  # ValueError for an id unfit for a file name
    # Saving through the SessionFile that loaded the session appends; a fresh one would rewrite it whole.
    return file, (file.load() if file.exists() else Session(id=session_id))


def load(sessions_dir: Path | str, session_id: str) -> Session:
    """Load a saved session (see `SessionFile.load`)."""
    return SessionFile(sessions_dir, session_id).load()


def read_meta(sessions_dir: Path | str, session_id: str) -> dict[str, Any]:
    """The saved session's latest meta (title, cwd, totals; no tracked maps), read from the file's end.

    Every commit ends with a whole `meta` record, so a listing reads the tail,
    not the history. {} when the session is not saved or no meta is found there.
    """
    if not is_valid_session_id(session_id):
        return {}
    try:
        with open(_session_path(Path(sessions_dir), session_id), "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - META_TAIL_BYTES))
            tail = fh.read()
    except FileNotFoundError:
        return {}
    # The last piece has no newline after it: a torn write or b"".
    for line in reversed(tail.split(b"\n")[:-1]):
        if line.startswith(b'{"t":"meta"'):  # _dumps writes compact JSON, "t" first
            try:
                meta = json.loads(line).get("meta")
            except ValueError:
                continue  # a garbled final line, or the tail's cut first line
            return dict(meta) if isinstance(meta, dict) else {}
    return {}


def exists(sessions_dir: Path | str, session_id: str) -> bool:
    """Whether a session with this (valid) id is saved."""
    return is_valid_session_id(session_id) and _session_path(Path(sessions_dir), session_id).exists()


def delete(sessions_dir: Path | str, session_id: str) -> None:
    """Remove a saved session and its compaction snapshots."""
    SessionFile(sessions_dir, session_id).delete()


def list_saved(sessions_dir: Path | str) -> list[str]:
    """Ids of the saved sessions, oldest first (ids sort by creation time)."""
    root = Path(sessions_dir)
    if not root.is_dir():
        return []
    ids = []
    for entry in root.iterdir():
        name = entry.name
        if name.endswith(SUFFIX) and not name.endswith(COMPACTION_SUFFIX):
            session_id = name[: -len(SUFFIX)]
            if is_valid_session_id(session_id):
                ids.append(session_id)
    return sorted(ids, key=lambda s: (len(s), s))


def read_compaction_snapshots(sessions_dir: Path | str, session_id: str) -> list[tuple[dict[str, Any], list[Message]]]:
    """The pre-compaction histories saved for a session, oldest first: (header, messages) pairs."""
    path = _session_path(Path(sessions_dir), session_id, COMPACTION_SUFFIX)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    snapshots: list[tuple[dict[str, Any], list[Message]]] = []
    for line in data.split(b"\n"):
        try:
            record = json.loads(line)
        except ValueError:
            continue  # an empty or torn line
        if record.get("t") == "compaction":
            snapshots.append((record, []))
        elif record.get("t") == "m" and snapshots:
            snapshots[-1][1].append(Message.from_dict(record["m"]))
    # A snapshot whose append was cut short is incomplete: keep only whole ones.
    return [(head, msgs) for head, msgs in snapshots if len(msgs) == head.get("n")]
