"""Cost of a sandboxed spawn (fork server + Landlock, default policy) against a bare spawn.

Both run `bash -c true` and collect its output the same way; rounds are
interleaved so machine noise hits both alike. Prints the medians and the ratio.
Usage: python bench/bench_spawn.py [ROUNDS]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ollie.sandbox import landlock_abi, load_policy, spawn_sandboxed

COMMAND = ["bash", "-c", "true"]


async def bare_spawn(cwd: Path, env: dict[str, str]) -> None:
    """One plain asyncio subprocess in its own session, output collected."""
    proc = await asyncio.create_subprocess_exec(*COMMAND, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                start_new_session=True)
    await proc.communicate()


async def sandboxed_spawn(policy, cwd: Path, env: dict[str, str]) -> None:
    """One sandboxed spawn under `policy`, output collected."""
    proc = await spawn_sandboxed(COMMAND, policy=policy, cwd=cwd, env=env)
    await proc.communicate()
    if proc.warnings:
        raise SystemExit(f"not sandboxed: {proc.warnings}")


async def main(rounds: int) -> None:
    """Warm up, then time `rounds` interleaved pairs."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        policy = load_policy("default", cwd=cwd)
        for _ in range(5):
            await bare_spawn(cwd, env)
            await sandboxed_spawn(policy, cwd, env)
        bare, sandboxed = [], []
        for _ in range(rounds):
            start = time.perf_counter()
            await bare_spawn(cwd, env)
            middle = time.perf_counter()
            await sandboxed_spawn(policy, cwd, env)
            sandboxed.append(time.perf_counter() - middle)
            bare.append(middle - start)
    bare_ms, sandboxed_ms = statistics.median(bare) * 1e3, statistics.median(sandboxed) * 1e3
    print(f"Landlock ABI {landlock_abi()}, {rounds} rounds of {' '.join(COMMAND)}")
    print(f"bare spawn:      median {bare_ms:.2f} ms")
    print(f"sandboxed spawn: median {sandboxed_ms:.2f} ms")
    print(f"ratio: {sandboxed_ms / bare_ms:.2f}x")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
