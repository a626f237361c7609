"""The HTTP/1.1 transport (llhttp parsing) over real sockets: bodies, keep-alive, hostile and broken answers."""

from __future__ import annotations

import asyncio
import gzip
import time

import pytest

from ollie.backend import http_client
from ollie.backend.errors import BackendError, BackendUnreachableError, StreamDropError, TransientError
from ollie.backend.http1 import MAX_HEAD_BYTES, HTTP1Transport
from ollie.backend.registry import make_backend
from ollie.backend.types import GenerationParams, Message
from ollie.testing import Reply

from .conftest import collect, joined
from .rawhttp import chunked, wire_server

WORDS = (b"one ", b"two ", b"three")
SSE = b"".join(b'data: {"choices":[{"delta":{"content":"%s"}}]}\n\n' % w for w in WORDS) + b"data: [DONE]\n\n"
CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def sized(body: bytes, *extra: bytes) -> bytes:
    """A 200 answer with a Content-Length body (and `extra` header lines)."""
    return b"HTTP/1.1 200 OK\r\n%sContent-Length: %d\r\n\r\n%s" % (b"".join(e + b"\r\n" for e in extra), len(body),
                                                                      body)


def client(url: str, read: float = 10.0) -> http_client.Client:
    """A client sending through a transport of its own."""
    return http_client.Client(base_url=url, transport=HTTP1Transport(),
                              timeout=http_client.Timeout(connect=5.0, read=read, write=5.0, pool=5.0))


def backend_for(url: str):
    """An OpenAI backend on this loop's shared pool, pointed at `url`."""
    return make_backend(environ={"OLLIE_BACKEND": "openai", "OLLIE_MODEL": "m", "OLLIE_OPENAI_URL": f"{url}/v1",
                                 "OLLIE_OPENAI_KEY": "sk-test"})


async def test_the_shared_pool_streams_replies_intact_in_tiny_and_huge_chunks(connect):
    text = "".join(f"word{i} é€ " for i in range(400))  # multi-byte characters split across chunks
    huge = "x" * 300_000
    srv, backend = connect("openai")
    srv.script(Reply.text(text, chunk_size=1), Reply.text(huge, chunk_size=len(huge)))
    assert isinstance(backend._client._transport, HTTP1Transport)
    assert joined(await collect(backend), "content") == text
    assert joined(await collect(backend), "content") == huge


async def test_content_length_one_byte_chunks_and_gzip_bodies_arrive_whole():
    payload = bytes(range(256)) * 40
    answers = iter([
        [sized(payload)],
        [CHUNKED_HEAD + chunked(*(payload[i:i + 1] for i in range(2000)))],
        [sized(gzip.compress(payload), b"Content-Encoding: gzip")],
    ])
    async with wire_server(lambda request: next(answers)) as srv, client(srv.url) as http:
        assert (await http.get("/a")).content == payload
        assert (await http.get("/b")).content == payload[:2000]
        zipped = await http.get("/c")
        assert zipped.content == payload  # the client decodes above the transport
        assert srv.connections == 1  # each read to its end: one kept-alive connection for all three


async def test_keep_alive_only_for_responses_read_to_the_end_that_the_server_lets_live():
    long_body = [CHUNKED_HEAD, b"5\r\nfirst\r\n", 1.0, b"4\r\nlast\r\n0\r\n\r\n"]
    answers = iter([[sized(b"a")], [sized(b"b")], [sized(b"c", b"Connection: close")], [sized(b"d")],
                    long_body, [sized(b"e")]])
    async with wire_server(lambda request: next(answers)) as srv:
        transport = HTTP1Transport()
        async with http_client.Client(base_url=srv.url, transport=transport) as http:
            assert [(await http.get("/")).text for _ in range(2)] == ["a", "b"]
            assert (srv.connections, transport.connections()) == (1, 1)
            assert (await http.get("/")).text == "c"  # Connection: close
            assert transport.connections() == 0
            assert (await http.get("/")).text == "d"
            assert srv.connections == 2
            async with http.stream("GET", "/") as response:  # closed before its end
                async for chunk in response.aiter_raw():
                    assert chunk == b"first"
                    break
            await asyncio.wait_for(srv.ended.wait(), 5)  # the client ended that connection
            assert transport.connections() == 0
            assert (await http.get("/")).text == "e"
            assert srv.connections == 3


async def test_a_server_closing_mid_body_is_a_stream_drop():
    answers = iter([[CHUNKED_HEAD, b"%x\r\n%s\r\n" % (len(SSE) // 2, SSE[:len(SSE) // 2]), b"40\r\ndata: {", None],
                    [sized(b"0123456789")[:-4], None]])
    async with wire_server(lambda request: next(answers)) as srv:
        backend = backend_for(srv.url)
        try:
            with pytest.raises(StreamDropError):
                await collect(backend)
        finally:
            await backend.aclose()
        async with client(srv.url) as http:
            with pytest.raises(http_client.RemoteProtocolError, match="before the body ended"):
                await http.get("/short")


BAD_ANSWERS = {
    "status not a number": b"HTTP/1.1 abc OK\r\n\r\n",
    "not HTTP": b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
    "header without a colon": b"HTTP/1.1 200 OK\r\nContent-Length 3\r\n\r\nabc",
    "too many headers": b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(200)) + b"\r\n",
    "headers too big": b"HTTP/1.1 200 OK\r\n" + b"X-Big: %s\r\n\r\n" % (b"y" * (MAX_HEAD_BYTES + 10)),
    "a header line without end": b"HTTP/1.1 200 OK\r\nX-Endless: " + b"y" * (MAX_HEAD_BYTES * 4),
    "bad chunk size": CHUNKED_HEAD + b"zz\r\nabc\r\n",
    "two content lengths": b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
}


@pytest.mark.parametrize("name", list(BAD_ANSWERS))
async def test_malformed_answers_are_protocol_errors_at_once(name):
    # Each answer is followed by a long pause: the error must come from parsing, not from the read timeout.
    async with wire_server(lambda request: [BAD_ANSWERS[name], 30.0]) as srv, client(srv.url, read=20) as http:
        started = time.monotonic()
        with pytest.raises(http_client.RemoteProtocolError):
            await http.get("/")
        assert time.monotonic() - started < 5
        await asyncio.wait_for(srv.ended.wait(), 5)  # and the connection is dropped


async def test_malformed_answer_before_any_byte_of_reply_is_transient_for_a_backend():
    async with wire_server(lambda request: [BAD_ANSWERS["not HTTP"], None]) as srv:
        backend = backend_for(srv.url)
        try:
            with pytest.raises(TransientError, match="malformed response"):
                await collect(backend)
        finally:
            await backend.aclose()


async def test_a_refused_port_is_unreachable_with_its_hint():
    async with wire_server(lambda request: []) as srv:
        url = srv.url  # the port is free again once the server is gone
    async with client(url) as http:
        with pytest.raises(http_client.ConnectError):
            await http.get("/")
    backend = backend_for(url)
    try:
        with pytest.raises(BackendUnreachableError) as caught:
            await collect(backend)
    finally:
        await backend.aclose()
    assert "OLLIE_OPENAI_URL" in caught.value.hint


async def test_a_silent_server_hits_the_read_timeout_before_and_during_the_body():
    answers = iter([[30.0], [CHUNKED_HEAD, b"3\r\nabc\r\n", 30.0]])
    async with wire_server(lambda request: next(answers)) as srv, client(srv.url, read=0.3) as http:
        with pytest.raises(http_client.ReadTimeout):
            await http.get("/")
        await asyncio.wait_for(srv.ended.wait(), 5)  # a timed-out request's connection is dropped
        srv.ended.clear()
        async with http.stream("GET", "/") as response:
            chunks = []
            with pytest.raises(http_client.ReadTimeout):
                async for chunk in response.aiter_raw():
                    chunks.append(chunk)
        assert chunks == [b"abc"]
        await asyncio.wait_for(srv.ended.wait(), 5)
        assert srv.client_closed == 2


async def test_an_interrupted_turn_closes_its_connection_and_leaves_no_task():
    frames = [b'data: {"choices":[{"delta":{"content":"w%d "}}]}\n\n' % i for i in range(200)]
    steps: list[bytes | float | None] = [CHUNKED_HEAD]
    for frame in frames:
        steps += [b"%x\r\n%s\r\n" % (len(frame), frame), 0.02]
    async with wire_server(lambda request: steps) as srv:
        backend = backend_for(srv.url)
        seen: list[str] = []

        async def turn() -> None:
            async for event in backend.stream([Message("user", "go")], [], GenerationParams()):
                seen.append(event.content)

        task = asyncio.create_task(turn())
        while len(seen) < 3:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(srv.ended.wait(), 5)  # the server saw the connection end mid-reply
        transport = backend._client._transport
        assert isinstance(transport, HTTP1Transport) and transport.connections() == 0
        leftover = [t for t in asyncio.all_tasks() if "pump" in repr(t.get_coro())]
        assert leftover == []
        await backend.aclose()


async def test_request_headers_cannot_be_split():
    async with wire_server(lambda request: [sized(b"ok")]) as srv, client(srv.url) as http:
        with pytest.raises(http_client.LocalProtocolError):
            await http.get("/", headers={"X-Key": "a\nInjected: yes"})
        assert srv.requests == []


async def test_json_nested_too_deep_is_a_malformed_stream_not_a_crash():
    deep = b"[" * 200_000 + b"]" * 200_000
    answers = iter([[sized(b"data: " + deep + b"\n\n", b"Content-Type: text/event-stream")],
                    [sized(b'{"error": ' + deep + b"}", b"Content-Type: application/json").replace(b"200 OK", b"500 Oops")]])
    async with wire_server(lambda request: next(answers)) as srv:
        backend = backend_for(srv.url)
        try:
            with pytest.raises(TransientError, match="malformed stream"):
                await collect(backend)
            with pytest.raises(TransientError):  # a 500 whose body cannot be decoded
                await collect(backend)
        finally:
            await backend.aclose()


async def test_bytes_after_a_response_end_its_connection_not_the_response():
    answers = iter([[sized(b"first") + b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nsneak"], [sized(b"second")]])
    async with wire_server(lambda request: next(answers)) as srv:
        transport = HTTP1Transport()
        async with http_client.Client(base_url=srv.url, transport=transport) as http:
            assert (await http.get("/")).text == "first"
            assert transport.connections() == 0  # not kept for reuse: its next "response" was never asked for
            assert (await http.get("/")).text == "second"
        assert srv.connections == 2


async def test_a_streamed_request_body_goes_chunked_and_a_full_pool_times_out():
    async def parts():
        for part in (b"first,", b"", b"second"):
            yield part

    async with wire_server(lambda request: [0.5, sized(b"ok")]) as srv:
        transport = HTTP1Transport(max_connections=1)
        timeout = http_client.Timeout(5.0, 5.0, 5.0, pool=0.1)
        async with http_client.Client(base_url=srv.url, transport=transport, timeout=timeout) as http:
            slow = asyncio.create_task(http.post("/", content=parts()))
            await asyncio.sleep(0.1)
            with pytest.raises(http_client.PoolTimeout):  # the one connection slot is taken by the slow request
                await http.get("/")
            assert (await slow).text == "ok"
    head, _, body = srv.requests[0].partition(b"\r\n\r\n")
    assert b"\r\nTransfer-Encoding: chunked" in head and body == b"first,second"


async def test_text_read_together_with_an_error_frame_still_arrives_before_the_error():
    error = b'data: {"error": {"message": "Overloaded", "type": "overloaded_error", "code": 529}}\n\n'
    body = SSE.split(b"data: [DONE]")[0].replace(b"three", b"") + error  # one read: two deltas, then the error
    async with wire_server(lambda request: [sized(body, b"Content-Type: text/event-stream")]) as srv:
        backend = backend_for(srv.url)
        seen: list[str] = []
        try:
            with pytest.raises(BackendError, match="Overloaded"):
                async for event in backend.stream([Message("user", "hi")], [], GenerationParams()):
                    seen.append(event.content)
        finally:
            await backend.aclose()
    assert "".join(seen) == "one two "
