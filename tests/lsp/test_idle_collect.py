"""The cycle collector runs while the daemon idles and freezes what is left; a closed session's cycles still go."""

from __future__ import annotations

import asyncio
import gc
import weakref
from types import SimpleNamespace

from ollie_lsp import server


class _Node:
    """One half of a reference cycle (only the collector frees it)."""

    other: _Node | None = None


def _session(sid: str, *, running: bool = False) -> SimpleNamespace:
    return SimpleNamespace(id=sid, core=SimpleNamespace(is_running=running))


async def test_an_idle_daemon_collects_then_freezes_and_a_closed_sessions_cycles_are_collected(monkeypatch):
    monkeypatch.setattr(server, "IDLE_COLLECT_S", 0.0)
    monkeypatch.setattr(server, "_frozen_sessions", set())
    passes: list[int] = []

    def live(*sessions: SimpleNamespace):
        def listed() -> list:
            passes.append(len(passes))
            return list(sessions)
        return listed

    async def one_pass(listed) -> None:
        before = len(passes)
        server.collect_when_idle(listed)
        while len(passes) == before:
            await asyncio.sleep(0)
        await asyncio.sleep(0)

    a, b = _Node(), _Node()
    a.other, b.other = b, a
    ref = weakref.ref(a)
    gc.unfreeze()  # what earlier tests froze (a resume's parse freezes)
    try:
        await one_pass(live(_session("s1", running=True)))  # a turn runs: no pass at all
        assert gc.get_freeze_count() == 0
        await one_pass(live(_session("s1")))  # idle: the cycle (s1's, say) is frozen with the rest
        assert gc.get_freeze_count() > 0 and ref() is not None
        del a, b
        await one_pass(live(_session("s1")))  # nothing closed: what is frozen stays frozen
        assert ref() is not None
        await one_pass(live())  # s1 closed: unfrozen, collected
        assert ref() is None and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
