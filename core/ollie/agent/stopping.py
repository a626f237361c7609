"""A session's stop: what `Core.stop` asks of the submits under way, and a future done once they have returned."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")


class Stopped(Exception):
    """A stop cut short what `stoppable` ran (its own cleanup done: a killed process, an unchanged history)."""


class Work:
    """One submit or queue run under way."""

    __slots__ = ("stopped", "tasks")

    def __init__(self) -> None:
        self.stopped = False
        self.tasks: set[asyncio.Task[Any]] = set()  # its `stoppable` work: a stop cancels it


# The submit or queue run the running code belongs to (its turn's task inherits it).
_CURRENT: ContextVar[Work | None] = ContextVar("ollie_stopping_work", default=None)


class Stopping:
    """The submits and queue runs under way; `ask` stops them, not those that begin later (see `Core.stop`)."""

    def __init__(self) -> None:
        self._under_way: set[Work] = set()
        self._waits: list[tuple[asyncio.Future[bool], set[Work]]] = []

    @property
    def asked(self) -> bool:
        """Whether a stop was asked of the submit or queue run this code runs in: no turn of it begins then."""
        work = _CURRENT.get()
        return work is not None and work.stopped

    def enlist(self) -> Work:
        """A submit or queue run under way from now, before its task starts: pass it to `working`."""
        work = Work()
        self._under_way.add(work)
        return work

    @contextlib.contextmanager
    def working(self, work: Work | None = None) -> Iterator[None]:
        """One submit or queue run while it lasts (`work`: enlisted already); the last of those a stop was asked
        of ends that stop."""
        work = work or self.enlist()
        token = _CURRENT.set(work)
        try:
            yield
        finally:
            _CURRENT.reset(token)
            self._under_way.discard(work)
            waits, self._waits = self._waits, []
            for done, pending in waits:
                pending.discard(work)
                if pending:
                    self._waits.append((done, pending))
                elif not done.done():  # its waiter may have given up (cancelled)
                    done.set_result(True)

    def ask(self) -> asyncio.Future[bool]:
        """Stop what is under way: done once all of it has returned (False at once when nothing is)."""
        done = asyncio.get_running_loop().create_future()
        if not self._under_way:
            done.set_result(False)
            return done
        for work in self._under_way:
            work.stopped = True
            for task in work.tasks:
                task.cancel()
        self._waits.append((done, set(self._under_way)))
        return done


async def stoppable(work: Coroutine[Any, Any, T]) -> T:
    """Run `work` as a task that a stop of the submit this code runs in cancels: Stopped then (at once when one
    was asked already). Outside a submit nothing stops it."""
    current = _CURRENT.get()
    if current is None:
        return await work
    if current.stopped:
        work.close()
        raise Stopped
    task = asyncio.ensure_future(work)
    current.tasks.add(task)
    try:
        return await task
    except asyncio.CancelledError:
        caller = asyncio.current_task()
        if not task.cancelled() or (caller is not None and caller.cancelling()):
            raise  # the caller's own cancellation (passed on to `work`), not a stop
        raise Stopped from None
    finally:
        current.tasks.discard(task)
