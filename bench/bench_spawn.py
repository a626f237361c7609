"""Cost of a sandboxed spawn (fork server + Landlock, default policy: its network namespace included) against a bare posix_spawn.

Both run `bash -c true` and collect its output the same way; rounds are
interleaved so machine noise hits both alike. Prints the medians and the ratio,
back to back and then paced (PACE_S apart, as steps come in a session: the
fork server then has spare supervisors ready in their pids cgroups).
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

from ollie.sandbox.policy import load_policy
from ollie.sandbox.rules import landlock_abi
from ollie.sandbox.spawn import spawn_sandboxed

COMMAND = ["bash", "-c", "true"]
PACE_S = 0.05


async def bare_spawn(cwd: Path, env: dict[str, str]) -> None:
    """The floor: one `posix_spawn` of the same program in its own session, its output read and its exit awaited
    on the loop (a pidfd), as spawn_sandboxed's are (asyncio's subprocess adds a Popen and a waiter thread)."""
    loop = asyncio.get_running_loop()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
               (os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)]
    try:
        pid = os.posix_spawnp(COMMAND[0], COMMAND, env, file_actions=actions, setsid=True)
    finally:
        os.close(out_w)
        os.close(err_w)
    pidfd = os.pidfd_open(pid)
    done, left = loop.create_future(), {out_r, err_r, pidfd}

    def ready(fd: int) -> None:
        if fd == pidfd or not os.read(fd, 1 << 16):
            loop.remove_reader(fd)
            os.close(fd)
            left.discard(fd)
            if not left:
                done.set_result(None)

    for fd in left:
        loop.add_reader(fd, ready, fd)
    await done
    os.waitpid(pid, 0)


async def sandboxed_spawn(policy, cwd: Path, env: dict[str, str]) -> None:
    """One sandboxed spawn under `policy`, output collected."""
    proc = await spawn_sandboxed(COMMAND, policy=policy, cwd=cwd, env=env)
    await proc.communicate()
    if proc.warnings:
        raise SystemExit(f"not sandboxed: {proc.warnings}")


async def timed(spawn) -> float:
    """Seconds one awaited spawn took."""
    start = time.perf_counter()
    await spawn()
    return time.perf_counter() - start


async def measure(policy, cwd: Path, env: dict[str, str], rounds: int, pace: float) -> tuple[float, float]:
    """Median ms of (bare, sandboxed) over `rounds` interleaved pairs, each spawn `pace` seconds after the last."""
    bare, sandboxed = [], []
    for _ in range(rounds):
        await asyncio.sleep(pace)
        bare.append(await timed(lambda: bare_spawn(cwd, env)))
        await asyncio.sleep(pace)
        sandboxed.append(await timed(lambda: sandboxed_spawn(policy, cwd, env)))
    return statistics.median(bare) * 1e3, statistics.median(sandboxed) * 1e3


async def main(rounds: int) -> None:
    """Warm up, then time `rounds` interleaved pairs, back to back and paced."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        policy = load_policy("default", cwd=cwd)
        for _ in range(5):
            await bare_spawn(cwd, env)
            await sandboxed_spawn(policy, cwd, env)
        results = [("back to back", await measure(policy, cwd, env, rounds, 0.0)),
                   (f"paced {PACE_S * 1e3:.0f} ms", await measure(policy, cwd, env, rounds // 2, PACE_S))]
    print(f"Landlock ABI {landlock_abi()}, {' '.join(COMMAND)}")
    for name, (bare_ms, sandboxed_ms) in results:
        print(f"{name}: bare {bare_ms:.2f} ms, sandboxed {sandboxed_ms:.2f} ms, ratio {sandboxed_ms / bare_ms:.2f}x")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
