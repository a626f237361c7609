"""Backends on one event loop share one connection pool (one TLS context); the last one closed closes it."""

from __future__ import annotations

from ollie.backend.pool import shared_pools
from ollie.backend.registry import make_backend
from ollie.backend.types import Message
from ollie.testing import Reply

from .conftest import collect


async def test_backends_on_one_loop_share_the_pool_and_both_stream(scripted_llm):
    srv = scripted_llm("openai")
    srv.script(Reply.text("from the first"), Reply.text("from the second"))
    first = make_backend(environ=srv.env())
    second = make_backend(environ={**srv.env(), "OLLIE_MODEL": "other-model"})
    try:
        assert shared_pools() == 1
        assert first._client._transport is second._client._transport  # one pool, one TLS context
        assert first._client.headers["Authorization"] == second._client.headers["Authorization"]
        assert "".join(e.content for e in await collect(first)) == "from the first"
        await first.aclose()
        # The second backend's requests still go through the pool the first one shared.
        events = await collect(second, [Message("user", "again")])
        assert "".join(e.content for e in events) == "from the second"
        assert srv.chat_requests[-1].body["model"] == "other-model"
    finally:
        await first.aclose()
        await second.aclose()
    assert shared_pools() == 0
    assert second._client._transport.connections() == 0  # the last backend closed the pool


async def test_a_backend_after_the_first_costs_no_tls_context(scripted_llm):
    srv = scripted_llm("openai")
    keep = make_backend(environ=srv.env())
    try:
        before = rss_kib()
        extra = [make_backend(environ=srv.env()) for _ in range(10)]
        added = rss_kib() - before
        # An SSL context with the CA bundle is ~0.9 MiB of OpenSSL memory: ten of them would add ~9 MiB.
        assert added < 2048, f"10 backends added {added} KiB"
        for backend in extra:
            await backend.aclose()
        assert shared_pools() == 1  # `keep` still holds it
    finally:
        await keep.aclose()


def rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def test_a_backend_built_outside_a_loop_has_a_client_of_its_own():
    backend = make_backend(environ={"OLLIE_BACKEND": "ollama"})
    assert backend._pooled._shared is False
    assert shared_pools() == 0
