"""Incremental decoders for the two streaming framings: SSE and NDJSON."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# A stream that never ends its line (or its event) must not grow memory without bound: a malformed stream.
MAX_EVENT_BYTES = 16 * 1024 * 1024

# Only these end a line (str.splitlines would also split on U+2028 inside JSON strings).
_EOL = re.compile(r"\r\n|\r|\n")


# A surrogate left unpaired by a `\uXXXX` escape: no UTF-8 encoder takes it, so in a message it would break every
# later request body and every save of the session. In `json.dumps` text: a high one that ends a string and a low one
# that starts it are left, halves of a pair a server split between two deltas (ollie.backend.surrogates joins them).
# Inside a string a quote is `\"`: a bare one after a half closes its string, before one opens it.
_LONE_SURROGATE = re.compile('[\ud800-\udbff](?!")|(?<!(?<!\\\\)")[\udc00-\udfff]')


def loads(text: str) -> Any:
    """json.loads of a frame from the model's server, an unpaired surrogate escape decoded as U+FFFD (but a half at
    either end of a string)."""
    obj = json.loads(text)
    if "\\ud" in text or "\\uD" in text:  # rare (a pair is one character once decoded): checked only then
        obj = json.loads(_LONE_SURROGATE.sub("\ufffd", json.dumps(obj, ensure_ascii=False)))
    return obj


@dataclass(repr=False)
class SSEEvent:
    """One server-sent event: the `event:` name (empty when absent) and the joined `data:` lines."""

    event: str
    data: str


class _LineSplitter:
    """Splits a byte stream into text lines across arbitrary chunk boundaries (UTF-8 safe)."""

    def __init__(self, unit: str = "a line") -> None:
        self._unit = unit  # what a line over the cap is called in the error (for SSE: an event)
        # The unfinished line's bytes, grown in place and decoded once it ends: a long line's length is paid once,
        # not per chunk, and a line sent a few bytes at a time holds its bytes, not a str object per chunk.
        self._pending = bytearray()

    def feed(self, chunk: bytes) -> list[str]:
        """The lines `chunk` completed."""
        pending = self._pending
        if not pending and chunk.endswith(b"\n"):  # whole lines, as servers mostly send them: nothing to join
            lines = _EOL.split(chunk.decode("utf-8", "replace"))
            lines.pop()
            return lines
        start = len(pending)  # what it holds has no line end, but for a "\r" last
        pending += chunk
        # Where the complete lines end. A "\r" last may be the first half of "\r\n": kept until the next byte.
        end = max(pending.rfind(b"\n", start), pending.rfind(b"\r", max(start - 1, 0), len(pending) - 1)) + 1
        lines = []
        if end:
            # "\r" and "\n" are never part of a multibyte UTF-8 sequence: the lines decode apart from what follows.
            lines = _EOL.split(pending[:end].decode("utf-8", "replace"))
            lines.pop()  # the empty piece after the last line's end
            del pending[:end]
        if len(pending) > MAX_EVENT_BYTES:
            raise ValueError(f"{self._unit} over {MAX_EVENT_BYTES} bytes")
        return lines

    def finish(self) -> list[str]:
        """The last lines, at the end of the stream."""
        lines = _EOL.split(self._pending.decode("utf-8", "replace"))
        self._pending = bytearray()
        if lines and not lines[-1]:
            lines.pop()
        return lines


class SSEDecoder:
    """Feeds bytes, returns complete events as soon as their blank line arrives."""

    def __init__(self) -> None:
        self._lines = _LineSplitter("an SSE event")
        self._event = ""
        self._data: list[str] = []
        self._size = 0  # of the data lines so far: an event that never ends must not grow memory without bound

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Decode one network chunk; return the events it completed."""
        return self._take(self._lines.feed(chunk))

    def finish(self) -> list[SSEEvent]:
        """Flush at end of stream (an event without its closing blank line still counts)."""
        events = self._take(self._lines.finish())
        self._end_event(events)
        return events

    def _end_event(self, events: list[SSEEvent]) -> None:
        """Close the event being read: it joins `events` when it has data."""
        if self._data:
            events.append(SSEEvent(self._event, "\n".join(self._data)))
        self._event, self._data, self._size = "", [], 0

    def _take(self, lines: list[str]) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        for line in lines:
            if not line:
                self._end_event(events)
            elif not line.startswith(":"):  # a comment / keep-alive (": OPENROUTER PROCESSING") is no field
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "data":
                    self._data.append(value)
                    self._size += len(line) + 1  # a line of no value still holds a list entry
                    if self._size > MAX_EVENT_BYTES:
                        raise ValueError(f"an SSE event over {MAX_EVENT_BYTES} bytes")
                elif field == "event":
                    self._event = value
        return events


class NDJSONDecoder:
    """Feeds bytes, returns each JSON object as soon as its newline arrives."""

    def __init__(self) -> None:
        self._lines = _LineSplitter()

    def feed(self, chunk: bytes) -> list[Any]:
        """Decode one network chunk; return the objects it completed."""
        return [loads(line) for line in self._lines.feed(chunk) if line.strip()]

    def finish(self) -> list[Any]:
        """Flush a last line that had no trailing newline."""
        return [loads(line) for line in self._lines.finish() if line.strip()]
