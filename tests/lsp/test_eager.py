"""Requests run at once: one that never waits is answered in the loop callback that read it (not passes later)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from ollie.loopshare import PASS_CPU_S
from ollie_lsp.server import OllieServer


class _Writer:
    def __init__(self) -> None:
        self.out: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.out.append(json.loads(data.split(b"\r\n\r\n", 1)[1]))


def _server() -> tuple[OllieServer, _Writer]:
    server = OllieServer(make_table=lambda ls: None, load_engine=lambda: None)  # type: ignore[arg-type, return-value]
    writer = _Writer()
    server.protocol.set_writer(writer)  # type: ignore[arg-type]
    server.protocol.serving = lambda: True  # type: ignore[attr-defined]: as while serve_client reads
    return server, writer


def _frame(msg_id: int, method: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": {}}).encode()


async def _read_in_a_callback(server: OllieServer, *frames: bytes) -> None:
    # As the stdin reader hands frames over: from a plain loop callback, not a task; what a pass's CPU budget left (a
    # first request's converters made, a loaded machine) a pass later, as the reader does (it was dropped: a hang).
    rest = list(frames)
    while rest:
        done: asyncio.Future[list[bytes]] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(
            lambda done=done, batch=rest: done.set_result(server.protocol.receive(batch)))  # type: ignore[attr-defined]
        rest = await done


async def test_a_request_that_never_waits_is_answered_in_the_callback_that_read_it():
    server, writer = _server()

    @server.feature("test/quick")
    async def quick(ls: OllieServer, params: Any) -> dict[str, Any]:
        return {"ok": True}

    @server.feature("test/broken")
    async def broken(ls: OllieServer, params: Any) -> dict[str, Any]:
        raise ValueError("no such thing")

    done = asyncio.get_running_loop().create_future()

    def read() -> None:  # a frame a batch: the first of a batch is always handled, whatever the pass's budget
        for frame in (_frame(1, "test/quick"), _frame(2, "test/broken")):
            server.protocol.receive([frame])  # type: ignore[attr-defined]
        done.set_result([m.get("id") for m in writer.out])  # what went out before any other callback ran

    asyncio.get_running_loop().call_soon(read)
    assert await done == [1, 2]
    assert writer.out[0]["result"] == {"ok": True}
    assert "no such thing" in writer.out[1]["error"]["message"]
    for _ in range(3):  # the tasks that were not needed end quietly
        await asyncio.sleep(0)
    assert {t for t in asyncio.all_tasks() if t is not asyncio.current_task()} == set()


async def test_a_request_that_waits_carries_on_in_its_task_with_timeouts_and_cancellation():
    server, writer = _server()
    release = asyncio.Event()
    seen: list[Any] = []

    @server.feature("test/slow")
    async def slow(ls: OllieServer, params: Any) -> dict[str, Any]:
        task = asyncio.current_task()
        async with asyncio.timeout(30):  # needs a task, eagerly too
            await release.wait()
        seen.append(task is asyncio.current_task())
        return {"ok": True}

    @server.feature("test/stuck")
    async def stuck(ls: OllieServer, params: Any) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    await _read_in_a_callback(server, _frame(1, "test/slow"), _frame(2, "test/stuck"))
    assert writer.out == []
    cancel = json.dumps({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 2}}).encode()
    await _read_in_a_callback(server, cancel)
    release.set()
    async with asyncio.timeout(30):  # bounded: pytest-timeout's exception, raised in a loop callback, is swallowed
        while len(writer.out) < 2:
            await asyncio.sleep(0)
    answers = {m["id"]: m for m in writer.out}
    assert answers[1]["result"] == {"ok": True} and seen[-1] is True
    assert "cancel" in answers[2]["error"]["message"] and "cancelled" in seen


async def test_a_batch_is_handled_until_the_passs_cpu_budget_is_spent_and_the_rest_is_returned():
    # 50 submits sent together ran in one ~6 ms callback; now the reader hands what is left over a pass later.
    server, writer = _server()

    @server.feature("test/busy")
    async def busy(ls: OllieServer, params: Any) -> dict[str, Any]:
        started = time.thread_time()
        while time.thread_time() - started <= PASS_CPU_S:  # CPU, as a submit's handler spends
            pass
        return {"ok": True}

    frames = [_frame(n, "test/busy") for n in range(3)]
    done = asyncio.get_running_loop().create_future()
    # As the stdin reader hands frames over: from a plain loop callback, where handlers run at once.
    asyncio.get_running_loop().call_soon(lambda: done.set_result(server.protocol.receive(frames)))  # type: ignore[attr-defined]
    assert await done == frames[1:] and [m["id"] for m in writer.out] == [0]
