"""A session log's bytes to the committed state it holds: the messages, the meta, the commit's offset.

See ollie.sessions.persist for the format. A resume of a long session is mostly
this: its floor is reading the file and one `json.loads` of all its lines.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from itertools import accumulate
from pathlib import Path
from typing import Any, get_args

from ollie.backend.types import TEXT_FIELDS, Image, Message, Role, ToolCall
from ollie.gcpause import cyclic_gc_paused
from ollie.sessions.logformat import FORMAT_VERSION, SessionFileCorruptError, SessionFileError
from ollie.sessions.session import TRACKED_FIELDS

# (messages, meta, offset after the last commit, edit and commit records since the snapshot)
Parsed = tuple[list[Message], dict[str, Any], int, int]

# One json.loads holds the GIL until it returns: a resume parses in a thread, and parts of this many bytes let
# the event loop run between them (one call over a 100,000-message file froze the daemon ~150 ms).
PARSE_PART_BYTES = 1 << 19

_new = object.__new__
_ROLES = frozenset(get_args(Role))
_NO_LIST: list[Any] = []  # never changed: an absent (or null) list field's, tested as a list is

# A message line as `logformat.dumps` writes it (compact, "t" first): its start, and a line's end and the next's
# start. Any other line (or one written differently) is read as a record of its own.
_MESSAGE_LINE = b'{"t":"m","m":'
_BETWEEN_MESSAGES = b"}\n" + _MESSAGE_LINE
_CLOSE = ord("}")
# How the other lines written after the header start: an edit's and a commit's record (one pass finds both: a
# `find` of each was two passes over the file, ~5% of a 100k resume).
_OTHER_LINE = re.compile(rb'\n\{"t":"(?:e|meta)",')


def parse(data: bytes, path: Path) -> Parsed:
    """Apply the records up to the last complete commit: (messages, meta, commit offset, overhead)."""
    # A resume keeps every object it makes: collections as they pile up rescanned the growing heap (half of a
    # resume's cost at 100k messages); frozen after, so the next young collection does not walk it again.
    with cyclic_gc_paused(freeze=True):
        return _parse_all(data, path) or _parse_lines(data.split(b"\n"), path)


def _built(messages: list[dict[str, Any]]) -> list[Message]:
    """`Message.from_dict` of each (a resume builds 100k): every field set here, no class call, no frame each.

    A field of the wrong type is a TypeError: a crafted log's `"content": 5` resumed, then failed every turn.
    """
    # Calling the dataclass per message was two Python frames and a type call each, ~20% of a 100k resume beyond
    # its floor. tests/sessions/test_persist_resume_parse.py checks that this sets every field `Message` has.
    built = []
    append = built.append
    for data in messages:
        message = _new(Message)
        message.role = role = data["role"]
        message.content = content = data.get("content", "")
        if content.__class__ is not str or role not in _ROLES:  # (a list is not hashable: a TypeError too)
            message.content = _null_content(role, content)
        message.tool_call_id = message.name = message.reasoning = message.reasoning_signature = message.notes = ""
        message.images = []
        # The shapes `Message.to_dict` writes most, told by their size: no lookup of the fields they lack (a `get`
        # of each was a fifth of this loop). Any other, or a field of the wrong type, takes the general path.
        size = len(data) if "content" in data else 0
        if size == 2:  # a prompt, a reply
            message.tool_calls = []
        elif size == 3 and type(calls := data.get("tool_calls")) is list:  # a reply calling tools
            # Mostly one call: called here, not through map (a frame from C each).
            message.tool_calls = [_tool_call(calls[0])] if len(calls) == 1 else list(map(_tool_call, calls))
        elif size == 4 and type(call_id := data.get("tool_call_id")) is str and type(name := data.get("name")) is str:
            message.tool_calls = []  # a tool's result
            message.tool_call_id = call_id
            message.name = name
        else:
            get = data.get
            calls = get("tool_calls") or _NO_LIST
            images = get("images") or _NO_LIST
            call_id = message.tool_call_id = get("tool_call_id", "")
            name = message.name = get("name", "")
            reasoning = message.reasoning = get("reasoning", "")
            signature = message.reasoning_signature = get("reasoning_signature", "")
            notes = message.notes = get("notes", "")
            # One test of them all: which is wrong, after.
            if not (calls.__class__ is images.__class__ is list
                    and call_id.__class__ is name.__class__ is reasoning.__class__ is signature.__class__
                    is notes.__class__ is str):
                raise TypeError(_wrong_field(data))
            message.tool_calls = list(map(_tool_call, calls)) if calls else []
            message.images = [Image.from_dict(i) for i in images] if images else []
        append(message)
    return built


def checked_messages(data: Any) -> list[Message]:
    """Messages from the dicts a session log holds, checked as a resume checks them; ValueError says what is wrong."""
    if type(data) is not list:
        raise ValueError(f"messages are a {type(data).__name__}, not a list")
    try:
        return _built(data)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a message: {f'no {exc}' if isinstance(exc, KeyError) else exc}") from None


def _null_content(role: Any, content: Any) -> str:
    """The content of a message whose role or content `_built` does not take at once: a null is none."""
    if role not in _ROLES or content is not None:
        raise TypeError(f"not a message's role and content: {role!r:.40}, {type(content).__name__}")
    return ""


def _wrong_field(data: dict[str, Any]) -> str:
    """What is wrong with a message's optional fields."""
    for key in ("tool_calls", "images"):
        if (data.get(key) or _NO_LIST).__class__ is not list:
            return f"{key} is a {type(data[key]).__name__}, not a list"
    key = next(key for key in TEXT_FIELDS if data.get(key, "").__class__ is not str)
    return f"{key} is a {type(data[key]).__name__}, not a string"


def _tool_call(data: dict[str, Any]) -> ToolCall:
    """`ToolCall(**data)`, built as `_built` builds a message."""
    call = _new(ToolCall)
    call.id = data["id"]
    call.name = data["name"]
    call.arguments = data.get("arguments", "{}")
    if not call.id.__class__ is call.name.__class__ is call.arguments.__class__ is str:
        raise TypeError(f"not a tool call's id, name and arguments: {call.id!r:.40}, {call.name!r:.40}, "
                        f"{type(call.arguments).__name__}")
    return call


def _records(lines: list[bytes]) -> list[Any] | None:
    """Every line's record, parsed as JSON arrays of ~PARSE_PART_BYTES of lines; None when one is unreadable."""
    ends = list(accumulate(map(len, lines)))
    records: list[Any] = []
    first = 0
    while first < len(lines):
        last = bisect_left(ends, (ends[first - 1] if first else 0) + PARSE_PART_BYTES, first) + 1
        try:
            part = _loads(b"[" + b",".join(lines[first:last]) + b"]")
        except (ValueError, RecursionError):  # a line nested deeper than any ollie writes (a hand-written round)
            return None
        # A line holding two values ("{...},{...}") would shift every later one: each must be one record.
        if len(part) != len(lines[first:last]):
            return None
        records += part
        first = last
    return records


def _messages(data: bytes, start: int, stop: int) -> list[list[Message]] | None:
    """The messages of the message lines in data[start:stop] (whole lines, no newline at the end), built, in parts;
    None unless every line is one message record as `logformat.dumps` writes it, and builds.

    A part is parsed as one JSON array of the messages alone, made by one C call over its bytes: each line is
    `{"t":"m","m":` + the message + `}`, and a JSON string holds no raw newline, so each newline left after the
    line ends and next starts are replaced is a line of another kind (read by `_parse_lines`). The records'
    own objects are never built, and no pass counts the lines. Each part's messages are built before the next is
    parsed: its dicts are freed while warm, and the next part's reuse their memory (~8% of a 100k resume).
    A message that does not build is left to `_parse_lines`, which names its line (or drops an unfinished round).
    """
    parts = []
    while True:  # at least once: an empty range is an empty line, which is no message
        cut = data.find(b"\n", start + PARSE_PART_BYTES, stop)
        if cut < 0:
            cut = stop
        if not data.startswith(_MESSAGE_LINE, start, cut) or data[cut - 1] != _CLOSE:
            return None
        text = data[start + len(_MESSAGE_LINE):cut - 1]
        joined = text.replace(_BETWEEN_MESSAGES, b",")
        if b"\n" in joined:
            return None
        try:
            part = _built(_loads(b"[" + joined + b"]"))
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return None
        count = (len(text) - len(joined)) // (len(_BETWEEN_MESSAGES) - 1) + 1
        # One value per line: a line holding two ("{...},{...}") would shift every later one.
        if len(part) != count:
            return None
        parts.append(part)
        if cut == stop:
            return parts
        start = cut + 1


def _parse_all(data: bytes, path: Path) -> Parsed | None:
    """`_parse_lines` when every line reads: message lines parsed a run at a time, the others apart; else None."""
    body = data.rfind(b"\n") + 1  # what follows the last newline is a torn write (or nothing at all)
    if not body:
        return None
    # The lines other than messages (the header, each round's edits and commit) are few: one at a time. Looking
    # at every line in Python (its offset, its kind) was ~8% of a resume's instructions at 10k messages.
    # Where each header, edit and commit line starts, in order (a JSON string holds no raw newline).
    starts = [0, *(match.start() + 1 for match in _OTHER_LINE.finditer(data, 0, body))]
    ends = [data.find(b"\n", start) for start in starts]
    others = _records([data[start:end] for start, end in zip(starts, ends, strict=True)])
    if others is None:
        return None
    walk = _Walk(path)
    index = -1
    pos = 0  # where the line after the previous other line starts
    for start, end, record in zip(starts, ends, others, strict=True):
        if start > pos:  # message lines since the previous other line
            run = _messages(data, pos, start - 1)
            if run is None:
                return None
            for part in run:
                walk.pending.append((index + 1, part))
                index += len(part)
        index += 1
        walk.pos = start
        if not walk.step(index, data[start:end], record, garbled_ends=end + 1 == body):
            return walk.result()
        pos = end + 1
    # Messages after the last commit are not applied, but a damaged one must still be found (`_parse_lines`).
    if pos < body and _messages(data, pos, body - 1) is None:
        return None
    return walk.result()


def _parse_lines(lines: list[bytes], path: Path) -> Parsed:
    """Line by line, which finds the line that does not read (a garbled last round is dropped, else an error)."""
    walk = _Walk(path)
    last_index = len(lines) - 1
    for index, line in enumerate(lines[:last_index]):
        try:
            record = json.loads(line.decode())  # strict UTF-8, as written
        except (ValueError, RecursionError):
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
        # Since the last commit, each with its line's index: `m`/`e` records, and lists of messages (of `m`
        # records' lines, parsed and built in bulk, the index the first's).
        self.pending: list[tuple[int, list[Message] | dict[str, Any]]] = []
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
            version = record.get("v", 0)
            if type(version) is not int:
                raise SessionFileCorruptError(f"{self.path}: format version {version!r:.40} on line 1")
            if version > FORMAT_VERSION:
                raise SessionFileError(f"{self.path}: format version {record['v']} is newer than this ollie")
        elif kind == "meta":
            self._commit(index, end, record)
        elif kind in ("m", "e"):
            self.pending.append((index, record))
        self.pos = end
        return True

    def _commit(self, index: int, end: int, record: dict[str, Any]) -> None:
        messages = self.messages
        line, rec = index, record
        try:
            for entry in self.pending:
                line, rec = entry  # named by the error below
                if isinstance(rec, list):  # a part of a run of message lines: the messages themselves
                    messages += rec
                elif rec["t"] == "m":
                    messages += _built([rec["m"]])
                else:
                    at = rec["i"]
                    # A bool is an int, and a negative index would edit from the end: neither is a message's index.
                    if type(at) is not int or not 0 <= at < len(messages):
                        raise IndexError(f"no message {at!r:.40} to edit")
                    messages[at] = _built([rec["m"]])[0]
                    self.overhead += 1
            line, rec = index, record
            count = record.get("n")
            if type(count) is not int or count != len(messages):
                raise ValueError(f"the commit counts {count!r:.40} messages, found {len(messages)}")
            meta = record.get("meta") or {}
            if type(meta) is not dict:
                raise TypeError(f"the commit's meta is a {type(meta).__name__}")
            _apply_tracked(self.tracked, record)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
            why = f"no {exc}" if isinstance(exc, KeyError) else exc
            raise SessionFileCorruptError(f"{self.path}: bad record on line {line + 1}: {why}") from None
        self.pending = []
        self.overhead += 1
        self.committed = (messages, dict(meta), end, self.overhead)

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


def _loads(joined: bytes) -> Any:
    """json.loads of lines joined, decoded as `_parse_lines` decodes a line: strict UTF-8 (json.loads of bytes lets
    the bytes of a lone surrogate through, which a line read alone refuses and `logformat.dumps` could not write)."""
    return json.loads(joined.decode())
