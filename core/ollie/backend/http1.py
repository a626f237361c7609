"""The HTTP/1.1 transport, whose parsing is llhttp's (httptools): one Python step per network read.

httpx's own transport (httpcore on h11, pure Python) handles every HTTP chunk
of a chunked body as an event of its own, and a streaming API sends every
SSE event as a chunk of its own: 20,000 deltas cost 20,000 trips through
h11's state machine. Here llhttp (C) strips the chunk framing and hands each
body piece to a list's `append`; the response stream yields what one network
read brought, joined. The client above it (http_client.py) adds the base URL,
headers, timeouts and content decoding. Proxies stay with httpx's transports
(proxy.py), which route proxied URLs to httpcore.

A hostile or broken server gets bounded buffers: the head (status line and
headers) is capped in bytes and in header count, and reading pauses while a
body piece waits unread; a body without end is the read timeout's business.
"""

from __future__ import annotations

import asyncio
import re
import select
import ssl
import time
from collections.abc import AsyncIterator

import httptools

from ollie.backend.http_client import (
    ConnectError,
    ConnectTimeout,
    LocalProtocolError,
    PoolTimeout,
    ReadTimeout,
    RemoteProtocolError,
    Request,
    RequestError,
    Response,
    UnsupportedProtocol,
    WriteError,
    WriteTimeout,
)

MAX_HEAD_BYTES = 64 * 1024  # status line and headers together
MAX_HEADERS = 128
HIGH_WATER = 1 << 20  # unread body bytes at which the socket stops being read
_DEFAULT_PORTS = {"http": 80, "https": 443}
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # a header name (RFC 9110's token)
# Controls in a header value (HTAB aside): CR/LF would split the request (smuggling), the others servers refuse.
_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")


class _Connection(asyncio.Protocol):
    """One connection: the socket's callbacks feed llhttp, whose callbacks fill this response's state."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._body: list[bytes] = []
        self.on_body = self._body.append  # llhttp calls it per body piece: no Python frame of ours each time
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[None] | None = None
        self._write_ready: asyncio.Future[None] | None = None
        self._reset()

    def _reset(self) -> None:
        """Fresh state for the next response on this connection."""
        self.status = 0
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.head_done = False
        self.complete = False
        self.keep_alive = False
        self.error: Exception | None = None
        self.until_eof = False  # a body delimited by the connection's close
        self.skip_body = False  # a HEAD request's response: its headers describe a body never sent
        self.expecting = False  # a request was sent: bytes from the server are its response
        self.sent = False  # the whole request went out (a server answering before it ends leaves it cut short)
        self._head_bytes = 0
        self._header_bytes = 0
        self._timed_out = False
        self._buffered = 0
        self._paused = False

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:  # noqa: D102
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:  # noqa: D102
        if not self.expecting or self.error is not None:
            # Bytes on an idle connection (or after a failure): no response of ours; never reuse it.
            self.close()
            return
        if not self.head_done:
            self._head_bytes += len(data)  # httptools joins a header line's pieces without limit
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            cause = exc.__context__ if isinstance(exc.__context__, RequestError) else None
            self._fail(cause if isinstance(cause, Exception) else
                       RemoteProtocolError(f"malformed response: {exc}"))
            return
        except httptools.HttpParserUpgrade:  # not an HttpParserError: uncaught, asyncio would log a fatal error
            self._fail(RemoteProtocolError("the server switched protocols (101), which no request asked for"))
            return
        if not self.head_done and self._head_bytes > MAX_HEAD_BYTES:
            self._fail(RemoteProtocolError(f"response head over {MAX_HEAD_BYTES} bytes"))
            return
        self._buffered += len(data)
        if self._buffered > HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True  # the consumer is behind: let TCP push back on the server
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool | None:  # noqa: D102
        return None  # close the transport: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: D102
        self.closed = True
        if self.expecting and not self.complete and self.error is None:
            if self.head_done and self.until_eof and exc is None:
                self.complete = True
                self.keep_alive = False
            elif self.head_done:
                self.error = RemoteProtocolError("the server closed the connection before the body ended")
            else:
                self.error = RemoteProtocolError("the server closed the connection without a response")
        self._wake()
        if self._write_ready is not None and not self._write_ready.done():
            self._write_ready.set_result(None)

    def pause_writing(self) -> None:  # noqa: D102
        self._write_ready = self._loop.create_future()

    def resume_writing(self) -> None:  # noqa: D102
        if self._write_ready is not None and not self._write_ready.done():
            self._write_ready.set_result(None)
        self._write_ready = None

    # llhttp's callbacks (through httptools)
    def on_message_begin(self) -> None:  # noqa: D102
        if self.complete:  # bytes after the response: never reuse this connection
            raise RemoteProtocolError("the server sent more than its response")
        self.headers = []  # again after an interim (1xx) response
        self.head_done = False

    def on_status(self, status: bytes) -> None:  # noqa: D102
        self.reason += status

    def on_header(self, name: bytes, value: bytes) -> None:  # noqa: D102
        self._header_bytes += len(name) + len(value)
        if self._header_bytes > MAX_HEAD_BYTES:
            raise RemoteProtocolError(f"response head over {MAX_HEAD_BYTES} bytes")
        if self.head_done:
            return  # a trailer field, after a chunked body: not a header of the response (httpcore drops them too)
        if len(self.headers) >= MAX_HEADERS:
            raise RemoteProtocolError(f"response with over {MAX_HEADERS} headers")
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:  # noqa: D102
        status = self._parser.get_status_code()
        if 100 <= status < 200:
            self.reason = b""  # an interim response (103 Early Hints): the real one follows
            return
        codings = b",".join(value for name, value in self.headers if name.lower() == b"transfer-encoding")
        if codings and codings.strip().lower() != b"chunked":
            # llhttp would frame "gzip, chunked" as chunked and hand the gzip on as the body, or read
            # "identity" to the close; h11 refuses every coding but chunked, and so do we.
            raise RemoteProtocolError(f"unsupported Transfer-Encoding {codings.decode('latin-1')!r}")
        self.status = status
        self.head_done = True
        self.until_eof = status not in (204, 304) and not any(
            name.lower() in (b"content-length", b"transfer-encoding") for name, _ in self.headers)
        if self.skip_body:
            self.complete = True  # llhttp would wait for the body the headers announce
            self.keep_alive = False

    def on_message_complete(self) -> None:  # noqa: D102
        if not self.head_done:
            return  # the end of an interim response
        if not self.skip_body:
            self.complete = True
            self.keep_alive = self._parser.should_keep_alive()
        self._wake()

    # what the transport calls
    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        ready = self._write_ready
        if self._refused() and ready is not None and not ready.done():
            ready.set_result(None)  # stop sending: see _drain

    def _refused(self) -> bool:
        """An error answer came while the request was still being sent (a 413 for a body the server will not read)."""
        return self.head_done and self.status >= 400

    def _fail(self, error: Exception) -> None:
        self.error = error
        self.close()
        self._wake()

    def readable(self) -> bool:
        """Whether the idle socket has something to read the loop has not seen yet: the server's close, most likely.

        A server that closes after each response without saying so has its FIN in flight while the
        response is returned; reusing the connection then fails the next request (httpcore polls too).
        """
        sock = self.transport.get_extra_info("socket") if self.transport is not None else None
        if sock is None:
            return True
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        return bool(poller.poll(0))

    def close(self) -> None:
        """Drop the connection (idempotent)."""
        self.closed = True
        if self.transport is not None:
            # Not close(): it would keep the socket until unsent request bytes reach a server that may never
            # read them (or, with TLS, until the peer answers close_notify, up to 30 s).
            self.transport.abort()

    async def _wait(self, timeout: float | None) -> None:
        """Until the socket brings something, or `timeout` seconds pass (ReadTimeout)."""
        waiter = self._waiter = self._loop.create_future()
        timer = self._loop.call_later(timeout, self._time_out) if timeout is not None else None
        try:
            await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()
        if self._timed_out:
            raise ReadTimeout("timed out waiting for the server")

    def _time_out(self) -> None:
        self._timed_out = True
        self._wake()

    async def send(self, request: Request, head: bytes, chunked: bool, timeout: float | None) -> None:
        """Write the request: its head, then its body (chunk-framed when `chunked`)."""
        self._reset()
        self.skip_body = request.method == "HEAD"
        self.expecting = True
        transport = self.transport
        assert transport is not None
        content = request.content
        if isinstance(content, bytes):
            transport.write(head + content)  # one write: a small request is one packet
        else:
            transport.write(head)
            async for part in content:
                if not part:
                    continue
                transport.write(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)
                if not await self._drain(timeout):
                    return
            if chunked:
                transport.write(b"0\r\n\r\n")
        self.sent = await self._drain(timeout)

    async def _drain(self, timeout: float | None) -> bool:
        """Until the socket takes more; False when the server answered with an error, or answered and closed,
        before the request's end: that answer is the response, not a write error or timeout. (A success head
        before the end is a full-duplex server, which still reads the body: keep sending.)"""
        ready = self._write_ready
        if ready is not None and not self._refused() and not self.closed:
            try:
                async with asyncio.timeout(timeout):  # not wait_for: see handle_async_request
                    await asyncio.shield(ready)
            except TimeoutError:
                raise WriteTimeout("timed out sending the request") from None
        if self._refused() or (self.head_done and self.closed):
            return False
        if self.error is not None:  # a malformed answer, or the server's close, while the request was sent
            raise self.error
        if self.closed:
            raise WriteError("the connection closed while the request was sent")
        return True

    async def receive_head(self, timeout: float | None) -> None:
        """Until the response's status line and headers are in."""
        while not self.head_done:
            if self.error is not None:
                raise self.error
            if self.closed:
                raise RemoteProtocolError("the server closed the connection without a response")
            await self._wait(timeout)

    async def read(self, timeout: float | None) -> bytes:
        """The body bytes that have arrived (waiting for some); b"" at the end of the body."""
        while True:
            if self.skip_body:
                self._body.clear()  # what a server sent after a HEAD response's head is no body of it
                return b""
            if self._body:
                data = b"".join(self._body)
                self._body.clear()
                self._buffered = 0
                if self._paused and self.transport is not None and not self.closed:
                    self._paused = False
                    self.transport.resume_reading()
                return data
            if self.complete:
                return b""  # what went wrong after the response's end (bytes beyond it) is not its business
            if self.error is not None:
                raise self.error
            await self._wait(timeout)


class _ResponseBody:
    """A response's body: each iteration step yields what one network read brought; closing returns the connection."""

    def __init__(self, pool: HTTP1Transport, key: tuple[str, str, int], conn: _Connection,
                 timeout: float | None) -> None:
        self._pool = pool
        self._key = key
        self._conn = conn
        self._timeout = timeout
        self._released = False

    async def __aiter__(self) -> AsyncIterator[bytes]:  # noqa: D105
        conn, timeout = self._conn, self._timeout
        try:
            while True:
                data = await conn.read(timeout)
                if not data:
                    return
                yield data
        except BaseException:
            # Cancelled, timed out or broken mid-body: the rest of the response is unknown. (An abandoned
            # iterator is finalized late, maybe after `aclose` gave a complete connection to another request.)
            if not self._released and not conn.complete:
                conn.close()
            raise

    async def aclose(self) -> None:  # noqa: D102
        if not self._released:
            self._released = True
            self._pool._release(self._key, self._conn)


class HTTP1Transport:
    """HTTP/1.1 over asyncio with llhttp parsing; keep-alive pool per (scheme, host, port).

    At most `max_connections` requests are in flight at once (a request beyond
    waits, up to the pool timeout: PoolTimeout); of the connections whose
    response was read to its end, at most `max_keepalive` per origin wait for
    reuse, each for up to `keepalive_expiry` seconds.
    """

    def __init__(self, ssl_context: ssl.SSLContext | None = None, *, max_connections: int = 100,
                 max_keepalive: int = 20, keepalive_expiry: float = 4.0) -> None:
        self._ssl = ssl_context
        self._slots = asyncio.Semaphore(max_connections)
        self._max_keepalive = max_keepalive
        # Under the 5 s idle timeout of common servers (uvicorn's, the local model servers'): a connection is not
        # reused just as its server drops it.
        self._expiry = keepalive_expiry
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._closed = False

    async def handle_async_request(self, request: Request) -> Response:
        """Send `request` and return the response with its body still to stream."""
        if self._closed:
            raise RuntimeError("the transport is closed")
        url = request.url
        if url.scheme not in _DEFAULT_PORTS:
            raise UnsupportedProtocol(f"unsupported URL scheme {url.scheme!r}")
        if not url.host:
            raise UnsupportedProtocol("a URL without a host")
        # url.host is the IDNA 2008 name the Host header has (the resolver and the TLS name check would encode a
        # Unicode name as IDNA 2003: "straße" would reach strasse's server).
        key = url.origin
        timeouts = request.timeout
        head, chunked = _request_head(request)
        try:
            # Not wait_for: in 3.11 a cancel arriving as the slot frees is swallowed (the slot returned instead).
            async with asyncio.timeout(timeouts.pool):
                await self._slots.acquire()
        except TimeoutError:
            raise PoolTimeout("no connection slot free in time") from None
        conn: _Connection | None = None
        try:
            conn = self._take_idle(key) or await self._connect(key, timeouts.connect)
            await conn.send(request, head, chunked, timeouts.write)
            await conn.receive_head(timeouts.read)
        except BaseException:
            if conn is not None:
                conn.close()
            self._slots.release()
            raise
        return Response(conn.status, headers=conn.headers, stream=_ResponseBody(self, key, conn, timeouts.read),
                        reason_phrase=conn.reason.decode("latin-1"))

    def _take_idle(self, key: tuple[str, str, int]) -> _Connection | None:
        """A kept-alive connection to `key` the server has not closed and that has not expired."""
        now = time.monotonic()
        for origin, waiting in list(self._idle.items()):
            # Expired ones go now, whatever their origin (as httpcore's pool does): not only when their origin is
            # next asked for, which may be never (a backend switched away from), leaving their sockets open.
            live = [conn for conn in waiting if not conn.closed and now - conn.idle_since < self._expiry]
            for conn in waiting:
                if conn not in live:
                    conn.close()
            if live:
                self._idle[origin] = live
            else:
                del self._idle[origin]
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if not conn.readable():
                return conn
            conn.close()
        return None

    async def _connect(self, key: tuple[str, str, int], timeout: float | None) -> _Connection:
        scheme, host, port = key
        loop = asyncio.get_running_loop()
        tls = None
        if scheme == "https":
            tls = self._ssl or ssl.create_default_context()
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            async with asyncio.timeout(timeout):
                # Happy eyeballs (as httpcore): a name's next address gets a try after 250 ms, so a black-holed
                # first address (broken IPv6) does not spend the whole connect timeout.
                _, conn = await loop.create_connection(lambda: _Connection(loop), host, port, ssl=tls,
                                                       server_hostname=host if tls is not None else None,
                                                       happy_eyeballs_delay=0.25)
        except TimeoutError:
            raise ConnectTimeout(f"timed out connecting to {where}") from None
        except OSError as exc:  # refused, unknown host, a certificate that does not verify (ssl.SSLError)
            raise ConnectError(f"{where}: {exc}") from exc
        return conn

    def _release(self, key: tuple[str, str, int], conn: _Connection) -> None:
        """A response closed: its connection waits for reuse when it can, else it is dropped."""
        self._slots.release()
        # A paused connection (a megabyte of chunk framing as the response ended) would never read its next answer.
        reusable = (conn.complete and conn.keep_alive and conn.sent and not conn.closed and not conn._body
                    and not conn._paused and not self._closed)
        if not reusable:
            conn.close()
            return
        conn.expecting = False
        conn.idle_since = time.monotonic()
        idle = self._idle.setdefault(key, [])
        idle.append(conn)
        while len(idle) > self._max_keepalive:
            idle.pop(0).close()

    async def aclose(self) -> None:
        """Close every idle connection; later requests raise."""
        self._closed = True
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()

    def connections(self) -> int:
        """How many idle connections wait for reuse (for tests)."""
        return sum(len(idle) for idle in self._idle.values())


def _request_head(request: Request) -> tuple[bytes, bool]:
    """The request line and headers as bytes, and whether the body goes chunked."""
    target = request.url.target.encode("ascii")
    if not _TOKEN.fullmatch(request.method.encode("ascii", "replace")):
        raise LocalProtocolError(f"illegal request method {request.method!r}")
    lines = [b"%s %s HTTP/1.1\r\n" % (request.method.encode("ascii"), target)]
    chunked = False
    for name, value in request.headers:
        if not _TOKEN.fullmatch(name) or _CONTROL.search(value):
            raise LocalProtocolError(f"illegal character in the request header {name!r}")
        if name.lower() == b"transfer-encoding" and value.lower() == b"chunked":
            chunked = True
        lines.append(b"%s: %s\r\n" % (name, value))
    lines.append(b"\r\n")
    return b"".join(lines), chunked
