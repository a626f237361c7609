"""The shared pool's TLS (verifying, through the llhttp transport) and proxies (httpx's own proxy transport)."""

from __future__ import annotations

import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ollie.backend import http_client, pool
from ollie.backend.errors import BackendUnreachableError
from ollie.backend.http1 import HTTP1Transport
from ollie.backend.proxy import ProxyTransport
from ollie.testing import Reply

from .conftest import collect, joined
from .rawhttp import wire_server
from .test_http1 import SSE, backend_for, sized


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
def fresh_tls_context() -> Iterator[None]:
    """`pool.tls_context()` built anew for this test (it reads SSL_CERT_FILE) and forgotten after it."""
    pool.tls_context.cache_clear()
    yield
    pool.tls_context.cache_clear()


def server_context(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    return context


async def test_a_self_signed_server_is_refused_by_default(certificate, fresh_tls_context, monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    context = pool.tls_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    async with wire_server(lambda request: [sized(SSE)], tls=server_context(certificate)) as srv:
        async with http_client.Client(transport=HTTP1Transport(context)) as http:
            with pytest.raises(http_client.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await http.get(srv.url)
        backend = backend_for(srv.url)
        try:
            assert isinstance(backend._client._transport, HTTP1Transport)
            with pytest.raises(BackendUnreachableError, match="CERTIFICATE_VERIFY_FAILED"):
                await collect(backend)
        finally:
            await backend.aclose()
    assert srv.requests == []  # nothing was sent over the unverified connection


async def test_a_self_signed_server_is_accepted_when_its_certificate_is_trusted(certificate, fresh_tls_context,
                                                                               monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    async with wire_server(lambda request: [sized(SSE, b"Content-Type: text/event-stream")],
                           tls=server_context(certificate)) as srv:
        backend = backend_for(srv.url)
        try:
            assert srv.url.startswith("https://")
            assert joined(await collect(backend), "content") == "one two three"
            assert joined(await collect(backend), "content") == "one two three"
        finally:
            await backend.aclose()
    assert srv.connections == 1  # TLS connections are kept alive too
    assert srv.requests[0].startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")


async def test_a_proxy_from_the_environment_routes_through_httpx_proxy_transport(scripted_llm, monkeypatch):
    async with wire_server(lambda request: [sized(SSE, b"Content-Type: text/event-stream")]) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        backend = backend_for("http://llm.invalid")
        try:
            url = http_client.parse_url("http://llm.invalid/v1/chat/completions")
            proxied = backend._client.transport_for(url)
            assert isinstance(proxied, ProxyTransport)
            assert isinstance(proxied.httpx_transport, httpx.AsyncHTTPTransport)
            assert joined(await collect(backend), "content") == "one two three"
        finally:
            await backend.aclose()
        # A proxy takes the absolute URL in the request line.
        assert proxy.requests[0].startswith(b"POST http://llm.invalid/v1/chat/completions HTTP/1.1\r\n")
        # NO_PROXY: the scripted server on 127.0.0.1 is reached directly, through the llhttp transport.
        srv = scripted_llm("openai")
        srv.script(Reply.text("direct"))
        backend = backend_for(srv.url.removesuffix("/v1"))
        try:
            direct = http_client.parse_url(f"{srv.url}/chat/completions")
            assert isinstance(backend._client.transport_for(direct), HTTP1Transport)
            assert joined(await collect(backend), "content") == "direct"
        finally:
            await backend.aclose()
        assert len(proxy.requests) == 1
