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


def test_a_new_sessions_pass_freezes_what_is_new_and_leaves_a_closed_sessions_cycles_to_the_idle_pass(monkeypatch):
    # session/new freezes its objects at once (a pass over what is not frozen: the new session's, ~1 ms), so 50 new
    # sessions are not one 30 ms full pass in their first turns; unfreezing everything is the idle pass's.
    monkeypatch.setattr(server, "_frozen_sessions", set())
    gc.unfreeze()
    try:
        closed_a, closed_b = _Node(), _Node()
        closed_a.other, closed_b.other = closed_b, closed_a
        closed = weakref.ref(closed_a)
        server.collect_and_freeze([_session("s1")])  # s1's objects (this cycle, say) frozen
        del closed_a, closed_b  # s1 closes: its cycle is garbage, frozen
        garbage_a, garbage_b, kept = _Node(), _Node(), _Node()
        garbage_a.other, garbage_b.other = garbage_b, garbage_a
        garbage = weakref.ref(garbage_a)
        del garbage_a, garbage_b
        frozen = gc.get_freeze_count()
        server.collect_and_freeze([_session("s2")], closed_too=False)  # s2 new: no pass over the frozen objects
        assert garbage() is None and gc.get_freeze_count() > frozen and kept is not None
        assert closed() is not None
        server.collect_and_freeze([_session("s2", running=True)], closed_too=False)  # a turn runs: nothing
        assert closed() is not None
        server.collect_and_freeze([_session("s2")])  # the idle pass: s1's cycle goes
        assert closed() is None
    finally:
        gc.unfreeze()


def test_a_closed_sessions_cycles_wait_until_the_closed_are_a_share_of_the_live_ones(monkeypatch):
    # The pass over everything is 60-80 ms with 50 sessions: not once per closed session, but once per CLOSED_SHARE.
    monkeypatch.setattr(server, "_frozen_sessions", set())
    gc.unfreeze()
    try:
        live = [_session(f"s{n}") for n in range(8)]
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        closed = weakref.ref(a)
        server.collect_and_freeze(live)  # s0's objects (this cycle, say) frozen with everyone's
        del a, b
        server.collect_and_freeze(live[1:])  # s0 closed: 1 of 7 live
        assert closed() is not None
        server.collect_and_freeze(live[2:])  # s1 closed too: 2 of 6 live
        assert closed() is None
    finally:
        gc.unfreeze()


async def test_a_message_from_the_client_puts_a_pending_idle_pass_off(monkeypatch):
    # Typing is not idle: a request that came during the pass over everything waited for it.
    monkeypatch.setattr(server, "_idle_collect", [])
    ls = server.OllieServer(make_table=lambda ls: None, load_engine=lambda: None)  # type: ignore[arg-type, return-value]
    ls.protocol.serving = lambda: True  # type: ignore[attr-defined]: as while serve_client reads
    ping = b'{"jsonrpc": "2.0", "method": "$/ping"}'
    ls.protocol.receive([ping])  # type: ignore[attr-defined]
    assert server._idle_collect == []  # none pending: none started
    server.collect_when_idle(list)
    pending = server._idle_collect[0][0]
    ls.protocol.receive([ping])  # type: ignore[attr-defined]
    again = server._idle_collect[0][0]
    assert pending.cancelled() and not again.cancelled() and again.when() >= pending.when()
    again.cancel()
