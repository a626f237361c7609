"""The cycle collector's full passes, run when every session is idle, and the freezing of what they leave."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ollie_lsp.sessions import LiveSession

# How long every session must have been idle before the cycle collector's full pass runs (collect_when_idle).
IDLE_COLLECT_S = 2.0
# Sessions whose objects are frozen (a closed one: until a pass over everything), with their weight when last seen.
_frozen_sessions: dict[str, int] = {}
# A pass over everything frees closed sessions' cycles once their weight is this share of the live ones' at least.
CLOSED_SHARE = 0.25
# A session's weight: its messages, plus what a session holds whatever its length (its Core, tools, backend: ~250
# objects, ~60 messages' worth). A pass walks every live object: with a 100,000-message session live, one closed
# short session unfroze and walked 405,000 objects (130-170 ms of CPU) to free 224.
SESSION_WEIGHT = 64


@dataclass(eq=False, repr=False)
class _IdlePass:
    """The pending idle pass: one timer, whose deadline each message from the client moves later."""

    loop: asyncio.AbstractEventLoop
    timer: asyncio.TimerHandle
    deadline: float  # the loop's time
    live: Callable[[], list[LiveSession]]  # where it finds the live sessions


_idle_pass: _IdlePass | None = None


def collect_when_idle(live: Callable[[], list[LiveSession]]) -> None:
    """After IDLE_COLLECT_S with no other call and no turn running: a collection, then freeze what is left."""
    # A full pass walks every object, every thread stopped (80 ms with 50 sessions); left to the collector it
    # came mid-work (50 first turns at once). Frozen after, the passes during turns walk only what is new.
    global _idle_pass
    loop = asyncio.get_running_loop()
    deadline = loop.time() + IDLE_COLLECT_S
    if _idle_pass is not None:
        if _idle_pass.loop is loop:
            _idle_pass.deadline, _idle_pass.live = deadline, live
            return
        _idle_pass.timer.cancel()  # another loop's (an earlier server in this process)
    _idle_pass = _IdlePass(loop, loop.call_at(deadline, _idle_pass_due), deadline, live)


def _idle_pass_due() -> None:
    global _idle_pass
    pending = _idle_pass
    if pending is None:
        return
    if pending.loop.time() < pending.deadline:  # put off since it was armed: it waits for the new deadline
        pending.timer = pending.loop.call_at(pending.deadline, _idle_pass_due)
        return
    _idle_pass = None
    collect_and_freeze(pending.live())


def postpone_idle_collect() -> None:
    """The client sent something: a pending idle pass waits IDLE_COLLECT_S from now (typing is not idle)."""
    # Only its deadline moves (the timer looks at it when it fires): no timer cancelled and made per batch.
    if _idle_pass is not None:
        _idle_pass.deadline = _idle_pass.loop.time() + IDLE_COLLECT_S


def collect_and_freeze(sessions: list[LiveSession], *, closed_too: bool = True) -> None:
    """Unless a turn runs: a full pass over what is not frozen, then freeze it (a new session's objects, say).

    `closed_too`: everything is unfrozen first when sessions frozen earlier have closed since, so their cycles go
    (a pass over every object, 60-80 ms with 50 sessions: the idle one only, once the closed ones weigh CLOSED_SHARE
    of the live ones, so that the walk stays in proportion to what it frees, however long the live histories).
    """
    if any(session.core.is_running for session in sessions):
        return
    weights = {session.id: SESSION_WEIGHT + len(session.core.session.messages) for session in sessions}
    closed = sum(weight for sid, weight in _frozen_sessions.items() if sid not in weights)
    if closed_too and closed and closed >= CLOSED_SHARE * sum(weights.values()):
        gc.unfreeze()
        _frozen_sessions.clear()
    _frozen_sessions.update(weights)
    gc.collect()
    gc.freeze()
