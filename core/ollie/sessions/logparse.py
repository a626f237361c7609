"""A session log's bytes to the committed state it holds: the messages, the meta, the commit's offset.

See ollie.sessions.persist for the format. A resume of a long session is mostly
this: its floor is reading the file and one `json.loads` of all its lines.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from itertools import accumulate, compress, repeat
from operator import itemgetter
from pathlib import Path
from typing import Any

from ollie.backend.types import Image, Message, ToolCall
from ollie.gcpause import cyclic_gc_paused
from ollie.sessions.logformat import FORMAT_VERSION, SessionFileCorruptError, SessionFileError
from ollie.sessions.session import TRACKED_FIELDS

# (messages, meta, offset after the last commit, edit and commit records since the snapshot)
Parsed = tuple[list[Message], dict[str, Any], int, int]

# One json.loads holds the GIL until it returns: a resume parses in a thread, and parts of this many bytes let
# the event loop run between them (one call over a 100,000-message file froze the daemon ~150 ms).
PARSE_PART_BYTES = 1 << 19

_MESSAGE = itemgetter("m")


def parse(data: bytes, path: Path) -> Parsed:
    """Apply the records up to the last complete commit: (messages, meta, commit offset, overhead)."""
    # A resume keeps every object it makes: collections as they pile up rescanned the growing heap (half of a
    # resume's cost at 100k messages); frozen after, so the next young collection does not walk it again.
    with cyclic_gc_paused(freeze=True):
        lines = data.split(b"\n")
        return _parse_all(lines, path) or _parse_lines(lines, path)


def _message(data: dict[str, Any]) -> Message:
    """`Message.from_dict`, positional (a resume builds 100k of them)."""
    calls = data.get("tool_calls")
    return Message(data["role"], data.get("content") or "", [ToolCall(**c) for c in calls] if calls else [],
                   data.get("tool_call_id", ""), data.get("name", ""), data.get("reasoning", ""),
                   data.get("reasoning_signature", ""),
                   [Image.from_dict(i) for i in images] if (images := data.get("images")) else [])


def _records(lines: list[bytes]) -> list[Any] | None:
    """Every line's record, parsed as JSON arrays of ~PARSE_PART_BYTES of lines; None when one is unreadable."""
    ends = list(accumulate(map(len, lines)))
    records: list[Any] = []
    first = 0
    while first < len(lines):
        last = bisect_left(ends, (ends[first - 1] if first else 0) + PARSE_PART_BYTES, first) + 1
        try:
            part = json.loads(b"[" + b",".join(lines[first:last]) + b"]")
        except ValueError:
            return None
        # A line holding two values ("{...},{...}") would shift every later one: each must be one record.
        if len(part) != len(lines[first:last]):
            return None
        records += part
        first = last
    return records


def _parse_all(lines: list[bytes], path: Path) -> Parsed | None:
    """`_parse_lines` when every line reads: all parsed at once, messages taken a run at a time; else None."""
    body = lines[:-1]  # the last piece has no newline after it: a torn write (or nothing at all)
    records = _records(body)
    if records is None:
        return None
    try:
        kinds = list(map(dict.get, records, repeat("t")))
    except TypeError:
        return None  # a record that is not an object: `_parse_lines` says where
    # The lines other than messages (the header, each round's edits and commit) are few: one at a time. Walking
    # every line in Python (its offset, its pending entry) was ~8% of a resume's instructions at 10k messages.
    others = list(compress(range(len(body)), map("m".__ne__, kinds)))
    if not others or others[0] != 0:
        return None  # no header: `_parse_lines` says so
    walk = _Walk(path)
    prev = -1
    for index in others:
        if index - prev > 1:  # the message records since the previous other line
            walk.pending.append(records[prev + 1:index])
            walk.pos += sum(map(len, body[prev + 1:index])) + index - prev - 1
        if not walk.step(index, body[index], records[index], garbled_ends=index == len(body) - 1):
            break
        prev = index
    return walk.result()


def _parse_lines(lines: list[bytes], path: Path) -> Parsed:
    """Line by line, which finds the line that does not read (a garbled last round is dropped, else an error)."""
    walk = _Walk(path)
    last_index = len(lines) - 1
    for index, line in enumerate(lines[:last_index]):
        try:
            record = json.loads(line.decode())  # strict UTF-8, as written
        except ValueError:
            if index == last_index - 1:
                break  # a garbled final line: the round being written died
            raise SessionFileCorruptError(f"{path}: unreadable record on line {index + 1}") from None
        if not walk.step(index, line, record, garbled_ends=index == last_index - 1):
            break
    return walk.result()


class _Walk:
    """The records in order: pending messages are applied at each commit, so the state is always a committed one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.messages: list[Message] = []
        # Since the last commit: `m`/`e` records, and lists of `m` records.
        self.pending: list[list[Any] | dict[str, Any]] = []
        self.committed: Parsed | None = None
        self.tracked: dict[str, dict[str, Any]] = {}
        self.overhead = 0
        self.pos = 0

    def step(self, index: int, line: bytes, record: Any, *, garbled_ends: bool) -> bool:
        """Take the record of line `index`; False when it is a garbled last line (the walk ends before it)."""
        end = self.pos + len(line) + 1
        try:
            kind = record["t"]
        except (TypeError, KeyError):
            if garbled_ends:
                return False
            raise SessionFileCorruptError(f"{self.path}: unreadable record on line {index + 1}") from None
        if index == 0:
            if kind != "head":
                raise SessionFileCorruptError(f"{self.path}: not a session file (no header)")
            if record.get("v", 0) > FORMAT_VERSION:
                raise SessionFileError(f"{self.path}: format version {record['v']} is newer than this ollie")
        elif kind == "meta":
            self._commit(index, end, record)
        elif kind in ("m", "e"):
            self.pending.append(record)
        self.pos = end
        return True

    def _commit(self, index: int, end: int, record: dict[str, Any]) -> None:
        messages = self.messages
        try:
            for rec in self.pending:
                if isinstance(rec, list):
                    messages += map(_message, map(_MESSAGE, rec))
                elif rec["t"] == "m":
                    messages.append(_message(rec["m"]))
                else:
                    messages[rec["i"]] = _message(rec["m"])
                    self.overhead += 1
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise SessionFileCorruptError(f"{self.path}: bad record before line {index + 1}: {exc}") from None
        if record.get("n") != len(messages):
            raise SessionFileCorruptError(
                f"{self.path}: commit on line {index + 1} counts {record.get('n')} messages, found {len(messages)}"
            )
        self.pending = []
        self.overhead += 1
        _apply_tracked(self.tracked, record)
        self.committed = (messages, dict(record.get("meta") or {}), end, self.overhead)

    def result(self) -> Parsed:
        """The last committed state."""
        if self.committed is None:
            raise SessionFileCorruptError(f"{self.path}: no complete snapshot")
        # Like `messages`, `tracked` changes only at a commit: it is the committed state.
        self.committed[1].update(self.tracked)
        return self.committed


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
