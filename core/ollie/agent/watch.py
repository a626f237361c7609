"""Waiting for an observable value to change, without polling."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class ChangeWatch:
    """Wakes every waiter whenever `changed()` is called; waiters re-read the value they watch."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def changed(self) -> None:
        """Something observable changed: wake the waiters."""
        self._event.set()
        self._event = asyncio.Event()

    async def wait_change(self, read: Callable[[], str], current: str, timeout: float | None) -> tuple[str, bool]:
        """Wait until `read()` differs from `current`: (value, True), or (value, False) after `timeout`."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            value = read()
            if value != current:
                return value, True
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return value, False
            try:
                await asyncio.wait_for(self._event.wait(), remaining)
            except TimeoutError:
                value = read()
                return value, value != current
