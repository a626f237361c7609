"""The HTTP/1.1 transport attacked by hostile or broken servers on real sockets: TLS, framing, bounds, proxies."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from ollie.backend import http_client, pool
from ollie.backend.errors import BackendUnreachableError, TransientError
from ollie.backend.http1 import HIGH_WATER, HTTP1Transport

from .conftest import collect
from .rawhttp import Step, chunked, wire_server
from .test_http1 import CHUNKED_HEAD, backend_for, sized

HELLO = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"


def client(url: str, transport: HTTP1Transport | None = None, **timeouts: float) -> http_client.Client:
    """A client on a transport of its own, 5 s for every timeout unless given."""
    limits = {"connect": 5.0, "read": 5.0, "write": 5.0, "pool": 5.0, **timeouts}
    return http_client.Client(base_url=url, transport=transport or HTTP1Transport(), timeout=http_client.Timeout(**limits))


def sockets_to(port: int) -> int:
    """How many sockets of this process are connected to `port` (the client's side of a connection)."""
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if not os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                continue
            sock = socket.socket(fileno=os.dup(int(fd)))
        except OSError:
            continue
        try:
            found += sock.getpeername()[1] == port
        except (OSError, IndexError, TypeError):
            pass
        finally:
            sock.close()
    return found


async def no_sockets_left(port: int) -> None:
    """Every client socket to `port` is closed (a closed transport lets go of its socket a loop turn later)."""
    for _ in range(50):
        if sockets_to(port) == 0:
            return
        await asyncio.sleep(0.02)
    assert sockets_to(port) == 0


def port_of(url: str) -> int:
    """The port in `url`."""
    return http_client.parse_url(url).port or 0


# --- TLS -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """Self-signed certificates (openssl CLI): for this host, for another name, and an expired one."""
    folder = tmp_path_factory.mktemp("tls")
    made = {}
    for name, days, san in (("good", "1", "IP:127.0.0.1,IP:::1,DNS:localhost"),
                            ("other", "1", "DNS:other.example"), ("expired", "-1", "IP:127.0.0.1")):
        cert, key, csr = folder / f"{name}.pem", folder / f"{name}.key", folder / f"{name}.csr"
        subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-subj", f"/CN={name}", "-keyout", str(key), "-out", str(csr)],
                       check=True, capture_output=True)
        (folder / "ext").write_text(f"subjectAltName={san}\nbasicConstraints=critical,CA:TRUE\n")
        subprocess.run(["openssl", "x509", "-req", "-in", str(csr), "-signkey", str(key), "-days", days,
                        "-extfile", str(folder / "ext"), "-out", str(cert)], check=True, capture_output=True)
        made[name] = (cert, key)
    # Every one of them trusted (a bundle for SSL_CERT_FILE, a hashed dir for SSL_CERT_DIR): only the
    # name and the dates can then refuse a certificate.
    (folder / "bundle.pem").write_text("".join(c.read_text() for c, _ in made.values()))
    hashed = folder / "hashed"
    hashed.mkdir()
    for name, (cert, _) in made.items():
        (hashed / f"{name}.pem").write_bytes(cert.read_bytes())
    subprocess.run(["openssl", "rehash", str(hashed)], check=True, capture_output=True)
    made["bundle"] = (folder / "bundle.pem", hashed)
    return made


@pytest.fixture
def fresh_tls_context() -> Iterator[None]:
    """`pool.tls_context()` built anew for this test (it reads SSL_CERT_FILE / SSL_CERT_DIR) and forgotten after."""
    pool.tls_context.cache_clear()
    yield
    pool.tls_context.cache_clear()


def serving(cert: tuple[Path, Path], names: list[str | None] | None = None) -> ssl.SSLContext:
    """A server's TLS context presenting `cert`; the SNI names clients send are appended to `names`."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*cert)
    if names is not None:
        context.sni_callback = lambda sock, name, ctx: names.append(name)
    return context


@pytest.mark.parametrize("trust", ["SSL_CERT_FILE", "SSL_CERT_DIR"])
async def test_tls_checks_the_name_and_the_dates_of_a_trusted_certificate(certs, fresh_tls_context, monkeypatch,
                                                                          trust):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv(trust, str(certs["bundle"][0 if trust == "SSL_CERT_FILE" else 1]))
    context = pool.tls_context()
    for cert, error in (("other", "IP address mismatch"), ("expired", "certificate has expired")):
        async with wire_server(lambda request: [HELLO], tls=serving(certs[cert])) as srv:
            async with client(srv.url, HTTP1Transport(context)) as http:
                with pytest.raises(http_client.ConnectError, match=error):
                    await http.get("/")
            backend = backend_for(srv.url)  # the backends' shared pool: the same refusal, and unreachable
            try:
                with pytest.raises(BackendUnreachableError, match=error):
                    await collect(backend)
            finally:
                await backend.aclose()
        assert srv.requests == []  # not a byte of a request over a connection that did not verify
    names: list[str | None] = []
    for host in ("localhost", "::1"):  # a name is checked and sent as SNI; an IP address is checked, never sent
        async with wire_server(lambda request: [HELLO], tls=serving(certs["good"], names), host=host) as srv:
            async with client(srv.url, HTTP1Transport(context)) as http:
                assert (await http.get("/")).text == "hello"
    assert names == ["localhost", None]


async def test_a_server_that_never_finishes_the_tls_handshake_is_a_connect_timeout():
    async with wire_server(lambda request: []) as srv:  # plain TCP: it never answers the ClientHello
        url = srv.url.replace("http://", "https://")
        started = time.monotonic()
        async with client(url, connect=0.3) as http:
            with pytest.raises(http_client.ConnectTimeout):
                await http.get("/")
        assert time.monotonic() - started < 3
        await no_sockets_left(port_of(url))


# --- framing ---------------------------------------------------------------------------------------------

# name: (method, the answer's bytes, what the response must be: (status, body, headers absent) or an error)
FRAMING: dict[str, tuple[str, list[Step], tuple[int, bytes, tuple[str, ...]] | str]] = {
    "smuggling: a length and chunked": (
        "GET", [b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(b"hello")],
        "Transfer-Encoding can't be present with Content-Length"),
    "two equal lengths": ("GET", [b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello"],
                          "Duplicate Content-Length"),
    "a length list": ("GET", [b"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello"], "Content-Length"),
    "a negative length": ("GET", [b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nhello"], "Content-Length"),
    "a length over 64 bits": ("GET", [b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n"],
                              "overflow"),
    "a chunk size over 64 bits": ("GET", [CHUNKED_HEAD + b"fffffffffffffffffff\r\nab"], "overflow"),
    "chunk extensions": ("GET", [CHUNKED_HEAD + b'5;a=b;c="d"\r\nhello\r\n0\r\n\r\n'], (200, b"hello", ())),
    "trailers are not headers": ("GET", [CHUNKED_HEAD + b"5\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n"],
                                 (200, b"hello", ("x-trailer",))),
    "a coding before chunked": ("GET", [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                                        + chunked(b"hello")], "unsupported Transfer-Encoding"),
    "identity transfer-encoding": ("GET", [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nhello", None],
                                   "unsupported Transfer-Encoding"),
    "HTTP/1.0 to the close": ("GET", [b"HTTP/1.0 200 OK\r\n\r\nhello", None], (200, b"hello", ())),
    "HTTP/1.0 with a length, left open": ("GET", [b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello"],
                                          (200, b"hello", ())),
    "HTTP/1.0 keep-alive": ("GET", [b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\nhello"],
                            (200, b"hello", ())),
    "100 then 200": ("GET", [b"HTTP/1.1 100 Continue\r\n\r\n" + HELLO], (200, b"hello", ())),
    "103 hints then 200": ("GET", [b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", 0.05, HELLO],
                           (200, b"hello", ("link",))),
    "101 switching protocols": ("GET", [b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                        b"Connection: Upgrade\r\n\r\n\x81\x02hi", 2.0], "switched protocols"),
    "204 with a body": ("GET", [b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello"], (204, b"", ())),
    "304 with a length": ("GET", [b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n"], (304, b"", ())),
    "HEAD with a length": ("HEAD", [b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"], (200, b"", ())),
    "HEAD with the body sent anyway": ("HEAD", [HELLO], (200, b"", ())),
    # Its last chunk's extension puts the unread bytes over the high-water mark as the response ends: the
    # connection is paused then, and must not wait for reuse so (its next answer would never be read).
    "a megabyte of chunk extension": ("GET", [CHUNKED_HEAD + b"5\r\nhello\r\n", 0.1,
                                              b"0;x=" + b"a" * HIGH_WATER + b"\r\n\r\n"], (200, b"hello", ())),
    "late bytes after the response": ("GET", [HELLO, 0.1, b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstale"],
                                      (200, b"hello", ())),
}
# Which answers leave their connection fit for the next request.
REUSED = {"chunk extensions", "trailers are not headers", "HTTP/1.0 keep-alive", "100 then 200", "103 hints then 200",
          "304 with a length"}


@pytest.mark.parametrize("name", list(FRAMING))
async def test_framing_attacks_give_the_exact_answer_or_a_protocol_error_and_never_leak_into_the_next(name, caplog):
    method, steps, expected = FRAMING[name]
    answers = iter([steps, [sized(b"next")]])
    async with wire_server(lambda request: next(answers)) as srv, client(srv.url, read=3.0) as http:
        with caplog.at_level(logging.WARNING, logger="asyncio"):
            if isinstance(expected, str):
                with pytest.raises(http_client.RemoteProtocolError, match=expected):
                    await http.request(method, "/")
            else:
                response = await http.request(method, "/")
                status, body, absent = expected
                assert (response.status_code, response.content) == (status, body)
                assert not [h for h in absent if h in response.headers]
            if name == "late bytes after the response":
                await asyncio.sleep(0.3)  # the stale answer arrives while the connection waits for reuse
            assert (await http.get("/")).text == "next"  # the next request reads its own answer
        assert srv.connections == (1 if name in REUSED else 2)
        assert not caplog.records  # nothing the server sent makes asyncio log a protocol failure


async def test_a_server_closing_after_each_response_without_saying_so_fails_no_request():
    # No "Connection: close": its FIN is still in flight when the response returns and the next request starts.
    async with wire_server(lambda request: [sized(b"ok"), None]) as srv, client(srv.url) as http:
        assert [(await http.get("/")).text for _ in range(10)] == ["ok"] * 10
        assert srv.connections == 10


# --- request bodies and writing --------------------------------------------------------------------------

TOO_BIG = b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 8\r\n%s\r\ntoo big!"


@pytest.mark.parametrize("closes", [True, False])
async def test_an_answer_before_the_request_body_is_read_is_the_response(closes):
    # nginx's client_max_body_size: 413 after the head, the body unread; then it closes, or it waits.
    steps: list[Step] = [TOO_BIG % b"Connection: close\r\n", None] if closes else [TOO_BIG % b"", 10.0]
    answers = iter([steps, [sized(b"next")]])
    async with wire_server(lambda request: next(answers), read_body=False) as srv, client(srv.url, write=5.0) as http:
        started = time.monotonic()
        response = await http.post("/", content=b"x" * (32 << 20))
        assert (response.status_code, response.content) == (413, b"too big!")
        assert time.monotonic() - started < 3  # not the write timeout
        assert (await http.get("/")).text == "next"
        assert srv.connections == 2  # the connection whose request was cut short is not reused


async def test_a_success_head_before_the_body_is_read_does_not_stop_the_body():
    # A full-duplex server: it starts a 200 at once and reads the body after; stopping the upload there would
    # leave both waiting. Only an error answer (or a close) ends the upload early.
    size = 8 << 20

    async def upload() -> AsyncIterator[bytes]:
        for _ in range(size // (1 << 16)):
            yield b"x" * (1 << 16)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(CHUNKED_HEAD + b"5\r\nfirst\r\n")
        await writer.drain()
        got = 0
        while part := int((await reader.readline()).strip(), 16):  # the upload, chunked
            got += len(await reader.readexactly(part + 2)) - 2
        await reader.readexactly(2)
        writer.write(chunked(b"%d" % got))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        async with client(url, read=3.0) as http:
            response = await http.post("/", content=upload())
            assert response.content == b"first%d" % size
    finally:
        server.close()


@pytest.mark.parametrize("server", ["waits", "closes"])
async def test_a_server_that_never_reads_the_request_fails_it_at_once_and_the_socket_goes(server):
    steps: list[Step] = [10.0] if server == "waits" else [None]
    async with wire_server(lambda request: steps, read_body=False) as srv, client(srv.url, write=0.3) as http:
        started = time.monotonic()
        with pytest.raises(http_client.WriteTimeout if server == "waits" else http_client.TransportError):
            await http.post("/", content=b"x" * (32 << 20))
        assert time.monotonic() - started < 3
        await no_sockets_left(port_of(srv.url))  # not left open to flush its 32 MiB to a server that never reads


async def test_request_headers_must_be_valid_tokens_and_values():
    async with wire_server(lambda request: [sized(b"ok")]) as srv, client(srv.url) as http:
        for headers in ({"X Bad": "v"}, {"X-Bad:": "v"}, {"X-Ctl": "a\x01b"}, {"X-Del": "a\x7fb"}):
            with pytest.raises(http_client.LocalProtocolError):
                await http.get("/", headers=headers)
        assert (await http.get("/", headers={"X-Fine": b"tab\tand obs-text \xfc"})).text == "ok"
        assert len(srv.requests) == 1


# --- resource bounds -------------------------------------------------------------------------------------


def kernel_buffers() -> int:
    """The most bytes the kernel may hold for one loopback connection: the receiver's and the sender's buffers."""
    return sum(int(Path(f"/proc/sys/net/ipv4/{name}").read_text().split()[2]) for name in ("tcp_rmem", "tcp_wmem"))


@pytest.mark.parametrize("tls", [False, True])
async def test_a_stalled_consumer_pauses_the_socket_and_loses_nothing(certs, tls):
    total = 64 << 20
    written = 0
    piece = b"y" * (1 << 16)

    def flood(request: bytes) -> Iterator[Step]:
        nonlocal written
        yield b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % total
        for _ in range(total // len(piece)):
            yield piece
            written += len(piece)

    trusted = HTTP1Transport(ssl.create_default_context(cafile=certs["good"][0])) if tls else None
    async with wire_server(flood, tls=serving(certs["good"]) if tls else None) as srv, client(srv.url, trusted) as http:
        async with http.stream("GET", "/") as response:
            chunks = response.aiter_raw()
            received = len(await anext(chunks))
            await asyncio.sleep(0.5)  # the consumer stalls: the server must be held back, not buffered
            # What the server got out: the 1 MiB the transport holds plus what the kernel's buffers take.
            assert written <= HIGH_WATER + kernel_buffers() + len(piece) < total
            async for chunk in chunks:
                received += len(chunk)
        assert received == total


async def test_a_slow_server_is_not_cut_while_every_byte_comes_within_the_read_timeout():
    # A model on a slow machine streams slowly: the read timeout is per read (as httpx's), not for the body.
    steps: list[Step] = [b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"]
    for byte in b"hello":
        steps += [0.12, bytes([byte])]
    async with wire_server(lambda request: steps) as srv, client(srv.url, read=0.3) as http:
        assert (await http.get("/")).text == "hello"


async def test_many_concurrent_streams_share_a_bounded_pool():
    steps: list[Step] = [CHUNKED_HEAD, b"3\r\nabc\r\n", 0.05, b"0\r\n\r\n"]
    async with wire_server(lambda request: steps) as srv:
        transport = HTTP1Transport(max_connections=3)
        async with client(srv.url, transport) as http:
            answers = await asyncio.gather(*(http.get(f"/{i}") for i in range(12)))
            assert [a.text for a in answers] == ["abc"] * 12
            assert srv.peak <= 3 and srv.connections <= 3
        await no_sockets_left(port_of(srv.url))  # the transport's close ends its idle connections


async def test_expired_idle_connections_close_whatever_origin_the_next_request_goes_to():
    async with wire_server(lambda request: [sized(b"a")]) as first, wire_server(lambda request: [sized(b"b")]) as second:
        async with client(first.url, HTTP1Transport(keepalive_expiry=0.2)) as http:
            assert (await http.get("/")).text == "a"
            assert sockets_to(port_of(first.url)) == 1  # kept alive
            await asyncio.sleep(0.3)
            assert (await http.get(f"{second.url}/")).text == "b"  # the user switched backends
            await no_sockets_left(port_of(first.url))


async def test_no_socket_outlives_a_failed_timed_out_cancelled_or_abandoned_request():
    answers = iter([
        [CHUNKED_HEAD, b"3\r\nabc\r\n", 30.0],  # read timeout mid-body
        [CHUNKED_HEAD, b"3\r\nabc\r\n", 30.0],  # cancelled mid-body
        [CHUNKED_HEAD] + [b"3\r\nabc\r\n", 0.05] * 100,  # the consumer stops reading and leaves
        [b"HTTP/1.1 200 OK\r\nX-Endless: " + b"y" * (1 << 17), 30.0],  # malformed (a head over the cap)
        [30.0],  # cancelled while waiting for the head
    ])
    async with wire_server(lambda request: next(answers)) as srv, client(srv.url, read=0.3) as http:
        port = port_of(srv.url)
        with pytest.raises(http_client.ReadTimeout):
            await http.get("/")

        async def read_all() -> None:
            async with http.stream("GET", "/") as response:
                async for _ in response.aiter_raw():
                    pass

        task = asyncio.create_task(read_all())
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        async with http.stream("GET", "/") as response:
            async for _ in response.aiter_raw():
                break
        with pytest.raises(http_client.RemoteProtocolError):
            await http.get("/")
        task = asyncio.create_task(http.get("/"))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await no_sockets_left(port)
        assert srv.connections == 5


async def test_an_endless_sse_line_is_a_malformed_stream_not_unbounded_memory():
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\ndata: " % (100 << 20)
    steps: list[Step] = [head] + [b"x" * (1 << 20)] * 40 + [30.0]
    async with wire_server(lambda request: steps) as srv:
        backend = backend_for(srv.url)
        started = time.monotonic()
        try:
            with pytest.raises(TransientError, match="malformed stream"):
                await collect(backend)
        finally:
            await backend.aclose()
        assert time.monotonic() - started < 10


# --- URLs, names, proxies --------------------------------------------------------------------------------


async def test_an_ipv6_literal_a_path_prefix_a_query_and_non_ascii_reach_the_server_as_httpx_sends_them():
    async with wire_server(lambda request: [sized(b"ok")], host="::1") as srv:
        port = port_of(srv.url)
        async with client(f"{srv.url}/prefix/v1") as http:
            assert (await http.get("/models/é", params={"q": "a b&c"})).text == "ok"
        assert srv.requests[0].startswith(b"GET /prefix/v1/models/%C3%A9?q=a+b%26c HTTP/1.1\r\n")
        assert b"\r\nHost: [::1]:%d\r\n" % port in srv.requests[0]


async def test_a_host_whose_ipv6_address_is_a_black_hole_is_reached_over_ipv4(monkeypatch):
    # A real network with broken IPv6: the name's first address never answers. httpcore races the next address
    # after 250 ms (happy eyeballs, RFC 8305); trying them in turn would spend the whole connect timeout there.
    loop = asyncio.get_running_loop()
    resolve = loop.getaddrinfo

    async def dual_stack(host, *args, **kwargs):  # the resolver's answer for a dual-stack name: IPv6 first
        if host != "dual.test":
            return await resolve(host, *args, **kwargs)
        return [*await resolve("::1", *args, **kwargs), *await resolve("127.0.0.1", *args, **kwargs)]

    monkeypatch.setattr(loop, "getaddrinfo", dual_stack)
    async with wire_server(lambda request: [sized(b"ok")]) as srv:
        port = port_of(srv.url)
        hole = socket.socket(socket.AF_INET6)  # on the IPv4 server's port number, over IPv6
        hole.bind(("::1", port))
        hole.listen(0)  # never accepted: once its queue is full, the kernel drops every later SYN
        queued = [socket.socket(socket.AF_INET6) for _ in range(3)]
        try:
            for sock in queued:
                sock.setblocking(False)
                sock.connect_ex(("::1", port))
            started = time.monotonic()
            async with client(f"http://dual.test:{port}", connect=5.0) as http:
                assert (await http.get("/")).text == "ok"
            assert time.monotonic() - started < 2
        finally:
            hole.close()
            for sock in queued:
                sock.close()
        await no_sockets_left(port)  # nor is the attempt that lost the race left open


async def test_an_unknown_host_is_unreachable_and_named_as_it_was_looked_up():
    backend = backend_for("http://straße.invalid")  # IDNA 2008 (as the Host header), not 2003's "strasse"
    try:
        with pytest.raises(BackendUnreachableError, match="xn--strae-oqa.invalid"):
            await collect(backend)
    finally:
        await backend.aclose()


PROXY_ENVIRONMENTS = [
    {"HTTP_PROXY": "http://proxy.example:3128"},
    {"http_proxy": "http://lower.example:3128", "HTTPS_PROXY": "http://upper.example:3128"},
    {"ALL_PROXY": "http://all.example:3128", "NO_PROXY": "localhost,127.0.0.1,.internal.example"},
    {"HTTPS_PROXY": "http://proxy.example:3128", "NO_PROXY": "*"},
    {"all_proxy": "http://all.example:3128", "no_proxy": "api.example:8443,::1"},
]
URLS = ["http://api.example/v1", "https://api.example/v1", "https://api.example:8443/v1", "http://127.0.0.1:11434",
        "http://[::1]:11434", "http://localhost:11434", "https://llm.internal.example/v1"]


@pytest.mark.parametrize("environment", PROXY_ENVIRONMENTS, ids=lambda env: ",".join(env))
async def test_proxies_from_the_environment_route_every_url_as_httpx_would(environment, monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)

    def proxy_of(transport: httpx.AsyncBaseTransport) -> str:
        proxy = transport._pool._proxy_url  # httpcore's URL: bytes parts
        return f"{proxy.scheme.decode()}://{proxy.host.decode()}:{proxy.port}"

    def route(http: http_client.Client, url: str) -> str:
        transport = http.transport_for(http_client.parse_url(url))
        return "direct" if isinstance(transport, HTTP1Transport) else proxy_of(transport.httpx_transport)

    def reference_route(http: httpx.AsyncClient, url: str) -> str:
        transport = http._transport_for_url(httpx.URL(url))
        return "direct" if transport is http._transport else proxy_of(transport)

    async with httpx.AsyncClient() as reference:
        for url in URLS:
            backend = backend_for(url.removesuffix("/v1"))
            try:
                assert route(backend._client, url) == reference_route(reference, url), url
            finally:
                await backend.aclose()


async def test_a_request_cancelled_as_its_pool_slot_frees_is_cancelled_and_gives_the_slot_back():
    # An interrupted turn that waited for a free connection: the interrupt must win, even when a slot frees
    # in the same loop turn (asyncio.wait_for in 3.11 would hand back the slot and swallow the cancel).
    async with wire_server(lambda request: [sized(b"ok")]) as srv:
        transport = HTTP1Transport(max_connections=1)
        async with client(srv.url, transport) as http:
            async with http.stream("GET", "/") as first:
                waiting = asyncio.create_task(http.get("/"))
                await asyncio.sleep(0.05)
                await first.aclose()  # the slot frees: `waiting` is woken...
                waiting.cancel()  # ...and interrupted before it runs
                with pytest.raises(asyncio.CancelledError):
                    await waiting
            assert (await http.get("/")).text == "ok"  # the slot came back
            assert len(srv.requests) == 2
