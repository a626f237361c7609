"""A directory whose walk stalls, as on a hung NFS or FUSE mount, until the test's loop lets it go; the loop's turns
counted."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

T = TypeVar("T")


class StalledWalk:
    """`os.path.realpath` of `path` (what `Path.resolve` walks) or its `os.lstat` (`beneath.real_dir`'s walk, a name at a
    time) waits for `release_when_walked`; `held`: it was let go.

    On the loop, the walk freezes it: nothing can let it go, and it goes on after 5 s with `held` false.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
        self.walking, self.release, self.held = threading.Event(), threading.Event(), False

        def stalling(walk: Any) -> Any:
            def stalled(name: Any, *args: Any, **kwargs: Any) -> Any:
                if os.fspath(name) == str(path) and not self.release.is_set():
                    self.walking.set()
                    self.held = self.release.wait(5)
                return walk(name, *args, **kwargs)
            return stalled

        monkeypatch.setattr(os.path, "realpath", stalling(os.path.realpath))
        monkeypatch.setattr(os, "lstat", stalling(os.lstat))

    async def release_when_walked(self) -> None:
        """Wait (off the loop) until the walk stalls, then let it go."""
        await asyncio.to_thread(self.walking.wait, 30)
        self.release.set()

    async def walked_off_the_loop(self, walk: Coroutine[Any, Any, T]) -> T:
        """Run `walk`, which walks the stalled path, let the stall go, and check the loop served meanwhile."""
        task = asyncio.ensure_future(walk)
        await self.release_when_walked()
        result = await task
        assert self.held, "the loop served nothing while the cwd's walk stalled"
        return result


class LoopTicks:
    """Counts the event loop's turns from now (`count`): work that holds the loop lets none pass."""

    def __init__(self) -> None:
        self.count = 0
        self._task = asyncio.ensure_future(self._tick())

    async def _tick(self) -> None:
        while True:
            self.count += 1
            await asyncio.sleep(0)

    def stop(self) -> int:
        """Stop counting; the turns counted."""
        self._task.cancel()
        return self.count
