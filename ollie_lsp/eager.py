"""A request's handler run at once, up to its first wait (Python 3.12's eager tasks, on 3.11).

pygls starts a coroutine handler as a task, a loop pass later, and sends its answer from a done callback, one
more pass on: with 50 sessions streaming a pass is tens of ms, and `ollie/state` waited ~3 of them. Started
here, a handler that never waits is answered in the callback that read it; one that waits goes on in a task.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Generator
from typing import Any


class _Started(Coroutine[Any, Any, Any]):
    """A task's coroutine whose first step was taken already: the task's first step hands on what it waits for."""

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self._coro = coro
        self._waiting: Any = None
        self._fresh = self._ended = False

    def step(self, done: asyncio.Future[Any]) -> bool:
        """The coroutine's first step, now; whether it waits (else `done` has its outcome)."""
        try:
            self._waiting = self._coro.send(None)
            self._fresh = True
        except StopIteration as stop:
            done.set_result(stop.value)
        except asyncio.CancelledError:
            done.cancel()
        except Exception as exc:  # handed to whoever answers, as a task's failure would be
            done.set_exception(exc)
        self._ended = not self._fresh
        return self._fresh

    def send(self, value: Any) -> Any:
        """A step of the task: its first yields what the first step waits for, the others go on."""
        if self._fresh:
            self._fresh = False
            return self._waiting
        return self._coro.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        """The task's cancellation, raised where the coroutine waits (or at once when it ended eagerly)."""
        if self._ended:
            raise asyncio.CancelledError
        self._fresh = False
        return self._coro.throw(typ) if val is None and tb is None else self._coro.throw(typ, val, tb)

    def close(self) -> None:
        """Close the coroutine."""
        self._coro.close()

    def __await__(self) -> Generator[Any, None, Any]:
        raise TypeError("run by its task only")


def start_eagerly(coro: Coroutine[Any, Any, Any]) -> asyncio.Future[Any]:
    """Run `coro` up to its first wait: a done future when it ended there, else the task that carries it on.

    From a loop callback that is no task's step; `asyncio.current_task()` is that task meanwhile (timeouts and
    cancel scopes need one).
    """
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    started = _Started(coro)
    task = loop.create_task(started, context=context)  # its first step, queued, hands on the eager step's wait
    done = loop.create_future()
    asyncio.tasks._enter_task(loop, task)  # as 3.12's eager start does
    try:
        waits = context.run(started.step, done)
    finally:
        asyncio.tasks._leave_task(loop, task)
    if waits:
        return task
    task.cancel()  # it ended: the queued step cancels the task without running anything
    return done
