"""Coordinating tool runs of one session with flock(2): reads share, writes and the rest are exclusive."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

from ollie.tools.base import ParallelClass

LOCK_FILE = "tools.lock"


class LockTimeout(Exception):
    """The lock was not free before the call's deadline."""


def combine_classes(annotations: Iterable[str | None]) -> ParallelClass:
    """The class of a group of scripts: read if all read; write if all annotated and any write; else global."""
    seen = list(annotations)
    if not seen or any(a not in ("read", "write") for a in seen):
        return "global"
    return "read" if all(a == "read" for a in seen) else "write"


class LockManager:
    """Session-wide shared/exclusive locks on one lock file under the session's lock dir."""

    def __init__(self, lock_dir: Path) -> None:
        self.lock_dir = lock_dir

    @contextlib.asynccontextmanager
    async def hold(self, parallel: ParallelClass, *, timeout: float | None = None) -> AsyncIterator[None]:
        """Hold the lock for `parallel`: LOCK_SH for read, LOCK_EX for write and global."""
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            await self._acquire(fd, fcntl.LOCK_SH if parallel == "read" else fcntl.LOCK_EX, timeout)
            yield
        finally:
            # Closing the descriptor releases the lock, also when the call was cancelled.
            os.close(fd)

    async def _acquire(self, fd: int, mode: int, timeout: float | None) -> None:
        # Non-blocking retries keep the event loop free and make cancellation immediate;
        # a thread blocked in flock() could not be cancelled and would take the lock later.
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
            if deadline is not None and loop.time() >= deadline:
                raise LockTimeout(f"the session's tool lock stayed busy for {timeout:g} s")
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)
