"""A hostile backend on 127.0.0.1 cannot hold a turn forever or grow the daemon's memory: bombs, endless
keep-alives, a head that never ends, oversized chunk framing and events, a reply without end."""

from __future__ import annotations

import asyncio
import gzip
import tracemalloc
from collections.abc import Iterator
from contextlib import aclosing

import httpx
import pytest

from ollie.backend.anthropic import AnthropicBackend
from ollie.backend.errors import BackendError, StreamDropError, TransientError
from ollie.backend.openai import OpenAIBackend
from ollie.backend.reply import MAX_PIECE, ReplyLimits

from .conftest import collect, joined
from .rawhttp import CHUNKED_HEAD, Step, backend_for, sized, wire_server

DELTA = b'data: {"choices":[{"delta":{"content":"x"}}]}\n\n'


def chunk(data: bytes) -> bytes:
    """`data` as one chunk of a chunked body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def forever(step: bytes, every_s: float, *, head: bytes = CHUNKED_HEAD, count: int = 2000) -> Iterator[Step]:
    """`head`, then `step` every `every_s` seconds, far longer than any test waits."""
    yield head
    for _ in range(count):
        yield step
        yield every_s


async def test_a_gzip_bomb_never_inflates_whole_and_the_caps_stop_it():
    bomb = gzip.compress(b"\0" * (256 << 20), compresslevel=9)  # 256 MiB of zeros in ~250 KiB
    answers = iter([[sized(bomb, b"Content-Encoding: gzip", b"Content-Type: text/event-stream")],
                    [sized(bomb, b"Content-Encoding: gzip").replace(b"200 OK", b"500 Oops")],
                    [sized(bomb, b"Content-Encoding: gzip", b"Content-Type: application/json")]])
    async with wire_server(lambda request: next(answers)) as srv:
        backend = backend_for(srv.url)
        peaks: list[int] = []
        tracemalloc.start()
        try:
            for expected, match in ((TransientError, "malformed stream: an SSE event over"),  # one endless event
                                    (TransientError, "HTTP 500")):  # the error answer read for its first MiB only
                tracemalloc.reset_peak()
                before = tracemalloc.get_traced_memory()[0]
                with pytest.raises(expected, match=match):
                    await collect(backend)
                peaks.append(tracemalloc.get_traced_memory()[1] - before)  # what this request added at most
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            with pytest.raises(BackendError, match="over 32 MiB"):  # a JSON answer: refused at its cap
                await backend.list_models()
            peaks.append(tracemalloc.get_traced_memory()[1] - before)
        finally:
            tracemalloc.stop()
            await backend.aclose()
        # Never the whole 256 MiB, nor httpx's ~64 MiB per network read: the SSE event cap (16 MiB), the error
        # answer's (1 MiB), the JSON cap (32 MiB held as pieces, then joined), and a decoded piece (1 MiB) or two.
        sse, error, json_answer = peaks
        # (The error answer peaked at 9.3 MiB on some runs: decoded pieces and httpx's buffers, not the body.)
        assert sse < 24 << 20 and error < 16 << 20 and json_answer < 72 << 20, peaks


async def test_a_reply_without_end_stops_at_its_size_cap():
    # Valid deltas without end (a compressed stream of them: tiny on the wire).
    body = gzip.compress(DELTA * 400_000)  # 18 MiB of SSE once inflated
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
    async with wire_server(lambda request: [head + b"Content-Length: %d\r\n\r\n" % len(body) + body]) as srv:
        backend = backend_for(srv.url, limits=ReplyLimits(reply_bytes=4 << 20))
        seen: list[str] = []
        try:
            with pytest.raises(BackendError, match=r"the reply went over 4 MiB \(after decompression\)") as caught:
                async for event in backend.stream(*_turn()):
                    seen.append(event.content)
        finally:
            await backend.aclose()
    assert not isinstance(caught.value, TransientError), "not retried: the same server would send it again"
    assert 0 < len("".join(seen)) <= (4 << 20) // len(DELTA) + 1  # what came before the cap reached the user


@pytest.mark.parametrize("keepalive", [b": keep-alive\n\n", b": OPENROUTER PROCESSING\n\n", b"\n\n\n"])
async def test_keep_alive_comments_do_not_hold_a_turn_past_its_idle_deadline(keepalive):
    async with wire_server(lambda request: forever(chunk(keepalive), 0.05)) as srv:
        async with aclosing(backend_for(srv.url, limits=ReplyLimits(idle_s=1.0))) as backend:
            with pytest.raises(StreamDropError, match="no event for 1 s"):  # the idle deadline: not the server's end
                await asyncio.wait_for(collect(backend), 30)
        await asyncio.wait_for(srv.ended.wait(), 10)  # and its connection was dropped


async def test_anthropic_pings_do_not_hold_a_turn_either():
    ping = b'event: ping\ndata: {"type": "ping"}\n\n'
    async with wire_server(lambda request: forever(chunk(ping), 0.05)) as srv:
        backend = AnthropicBackend(model="m", api_key="k", base_url=srv.url, limits=ReplyLimits(idle_s=1.0))
        try:
            with pytest.raises(StreamDropError, match="no event for 1 s"):
                await asyncio.wait_for(collect(backend), 30)
        finally:
            await backend.aclose()


async def test_a_slow_model_is_not_cut_while_its_deltas_keep_coming():
    # Deltas every 50 ms for 4 s, with comments between them: each delta resets the idle deadline (2.5 s).
    steps: list[Step] = [CHUNKED_HEAD]
    for _ in range(80):
        steps += [chunk(b": keep-alive\n\n" + DELTA), 0.05]
    steps += [chunk(b"data: [DONE]\n\n"), b"0\r\n\r\n"]
    async with wire_server(lambda request: steps) as srv:
        async with aclosing(backend_for(srv.url, limits=ReplyLimits(idle_s=2.5))) as backend:
            assert joined(await collect(backend), "content") == "x" * 80


async def test_a_head_trickled_a_byte_at_a_time_meets_the_head_deadline():
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Slow: " + b"y" * 1000
    steps: list[Step] = []
    for byte in head:
        steps += [bytes([byte]), 0.05]  # every read comes well within the read timeout (20 s)
    async with wire_server(lambda request: steps) as srv:
        backend = backend_for(srv.url, limits=ReplyLimits(head_s=1.0),
                              timeout=httpx.Timeout(connect=5.0, read=20.0, write=5.0, pool=5.0))
        try:
            with pytest.raises(TransientError, match="no response head within 1 s"):  # the head deadline's, no read timeout's
                await asyncio.wait_for(collect(backend), 30)
        finally:
            await backend.aclose()
        await asyncio.wait_for(srv.ended.wait(), 10)


@pytest.mark.parametrize(("where", "expected"), [
    ("a chunk extension of 1 MiB", StreamDropError),
    ("a header of 1 MiB", TransientError),
    ("a header line without end", TransientError),
])
async def test_oversized_framing_is_refused_without_being_held(where, expected):
    huge = b"a" * (1 << 20)
    steps: list[Step] = {
        "a chunk extension of 1 MiB": [CHUNKED_HEAD, chunk(DELTA), b"5;x=" + huge + b"\r\nhello\r\n", 30.0],
        "a header of 1 MiB": [b"HTTP/1.1 200 OK\r\nX-Big: " + huge + b"\r\n\r\n", 30.0],
        "a header line without end": [b"HTTP/1.1 200 OK\r\nX-Endless: ", *[huge] * 8, 30.0],
    }[where]
    async with wire_server(lambda request: steps) as srv:
        backend = backend_for(srv.url)
        tracemalloc.start()
        try:
            with pytest.raises(expected, match="closed mid-answer|hung up or answered in something not"):  # parsed, no timeout
                await asyncio.wait_for(collect(backend), 30)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            await backend.aclose()
        assert peak < 8 << 20, peak  # httpx's parser (h11) holds at most ~100 KiB of an unfinished line


async def test_an_endless_sse_event_is_a_malformed_stream_not_unbounded_memory():
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\ndata: " % (100 << 20)
    steps: list[Step] = [head, *[b"x" * (1 << 20)] * 40, 30.0]
    async with wire_server(lambda request: steps) as srv:
        async with aclosing(backend_for(srv.url)) as backend:
            with pytest.raises(TransientError, match="malformed stream: an SSE event over 16777216 bytes"):
                await asyncio.wait_for(collect(backend), 30)


def test_a_decoded_piece_is_bounded():
    assert MAX_PIECE == 1 << 20
    assert OpenAIBackend(model="m").limits == ReplyLimits(head_s=300.0, idle_s=300.0, reply_bytes=128 << 20)


def _turn():
    from ollie.backend.types import GenerationParams, Message

    return [Message("user", "hi")], [], GenerationParams()


async def test_a_lone_surrogate_a_server_escapes_is_replaced_where_the_stream_is_decoded():
    """JSON's `"\\ud800"` decodes to a str no UTF-8 encoder takes: kept, every later request body (httpx encodes it)
    and every save of the session raised UnicodeEncodeError: one delta made the session unusable."""
    from ollie.backend.types import GenerationParams, Message
    from ollie.sessions.logformat import dumps

    body = (b'data: {"choices":[{"delta":{"content":"a\\ud800b \\uD83D\\uDE00 \\udc00"}}]}\n\n'
            b'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
    async with wire_server(lambda request: [sized(body, b"Content-Type: text/event-stream")]) as srv:
        async with aclosing(backend_for(srv.url)) as backend:
            text = joined(await collect(backend), "content")
    assert text == "a\ufffdb \U0001f600 \ufffd"  # a pair stays the character it escapes
    history = [Message("user", "hi"), Message("assistant", text)]
    assert dumps({"t": "m", "m": history[1].to_dict()})
    assert httpx.Request("POST", "http://m/v1", json=OpenAIBackend(model="m").build_request(
        history, [], GenerationParams()))


def test_an_ndjson_object_with_a_lone_surrogate_gets_the_replacement_character():
    """But a high half ending a string, or a low one starting it, is kept: the other half may be the next delta's
    (ollie.backend.surrogates joins them, tests/backend/test_split_surrogates.py)."""
    from ollie.backend.framing import NDJSONDecoder

    assert NDJSONDecoder().feed(b'{"message":{"content":"x\\udfff","k":["\\ud800y","\\"\\udc00","\\ud800"]}}\n') == [
        {"message": {"content": "x\ufffd", "k": ["\ufffdy", '"\ufffd', "\ud800"]}}]


async def test_a_proxys_refusal_is_quoted_escaped(monkeypatch):
    # Red team 54: a proxy's refusal of the backend's CONNECT gave its status line's words (h11 lets any byte but NUL
    # and white space through) to the turn's error as they came: an OSC 52 that sets the clipboard went to every
    # client of the daemon with the error (the terminal strips it; an ACP client's own terminal view may not).
    refusal = b"HTTP/1.1 407 \x1b]52;c;cm0gLXJmIH4=\x07Login\r\nContent-Length: 0\r\n\r\n"
    async with wire_server(lambda request: [refusal]) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        backend = backend_for("https://backend.test")
        try:
            with pytest.raises(TransientError) as raised:
                await collect(backend)
        finally:
            await backend.aclose()
    assert "\x1b" not in str(raised.value) and "407 \\x1b]52;c;cm0gLXJmIH4=\\x07Login" in str(raised.value), raised.value
