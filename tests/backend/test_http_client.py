"""The backends' own HTTP client over real sockets: what it sends (as httpx did), decoding, bounds, proxies, errors."""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import time
import tracemalloc
import zlib

import httpx
import pytest

from ollie.backend import http_client
from ollie.backend.errors import BackendError, BackendUnreachableError, StreamDropError, TransientError
from ollie.backend.http1 import HTTP1Transport
from ollie.backend.openai import OpenAIBackend
from ollie.backend.stream import DEFAULT_TIMEOUT, MAX_ERROR_BODY

from .conftest import collect, joined
from .rawhttp import wire_server
from .test_http1 import SSE, backend_for, sized


def client(url: str, **options) -> http_client.Client:
    """A client on a transport of its own, 5 s for every timeout."""
    return http_client.Client(base_url=url, transport=HTTP1Transport(), timeout=5.0, **options)


def head_of(raw: bytes) -> dict[str, str]:
    """A raw request's header fields (lower-case names)."""
    lines = raw.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")[1:]
    return {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}


async def test_a_request_goes_out_as_httpx_sent_it():
    body = {"model": "m", "messages": [{"role": "user", "content": "é€ \u2028 \"quoted\""}], "n": 1.5}
    async with wire_server(lambda request: [sized(b"{}")]) as srv:
        async with client(f"{srv.url}/v1/", headers={"Authorization": "Bearer a", "X-Title": "t"}) as http:
            await http.post("/chat/completions", json=body, headers={"x-title": "over"})
    line, _, _ = srv.requests[0].partition(b"\r\n")
    assert line == b"POST /v1/chat/completions HTTP/1.1"  # the base URL's path and the request's, one slash
    fields = head_of(srv.requests[0])
    assert fields["host"] == srv.url.removeprefix("http://")
    assert fields["authorization"] == "Bearer a"
    assert fields["x-title"] == "over"  # a request's header replaces the default of its name, in any case
    assert list(head_of(srv.requests[0])).count("x-title") == 1
    assert fields["accept-encoding"] == "gzip, deflate"  # only what the client decodes
    assert fields["content-type"] == "application/json"
    # The body byte for byte as httpx encoded JSON (a server, or a prompt cache, sees no change).
    reference = httpx.Request("POST", "http://x/", json=body)
    assert srv.requests[0].partition(b"\r\n\r\n")[2] == reference.content
    assert fields["content-length"] == str(len(reference.content))


async def test_user_and_password_in_the_url_are_basic_auth_as_httpx_sent_them():
    async with wire_server(lambda request: [sized(b"{}")]) as srv:
        url = srv.url.replace("http://", "http://me:p%40ss@")
        async with client(url, headers={"Authorization": "Bearer a"}) as http:
            await http.get("/")
    assert head_of(srv.requests[0])["authorization"] == "Basic " + base64.b64encode(b"me:p@ss").decode()
    assert head_of(srv.requests[0])["host"] == srv.url.removeprefix("http://")


def test_the_default_timeouts_are_httpx_s_of_before():
    assert DEFAULT_TIMEOUT == http_client.Timeout(connect=15.0, read=300.0, write=60.0, pool=15.0)
    assert http_client.Timeout.of(3.0) == http_client.Timeout(3.0, 3.0, 3.0, 3.0)


@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw deflate", "deflate, gzip"])
async def test_gzip_and_deflate_sse_streams_reach_the_backend_decoded(coding):
    encode = {"gzip": gzip.compress, "deflate": zlib.compress,
              "raw deflate": lambda data: zlib.compress(data, wbits=-zlib.MAX_WBITS),
              "deflate, gzip": lambda data: gzip.compress(zlib.compress(data))}[coding]
    header = coding.replace("raw ", "").encode()
    async with wire_server(lambda request: [sized(encode(SSE), b"Content-Encoding: " + header,
                                                  b"Content-Type: text/event-stream")]) as srv:
        backend = backend_for(srv.url)
        try:
            assert joined(await collect(backend), "content") == "one two three"
        finally:
            await backend.aclose()
    assert srv.requests[0].startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert head_of(srv.requests[0])["authorization"] == "Bearer sk-test"


async def test_a_coding_the_client_does_not_know_passes_through_as_httpx_did():
    async with wire_server(lambda request: [sized(b"plain", b"Content-Encoding: br")]) as srv:
        async with client(srv.url) as http:
            assert (await http.get("/")).content == b"plain"


async def test_a_body_that_does_not_decode_is_a_clear_error_mid_stream_and_before_it():
    broken = gzip.compress(SSE)[:10] + b"\xff" * 64  # a gzip header, then a deflate block of a reserved type
    answers = iter([[sized(broken, b"Content-Encoding: gzip", b"Content-Type: text/event-stream")],
                    [sized(broken, b"Content-Encoding: gzip").replace(b"200 OK", b"500 Oops")]])
    async with wire_server(lambda request: next(answers)) as srv:
        backend = backend_for(srv.url)
        try:
            with pytest.raises(StreamDropError, match="DecodingError"):
                await collect(backend)
            with pytest.raises(TransientError, match="request failed: DecodingError"):  # the error body's
                await collect(backend)
        finally:
            await backend.aclose()


async def test_a_gzip_bomb_is_decoded_piece_by_bounded_piece_and_the_caps_stop_it():
    bomb = gzip.compress(b"\0" * (256 << 20), compresslevel=9)  # 256 MiB of zeros in ~250 KiB
    answers = iter([[sized(bomb, b"Content-Encoding: gzip").replace(b"200 OK", b"500 Oops")],
                    [sized(bomb, b"Content-Encoding: gzip", b"Content-Type: application/json")],
                    [sized(bomb, b"Content-Encoding: gzip")]])
    async with wire_server(lambda request: next(answers)) as srv:
        backend = OpenAIBackend(model="m", api_key="k", base_url=f"{srv.url}/v1")
        tracemalloc.start()
        started = time.monotonic()
        try:
            with pytest.raises(TransientError, match="HTTP 500"):  # the error body read for its first MiB only
                await collect(backend)
            with pytest.raises(BackendError, match="over 32 MiB"):  # a JSON answer: refused at its cap
                await backend.list_models()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            await backend.aclose()
        assert peak < 80 << 20, peak  # never the whole 256 MiB (the JSON cap itself holds up to 32, twice)
        assert time.monotonic() - started < 20
        async with client(srv.url) as http, http.stream("GET", "/") as response:
            pieces = [len(piece) async for piece in response.aiter_bytes()]
        assert max(pieces) <= http_client.MAX_DECODED_PIECE and sum(pieces) == 256 << 20
    assert MAX_ERROR_BODY == 1 << 20


@pytest.mark.parametrize(("url", "expected"), [
    ("http://127.0.0.1:99999/v1", "cannot connect"),  # a port out of range: InvalidURL
    ("http://exa mple.com/v1", "cannot connect"),  # a space in the host
    ("http://xn--a.invalid\u00e9/v1", "cannot connect"),  # a name IDNA refuses
])
async def test_a_url_that_cannot_be_sent_to_is_unreachable_not_a_crash(url, expected):
    backend = OpenAIBackend(model="m", api_key="k", base_url=url)
    try:
        with pytest.raises(BackendUnreachableError, match=expected):
            await collect(backend)
    finally:
        await backend.aclose()


async def test_a_header_that_is_not_ascii_is_a_clear_request_error():
    async with wire_server(lambda request: [sized(b"{}")]) as srv:
        backend = OpenAIBackend(model="m", api_key="sk-clé", base_url=f"{srv.url}/v1")
        try:
            with pytest.raises(TransientError, match="not ASCII"):
                await collect(backend)
        finally:
            await backend.aclose()
        assert srv.requests == []


async def test_a_silent_server_times_out_per_phase_never_hangs():
    async with wire_server(lambda request: [30.0]) as srv:
        backend = OpenAIBackend(model="m", api_key="k", base_url=f"{srv.url}/v1",
                                timeout=http_client.Timeout(connect=5.0, read=0.3, write=5.0, pool=5.0))
        started = time.monotonic()
        try:
            with pytest.raises(TransientError, match="ReadTimeout"):
                await collect(backend)
        finally:
            await backend.aclose()
        assert time.monotonic() - started < 3


# --- through a proxy (httpx's transports) -----------------------------------------------------------------


@pytest.fixture
def no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No proxy variable of this machine's: each test sets its own."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


async def test_a_proxy_that_refuses_is_unreachable_with_the_same_text(no_proxy_environment):
    async with wire_server(lambda request: []) as gone:
        url = gone.url  # free again once the server is gone
    no_proxy_environment.setenv("HTTP_PROXY", url)
    backend = backend_for("http://llm.invalid")
    try:
        with pytest.raises(BackendUnreachableError, match=r"openai: cannot connect \(All connection attempts failed\)"):
            await collect(backend)
    finally:
        await backend.aclose()


async def test_a_proxy_that_breaks_mid_stream_is_a_stream_drop(no_proxy_environment):
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 5000\r\n\r\n"
    async with wire_server(lambda request: [head + SSE[:40], None]) as proxy:
        no_proxy_environment.setenv("HTTPS_PROXY", proxy.url)
        no_proxy_environment.setenv("HTTP_PROXY", proxy.url)
        backend = backend_for("http://llm.invalid")
        try:
            with pytest.raises(StreamDropError, match="RemoteProtocolError"):
                await collect(backend)
        finally:
            await backend.aclose()
    assert proxy.requests[0].startswith(b"POST http://llm.invalid/v1/chat/completions HTTP/1.1\r\n")
    assert json.loads(proxy.requests[0].partition(b"\r\n\r\n")[2])["model"] == "m"


async def test_a_gzip_answer_through_a_proxy_is_decoded_too(no_proxy_environment):
    async with wire_server(lambda request: [sized(gzip.compress(SSE), b"Content-Encoding: gzip",
                                                  b"Content-Type: text/event-stream")]) as proxy:
        no_proxy_environment.setenv("ALL_PROXY", proxy.url)
        backend = backend_for("http://llm.invalid")
        try:
            assert joined(await collect(backend), "content") == "one two three"
        finally:
            await backend.aclose()
    assert head_of(proxy.requests[0])["accept-encoding"] == "gzip, deflate"


async def test_no_proxy_variable_means_the_proxy_check_costs_no_import(no_proxy_environment):
    assert not http_client.proxies_may_apply()
    no_proxy_environment.setenv("NO_PROXY", "*")  # alone it routes nothing through a proxy
    assert not http_client.proxies_may_apply()
    no_proxy_environment.setenv("https_proxy", "http://proxy.example:3128")
    assert http_client.proxies_may_apply()
    await asyncio.sleep(0)
