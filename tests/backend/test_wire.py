"""The backends over real sockets (httpx underneath): what arrives when, decoding, TLS, proxies, and how each
failure is classified (a configuration error at once, a hiccup retried)."""

from __future__ import annotations

import asyncio
import gzip
import json
import ssl
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ollie.backend import stream
from ollie.backend.errors import (
    BackendConfigError,
    BackendError,
    BackendUnreachableError,
    StreamDropError,
    TransientError,
)
from ollie.backend.openai import OpenAIBackend
from ollie.backend.registry import make_backend
from ollie.backend.types import GenerationParams, Message
from ollie.testing import Reply
from ollie.testing.wire import FORMATS, render_stream

from .conftest import cancel_mid_reply, collect, joined
from .rawhttp import CHUNKED_HEAD, SSE, Step, backend_for, sized, wire_server

HEADS = {"openai": CHUNKED_HEAD, "anthropic": CHUNKED_HEAD,
         "ollama": CHUNKED_HEAD.replace(b"text/event-stream", b"application/x-ndjson")}


async def fails(backend: Any, *expected: tuple[type[Exception], str]) -> BaseException:
    """Collect from `backend` once per `expected` (error, match: "" any message), each raising it; closed after."""
    caught: BaseException | None = None
    try:
        for error, match in expected:
            with pytest.raises(error, match=match or None) as raised:
                await collect(backend)
            caught = raised.value
    finally:
        await backend.aclose()
    assert caught is not None
    return caught


def env_for(fmt: str, url: str) -> dict[str, str]:
    """OLLIE_* variables pointing a backend of `fmt` at `url`."""
    return {"OLLIE_BACKEND": fmt, "OLLIE_MODEL": "m", "OLLIE_OPENAI_URL": f"{url}/v1", "OLLIE_OPENAI_KEY": "k",
            "OLLIE_ANTHROPIC_URL": url, "OLLIE_ANTHROPIC_KEY": "k", "OLLIE_OLLAMA_URL": url}


@pytest.mark.parametrize("fmt", FORMATS)
async def test_a_delta_reaches_the_caller_while_the_server_still_holds_the_rest(fmt):
    frames = render_stream(fmt, Reply.text("abcde", chunk_size=1), {}, model="m").frames
    first = next(i for i, frame in enumerate(frames) if b'"a"' in frame)
    steps: list[Step] = [HEADS[fmt], *(b"%x\r\n%s\r\n" % (len(f), f) for f in frames[:first + 1]), 30.0]
    async with wire_server(lambda request: steps) as srv:
        backend = make_backend(environ=env_for(fmt, srv.url))
        events = backend.stream([Message("user", "hi")], [], GenerationParams())
        try:
            event = await asyncio.wait_for(anext(events), 20)
            while not event.content:
                event = await asyncio.wait_for(anext(events), 20)
            assert event.content == "a"  # the server sends nothing more for 30 s: it came alone, at once
        finally:
            await events.aclose()
            await backend.aclose()
        await asyncio.wait_for(srv.ended.wait(), 10)  # closing the stream ended its connection


async def test_a_finished_reply_leaves_its_connection_for_the_next_request():
    body = b"".join(b"%x\r\n%s\r\n" % (len(frame), frame) for frame in SSE.split(b"\n\n")[:-1]
                    for frame in [frame + b"\n\n"]) + b"0\r\n\r\n"
    async with wire_server(lambda request: [CHUNKED_HEAD, body]) as srv:
        backend = backend_for(srv.url)
        try:
            for _ in range(3):
                assert joined(await collect(backend), "content") == "one two three"
        finally:
            await backend.aclose()
    assert srv.connections == 1  # one connection for the three turns' requests (one TLS handshake on an API)


@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw deflate", "deflate, gzip", "br (unknown: as sent)"])
async def test_compressed_streams_are_decoded_and_an_unknown_coding_passes_as_sent(coding):
    encode = {"gzip": gzip.compress, "deflate": zlib.compress,
              "raw deflate": lambda data: zlib.compress(data, wbits=-zlib.MAX_WBITS),
              "deflate, gzip": lambda data: gzip.compress(zlib.compress(data)),
              "br (unknown: as sent)": lambda data: data}[coding]
    header = coding.replace("raw ", "").split(" (")[0].encode()
    async with wire_server(lambda request: [sized(encode(SSE), b"Content-Encoding: " + header,
                                                  b"Content-Type: text/event-stream")]) as srv:
        backend = backend_for(srv.url)
        try:
            assert joined(await collect(backend), "content") == "one two three"
        finally:
            await backend.aclose()
    head = srv.requests[0].partition(b"\r\n\r\n")[0].lower()
    assert b"\r\naccept-encoding: gzip, deflate\r\n" in head  # only what the backends decode is asked for
    assert b"\r\nauthorization: bearer sk-test\r\n" in head


async def test_a_body_that_does_not_decode_is_a_clear_error_mid_stream_and_before_it():
    broken = gzip.compress(SSE)[:10] + b"\xff" * 64  # a gzip header, then a deflate block of a reserved type
    answers = iter([[sized(broken, b"Content-Encoding: gzip", b"Content-Type: text/event-stream")],
                    [sized(broken, b"Content-Encoding: gzip").replace(b"200 OK", b"500 Oops")]])
    async with wire_server(lambda request: next(answers)) as srv:
        backend = backend_for(srv.url)
        # The second: the error answer's body does not decode either.
        # In words, not httpx's class (`DecodingError(...)` was the user's retry line).
        await fails(backend, (StreamDropError, ": the answer's body did not decode$"),
                    (TransientError, ": its answer's body did not decode$"))


async def test_a_server_that_breaks_off_mid_body_is_a_stream_drop_and_one_that_speaks_no_http_is_transient():
    answers = iter([[CHUNKED_HEAD, b"%x\r\n%s\r\n" % (len(SSE) // 2, SSE[:len(SSE) // 2]), b"40\r\ndata: {", None],
                    [b"SSH-2.0-OpenSSH_9.6\r\n\r\n", None]])
    async with wire_server(lambda request: next(answers)) as srv:
        backend = backend_for(srv.url)
        # `stream broke: RemoteProtocolError('peer closed connection without sending complete message body ...')`
        await fails(backend, (StreamDropError, ": the connection closed mid-answer$"),
                    (TransientError, ": the server hung up or answered in something not HTTP$"))


@pytest.mark.parametrize(("url", "expected"), [
    ("http://127.0.0.1:99999", "OLLIE_OPENAI_URL='http://127.0.0.1:99999/v1' has no valid port"),
    ("http://xn--a.invalid\u00e9", "OLLIE_OPENAI_URL='http://xn--a.invalid\u00e9/v1' is not a valid URL"),
])
def test_a_url_that_cannot_be_sent_to_is_a_configuration_error_naming_the_variable(url, expected):
    with pytest.raises(BackendConfigError, match=expected.replace("(", r"\(").replace("?", r"\?")):
        make_backend(environ=env_for("openai", url))


@pytest.mark.parametrize("url", ["http://bob:s3cret@127.0.0.1:99999", "http://bob:s3/cret@127.0.0.1:8080",
                                 "bob:s3cret@127.0.0.1:8080", "http://bob:s3cret@xn--a.invalid\u00e9"])
def test_a_url_said_to_be_wrong_never_shows_its_password(url):
    # The message quoted the URL as written: its user:password (a port out of range, a password's unencoded `/`
    # read as the path, no scheme) in the notification, the log, a shared screen.
    with pytest.raises(BackendConfigError) as raised:
        make_backend(environ=env_for("openai", url))
    assert "s3" not in str(raised.value) and "OLLIE_OPENAI_URL='" in str(raised.value), raised.value


async def test_an_unknown_host_is_unreachable_at_once_not_retried():
    backend = make_backend(environ=env_for("openai", "http://stra\u00dfe.invalid"))
    caught = await fails(backend, (BackendUnreachableError, "cannot connect"))
    assert not isinstance(caught, TransientError)
    assert isinstance(caught, BackendUnreachableError) and "OLLIE_OPENAI_URL" in caught.hint


async def test_a_key_that_is_not_ascii_is_named_before_anything_is_sent():
    with pytest.raises(BackendConfigError, match="OLLIE_OPENAI_KEY.*not ASCII"):
        make_backend(environ={**env_for("openai", "http://127.0.0.1:9"), "OLLIE_OPENAI_KEY": "sk-cl\u00e9"})


async def test_a_key_that_would_split_the_request_is_refused_and_nothing_is_sent():
    async with wire_server(lambda request: [sized(b"{}")]) as srv:
        backend = OpenAIBackend(model="m", base_url=f"{srv.url}/v1", api_key="sk\r\nX-Injected: yes")
        assert "X-Injected" not in str(await fails(backend, (TransientError, "a header is no valid HTTP")))
        assert srv.requests == []


async def test_a_silent_server_meets_the_read_timeout_and_the_turn_can_retry():
    async with wire_server(lambda request: [30.0]) as srv:
        backend = backend_for(srv.url, timeout=httpx.Timeout(connect=5.0, read=0.3, write=5.0, pool=5.0))
        await fails(backend, (TransientError, "no answer within the read timeout"))  # not the server's 30 s end


async def test_an_interrupted_turn_ends_its_connection_and_leaves_no_task():
    frames = [b'data: {"choices":[{"delta":{"content":"w%d "}}]}\n\n' % i for i in range(200)]
    steps: list[Step] = [CHUNKED_HEAD]
    for frame in frames:
        steps += [b"%x\r\n%s\r\n" % (len(frame), frame), 0.05]
    async with wire_server(lambda request: steps) as srv:
        backend = backend_for(srv.url)
        await cancel_mid_reply(backend, 20)
        await asyncio.wait_for(srv.ended.wait(), 10)  # the server saw the connection end mid-reply
        assert [t for t in asyncio.all_tasks() if "pump" in repr(t.get_coro())] == []
        await backend.aclose()


async def test_json_nested_too_deep_is_a_malformed_stream_not_a_crash():
    deep = b"[" * 200_000 + b"]" * 200_000
    answers = iter([[sized(b"data: " + deep + b"\n\n", b"Content-Type: text/event-stream")],
                    [sized(b'{"error": ' + deep + b"}").replace(b"200 OK", b"500 Oops")]])
    async with wire_server(lambda request: next(answers)) as srv:
        backend = backend_for(srv.url)
        # The second: a 500 whose body cannot be decoded.
        await fails(backend, (TransientError, "malformed stream"), (TransientError, ""))


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


# --- TLS ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (and its key), made by the openssl CLI."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


@pytest.fixture
def fresh_tls_context(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """The process's TLS context built anew for this test (it reads SSL_CERT_FILE) and forgotten after it."""
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    stream.tls_context.cache_clear()
    yield monkeypatch
    stream.tls_context.cache_clear()


def serving(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    """A server's TLS context presenting `certificate`."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    return context


async def test_a_certificate_nobody_trusts_is_unreachable_and_gets_no_byte_of_the_request(certificate,
                                                                                        fresh_tls_context):
    async with wire_server(lambda request: [sized(SSE)], tls=serving(certificate)) as srv:
        backend = backend_for(srv.url)
        await fails(backend, (BackendUnreachableError, "CERTIFICATE_VERIFY_FAILED"))
    assert srv.requests == []


async def test_a_certificate_trusted_through_ssl_cert_file_is_accepted(certificate, fresh_tls_context):
    fresh_tls_context.setenv("SSL_CERT_FILE", str(certificate[0]))
    async with wire_server(lambda request: [sized(SSE, b"Content-Type: text/event-stream")],
                           tls=serving(certificate)) as srv:
        backend = backend_for(srv.url)
        try:
            assert srv.url.startswith("https://")
            assert joined(await collect(backend), "content") == "one two three"
            assert joined(await collect(backend), "content") == "one two three"
        finally:
            await backend.aclose()
    assert srv.connections == 1  # kept alive between the two requests


# --- proxies from the environment ------------------------------------------------------------------------


@pytest.fixture
def no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No proxy variable of this machine's: each test sets its own (before it builds its backend)."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


async def test_a_proxy_from_the_environment_carries_the_request_and_no_proxy_is_honoured(no_proxy_environment,
                                                                                        scripted_llm):
    async with wire_server(lambda request: [sized(gzip.compress(SSE), b"Content-Encoding: gzip",
                                                  b"Content-Type: text/event-stream")]) as proxy:
        no_proxy_environment.setenv("HTTP_PROXY", proxy.url)
        no_proxy_environment.setenv("NO_PROXY", "127.0.0.1")
        backend = backend_for("http://llm.invalid")  # a name that resolves nowhere: only the proxy reaches it
        try:
            assert joined(await collect(backend), "content") == "one two three"
        finally:
            await backend.aclose()
        # A proxy takes the absolute URL in the request line.
        assert proxy.requests[0].startswith(b"POST http://llm.invalid/v1/chat/completions HTTP/1.1\r\n")
        assert json.loads(proxy.requests[0].partition(b"\r\n\r\n")[2])["model"] == "m"
        srv = scripted_llm("openai")  # on 127.0.0.1: NO_PROXY, reached directly
        srv.script(Reply.text("direct"))
        direct = make_backend(environ=srv.env())
        try:
            assert joined(await collect(direct), "content") == "direct"
        finally:
            await direct.aclose()
        assert len(proxy.requests) == 1


async def test_a_proxy_that_refuses_is_unreachable_and_one_that_breaks_mid_stream_is_a_drop(no_proxy_environment):
    async with wire_server(lambda request: []) as gone:
        refused = gone.url  # free again once the server is gone
    no_proxy_environment.setenv("ALL_PROXY", refused)
    backend = backend_for("http://llm.invalid")
    await fails(backend, (BackendUnreachableError, "cannot connect"))
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 5000\r\n\r\n"
    async with wire_server(lambda request: [head + SSE[:40], None]) as proxy:
        no_proxy_environment.setenv("ALL_PROXY", proxy.url)
        backend = backend_for("http://llm.invalid")
        await fails(backend, (StreamDropError, ": the connection closed mid-answer$"))


async def test_backends_after_the_first_share_its_tls_context(fresh_tls_context):
    def rss_kib() -> int:
        with open("/proc/self/status", encoding="ascii") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))

    first = backend_for("https://api.example.test")
    try:
        before = rss_kib()
        more = [backend_for("https://api.example.test") for _ in range(10)]
        added = rss_kib() - before
        for backend in more:
            await backend.aclose()
    finally:
        await first.aclose()
    # A context with the CA bundle loaded is ~0.9 MiB of OpenSSL memory: ten of them would add ~9 MiB.
    assert added < 3072, f"10 backends added {added} KiB"
