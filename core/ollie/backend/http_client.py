"""The backends' HTTP client: base URL, headers, JSON bodies, streamed responses, gzip/deflate, timeouts.

What httpx's client gave the backends, and no more: httpx costs the daemon
~4 MiB resident and ~20 ms of import (cookies, `email`, `urllib.request`,
`idna`, its status codes) for a client that only ever POSTs JSON and reads a
stream. The wire is http1.py's transport; a URL that a proxy from the
environment applies to goes through httpx's proxy transports (proxy.py),
imported only then. The error classes keep httpx's names and hierarchy: a
failure reads (`repr`) as it did, and the classification in stream.py is
unchanged.
"""

from __future__ import annotations

import json as jsonlib
import os
import sys
import zlib
from collections.abc import AsyncIterable, AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote, unquote, urlencode, urlsplit


class HTTPError(Exception):
    """Any failure of a request (httpx's root class, by name)."""


class RequestError(HTTPError):
    """The request could not be sent or its answer not read."""


class TransportError(RequestError):
    """A failure on the wire."""


class TimeoutException(TransportError):
    """A timeout ran out."""


class ConnectTimeout(TimeoutException):
    """No connection in time."""


class ReadTimeout(TimeoutException):
    """The server sent nothing in time."""


class WriteTimeout(TimeoutException):
    """The server took no more of the request in time."""


class PoolTimeout(TimeoutException):
    """No connection slot came free in time."""


class NetworkError(TransportError):
    """The connection failed."""


class ConnectError(NetworkError):
    """Refused, an unknown host, a certificate that does not verify: the configuration, not a hiccup."""


class ReadError(NetworkError):
    """Reading from the connection failed."""


class WriteError(NetworkError):
    """Writing to the connection failed."""


class CloseError(NetworkError):
    """Closing the connection failed."""


class ProxyError(TransportError):
    """The proxy refused or failed."""


class UnsupportedProtocol(TransportError):
    """A URL that is not http(s)."""


class ProtocolError(TransportError):
    """Either side broke HTTP."""


class LocalProtocolError(ProtocolError):
    """The request itself is not valid HTTP (an illegal header)."""


class RemoteProtocolError(ProtocolError):
    """The server's answer is not valid HTTP."""


class DecodingError(RequestError):
    """A body that does not decode as its Content-Encoding says."""


class InvalidURL(Exception):  # noqa: N818 (httpx's name)
    """A URL that cannot be parsed (httpx's InvalidURL is no HTTPError either)."""


@dataclass(frozen=True)
class Timeout:
    """Seconds for each phase (None: no limit), as httpx's: connect, each read, each write, a pool slot."""

    connect: float | None = None
    read: float | None = None
    write: float | None = None
    pool: float | None = None

    @classmethod
    def of(cls, value: Timeout | float | None) -> Timeout:
        """`value` as a Timeout: a number (or None) applies to every phase."""
        return value if isinstance(value, Timeout) else cls(value, value, value, value)


@dataclass(frozen=True)
class URL:
    """An absolute http(s) URL split for the wire: `host` is IDNA 2008 ASCII (no brackets), `target` is percent-encoded."""

    scheme: str
    host: str
    port: int | None
    target: str  # path and query, as the request line carries them
    userinfo: str = ""  # "user:password" (percent-decoded) before the host: Basic auth, as httpx sends it

    @property
    def origin(self) -> tuple[str, str, int]:
        """(scheme, host, port) with the scheme's default port filled in: the pool's key."""
        return self.scheme, self.host, self.port or _DEFAULT_PORTS.get(self.scheme, 0)

    @property
    def authority(self) -> str:
        """The Host header: brackets around an IPv6 literal, the port only when not the default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port is None else f"{host}:{self.port}"

    def __str__(self) -> str:
        return f"{self.scheme}://{self.authority}{self.target}"


_DEFAULT_PORTS = {"http": 80, "https": 443}
# httpx's path and query percent-encode sets (WHATWG's), '%' kept so that escapes already there stay.
_PATH_SAFE = "".join(chr(i) for i in range(0x21, 0x7F) if chr(i) not in '"#<>?`{}')
_QUERY_SAFE = "".join(chr(i) for i in range(0x21, 0x7F) if chr(i) not in '"#<>')


def parse_url(url: str) -> URL:
    """`url` split and encoded as httpx would send it; InvalidURL when it cannot be."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
        host = parts.hostname or ""
    except ValueError as exc:  # a bad port, an unbalanced bracket
        raise InvalidURL(f"invalid URL {url[:200]!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if port is not None and port == _DEFAULT_PORTS.get(scheme):
        port = None
    if not host.isascii():
        # Lazily: the idna package costs memory, and a model server's name is ASCII nearly always.
        import idna

        try:
            host = idna.encode(host.lower()).decode("ascii")
        except idna.IDNAError:
            raise InvalidURL(f"Invalid IDNA hostname: {host!r}") from None
    if any(c <= " " or c in "/\\@#?" for c in host):
        raise InvalidURL(f"invalid host in URL {url[:200]!r}")
    target = quote(parts.path, safe=_PATH_SAFE) or "/"
    if parts.query:
        target += "?" + quote(parts.query, safe=_QUERY_SAFE)
    userinfo = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}" if parts.username else ""
    return URL(scheme, host, port, target, userinfo)


class Headers(Mapping[str, str]):
    """Header fields, looked up by name in any case; repeated fields joined with ", " (as httpx's)."""

    def __init__(self, raw: list[tuple[bytes, bytes]] | None = None) -> None:
        self.raw: list[tuple[bytes, bytes]] = raw if raw is not None else []

    def __getitem__(self, name: str) -> str:
        key = name.lower().encode("latin-1")
        values = [value.decode("latin-1") for field, value in self.raw if field.lower() == key]
        if not values:
            raise KeyError(name)
        return ", ".join(values)

    def __iter__(self) -> Iterator[str]:
        seen: dict[str, None] = {}
        for field, _ in self.raw:
            seen.setdefault(field.decode("latin-1").lower())
        return iter(seen)

    def __len__(self) -> int:
        return len({field.lower() for field, _ in self.raw})


def _header_bytes(value: str | bytes) -> bytes:
    if isinstance(value, bytes):
        return value
    try:
        return value.encode("ascii")
    except UnicodeEncodeError:
        raise LocalProtocolError("a header value that is not ASCII") from None


def _merged(defaults: Mapping[str, str | bytes], extra: Mapping[str, str | bytes] | None) -> list[tuple[bytes, bytes]]:
    """`defaults` with `extra` over them, a field of `extra` replacing the default of its name."""
    fields = {name.lower(): (name, value) for name, value in defaults.items()}
    for name, value in (extra or {}).items():
        fields[name.lower()] = (name, value)
    return [(name.encode("ascii"), _header_bytes(value)) for name, value in fields.values()]


@dataclass
class Request:
    """One request as the transports take it: the headers complete (Host included), the body bytes or a stream."""

    method: str
    url: URL
    headers: list[tuple[bytes, bytes]]
    content: bytes | AsyncIterable[bytes]
    timeout: Timeout


class Body(Protocol):
    """A response body as a transport hands it over: iterated once, then closed (which frees its connection)."""

    def __aiter__(self) -> AsyncIterator[bytes]: ...  # noqa: D105

    async def aclose(self) -> None: ...  # noqa: D102


class Transport(Protocol):
    """What sends a request: http1.py's transport, or a proxy's (proxy.py)."""

    async def handle_async_request(self, request: Request) -> Response: ...  # noqa: D102

    async def aclose(self) -> None: ...  # noqa: D102


class Proxies(Protocol):
    """The environment's proxies (proxy.py's): which one a URL goes through."""

    def route(self, url: URL) -> Transport | None: ...  # noqa: D102

    async def aclose(self) -> None: ...  # noqa: D102


# Decoded pieces are at most this big: a small gzip body can expand a thousandfold (a "zip bomb"), and a
# caller's cap (stream.py's read_capped) must get to stop it before it is all in memory.
MAX_DECODED_PIECE = 1 << 20


class _Decoder:
    """One Content-Encoding (gzip or deflate) undone, piece by bounded piece."""

    def __init__(self, coding: str) -> None:
        self._coding = coding
        # deflate: zlib-wrapped per the RFC, but some servers send it raw; the first bytes tell (as httpx does).
        self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16 if coding == "gzip" else zlib.MAX_WBITS)
        self._first = coding == "deflate"

    def feed(self, data: bytes) -> Iterator[bytes]:
        try:
            if self._first:
                self._first = False
                try:
                    out = self._zlib.decompress(data, MAX_DECODED_PIECE)
                except zlib.error:
                    self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                    out = self._zlib.decompress(data, MAX_DECODED_PIECE)
            else:
                out = self._zlib.decompress(data, MAX_DECODED_PIECE)
            while True:
                if out:
                    yield out
                tail = self._zlib.unconsumed_tail
                if not tail:
                    return
                out = self._zlib.decompress(tail, MAX_DECODED_PIECE)
        except zlib.error as exc:
            raise DecodingError(f"the {self._coding} body does not decode: {exc}") from None

    def flush(self) -> bytes:
        try:
            return self._zlib.flush()
        except zlib.error as exc:
            raise DecodingError(f"the {self._coding} body does not decode: {exc}") from None


ACCEPT_ENCODING = "gzip, deflate"  # only what _Decoder undoes


class Response:
    """A response whose body is still to be read: raw by network read, decoded, or whole."""

    def __init__(self, status_code: int, *, headers: list[tuple[bytes, bytes]], stream: Body,
                 reason_phrase: str = "") -> None:
        self.status_code = status_code
        self.headers = Headers(headers)
        self.reason_phrase = reason_phrase
        self.stream = stream
        self._content: bytes | None = None

    def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body as the network brought it (Content-Encoding not undone)."""
        return aiter(self.stream)

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body decoded (gzip/deflate; an unknown coding is passed through, as httpx does)."""
        codings = [c.strip().lower() for c in self.headers.get("content-encoding", "").split(",")]
        decoders = [_Decoder(c) for c in codings if c in ("gzip", "deflate")]
        if not decoders:
            async for chunk in self.aiter_raw():
                yield chunk
            return
        decoders.reverse()  # the coding listed last was applied last: undone first
        async for chunk in self.aiter_raw():
            for piece in _undo(decoders, chunk, final=False):
                yield piece
        for piece in _undo(decoders, b"", final=True):
            yield piece

    async def aread(self) -> bytes:
        """The whole body, decoded (for tests and small answers: stream.py caps what it reads)."""
        if self._content is None:
            self._content = b"".join([chunk async for chunk in self.aiter_bytes()])
        return self._content

    @property
    def content(self) -> bytes:
        """The body `aread` read."""
        assert self._content is not None, "the body was not read"
        return self._content

    @property
    def text(self) -> str:
        """The body as text (UTF-8, a bad byte replaced)."""
        return self.content.decode("utf-8", "replace")

    async def aclose(self) -> None:
        """Release the connection (the rest of an unread body is dropped with it)."""
        await self.stream.aclose()


def _undo(decoders: list[_Decoder], chunk: bytes, *, final: bool) -> Iterator[bytes]:
    """`chunk` through each decoder in turn, lazily (each piece bounded); `final` flushes them, in order."""
    pieces: Iterator[bytes] = iter((chunk,))
    for decoder in decoders:
        pieces = _through(decoder, pieces, final)
    return pieces


def _through(decoder: _Decoder, pieces: Iterator[bytes], final: bool) -> Iterator[bytes]:
    for piece in pieces:
        yield from decoder.feed(piece)
    if final and (tail := decoder.flush()):
        yield tail


def proxies_may_apply() -> bool:
    """Whether a proxy from the environment may apply: False means surely not, without importing urllib.request.

    On Linux urllib's `getproxies()` reads only the environment, and httpx only its http, https
    and all proxies; elsewhere it also asks the system, so only urllib can say.
    """
    if sys.platform in ("darwin", "win32"):
        import urllib.request

        return bool(urllib.request.getproxies())
    return any(value and name.lower() in ("http_proxy", "https_proxy", "all_proxy")
               for name, value in os.environ.items())


class Client:
    """Requests to `base_url` with default `headers` and `timeout`, sent through `transport` (or a proxy's)."""

    def __init__(self, *, transport: Transport, base_url: str = "", headers: Mapping[str, str] | None = None,
                 timeout: Timeout | float | None = 5.0, proxies: Proxies | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers: dict[str, str | bytes] = {"Accept": "*/*", "Accept-Encoding": ACCEPT_ENCODING,
                                                "Connection": "keep-alive", "User-Agent": "ollie",
                                                **(headers or {})}
        self.timeout = Timeout.of(timeout)
        self._transport = transport
        self._proxies = proxies

    def transport_for(self, url: URL) -> Transport:
        """The transport a request to `url` goes through: a proxy's when one applies, else ours."""
        proxied = self._proxies.route(url) if self._proxies is not None else None
        return proxied or self._transport

    def build_request(self, method: str, url: str, *, json: Any = None, content: bytes | AsyncIterable[bytes] = b"",
                      headers: Mapping[str, str | bytes] | None = None,
                      params: Mapping[str, str] | None = None) -> Request:
        """The request for `url` (a path under the base URL, or an absolute URL)."""
        absolute = url if url.startswith(("http://", "https://")) else f"{self.base_url}/{url.lstrip('/')}"
        if params:
            absolute += ("&" if "?" in absolute else "?") + urlencode(params)
        parsed = parse_url(absolute)
        fields = _merged(self.headers, headers)
        if parsed.userinfo:  # over any Authorization header, as httpx's auth from the URL
            import base64

            fields = [f for f in fields if f[0].lower() != b"authorization"]
            fields.append((b"Authorization", b"Basic " + base64.b64encode(parsed.userinfo.encode())))
        if json is not None:
            # httpx's encoding, byte for byte: a server (or a test) comparing bodies sees no change.
            content = jsonlib.dumps(json, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
            fields.append((b"Content-Type", b"application/json"))
        if isinstance(content, bytes):
            if content or method in ("POST", "PUT", "PATCH"):
                fields.append((b"Content-Length", b"%d" % len(content)))
        else:
            fields.append((b"Transfer-Encoding", b"chunked"))
        return Request(method, parsed, [(b"Host", parsed.authority.encode("ascii")), *fields], content, self.timeout)

    @asynccontextmanager
    async def stream(self, method: str, url: str, *, json: Any = None, content: bytes | AsyncIterable[bytes] = b"",
                     headers: Mapping[str, str | bytes] | None = None,
                     params: Mapping[str, str] | None = None) -> AsyncIterator[Response]:
        """Send a request; the response's body streams inside the block, and its connection is freed after."""
        request = self.build_request(method, url, json=json, content=content, headers=headers, params=params)
        response = await self.transport_for(request.url).handle_async_request(request)
        try:
            yield response
        finally:
            await response.aclose()

    async def request(self, method: str, url: str, *, json: Any = None, content: bytes | AsyncIterable[bytes] = b"",
                      headers: Mapping[str, str | bytes] | None = None,
                      params: Mapping[str, str] | None = None) -> Response:
        """Send a request and read its whole body."""
        async with self.stream(method, url, json=json, content=content, headers=headers, params=params) as response:
            await response.aread()
        return response

    async def get(self, url: str, **kwargs: Any) -> Response:
        """`request("GET", url, ...)`."""
        return await self.request("GET", url, **kwargs)

    async def post(self, url: str, **kwargs: Any) -> Response:
        """`request("POST", url, ...)`."""
        return await self.request("POST", url, **kwargs)

    async def aclose(self) -> None:
        """Close the transport (and the proxies' ones)."""
        await self._transport.aclose()
        if self._proxies is not None:
            await self._proxies.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
