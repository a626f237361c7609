"""The cycle collector runs while the daemon idles and freezes what is left; a closed session's cycles still go."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from ollie_lsp import idlecollect
from ollie_lsp.server import OllieServer


class _Node:
    """One half of a reference cycle (only the collector frees it)."""

    other: _Node | None = None


def _session(sid: str, *, running: bool = False, messages: int = 0) -> SimpleNamespace:
    history = SimpleNamespace(messages=[None] * messages)
    return SimpleNamespace(id=sid, core=SimpleNamespace(is_running=running, session=history))


@pytest.fixture
def fresh_gc(monkeypatch) -> Iterator[None]:
    """No session frozen yet and nothing frozen (what earlier tests froze: a resume's parse freezes); unfrozen after."""
    monkeypatch.setattr(idlecollect, "_frozen_sessions", {})
    monkeypatch.setattr(idlecollect, "_idle_pass", None)
    gc.unfreeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _cycle() -> tuple[_Node, weakref.ref[_Node]]:
    """A reference cycle only the collector frees once its node returned here is dropped, and a weak reference."""
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return a, weakref.ref(a)


async def test_an_idle_daemon_collects_then_freezes_and_a_closed_sessions_cycles_are_collected(monkeypatch, fresh_gc):
    monkeypatch.setattr(idlecollect, "IDLE_COLLECT_S", 0.0)
    passes: list[int] = []

    def live(*sessions: SimpleNamespace):
        def listed() -> list:
            passes.append(len(passes))
            return list(sessions)
        return listed

    async def one_pass(listed) -> None:
        before = len(passes)
        idlecollect.collect_when_idle(listed)
        while len(passes) == before:
            await asyncio.sleep(0)
        await asyncio.sleep(0)

    node, ref = _cycle()
    await one_pass(live(_session("s1", running=True)))  # a turn runs: no pass at all
    assert gc.get_freeze_count() == 0
    await one_pass(live(_session("s1")))  # idle: the cycle (s1's, say) is frozen with the rest
    assert gc.get_freeze_count() > 0 and ref() is not None
    del node
    await one_pass(live(_session("s1")))  # nothing closed: what is frozen stays frozen
    assert ref() is not None
    await one_pass(live())  # s1 closed: unfrozen, collected
    assert ref() is None and gc.get_freeze_count() > 0


def test_a_new_sessions_pass_freezes_what_is_new_and_leaves_a_closed_sessions_cycles_to_the_idle_pass(fresh_gc):
    # session/new freezes its objects at once (a pass over what is not frozen: the new session's, ~1 ms), so 50 new
    # sessions are not one 30 ms full pass in their first turns; unfreezing everything is the idle pass's.
    node, closed = _cycle()
    idlecollect.collect_and_freeze([_session("s1")])  # s1's objects (this cycle, say) frozen
    del node  # s1 closes: its cycle is garbage, frozen
    node, garbage = _cycle()
    del node
    kept = _Node()
    frozen = gc.get_freeze_count()
    idlecollect.collect_and_freeze([_session("s2")], closed_too=False)  # s2 new: no pass over the frozen objects
    assert garbage() is None and gc.get_freeze_count() > frozen and kept is not None
    assert closed() is not None
    idlecollect.collect_and_freeze([_session("s2", running=True)], closed_too=False)  # a turn runs: nothing
    assert closed() is not None
    idlecollect.collect_and_freeze([_session("s2")])  # the idle pass: s1's cycle goes
    assert closed() is None


def test_a_closed_sessions_cycles_wait_until_the_closed_are_a_share_of_the_live_ones(fresh_gc):
    # The pass over everything is 60-80 ms with 50 sessions: not once per closed session, but once per CLOSED_SHARE.
    live = [_session(f"s{n}") for n in range(8)]
    node, closed = _cycle()
    idlecollect.collect_and_freeze(live)  # s0's objects (this cycle, say) frozen with everyone's
    del node
    idlecollect.collect_and_freeze(live[1:])  # s0 closed: 1 of 7 live
    assert closed() is not None
    idlecollect.collect_and_freeze(live[2:])  # s1 closed too: 2 of 6 live
    assert closed() is None


def test_a_long_live_history_is_not_walked_again_for_a_short_closed_sessions_cycles(fresh_gc):
    # One 100,000-message session live and one short session closed: the pass over everything walked 405,000
    # objects to free 224. The walk waits until the closed sessions weigh a share of the live ones.
    long = _session("long", messages=100_000)
    short = [_session(f"s{n}") for n in range(3)]
    nodes, refs = zip(*(_cycle() for _ in short), strict=True)
    idlecollect.collect_and_freeze([long, *short])  # every session's objects (these cycles, say) frozen
    del nodes
    idlecollect.collect_and_freeze([long, *short[1:]])  # s0 closed: no pass over the frozen objects
    assert all(ref() is not None for ref in refs)
    idlecollect.collect_and_freeze([long])  # 2 short ones closed, still far from a quarter of the long one
    assert all(ref() is not None for ref in refs)
    grown = _session("grown", messages=40_000)  # a session with a history of its own closes: worth a pass now
    idlecollect.collect_and_freeze([long, grown])
    idlecollect.collect_and_freeze([long])
    assert all(ref() is None for ref in refs)


async def test_a_message_from_the_client_moves_the_pending_passs_deadline_and_the_timer_keeps_to_it(fresh_gc):
    # Typing is not idle: a request that came during the pass over everything waited for it. Each batch of the
    # client's only moves the deadline; the one timer, once due, waits again until the deadline it finds.
    ls = OllieServer(make_table=lambda ls: None, load_engine=lambda: None)  # type: ignore[arg-type, return-value]
    ls.protocol.serving = lambda: True  # type: ignore[attr-defined]: as while serve_client reads
    ping = b'{"jsonrpc": "2.0", "method": "$/ping"}'
    ls.protocol.receive([ping])  # type: ignore[attr-defined]
    assert idlecollect._idle_pass is None  # none pending: none started
    passes: list[int] = []
    idlecollect.collect_when_idle(lambda: passes.append(1) or [])  # type: ignore[func-returns-value]
    pending = idlecollect._idle_pass
    assert pending is not None
    timer, deadline = pending.timer, pending.deadline
    ls.protocol.receive([ping])  # type: ignore[attr-defined]
    assert idlecollect._idle_pass is pending and pending.timer is timer and not timer.cancelled()
    assert pending.deadline > deadline
    idlecollect._idle_pass_due()  # the timer fires at its first deadline, now past: not idle since, so no pass
    assert passes == [] and idlecollect._idle_pass is pending and pending.timer is not timer
    assert pending.timer.when() == pending.deadline
    pending.deadline = pending.loop.time()  # the new deadline reached
    idlecollect._idle_pass_due()
    assert passes == [1] and idlecollect._idle_pass is None
    timer.cancel()
    pending.timer.cancel()
