"""The loop's share (ollie.loopshare): past a pass's share, sessions' steps wait, a bounded number per pass, in order."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable

import pytest

from ollie import loopshare
from ollie.backend.types import GenerationParams, Message
from ollie.loopshare import RELEASED_PER_PASS, loop_share
from ollie.testing import Reply


def pass_counter() -> tuple[Callable[[], int], Callable[[], None]]:
    """(the number of loop passes so far, stop counting): a callback that queues itself again once per pass."""
    loop = asyncio.get_running_loop()
    passes = [0]
    handle: list[asyncio.Handle] = []

    def tick() -> None:
        passes[0] += 1
        handle[:] = [loop.call_soon(tick)]

    handle.append(loop.call_soon(tick))
    return (lambda: passes[0]), (lambda: handle[0].cancel())


@pytest.fixture
def spent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every pass's share is spent at once: each step that asks waits for a later pass."""
    monkeypatch.setattr(loopshare, "PASS_CPU_S", 0.0)


async def test_a_step_that_fits_goes_on_without_waiting_for_a_pass():
    share = loop_share()
    step = share.wait_turn()
    with pytest.raises(StopIteration):  # it returned in its first step: no pass went by
        step.send(None)
    assert share.waiting() == 0


async def test_steps_past_the_share_go_on_a_few_per_pass_in_the_order_they_asked(spent):
    passes, stop = pass_counter()
    went: list[tuple[int, int]] = []

    async def step(index: int) -> None:
        await loop_share().wait_turn()
        went.append((index, passes()))

    await asyncio.gather(*(step(i) for i in range(20)))
    stop()
    assert [index for index, _ in went] == list(range(20))
    per_pass = Counter(at for _, at in went)
    assert max(per_pass.values()) <= RELEASED_PER_PASS
    assert len(per_pass) >= 20 // RELEASED_PER_PASS
    assert loop_share().waiting() == 0


async def test_a_cancelled_waiter_gives_its_place_up(spent):
    share = loop_share()
    first = asyncio.ensure_future(share.wait_turn())
    cancelled = asyncio.ensure_future(share.wait_turn())
    last = asyncio.ensure_future(share.give_way())
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.wait_for(asyncio.gather(first, last), 10)
    assert cancelled.cancelled()
    assert share.waiting() == 0


async def test_replies_read_at_once_step_a_bounded_few_per_pass(connect, spent):
    """With 12 streams and every pass's share spent, no pass hands on events of more than two passes' releases
    (without the share every stream steps in every pass)."""
    srv, backend = connect("openai")
    count = 12
    for _ in range(count):
        srv.script(Reply(text="word " * 300, chunk_size=5))
    passes, stop = pass_counter()
    stepped: list[tuple[int, int]] = []

    async def read(index: int) -> str:
        text = []
        async for event in backend.stream([Message("user", "hi")], [], GenerationParams()):
            stepped.append((passes(), index))
            text.append(event.content or "")
        return "".join(text)

    replies = await asyncio.wait_for(asyncio.gather(*(read(i) for i in range(count))), 60)
    stop()
    assert replies == ["word " * 300] * count
    streams_per_pass = Counter(at for at, _ in set(stepped))
    assert max(streams_per_pass.values()) <= 2 * RELEASED_PER_PASS
    assert loop_share().waiting() == 0
