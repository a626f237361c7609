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

    def __init__(self, unit: str = "a line") -> None:
        self._unit = unit  # what a line over the cap is called in the error (for SSE: an event)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        # The unfinished line's pieces, joined once it ends: a long line's length is paid once, not per chunk.
        self._pending: list[str] = []
        self._size = 0

    def feed(self, chunk: bytes) -> list[str]:
        """The lines `chunk` completed."""
        text = self._decoder.decode(chunk)
        if "\n" not in text and "\r" not in text and not (self._pending and self._pending[-1].endswith("\r")):
            self._pending.append(text)
            self._size += len(text)
            lines = []
        else:
            text = "".join(self._pending) + text
            hold = ""
            if text.endswith("\r"):
                # May be the first half of "\r\n": keep it until the next byte arrives.
                text, hold = text[:-1], "\r"
            lines = _EOL.split(text)
            self._pending = [lines.pop() + hold]
            self._size = len(self._pending[0])
        if self._size > MAX_EVENT_BYTES:
            raise ValueError(f"{self._unit} over {MAX_EVENT_BYTES} bytes")
        return lines

    def finish(self) -> list[str]:
        """The last lines, at the end of the stream."""
        lines = _EOL.split("".join(self._pending) + self._decoder.decode(b"", final=True))
        self._pending, self._size = [], 0
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
                    self._size += len(value)
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
        return [json.loads(line) for line in self._lines.feed(chunk) if line.strip()]

    def finish(self) -> list[Any]:
        """Flush a last line that had no trailing newline."""
        return [json.loads(line) for line in self._lines.finish() if line.strip()]
