"""The locks that keep an editor from being handed a path a running step may swap (ollie.sandbox.writers)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ollie.sandbox import writers


async def quiet(path: Path) -> bool:
    async with writers.quiet(path) as alone:
        return alone


async def test_a_step_holding_a_dir_keeps_everything_beneath_it_from_being_quiet(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLIE_STATE_DIR", str(tmp_path / "state"))
    ws, other = tmp_path / "ws", tmp_path / "other"
    release = await writers.hold([ws])
    assert not await quiet(ws / "sub" / "a.py") and not await quiet(ws)
    assert await quiet(other / "a.py") and await quiet(tmp_path)  # beside it, or above it: a step there cannot swap it
    release()
    assert await quiet(ws / "sub" / "a.py")


async def test_a_step_starting_while_quiet_is_held_waits_and_a_cancelled_one_leaves_no_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLIE_STATE_DIR", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    async with writers.quiet(ws / "a.py") as alone:
        assert alone
        waiting = asyncio.ensure_future(writers.hold([ws]))
        cancelled = asyncio.ensure_future(writers.hold([ws]))
        await asyncio.sleep(0)
        cancelled.cancel()
        assert not waiting.done()
    release = await waiting  # once the editor's answer is in
    assert not await quiet(ws / "a.py")
    release()
    # The cancelled one took its lock in its thread after all, and lets it go: quiet again.
    for _ in range(3000):
        if await quiet(ws / "a.py"):
            break
        await asyncio.sleep(0.01)
    else:
        pytest.fail("the cancelled step's lock was never released")
