"""A session's stop: what `Core.stop` asks of the submits under way, and a future done once they have returned."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from contextvars import ContextVar


class _Work:
    """One submit or queue run under way."""

    __slots__ = ("stopped",)

    def __init__(self) -> None:
        self.stopped = False


# The submit or queue run the running code belongs to (its turn's task inherits it).
_CURRENT: ContextVar[_Work | None] = ContextVar("ollie_stopping_work", default=None)


class Stopping:
    """The submits and queue runs under way; `ask` stops them, not those that begin later (see `Core.stop`)."""

    def __init__(self) -> None:
        self._under_way: set[_Work] = set()
        self._waits: list[tuple[asyncio.Future[bool], set[_Work]]] = []

    @property
    def asked(self) -> bool:
        """Whether a stop was asked of the submit or queue run this code runs in: no turn of it begins then."""
        work = _CURRENT.get()
        return work is not None and work.stopped

    @contextlib.contextmanager
    def working(self) -> Iterator[None]:
        """One submit or queue run while it lasts; the last of those a stop was asked of ends that stop."""
        work = _Work()
        self._under_way.add(work)
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
        self._waits.append((done, set(self._under_way)))
        return done
