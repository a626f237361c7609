"""LockManager: shared reads, exclusive writes, timeouts, and release on cancellation."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ollie.tools.execute.flock import LockManager, LockTimeout, combine_classes


async def _held_intervals(manager: LockManager, classes: list[str], hold: float = 0.15) -> list[tuple[float, float]]:
    loop = asyncio.get_running_loop()

    async def one(parallel: str) -> tuple[float, float]:
        async with manager.hold(parallel):  # type: ignore[arg-type]
            start = loop.time()
            await asyncio.sleep(hold)
            return start, loop.time()

    return await asyncio.gather(*(one(c) for c in classes))


def _overlaps(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


async def test_reads_share_the_lock(tmp_path: Path) -> None:
    a, b = await _held_intervals(LockManager(tmp_path), ["read", "read"])
    assert _overlaps(a, b)


@pytest.mark.parametrize("classes", [["write", "write"], ["read", "write"], ["global", "read"], ["global", "write"]])
async def test_writes_and_global_are_exclusive(tmp_path: Path, classes: list[str]) -> None:
    a, b = await _held_intervals(LockManager(tmp_path), classes)
    assert not _overlaps(a, b)


async def test_timeout_when_the_lock_stays_busy(tmp_path: Path) -> None:
    manager = LockManager(tmp_path)
    async with manager.hold("write"):
        with pytest.raises(LockTimeout):
            async with manager.hold("read", timeout=0.05):
                pass


async def test_cancelled_waiter_never_takes_the_lock(tmp_path: Path) -> None:
    manager = LockManager(tmp_path)
    entered = asyncio.Event()

    async def waiter() -> None:
        async with manager.hold("write"):
            entered.set()

    async with manager.hold("write"):
        task = asyncio.ensure_future(waiter())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert not entered.is_set()
    async with manager.hold("write", timeout=0.5):
        pass


def test_combine_classes() -> None:
    assert combine_classes(["read", "read"]) == "read"
    assert combine_classes(["read", "write"]) == "write"
    assert combine_classes(["read", None]) == "global"
    assert combine_classes([]) == "global"
