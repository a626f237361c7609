"""One HTTP connection pool (and so one TLS context) per event loop, shared by every backend that runs on it.

Building an `httpx.AsyncClient` builds an SSL context (the CA bundle parsed:
~20 ms and ~0.9 MiB); a daemon with many sessions built one per session.
Each backend still has its own client (its base URL, headers, timeout), but
they all send through the loop's one transport, closed when the last of its
backends is. Plain-http backends (a local server) get a pool of their own
that never loads the CA bundle, so they pay nothing for TLS at all.

The transport is ours (http1.py: llhttp parsing, one Python step per network
read, not per SSE event); a URL that a proxy from the environment applies to
(HTTP(S)_PROXY, ALL_PROXY, NO_PROXY) still goes through httpx's own proxy
mount (httpcore).
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import urllib.request  # httpx imports it anyway
import weakref
from dataclasses import dataclass, field

import httpx

from ollie.backend.http1 import HTTP1Transport


@dataclass
class _Pool:
    transport: HTTP1Transport  # every URL no proxy applies to
    # httpx's proxy mounts from the environment, held by a client of httpx's own (None: no proxy is set, the usual
    # case, and then httpcore, which only those mounts use, is never imported: ~1.2 MiB and ~30 ms).
    template: httpx.AsyncClient | None
    mounts: dict[str, httpx.AsyncBaseTransport | None] = field(default_factory=dict)
    users: int = 0
    closed: bool = False


# Per loop: the pool for https (index True) and the one for plain http (False).
_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[bool, _Pool]] = weakref.WeakKeyDictionary()


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's one verifying TLS context (the CA bundle parsed once; safe to build in a thread beforehand)."""
    return httpx.create_ssl_context()


@functools.cache
def _plain_context() -> ssl.SSLContext:
    # An http:// pool never makes a TLS connection (httpx follows no redirects here): skip loading the CA bundle.
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class PooledClient:
    """A backend's HTTP client; `aclose` releases its share of the pool (or the client itself when unshared)."""

    def __init__(self, *, base_url: str, headers: dict[str, str], timeout: httpx.Timeout | float) -> None:
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None  # built outside a loop (a CLI check, a test): a client of its own
        self._loop = loop
        self._secure = not base_url.startswith("http://")
        pool = _pool_for(loop, self._secure) if loop is not None else None
        if pool is None:
            self.client = httpx.AsyncClient(base_url=base_url, headers=headers, timeout=timeout)
        else:
            self.client = httpx.AsyncClient(base_url=base_url, headers=headers, timeout=timeout,
                                            transport=pool.transport, mounts=pool.mounts)
            pool.users += 1
        self._shared = pool is not None
        self._closed = False

    async def aclose(self) -> None:
        """Release the client: a shared pool closes with its last user."""
        if self._closed:
            return
        self._closed = True
        if not self._shared:
            await self.client.aclose()
            return
        pools = _pools.get(self._loop) if self._loop is not None else None
        pool = pools.get(self._secure) if pools is not None else None
        if pools is None or pool is None:
            return
        pool.users -= 1
        if pool.users <= 0:
            del pools[self._secure]
            pool.closed = True
            await pool.transport.aclose()
            if pool.template is not None:
                await pool.template.aclose()


def _pool_for(loop: asyncio.AbstractEventLoop, secure: bool) -> _Pool:
    pools = _pools.setdefault(loop, {})
    pool = pools.get(secure)
    if pool is None or pool.closed:
        context = tls_context() if secure else _plain_context()
        template = httpx.AsyncClient(verify=context) if urllib.request.getproxies() else None
        # httpx has no public way to share its proxy mounts: its own attributes, pinned 0.28.
        mounts = {pattern.pattern: transport for pattern, transport in template._mounts.items()} if template else {}
        pool = pools[secure] = _Pool(HTTP1Transport(context), template, mounts)
    return pool


def shared_pools() -> int:
    """How many pools are open now, on every loop (for tests)."""
    return sum(len(pools) for pools in list(_pools.values()))
