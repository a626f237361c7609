"""The cycle collector's full pass runs while the daemon idles, and what it leaves is frozen (no pass walks it mid-work)."""

from __future__ import annotations

import asyncio
import gc
import weakref

from ollie_lsp import server


class _Node:
    """One half of a reference cycle (only the collector frees it)."""

    other: _Node | None = None


async def test_an_idle_daemon_collects_then_freezes_and_a_busy_one_waits(monkeypatch):
    monkeypatch.setattr(server, "IDLE_COLLECT_S", 0.0)
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    gone = asyncio.Event()
    ref = weakref.ref(a, lambda _: gone.set())
    gc.freeze()  # a cycle frozen by an earlier pass, then left behind (a closed session's)
    del a, b
    try:
        asked = asyncio.Event()

        def running() -> bool:
            asked.set()
            return True

        server.collect_when_idle(running)
        await asked.wait()  # the pass came and found a turn running: nothing collected
        assert ref() is not None
        server.collect_when_idle(lambda: False)
        await asyncio.wait_for(gone.wait(), 10)  # unfrozen, then collected
        assert gc.get_freeze_count() > 0  # what is left is frozen
    finally:
        gc.unfreeze()
