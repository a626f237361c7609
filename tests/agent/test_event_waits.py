"""Waiting for a subscription's reader to catch up: woken by the reader, for what came before the wait only."""

from __future__ import annotations

import asyncio
import io
from types import SimpleNamespace

import pytest

from ollie.agent.events import Bus
from ollie.cli.render import Renderer
from ollie.cli.terminal import _Events


async def test_caught_up_waits_for_what_was_received_before_it_and_not_for_later_events():
    bus = Bus()
    sub = bus.subscribe()
    gates: asyncio.Queue[None] = asyncio.Queue()
    done: asyncio.Queue[str] = asyncio.Queue()
    seen: list[str] = []

    async def reader() -> None:
        async for event in sub:
            await gates.get()  # each event is handled on the test's word
            seen.append(event.content)
            done.put_nowait(event.content)

    task = asyncio.create_task(reader())
    at_once = sub.caught_up()
    with pytest.raises(StopIteration):  # nothing received: over in its first step, no loop pass
        at_once.send(None)
    for n in range(3):
        bus.emit("info", str(n))
    waiter = asyncio.create_task(sub.caught_up())
    seen_when_woken: list[list[str]] = []
    waiter.add_done_callback(lambda _: seen_when_woken.append(list(seen)))
    for n in range(3):
        assert not waiter.done()
        gates.put_nowait(None)
        assert await done.get() == str(n)
        if n == 0:  # the waiter has begun: not waited for, and its gate opens only after the wait ended
            bus.emit("info", "later")
    await asyncio.wait_for(waiter, 5)  # a hang fails here
    assert seen_when_woken == [["0", "1", "2"]]  # not woken early (when the third was taken, say)
    gates.put_nowait(None)
    assert await done.get() == "later"
    sub.close()
    await task


async def test_a_reader_that_stops_ends_the_waits():
    bus = Bus()
    sub = bus.subscribe()
    blocked = asyncio.Event()

    async def reader() -> None:
        async for _ in sub:
            blocked.set()
            await asyncio.Event().wait()  # stuck on its first event

    task = asyncio.create_task(reader())
    bus.emit("info", "one")
    bus.emit("info", "two")
    await blocked.wait()
    waiter = asyncio.create_task(sub.caught_up())
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await asyncio.wait_for(waiter, 5)
    await sub.caught_up()  # and later ones end at once


async def test_the_terminals_wait_ends_once_every_event_so_far_was_rendered():
    bus = Bus()
    out = io.StringIO()
    events = _Events(SimpleNamespace(bus=bus, plan=[]), Renderer(out=out, err=io.StringIO(), color=False))  # type: ignore[arg-type]
    for word in ("one ", "two ", "three"):
        bus.emit("assistant", word)
    await asyncio.wait_for(events.drained(), 5)
    assert "one two three" in out.getvalue()
    await events.close()
    await asyncio.wait_for(events.drained(), 5)  # the renderer stopped: nothing to wait for
