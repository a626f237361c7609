"""Incremental decoders for the two streaming framings: SSE and NDJSON."""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass
from typing import Any

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
        return lines

    def idle(self) -> bool:
        """Nothing held back: no partial line, no partial UTF-8 sequence."""
        return not self._pending and not self._decoder.getstate()[0]

    def finish(self) -> list[str]:
        """The last lines, at the end of the stream."""
        text = self._pending + self._decoder.decode(b"", final=True)
        self._pending = ""
        lines = _EOL.split(text)
        if lines and not lines[-1]:
            lines.pop()
        return lines


class SSEDecoder:
    """Feeds bytes, returns complete events as soon as their blank line arrives."""

    def __init__(self) -> None:
        self._lines = _LineSplitter()
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Decode one network chunk; return the events it completed."""
        if chunk.startswith(b"data: ") and chunk.endswith(b"\n\n") and chunk.count(b"\n") == 2 \
                and not self._data and not self._event and b"\r" not in chunk and self._lines.idle():
            # The most common chunk of all: exactly one event of one data line.
            try:
                return [SSEEvent("", chunk[6:-2].decode("utf-8"))]
            except UnicodeDecodeError:
                pass  # invalid UTF-8: the incremental path replaces it
        if chunk.endswith(b"\n") and b"\r" not in chunk and self._lines.idle():
            # The usual chunk: whole events, each line ending in "\n". One decode and one split, no regex.
            try:
                lines = chunk.decode("utf-8").split("\n")
            except UnicodeDecodeError:
                pass  # invalid UTF-8: the incremental path replaces it
            else:
                lines.pop()  # what follows the last "\n": nothing
                return self._take(lines)
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
