"""SSE and NDJSON decoders fed the same bytes at random chunk boundaries."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ollie.backend.framing import NDJSONDecoder, SSEDecoder, SSEEvent

# Multibyte UTF-8, a U+2028 inside JSON (not a line break for SSE/NDJSON), CRLF and CR line endings,
# comments, multi-line data and an event name.
SSE_STREAM = (
    ": OPENROUTER PROCESSING\n\n"
    'data: {"t":"héllo wörld ✓ 🎉"}\n\n'
    "event: content_block_delta\r\n"
    'data: {"t":"line\u2028sep"}\r\n\r\n'
    "data: first\rdata: second\r\r"
    "data:no-space\n\n"
    "data: [DONE]\n\n"
)
SSE_EXPECTED = [
    SSEEvent("", '{"t":"héllo wörld ✓ 🎉"}'),
    SSEEvent("content_block_delta", '{"t":"line\u2028sep"}'),
    SSEEvent("", "first\nsecond"),
    SSEEvent("", "no-space"),
    SSEEvent("", "[DONE]"),
]
NDJSON_OBJECTS = [
    {"message": {"content": "ünïcödé 🎉"}, "done": False},
    {"message": {"content": "a\u2028b"}, "done": False},
    {"message": {"content": ""}, "done": True, "eval_count": 3},
]


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    """Split `data` at the given offsets (sorted, deduplicated)."""
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, start = [], 0
    for point in points + [len(data)]:
        pieces.append(data[start:point])
        start = point
    return pieces


def decoded(decoder: SSEDecoder | NDJSONDecoder, raw: bytes, cuts: list[int]) -> list[Any]:
    """Everything `decoder` yields for `raw` fed in pieces cut at `cuts`, then its end."""
    out: list[Any] = []
    for piece in split_at(raw, cuts):
        out.extend(decoder.feed(piece))
    out.extend(decoder.finish())
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=40))
def test_sse_decoder_is_boundary_independent(cuts):
    assert decoded(SSEDecoder(), SSE_STREAM.encode(), cuts) == SSE_EXPECTED


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=40), st.booleans())
def test_ndjson_decoder_is_boundary_independent(cuts, trailing_newline):
    raw = "\n".join(json.dumps(o, ensure_ascii=False) for o in NDJSON_OBJECTS) + ("\n" if trailing_newline else "")
    assert decoded(NDJSONDecoder(), raw.encode(), cuts) == NDJSON_OBJECTS


def test_events_are_released_as_soon_as_complete():
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"a":1}\n') == []
    assert decoder.feed(b"\n") == [SSEEvent("", '{"a":1}')]
    assert decoder.feed(b"data: partial") == []
    assert decoder.finish() == [SSEEvent("", "partial")]


def test_ndjson_object_released_at_its_newline():
    decoder = NDJSONDecoder()
    assert decoder.feed(b'{"a":') == []
    assert decoder.feed(b'1}\n{"b"') == [{"a": 1}]
    assert decoder.feed(b":2}\n") == [{"b": 2}]


def test_sse_decoder_fed_one_event_per_chunk_as_servers_write_them():
    # Each chunk a whole event (the fast paths), then a partial line held across chunks, then invalid UTF-8.
    decoder = SSEDecoder()
    chunks = [event.encode() for event in SSE_STREAM.replace("\r\n", "\n").replace("\r", "\n").split("\n\n") if event]
    events = [e for chunk in chunks for e in decoder.feed(chunk + b"\n\n")]
    assert events == SSE_EXPECTED
    assert decoder.feed(b"data: par") == []
    assert decoder.feed(b"t\n\ndata: two\n\n") == [SSEEvent("", "part"), SSEEvent("", "two")]
    assert decoder.feed(b"data: \xff\n\n") == [SSEEvent("", "\ufffd")]
    assert decoder.finish() == []


def test_a_line_or_event_without_end_is_malformed_not_unbounded():
    from ollie.backend.framing import MAX_EVENT_BYTES

    piece = b"data: " + b"x" * (1 << 20)
    for decoder, stream in ((SSEDecoder(), piece), (SSEDecoder(), b"\r" + piece), (NDJSONDecoder(), piece)):
        with pytest.raises(ValueError, match="over"):
            for _ in range(MAX_EVENT_BYTES // len(piece) + 2):
                decoder.feed(stream)
                stream = piece


def test_an_event_of_empty_data_lines_is_malformed_not_unbounded():
    """Each data line counts at least its own bytes: `data:` lines of no value each kept a list entry, uncounted."""
    from ollie.backend.framing import MAX_EVENT_BYTES

    decoder = SSEDecoder()
    chunk = b"data:\n" * 10_000
    with pytest.raises(ValueError, match="an SSE event over"):
        for _ in range(MAX_EVENT_BYTES // len(chunk) + 2):
            decoder.feed(chunk)


def test_a_line_sent_a_few_bytes_at_a_time_holds_about_its_own_size():
    """A server that trickles a never-ending line in tiny chunks: each chunk kept as its own str object cost ~25x
    the line's bytes (the cap, 16 MiB, would have held ~400 MB)."""
    import tracemalloc

    decoder = NDJSONDecoder()
    decoder.feed(b'"')
    tracemalloc.start()
    try:
        for _ in range(200_000):
            decoder.feed(b"ab")
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 4 * 400_000, held
    assert decoder.feed(b'"\n') == ["ab" * 200_000]  # the line, whole, once it ends
