"""JSON encoded off the event loop in pieces short enough that the loop gets the GIL (request bodies, long answers).

One `json.dumps` of a 100,000-message history holds the GIL (every session freezes) for most of a second; encoded
a piece at a time in a worker thread, the loop gets the GIL between pieces. The bytes are those of one `json.dumps`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ollie.gcpause import cyclic_gc_paused

# One C call over at most this many characters holds the GIL ~1 ms.
_SLICE = 256 * 1024
# Fewer messages than this, and less text: encoded on the loop (a thread hop would cost more than it saves).
INLINE_MESSAGES = 256
INLINE_CHARS = 256 * 1024
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


# Pieces are joined into a chunk once this many are made: one join of a whole body held the GIL ~100 ms at
# 100,000 messages (~600,000 pieces, 12 MB), and freeing the pieces ~15 ms more.
_CHUNK_PIECES = 4096
# A built body's messages are freed this many at a time: freed at once, 100,000 messages' dicts held the GIL ~40 ms.
_RELEASE_ITEMS = 2000


class EncodedBody(dict[str, Any]):
    """A body's JSON, made already, as chunks of bytes; the dict itself is left empty (see `encoded`)."""

    chunks: list[bytes] = []

    @property
    def encoded(self) -> bytes:
        """The JSON bytes in one piece (a copy of them all when there are several chunks)."""
        return b"".join(self.chunks)

    @property
    def length(self) -> int:
        """How many bytes the JSON is."""
        return sum(len(chunk) for chunk in self.chunks)


class _Pieces(list[bytes]):
    """The pieces made so far; `chunks` holds those joined already."""

    def __init__(self) -> None:
        super().__init__()
        self.chunks: list[bytes] = []

    def flush(self) -> None:
        """Join the pieces made so far into one more chunk."""
        if self:
            self.chunks.append(b"".join(self))
            self.clear()


def _leaf(value: Any) -> bool:
    """Whether `value` is no container and no long string."""
    if isinstance(value, str):
        return len(value) <= _SLICE
    return not isinstance(value, (dict, list, tuple))


def _small(value: Any) -> bool:
    """Whether one C call encodes `value` quickly: a leaf, or a dict of leaves (a message without calls)."""
    if isinstance(value, dict):
        return all(type(k) is str for k in value) and all(_leaf(v) for v in value.values())
    return _leaf(value)


def _pieces(value: Any, out: _Pieces) -> None:
    """Append `value`'s JSON to `out`, a short C call at a time."""
    # errors="replace": a lone surrogate (a client's or a tool's "\ud800") has no UTF-8; as "?" the request still
    # goes (strict, every later request of the session failed on it).
    if _small(value):
        out.append(_dumps(value).encode(errors="replace"))
    elif isinstance(value, str):
        out.append(b'"')
        for start in range(0, len(value), _SLICE):  # escaping is per character: slices encode alike
            out.append(_dumps(value[start:start + _SLICE])[1:-1].encode(errors="replace"))
        out.append(b'"')
    elif isinstance(value, dict):
        if not all(type(k) is str for k in value):
            out.append(_dumps(value).encode(errors="replace"))  # json's own key coercion; never in a request body
            return
        out.append(b"{")
        for index, (key, item) in enumerate(value.items()):
            out.append((b"," if index else b"") + _dumps(key).encode(errors="replace") + b":")
            _pieces(item, out)
        out.append(b"}")
    else:
        out.append(b"[")
        for index, item in enumerate(value):
            if index:
                out.append(b",")
            _pieces(item, out)
            if len(out) >= _CHUNK_PIECES:
                out.flush()
        out.append(b"]")


def encode_chunks(value: Any) -> list[bytes]:
    """`json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()` as chunks: no join of
    them all, no mass of pieces freed at once."""
    out = _Pieces()
    _pieces(value, out)
    out.flush()
    return out.chunks


def _release(value: dict[str, Any]) -> None:
    """Free the body's `messages` a slice at a time (the GIL is free between slices)."""
    messages = value.get("messages")
    if isinstance(messages, list):
        while messages:
            del messages[-_RELEASE_ITEMS:]


def encoded(build: Callable[[], dict[str, Any]]) -> EncodedBody:
    """The JSON of the body `build` makes, as chunks of bytes (run it in a worker thread); the body's own
    `messages` list, made for this call, is emptied afterwards."""
    # A long history's wire dicts set off cycle collections that stop the event loop too (~200 ms at 100k
    # messages) and, kept while the request streams, were walked by the next young one (~100 ms): none runs
    # while they are made, and only the bytes are kept.
    body = EncodedBody()
    with cyclic_gc_paused():
        value = build()
        body.chunks = encode_chunks(value)
        _release(value)
    return body
