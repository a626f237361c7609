"""Sessions' work takes turns on the event loop: one loop pass runs a bounded share of it, the rest waits.

asyncio runs every ready callback once per pass, so a pass held one step of every live session: with 50
sessions, 50 steps of 0.5-0.75 ms each (a reply's slice, a request sent, a turn's start and save), and a request
of the client that came meanwhile waited for that pass and most of the next (35-50 ms of CPU). Here such a step
goes on at once only while the share of its pass lasts (PASS_CPU_S of the loop thread's CPU) and nobody waits;
else it waits, in order of asking, and each pass lets RELEASED_PER_PASS of the waiting go on: what a request
waits for is bounded, whatever the number of sessions. Uncontended (a few sessions) nothing waits: asking costs
a CPU clock read, and a pass where anyone asked one callback.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import deque

# The loop thread's CPU that sessions' steps may spend in one pass before the others wait for a later one (the
# daemon's batch of client messages per callback has the same budget: ollie_lsp/protocol.py).
PASS_CPU_S = 0.002
# How many waiting steps each pass lets go on (a reply's slice is ~0.5 ms under a flood).
RELEASED_PER_PASS = 4


class LoopShare:
    """One event loop's share: whether a step may go on in this pass, and the queue of those waiting for a later one."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._opened = 0.0  # the loop thread's CPU clock when this pass's share began
        self._ticking = False  # a `_next_pass` is queued
        self.pass_no = 0  # counts the passes in which steps asked: a stream woken in a later pass asks again

    def _tick(self) -> None:
        if not self._ticking:
            self._ticking = True
            self._opened = time.thread_time()
            self._loop.call_soon(self._next_pass)

    def _next_pass(self) -> None:
        self._ticking = False
        self.pass_no += 1
        released = 0
        while self._waiting and released < RELEASED_PER_PASS:
            waiter = self._waiting.popleft()
            if not waiter.done():  # a cancelled waiter gave its place up
                waiter.set_result(None)
                released += 1
        if self._waiting or released:  # the released ones step in the next pass: counted from now
            self._tick()

    def fits(self) -> bool:
        """Whether a step may go on now: nobody waits and this pass's share is not spent."""
        self._tick()
        return not self._waiting and time.thread_time() - self._opened < PASS_CPU_S

    async def _wait(self) -> None:
        waiter = self._loop.create_future()
        self._waiting.append(waiter)
        self._tick()
        await waiter

    async def wait_turn(self) -> None:
        """Return at once if this pass has room for a step, else in a later pass (in order of asking)."""
        if not self.fits():
            await self._wait()

    async def give_way(self) -> None:
        """Let the loop's other callbacks run, then go on: the next pass, or a later one once this one is full."""
        if self.fits():
            await asyncio.sleep(0)
        else:
            await self._wait()

    def waiting(self) -> int:
        """How many steps wait for a turn."""
        return len(self._waiting)


_shares: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopShare] = weakref.WeakKeyDictionary()


def loop_share() -> LoopShare:
    """The running loop's share."""
    loop = asyncio.get_running_loop()
    return _shares.get(loop) or _shares.setdefault(loop, LoopShare(loop))
