"""Tools: a sandboxed `execute_code` round trip and a Python tool call vs a bare spawn, and the parallel fan-out.

Run alone: python -m bench.bench_tools [ROUNDS]
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

from bench.bench_spawn import PACE_S, bare_spawn, sandboxed_spawn
from bench.common import Row, descendants_pss_kb, median, run_alone
from ollie.sandbox.policy import load_policy
from ollie.sandbox.rules import landlock_abi
from ollie.testing import Reply, ScriptedLLMServer
from ollie.tools.execute.server import ExecuteServer

SLEEP_TOOL = """#!/bin/sh
# description: Sleep one second (a read-safe tool, for the fan-out benchmark).
# args: (none)
# ollie:parallel read
sleep 1
echo slept
"""


async def _spawn_rows(rounds: int, work: Path) -> list[Row]:
    """Bare spawn, sandboxed spawn, `execute_code true` and `call_tool file_read`, interleaved round by round."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    policy = load_policy("default", cwd=work)
    server = ExecuteServer(cwd=work, session_id="1700000000000000000-bench0", lock_dir=work.parent / "locks")
    args = {"steps": [{"code": "true"}]}
    (work / "ten.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    read_args = {"calls": [{"tool": "file_read", "args": ["ten.txt"]}]}

    async def timed(action) -> float:
        # Paced, as steps come in a session (a model's turn between them): the fork server's spares are ready.
        await asyncio.sleep(PACE_S)
        start = time.perf_counter()
        await action()
        return time.perf_counter() - start

    async def execute_true() -> None:
        result = await server.call("execute_code", args)
        if result.is_error:
            raise RuntimeError(f"execute_code true failed: {result.text}")

    async def read() -> None:
        # A bundled Python tool script through the real engine path (the fork server's pre-imported worker).
        result = await server.call("call_tool", read_args)
        if result.is_error or "line 10" not in result.text:
            raise RuntimeError(f"file_read failed: {result.text}")

    for _ in range(5):  # warm the fork server, the page cache and the tool catalogue
        await bare_spawn(work, env)
        await sandboxed_spawn(policy, work, env)
        await execute_true()
        await read()
    # Two interleaved loops, each with its own bare reference: the engine calls leave work in the background
    # (the fork server preparing a spare supervisor, a Python worker's teardown) that would land in the time of
    # whatever follows them, so the sandbox's own spawn is paired with bare spawns alone.
    bare_own, sandboxed = [], []
    for _ in range(rounds):
        bare_own.append(await timed(lambda: bare_spawn(work, env)))
        sandboxed.append(await timed(lambda: sandboxed_spawn(policy, work, env)))
    # What the fork server and its ready spares hold meanwhile (spares copy their shared pages ahead: see spare.py).
    helpers, helpers_kb = descendants_pss_kb(os.getpid())
    memory = Row(f"the sandbox's idle helpers after paced spawns (fork server, spares: {helpers} processes), PSS, MiB",
                 helpers_kb / 1024, unit="MiB")
    bare, executed, python_tool = [], [], []
    for _ in range(rounds):
        bare.append(await timed(lambda: bare_spawn(work, env)))
        executed.append(await timed(execute_true))
        python_tool.append(await timed(read))
    round_trip = Row("tool spawn: execute_code `true` round trip, paced (vs bare posix_spawn of bash -c true)",
                     median(executed) * 1e3, median(bare) * 1e3, target="<= 4x")
    round_trip.ok = round_trip.ratio is not None and round_trip.ratio <= 4
    # Every layer included: Landlock, mount and PID namespaces, seccomp, no capabilities, supervisor, pids cgroup.
    own = Row(f"sandbox's own spawn cost, paced: spawn_sandboxed (Landlock ABI {landlock_abi()}) vs bare posix_spawn",
              median(sandboxed) * 1e3, median(bare_own) * 1e3, target="<= 3x")
    own.ok = own.ratio is not None and own.ratio <= 3
    python_row = Row("Python tool: call_tool file_read of a 10-line file, paced (vs bare posix_spawn of bash -c true)",
                     median(python_tool) * 1e3, median(bare) * 1e3, target="<= 5x")
    python_row.ok = python_row.ratio is not None and python_row.ratio <= 5
    return [round_trip, own, memory, python_row]


async def _fanout_rows(rounds: int, work: Path) -> list[Row]:
    """Time from the first `call` event to the last `tool` event, 1 call vs 4, in turns."""
    from ollie.agent.core import Core

    tools = work.parent / "bench-tools"
    tools.mkdir(exist_ok=True)
    script = tools / "bench_sleep"
    script.write_text(SLEEP_TOOL)
    script.chmod(0o755)
    os.environ["OLLIE_TOOLS_PATH"] = str(tools)
    call = ("call_tool", {"calls": [{"tool": "bench_sleep", "args": []}]})
    samples: dict[int, list[float]] = {1: [], 4: []}
    with ScriptedLLMServer("openai") as srv:
        core = await Core.create(agent="default", cwd=work, env=srv.env(), sessions_dir=work.parent / "sessions")
        core.set_approval("auto")  # fan-out is measured, not the approval questions (nobody answers them here)
        try:
            for _ in range(rounds):
                for calls in (1, 4):
                    srv.script(Reply(tool_calls=[call] * calls), Reply.text("done"))
                    sub = core.bus.subscribe()
                    first_call = last_tool = 0.0
                    task = asyncio.ensure_future(core.submit("fan out"))
                    tools_seen = 0
                    async for event in sub:
                        now = time.perf_counter()
                        if event.role == "call" and not first_call:
                            first_call = now
                        elif event.role == "tool":
                            tools_seen += 1
                            last_tool = now
                            if "slept" not in event.content:
                                raise RuntimeError(f"bench_sleep failed: {event.content}")
                        elif event.role == "turn" and event.content != "start":
                            break
                    sub.close()
                    result = await task
                    if result.stop != "end" or tools_seen != calls:
                        raise RuntimeError(f"fan-out turn: {result}, {tools_seen} results")
                    samples[calls].append(last_tool - first_call)
                    await core.clear()
        finally:
            await core.close()
    four = Row("parallel fan-out: 4 read-safe 1 s calls (vs 1 call), seconds", median(samples[4]),
               median(samples[1]), unit="s", target="<= 1.3 s")
    four.ok = four.value <= 1.3
    return [four]


def run(rounds: int = 30, fanout_rounds: int = 2) -> tuple[list[Row], list[str]]:
    """Rows for spawn, the Python tool call and fan-out."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        rows = asyncio.run(_spawn_rows(rounds, work))
        rows += asyncio.run(_fanout_rows(fanout_rounds, work))
    return rows, []


if __name__ == "__main__":
    run_alone(run)
