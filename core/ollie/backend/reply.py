"""What the backends read of a reply: decoded piece by bounded piece, capped in size, within its deadlines.

httpx inflates a whole network read at once (64 KiB of a gzip bomb is ~64 MiB): here the raw body is inflated
at most `MAX_PIECE` bytes at a time, so a cap stops a bomb before it is in memory.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import httpx

from ollie.sizes import size_text

# Only what `_Inflater` undoes is asked for (httpx would also offer br and zstd when their packages are installed).
ACCEPT_ENCODING = "gzip, deflate"
MAX_PIECE = 1 << 20  # the most one step of decoding hands on

# An error answer is read for its message only, a JSON answer (a model list) whole: a hostile or broken
# server's endless or huge body stops there, not at the daemon's memory.
MAX_ERROR_BODY = 1 << 20
MAX_JSON_BODY = 32 << 20


@dataclass(frozen=True, repr=False)
class ReplyLimits:
    """The bounds on one streamed reply (besides httpx's per-read timeouts).

    `head_s`: until the headers are in; `idle_s`: between two events that carry data (keep-alive comments and
    pings do not count); `reply_bytes`: the whole body after decompression.
    """

    head_s: float = 300.0
    idle_s: float = 300.0
    reply_bytes: int = 128 << 20


class ReplyTooLarge(Exception):  # noqa: N818 (read as "the reply is too large")
    """The body went over its cap (after decompression)."""


class _Inflater:
    """One Content-Encoding (gzip or deflate) undone, piece by bounded piece."""

    def __init__(self, coding: str) -> None:
        self._coding = coding
        self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16 if coding == "gzip" else zlib.MAX_WBITS)
        self._first = coding == "deflate"  # zlib-wrapped per the RFC, but some servers send it raw: the start tells

    def feed(self, data: bytes) -> Iterator[bytes]:
        try:
            try:
                out = self._zlib.decompress(data, MAX_PIECE)
            except zlib.error:
                if not self._first:
                    raise
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                out = self._zlib.decompress(data, MAX_PIECE)
            self._first = False
            while True:
                if out:
                    yield out
                if not self._zlib.unconsumed_tail:
                    return
                out = self._zlib.decompress(self._zlib.unconsumed_tail, MAX_PIECE)
        except zlib.error as exc:
            raise httpx.DecodingError(f"the {self._coding} body does not decode: {exc}") from None

    def flush(self) -> bytes:
        try:
            return self._zlib.flush()
        except zlib.error as exc:
            raise httpx.DecodingError(f"the {self._coding} body does not decode: {exc}") from None


def _through(inflater: _Inflater, pieces: Iterator[bytes], final: bool) -> Iterator[bytes]:
    for piece in pieces:
        yield from inflater.feed(piece)
    if final and (tail := inflater.flush()):
        yield tail


def _undo(inflaters: list[_Inflater], chunk: bytes, *, final: bool) -> Iterator[bytes]:
    """`chunk` through each inflater in turn, lazily (so each piece stays bounded); `final` flushes them."""
    pieces: Iterator[bytes] = iter((chunk,))
    for inflater in inflaters:
        pieces = _through(inflater, pieces, final)
    return pieces


async def body_pieces(response: httpx.Response, limit: int | None = None) -> AsyncIterator[bytes]:
    """The body decoded (gzip/deflate; another coding passes as it came, as httpx's); ReplyTooLarge past `limit`."""
    codings = [c.strip().lower() for c in response.headers.get("content-encoding", "").split(",")]
    # The coding listed last was applied last: undone first.
    inflaters = [_Inflater(c) for c in reversed(codings) if c in ("gzip", "deflate")]
    raw = response.aiter_raw()
    size = 0
    if not inflaters:  # the usual stream: as it came, each chunk counted
        async for chunk in raw:
            size += len(chunk)
            if limit is not None and size > limit:
                raise ReplyTooLarge(f"over {size_text(limit)}")
            yield chunk
        return
    final = False
    while not final:
        chunk = await anext(raw, None)
        final = chunk is None
        for piece in _undo(inflaters, chunk or b"", final=final):
            size += len(piece)
            if limit is not None and size > limit:
                raise ReplyTooLarge(f"over {size_text(limit)} (after decompression)")
            if piece:
                yield piece


async def read_capped(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """The body (decoded) up to `limit` bytes, and whether it was cut there (the rest is never read)."""
    parts: list[bytes] = []
    size = 0
    async for piece in body_pieces(response):
        parts.append(piece)
        size += len(piece)
        if size > limit:
            parts[-1] = piece[:len(piece) - (size - limit)]  # cut before joining: the cap's size held once, not twice
            return b"".join(parts), True
    return b"".join(parts), False
