"""Incremental decoders for the two streaming framings: SSE and NDJSON."""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass
from typing import Any

# A stream that never ends its line (or its event) must not grow memory without bound: a malformed stream.
MAX_EVENT_BYTES = 16 * 1024 * 1024

# Only these end a line (str.splitlines would also split on U+2028 inside JSON strings).
_EOL = re.compile(r"\r\n|\r|\n")


@dataclass
class SSEEvent:
    """One server-sent event: the `event:` name (empty when absent) and the joined `data:` lines."""

    event: str
    data: str


class _LineSplitter:
    """Splits a byte stream into text lines across arbitrary chunk boundaries (UTF-8 safe)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""

    def feed(self, chunk: bytes) -> list[str]:
        """The lines `chunk` completed."""
        text = self._pending + self._decoder.decode(chunk)
        hold = ""
        if text.endswith("\r"):
            # May be the first half of "\r\n": keep it until the next byte arrives.
            text, hold = text[:-1], "\r"
        lines = _EOL.split(text)
        self._pending = lines.pop() + hold
        if len(self._pending) > MAX_EVENT_BYTES:
            raise ValueError(f"a line over {MAX_EVENT_BYTES} bytes")
        return lines

    def finish(self) -> list[str]:
        """The last lines, at the end of the stream."""
        text = self._pending + self._decoder.decode(b"", final=True)
        self._pending = ""
        lines = _EOL.split(text)
        if lines and not lines[-1]:
            lines.pop()
        return lines


class SSEDecoder:
    """Feeds bytes, returns complete events as soon as their blank line arrives.

    The usual stream ("\n" endings, valid UTF-8) is cut at its last "\n\n" per chunk, a one-line event one slice;
    the first "\r" or invalid UTF-8 sends the rest through the general line splitter.
    """

    def __init__(self) -> None:
        self._lines = _LineSplitter()
        self._event = ""
        self._data: list[str] = []
        self._fast = True
        # The start of an event whose blank line has not arrived, joined only once it has (its length paid once).
        self._tail: list[bytes] = []
        self._tail_size = 0

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Decode one network chunk; return the events it completed."""
        if not self._fast:
            return self._take(self._lines.feed(chunk))
        if b"\r" in chunk:
            return self._leave_fast_path(self._joined(chunk))
        # The tail holds no blank line: one can only be in the chunk, or across its first byte.
        across = chunk[:1] == b"\n" and self._tail and self._tail[-1][-1:] == b"\n"
        if not across and b"\n\n" not in chunk:
            self._tail.append(chunk)
            self._tail_size += len(chunk)
            if self._tail_size > MAX_EVENT_BYTES:
                raise ValueError(f"an SSE event over {MAX_EVENT_BYTES} bytes")
            return []
        data = self._joined(chunk)
        cut = data.rfind(b"\n\n")
        try:
            # A blank line never falls inside a UTF-8 sequence: what precedes it decodes alone.
            text = data[:cut].decode("utf-8")
        except UnicodeDecodeError:
            return self._leave_fast_path(data)
        rest = data[cut + 2:]
        self._tail, self._tail_size = ([rest], len(rest)) if rest else ([], 0)
        events: list[SSEEvent] = []
        for block in text.split("\n\n"):
            if block.startswith("data: ") and "\n" not in block:
                events.append(SSEEvent("", block[6:]))  # the usual event: one data line
            else:
                events.extend(self._take(block.split("\n") + [""]))
        return events

    def _joined(self, chunk: bytes) -> bytes:
        """The tail and `chunk` as one (the tail emptied)."""
        data = b"".join((*self._tail, chunk)) if self._tail else chunk
        self._tail, self._tail_size = [], 0
        return data

    def _leave_fast_path(self, data: bytes) -> list[SSEEvent]:
        """The general line splitter from here on, starting with `data` (it begins at an event's start)."""
        self._fast = False
        return self._take(self._lines.feed(data))

    def finish(self) -> list[SSEEvent]:
        """Flush at end of stream (an event without its closing blank line still counts)."""
        tail = self._joined(b"")
        events = self._take(self._lines.feed(tail)) if tail else []
        events += self._take(self._lines.finish())
        self._end_event(events)
        return events

    def _end_event(self, events: list[SSEEvent]) -> None:
        """Close the event being read: it joins `events` when it has data."""
        if self._data:
            events.append(SSEEvent(self._event, "\n".join(self._data)))
        self._event, self._data = "", []

    def _take(self, lines: list[str]) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        for line in lines:
            if not line:
                self._end_event(events)
                continue
            if line.startswith("data: "):  # the common line, without the general field parsing below
                self._data.append(line[6:])
                continue
            if line.startswith(":"):
                continue  # comment / keep-alive, e.g. ": OPENROUTER PROCESSING"
            field, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if field == "data":
                self._data.append(value)
            elif field == "event":
                self._event = value
        return events


class NDJSONDecoder:
    """Feeds bytes, returns each JSON object as soon as its newline arrives."""

    def __init__(self) -> None:
        self._lines = _LineSplitter()

    def feed(self, chunk: bytes) -> list[Any]:
        """Decode one network chunk; return the objects it completed."""
        return [json.loads(line) for line in self._lines.feed(chunk) if line.strip()]

    def finish(self) -> list[Any]:
        """Flush a last line that had no trailing newline."""
        return [json.loads(line) for line in self._lines.finish() if line.strip()]
