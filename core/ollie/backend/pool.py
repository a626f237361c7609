"""One HTTP connection pool (and so one TLS context) per event loop, shared by every backend that runs on it.

A verifying SSL context parses the CA bundle (~20 ms and ~0.9 MiB); a daemon
with many sessions built one per session.
Each backend still has its own client (its base URL, headers, timeout), but
they all send through the loop's one transport, closed when the last of its
backends is. Plain-http backends (a local server) get a pool of their own
that never loads the CA bundle, so they pay nothing for TLS at all.

The transport is ours (http1.py: llhttp parsing, one Python step per network
read, not per SSE event); a URL that a proxy from the environment applies to
(HTTP(S)_PROXY, ALL_PROXY, NO_PROXY) goes through httpx's own proxy
transports (proxy.py), and only then is httpx imported.
"""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ollie.backend.http1 import HTTP1Transport
from ollie.backend.http_client import Client, Timeout, proxies_may_apply

if TYPE_CHECKING:
    from ollie.backend.proxy import Proxies


@dataclass
class _Pool:
    transport: HTTP1Transport  # every URL no proxy applies to
    # The proxy mounts from the environment (None: no proxy is set, the usual case, and then httpx and httpcore,
    # which only those use, are never imported: ~5 MiB and ~50 ms).
    proxies: Proxies | None
    users: int = 0
    closed: bool = False


# Per loop: the pool for https (index True) and the one for plain http (False).
_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[bool, _Pool]] = weakref.WeakKeyDictionary()


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's one verifying TLS context (the CA bundle parsed once; safe to build in a thread beforehand).

    As httpx's default: SSL_CERT_FILE, else SSL_CERT_DIR, else certifi's bundle.
    """
    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


@functools.cache
def _plain_context() -> ssl.SSLContext:
    # An http:// pool never makes a TLS connection (no redirect is followed): skip loading the CA bundle.
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class PooledClient:
    """A backend's HTTP client; `aclose` releases its share of the pool (or the client itself when unshared)."""

    def __init__(self, *, base_url: str, headers: dict[str, str], timeout: Timeout | float) -> None:
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None  # built outside a loop (a CLI check, a test): a client of its own
        self._loop = loop
        self._secure = not base_url.startswith("http://")
        pool = _pool_for(loop, self._secure) if loop is not None else None
        if pool is None:
            context = tls_context() if self._secure else _plain_context()
            self.client = Client(base_url=base_url, headers=headers, timeout=timeout, transport=HTTP1Transport(context),
                                 proxies=_proxies(context))
        else:
            self.client = Client(base_url=base_url, headers=headers, timeout=timeout, transport=pool.transport,
                                 proxies=pool.proxies)
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
            if pool.proxies is not None:
                await pool.proxies.aclose()


def _pool_for(loop: asyncio.AbstractEventLoop, secure: bool) -> _Pool:
    pools = _pools.setdefault(loop, {})
    pool = pools.get(secure)
    if pool is None or pool.closed:
        context = tls_context() if secure else _plain_context()
        pool = pools[secure] = _Pool(HTTP1Transport(context), _proxies(context))
    return pool


def _proxies(context: ssl.SSLContext) -> Proxies | None:
    """The environment's proxies (httpx imported for them), or None when no proxy is set."""
    if not proxies_may_apply():
        return None
    from ollie.backend.proxy import Proxies

    return Proxies(context)


def shared_pools() -> int:
    """How many pools are open now, on every loop (for tests)."""
    return sum(len(pools) for pools in list(_pools.values()))
