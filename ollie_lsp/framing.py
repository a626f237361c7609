"""The client's LSP framing, parsed whole: each frame's body, or the JSON-RPC error a malformed one earns.

pygls reads a header line at a time through the event loop (each line a round
trip through a thread and the loop's queue, behind every event being sent) and
meets bad framing with silence: a missing or negative Content-Length skipped
line by line, a huge one read until memory or input ran out. Here the reader
(a thread for stdio, a coroutine for TCP) feeds whatever bytes it has into a
FrameParser and hands the loop every complete frame at once; a malformed frame
is answered (id null, as JSON-RPC says when the id cannot be read) and the
parser skips to the next `Content-Length` header, so the daemon keeps serving.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ollie.env import env_seconds
from ollie.stdio import INVALID_REQUEST, PARSE_ERROR

# Over this a frame's body is not kept: VS Code's biggest (didOpen of a file it still syncs, < 50 MB) fits.
MAX_FRAME_BYTES = 64 * 1024 * 1024
# All header lines of one message together (a client sends ~60 bytes).
MAX_HEADER_BYTES = 8 * 1024
# Deeper JSON than any ollie or LSP message is refused before a recursive walk (cattrs, a session's save) meets it.
MAX_DEPTH = 64
# How long a partly received frame may wait for its next byte (a Content-Length longer than what was sent).
STALL_ENV = "OLLIE_LSP_STALL_S"
DEFAULT_STALL_S = 10.0
_NEXT_HEADER = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


@dataclass(eq=False, repr=False)
class Problem:
    """A message that cannot be handled: the error to answer it with (`msg_id` None when it cannot be read)."""

    code: int
    message: str
    msg_id: int | str | None = None


Item = bytes | Problem


class FrameSource(Protocol):
    """Where a client's frames come from (stdin's reader thread, a TCP connection)."""

    async def run(self, deliver: Callable[[list[Item]], list[Item]]) -> None:
        """Hand each batch of frames to `deliver` (on the loop) until the client's input ends; what it returns (left
        unhandled) is handed to it again, first, a loop pass later."""
        ...


def stall_seconds() -> float:
    """`$OLLIE_LSP_STALL_S` (default 10): how long a half-received frame waits for the rest."""
    return env_seconds(STALL_ENV, DEFAULT_STALL_S)


class FrameParser:
    """Splits the client's byte stream into frame bodies and Problems; after a Problem, skips to the next header."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._declared: int | None = None  # the Content-Length of the headers being read
        self._length: int | None = None  # the body's length once its headers are read
        self._header_bytes = 0
        self._seen_header = False
        self._lost = False  # skipping to the next Content-Length header

    def pending(self) -> bool:
        """Whether a frame is begun but not complete."""
        return not self._lost and bool(self._buffer or self._seen_header or self._length is not None)

    def feed(self, data: bytes) -> list[Item]:
        """The frames and problems `data` completes."""
        self._buffer += data
        items: list[Item] = []
        while True:
            if self._lost and not self._resync():
                return items
            if self._length is not None:
                if len(self._buffer) < self._length:
                    return items
                with memoryview(self._buffer) as view:  # one copy of the body, not two (20 MB: 10 ms each)
                    items.append(bytes(view[:self._length]))
                del self._buffer[:self._length]
                self._length = None
                continue
            problem = self._read_headers()
            if problem is not None:
                items.append(problem)
                self._lose()
            elif self._length is None:
                return items

    def stalled(self) -> Problem | None:
        """The frame begun has waited too long for its next byte: drop it (a Problem), or None if none is begun."""
        if not self.pending():
            return None
        if self._length is not None:
            why = f"Content-Length said {self._length} bytes, only {len(self._buffer)} came"
        else:
            why = "its headers never ended with a blank line"
        self._lose()
        return Problem(PARSE_ERROR, f"Parse error: a message stopped part-way ({why})")

    def end(self) -> str | None:
        """At end of input: what was left half-received, for the log (None: the input ended between frames)."""
        if not self.pending():
            return None
        return f"the client's input ended in the middle of a message ({len(self._buffer)} bytes of it dropped)"

    def _read_headers(self) -> Problem | None:
        while True:
            end = self._buffer.find(b"\n")
            if end < 0:
                if len(self._buffer) > MAX_HEADER_BYTES:
                    return self._bad(f"Parse error: a header line longer than {MAX_HEADER_BYTES} bytes")
                return None
            line = bytes(self._buffer[:end]).rstrip(b"\r")
            if not line.strip():
                del self._buffer[:end + 1]
                if not self._seen_header:
                    continue  # a stray blank line between messages
                return self._body_starts()
            self._seen_header = True
            self._header_bytes += end + 1
            if self._header_bytes > MAX_HEADER_BYTES:
                return self._bad(f"Parse error: headers longer than {MAX_HEADER_BYTES} bytes")
            problem = self._header(line)
            if problem is not None:
                return self._bad(problem)
            del self._buffer[:end + 1]

    def _bad(self, message: str) -> Problem:
        # The bad line stays but its first byte: the next header may start inside it (the tail of a body
        # whose Content-Length was too short runs into the next message's headers).
        del self._buffer[:1]
        return Problem(PARSE_ERROR, message)

    def _header(self, line: bytes) -> str | None:
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name.strip()):
            return f"Parse error: not a header line: {_show(line)}"
        if name.strip().lower() != b"content-length":
            return None  # Content-Type, or any header a client adds
        text = value.strip()
        if not text.isdigit() or len(text) > 18:
            return f"Parse error: Content-Length must be a number of bytes, not {_show(text)}"
        length = int(text)
        if self._declared is not None and self._declared != length:
            return "Parse error: two different Content-Length headers"
        self._declared = length
        return None

    def _body_starts(self) -> Problem | None:
        length = self._declared
        self._declared = None
        self._seen_header = False
        self._header_bytes = 0
        if length is None:
            return Problem(PARSE_ERROR, "Parse error: a message without a Content-Length header")
        if length > MAX_FRAME_BYTES:
            # Not read: skipped like garbage, so a lying length does not swallow the messages after it.
            return Problem(INVALID_REQUEST, f"Invalid Request: a message of {length} bytes is over the "
                           f"{MAX_FRAME_BYTES // (1024 * 1024)} MiB limit")
        if length == 0:
            return Problem(PARSE_ERROR, "Parse error: an empty message (Content-Length 0)")
        self._length = length
        return None

    def _lose(self) -> None:
        self._lost = True
        self._length = self._declared = None
        self._seen_header = False
        self._header_bytes = 0

    def _resync(self) -> bool:
        match = _NEXT_HEADER.search(self._buffer)
        if match is None:
            # Keep a tail that may be the start of the next header.
            del self._buffer[:max(0, len(self._buffer) - 32)]
            return False
        del self._buffer[:match.start()]
        self._lost = False
        return True


def decode(body: bytes) -> Any:
    """The JSON value of one frame's body; a Problem (-32700, or -32600 past MAX_DEPTH) when it cannot be one."""
    try:
        # Strictly UTF-8: json.loads(bytes) would also take UTF-16 and UTF-32, which LSP does not allow.
        value = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return Problem(PARSE_ERROR, f"Parse error: the message is not UTF-8 (byte {exc.start})")
    except json.JSONDecodeError as exc:
        return Problem(PARSE_ERROR, f"Parse error: {exc.msg} (at byte {exc.pos})")
    except RecursionError:
        return Problem(PARSE_ERROR, f"Parse error: nested deeper than {MAX_DEPTH} levels")
    # Cheap bound first: fewer brackets than MAX_DEPTH cannot nest deeper.
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH and too_deep(value):
        msg_id = value.get("id") if isinstance(value, dict) else None
        if not isinstance(msg_id, (int, str)) or isinstance(msg_id, bool):
            msg_id = None
        return Problem(INVALID_REQUEST, f"Invalid Request: nested deeper than {MAX_DEPTH} levels", msg_id)
    return value


def too_deep(value: Any) -> bool:
    """Whether `value` nests lists and objects deeper than MAX_DEPTH (without recursing)."""
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _show(raw: bytes) -> str:
    return repr(raw[:60].decode("latin-1"))
