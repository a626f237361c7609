"""The ACP forwarder's drained(): woken once every event published before it was sent, not polled, not early."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

from ollie.agent.events import Bus
from ollie_acp.updates import Update, UpdateForwarder


async def test_drained_ends_once_what_came_before_it_was_sent_and_not_before():
    bus = Bus()
    gates: asyncio.Queue[None] = asyncio.Queue()
    sent: list[str] = []
    sending: asyncio.Queue[None] = asyncio.Queue()

    async def send(update: Update) -> None:
        sending.put_nowait(None)
        await gates.get()  # each update goes out on the test's word
        sent.append(update.content.text)  # type: ignore[union-attr]

    core = SimpleNamespace(bus=bus, cwd=Path("/"))
    forwarder = UpdateForwarder(core, send)  # type: ignore[arg-type]
    forwarder.start()
    await asyncio.wait_for(forwarder.drained(), 5)  # nothing published: over at once
    for word in ("one", "two"):
        bus.emit("assistant", word)
    waiter = asyncio.create_task(forwarder.drained())
    sent_when_woken: list[list[str]] = []
    waiter.add_done_callback(lambda _: sent_when_woken.append(list(sent)))
    await sending.get()
    bus.emit("assistant", "later")  # published after the wait began: not waited for
    for _ in range(2):
        assert not waiter.done()
        gates.put_nowait(None)
        await sending.get()  # the next send began ("two", then "later")
    await asyncio.wait_for(waiter, 5)  # a hang fails here
    assert sent_when_woken == [["one", "two"]]  # not woken early, nor held by "later"
    gates.put_nowait(None)
    await forwarder.stop()
    assert sent == ["one", "two", "later"]
    await asyncio.wait_for(forwarder.drained(), 5)  # the sender stopped: nothing to wait for


async def test_a_failed_send_still_counts_as_done():
    bus = Bus()

    async def send(update: Update) -> None:
        raise OSError("client gone")

    forwarder = UpdateForwarder(SimpleNamespace(bus=bus, cwd=Path("/")), send)  # type: ignore[arg-type]
    forwarder.start()
    bus.emit("assistant", "lost")
    await asyncio.wait_for(forwarder.drained(), 5)
    await forwarder.stop()
