"""An elevated step takes the session's exclusive lock, never the shared one its script's `read` annotation allows."""

from __future__ import annotations

import asyncio

from .conftest import Workspace
from .test_call_tool import SLOW, _interval, _overlap

SLOW_READ = SLOW.format(mode="read")


def _call(label: str, *, elevated: bool = False) -> dict[str, object]:
    return {"tool": "slow_read", "args": [label], **({"elevated": True} if elevated else {})}


async def test_an_elevated_read_script_does_not_run_beside_reads_in_one_call(ws: Workspace) -> None:
    ws.script("slow_read", SLOW_READ)
    calls = [_call("r1"), _call("up", elevated=True), _call("r2")]
    result = await ws.server().call("call_tool", {"calls": calls})
    assert not result.is_error, result.text
    r1, up, r2 = (_interval(ws, label) for label in ("r1", "up", "r2"))
    assert not _overlap(up, r1) and not _overlap(up, r2)


async def test_an_elevated_call_and_a_read_call_in_a_parallel_batch_take_turns(ws: Workspace) -> None:
    ws.script("slow_read", SLOW_READ)
    server = ws.server()
    read_args, elevated_args = {"calls": [_call("r")]}, {"calls": [_call("up", elevated=True)]}
    assert server.classify_parallel("call_tool", read_args) == "read"
    assert server.classify_parallel("call_tool", elevated_args) == "global"
    # Two calls of one batch at once, as a dispatcher that trusted the classes would run them: the lock still holds.
    results = await asyncio.gather(server.call("call_tool", read_args), server.call("call_tool", elevated_args))
    assert not any(r.is_error for r in results), [r.text for r in results]
    assert not _overlap(_interval(ws, "r"), _interval(ws, "up"))
