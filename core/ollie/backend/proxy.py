"""Proxies from the environment (HTTP(S)_PROXY, ALL_PROXY, NO_PROXY), through httpx's own proxy transports.

Imported only when such a variable is set (`http_client.proxies_may_apply`):
httpx (and httpcore, which its proxy transports run on) then costs what it
did before, and routes exactly as httpx's client would. A proxied request
is handed to httpx's transport as is, its answer and failures translated to
http_client's types: the backends see one client either way.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator

import httpx

from ollie.backend import http_client
from ollie.backend.http_client import URL, Request, RequestError, Response


def _ours(exc: httpx.HTTPError | httpx.InvalidURL) -> Exception:
    """httpx's failure as http_client's class of the same name (the classification and the text stay)."""
    kind = getattr(http_client, type(exc).__name__, None)
    if not (isinstance(kind, type) and issubclass(kind, (RequestError, http_client.InvalidURL))):
        kind = http_client.InvalidURL if isinstance(exc, httpx.InvalidURL) else RequestError
    return kind(str(exc))


class _ProxiedBody:
    """httpx's response stream, its failures translated."""

    def __init__(self, stream: httpx.AsyncByteStream) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:  # noqa: D105
        try:
            async for chunk in self._stream:
                yield chunk
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise _ours(exc) from exc

    async def aclose(self) -> None:  # noqa: D102
        await self._stream.aclose()


class ProxyTransport:
    """One of httpx's proxy transports, taking http_client's requests."""

    def __init__(self, transport: httpx.AsyncBaseTransport) -> None:
        self.httpx_transport = transport

    async def handle_async_request(self, request: Request) -> Response:
        """Send `request` through the proxy; the response's body still to stream."""
        timeout = request.timeout
        # Every header already set (Host included): httpx's Request adds none of its own over them.
        outgoing = httpx.Request(request.method, str(request.url), headers=request.headers, content=request.content,
                                 extensions={"timeout": {"connect": timeout.connect, "read": timeout.read,
                                                         "write": timeout.write, "pool": timeout.pool}})
        try:
            answer = await self.httpx_transport.handle_async_request(outgoing)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise _ours(exc) from exc
        stream = answer.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        reason = answer.extensions.get("reason_phrase", b"")
        return Response(answer.status_code, headers=list(answer.headers.raw), stream=_ProxiedBody(stream),
                        reason_phrase=reason.decode("latin-1") if isinstance(reason, bytes) else "")

    async def aclose(self) -> None:
        """Nothing: the transport is the Proxies' to close."""


class Proxies:
    """The environment's proxy mounts, held by a client of httpx's own (its routing is httpx's, pinned 0.28)."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self._template = httpx.AsyncClient(verify=context)  # trust_env: the mounts come from the environment
        self._routes: dict[httpx.AsyncBaseTransport, ProxyTransport] = {}

    def route(self, url: URL) -> ProxyTransport | None:
        """The proxy `url` goes through; None when none applies (NO_PROXY, or no proxy for its scheme)."""
        try:
            transport = self._template._transport_for_url(httpx.URL(str(url)))  # pyright: ignore[reportPrivateUsage]
        except httpx.InvalidURL:
            return None
        if transport is self._template._transport:  # pyright: ignore[reportPrivateUsage]
            return None
        if transport not in self._routes:
            self._routes[transport] = ProxyTransport(transport)
        return self._routes[transport]

    async def aclose(self) -> None:
        """Close the proxy transports."""
        await self._template.aclose()
