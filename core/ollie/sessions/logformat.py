"""The session log's record format, shared by its writers and readers: constants, errors, the records of a save.

See ollie.sessions.persist for the format itself; nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ollie.backend.types import Message
from ollie.errors import OllieError
from ollie.sessions.session import TRACKED_FIELDS, Session, validate_session_id

FORMAT_VERSION = 1
SUFFIX = ".jsonl"
COMPACTION_SUFFIX = ".compaction.jsonl"
# How much of a session file's end read_meta reads (a meta record is far smaller).
META_TAIL_BYTES = 256 * 1024


class SessionFileError(OllieError):
    """A saved session cannot be read or written."""


class SessionFileNotFoundError(SessionFileError, FileNotFoundError):
    """No session with this id is saved."""


class SessionFileCorruptError(SessionFileError):
    """A saved session file is damaged before its last record (not a torn tail)."""


def dumps(record: dict[str, Any]) -> bytes:
    """One record as a line: compact JSON, "t" first (last_meta relies on it)."""
    # A lone surrogate (a client's or a tool's "\ud800") has no UTF-8: written as "?", not a save that fails for good.
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode(errors="replace")


def session_path(sessions_dir: Path, session_id: str, suffix: str = SUFFIX) -> Path:
    """The file of a session's log (or, with `suffix`, of its compaction snapshots); ValueError for a bad id."""
    return Path(sessions_dir) / f"{validate_session_id(session_id)}{suffix}"


def forget_changes(session: Session) -> None:
    """After a successful write: nothing of the session is pending any more."""
    session.edited_indices.clear()
    for name in TRACKED_FIELDS:
        getattr(session, name).changed_keys.clear()  # a TrackedDict always: Session.__setattr__ keeps it so


def snapshot_records(session_id: str, messages: list[Message], meta: dict[str, Any]) -> Iterator[bytes]:
    """The records of a whole session: header, every message, the closing meta."""
    yield dumps({"t": "head", "v": FORMAT_VERSION, "id": session_id})
    for message in messages:
        yield dumps({"t": "m", "m": message.to_dict()})
    yield dumps({"t": "meta", "n": len(messages), "meta": meta})


def last_commit(tail: bytes) -> dict[str, Any]:
    """The last whole `meta` record in the end of a log: `{"t": "meta", "n": <messages>, "meta": {...}}` ({} if none)."""
    # The last piece has no newline after it: a torn write or b"".
    for line in reversed(tail.split(b"\n")[:-1]):
        if line.startswith(b'{"t":"meta"'):  # dumps writes compact JSON, "t" first
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                continue  # a garbled final line, the tail's cut first line, one nested deeper than any ollie writes
            return record if isinstance(record, dict) else {}
    return {}


def last_meta(tail: bytes) -> dict[str, Any]:
    """The last whole `meta` record's meta in the end of a log ({} when none is there)."""
    meta = last_commit(tail).get("meta")
    return dict(meta) if isinstance(meta, dict) else {}



def describe_rounds(rounds: list[bytes]) -> str:
    """The messages appended rounds hold, for a user: `last 5 messages (from "the first prompt among them" on)`."""
    messages = []
    for line in b"".join(rounds).split(b"\n"):
        if line.startswith(b'{"t":"m"'):  # dumps writes compact JSON, "t" first
            record = json.loads(line)
            messages.append(record["m"] if isinstance(record, dict) and isinstance(record.get("m"), dict) else {})
    if not messages:
        return "last changes (no new message)"
    prompt = next((m["content"] for m in messages if m.get("role") == "user" and isinstance(m.get("content"), str)
                   and m["content"].strip()), "")
    said = " ".join(prompt.split())
    said = f"{said[:57]}..." if len(said) > 60 else said
    count = "last message" if len(messages) == 1 else f"last {len(messages)} messages"
    return f'{count} (from "{said}" on)' if said else count
