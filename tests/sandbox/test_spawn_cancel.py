"""A spawn cancelled before its pid is known: the supervisor kills the tool process, even one that never execs,
and the cancel returns only once the step's processes are gone."""

from __future__ import annotations

import asyncio
import os
import random
import select
import signal
import time
from pathlib import Path

import pytest

from ollie.sandbox import spawn as spawn_module
from ollie.sandbox.errors import HelperDiedError
from ollie.sandbox.rules import landlock_abi
from ollie.sandbox.spawn import ForkServer, spawn_sandboxed
from ollie.tools.execute.spawn import run_process
from tests.procs import eventually, new_mark, processes_with


@pytest.mark.skipif(landlock_abi() < 1, reason="needs a kernel with Landlock")
@pytest.mark.parametrize("fallback", [False, True])
async def test_a_cancelled_spawn_whose_process_never_execs_is_killed(ws, monkeypatch, tmp_path, fallback):
    if fallback:  # the launcher is the supervisor: the same protocol
        _use_launcher(monkeypatch, tmp_path)
    # The worker opens its script before the step counts as started: a FIFO nobody writes blocks it there
    # for good, so its supervisor never reports a pid for the cancelled spawn's killer to use.
    fifo = ws.work / "script.py"
    os.mkfifo(fifo)
    spawn = asyncio.ensure_future(spawn_sandboxed(["python3", "-I", str(fifo)], policy=ws.default_policy(),
                                                  cwd=ws.work, env=ws.env, python=(str(fifo), [])))
    deadline = time.monotonic() + 15
    while not _waiting_in(ws.work):
        assert time.monotonic() < deadline, "the step never opened its script"
        assert not spawn.done(), spawn
        await asyncio.sleep(0.05)
    spawn.cancel()  # a timeout or an interrupt while the spawn is in flight
    with pytest.raises(asyncio.CancelledError):
        await spawn
    assert not _waiting_in(ws.work), "the cancelled step's process still waits on its script"


@pytest.mark.skipif(landlock_abi() < 1, reason="needs a kernel with Landlock")
@pytest.mark.parametrize("setup", ["pid namespace", "no pid namespace", "launcher"])
async def test_a_spawn_cancelled_at_any_moment_has_no_process_left_once_the_cancel_returns(
        ws, monkeypatch, tmp_path, setup):
    if setup == "no pid namespace":
        monkeypatch.setenv("OLLIE_SANDBOX_PIDNS", "0")
    if setup == "launcher":
        _use_launcher(monkeypatch, tmp_path)
    marker = f"ollie-cancel-stress-{os.getpid()}-{time.monotonic_ns()}"
    policy = ws.default_policy()
    delays = random.Random(7)
    cancelled = 0
    for _ in range(32):
        # Random moments, from before the request is sent to after the tool runs (a spawn: ~4 ms with a PID
        # namespace, ~17 ms without, on a 2-core machine).
        try:
            proc = await asyncio.wait_for(spawn_sandboxed(["bash", "-c", "sleep 30; exit", marker], policy=policy,
                                                          cwd=ws.work, env=ws.env), delays.uniform(0, 0.03))
        except TimeoutError:
            cancelled += 1
            assert processes_with(marker) == [], "a cancelled spawn's process runs after the cancel returned"
            continue
        proc.kill_group()
        await proc.wait()
        proc.close()
    assert cancelled > 0


@pytest.mark.skipif(landlock_abi() < 1, reason="needs a kernel with Landlock")
@pytest.mark.parametrize("pidns", ["1", "0"], ids=["pid namespace", "no pid namespace"])
# A hostile step leaves its group and session at once (setsid, a fork that outlives its parent): the sweep ends it too.
@pytest.mark.parametrize("code", ["sleep 600; exit", 'setsid -f bash -c "sleep 600; exit" "$0"; sleep 600; exit'],
                         ids=["in its group", "escaped by setsid"])
async def test_a_spawn_cancelled_while_its_connection_opens_kills_its_step_already_running(
        ws, monkeypatch, pidns, code):
    """The fork server's request goes ahead of the per-spawn connection: an interrupt that lands while the
    connection opens, once the supervisor has started the step and sent its pid, still ends the step (it ran on,
    its supervisor waiting for it, when the daemon closed that socket unread)."""
    monkeypatch.setenv("OLLIE_SANDBOX_PIDNS", pidns)
    mark, replied, go = new_mark(), asyncio.Event(), asyncio.Event()
    open_connection = asyncio.open_unix_connection

    async def opening_late(*, sock):
        # Held until the supervisor's pid is on the socket (the step runs), then until the test cancelled.
        loop, readable = asyncio.get_running_loop(), asyncio.Event()
        loop.add_reader(sock.fileno(), readable.set)
        try:
            await readable.wait()
        finally:
            loop.remove_reader(sock.fileno())
        replied.set()
        await go.wait()
        return await open_connection(sock=sock)

    monkeypatch.setattr(asyncio, "open_unix_connection", opening_late)
    spawn = asyncio.ensure_future(spawn_sandboxed(["bash", "-c", code, mark],
                                                  policy=ws.default_policy(), cwd=ws.work, env=ws.env))
    try:
        await asyncio.wait_for(replied.wait(), 30)
        spawn.cancel()  # an interrupt, exactly there
        go.set()
        with pytest.raises(asyncio.CancelledError):
            await spawn
        assert processes_with(mark) == [], "the cancelled spawn's step runs on"
    finally:
        for pid in processes_with(mark):  # what the old code left running
            os.kill(pid, signal.SIGKILL)


def _use_launcher(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A fork server that cannot start: every spawn falls back to the launcher."""
    broken = tmp_path / "broken_server.py"
    broken.write_text("raise SystemExit(3)\n")
    monkeypatch.setattr(spawn_module, "_server", ForkServer(broken))


def _waiting_in(directory: Path) -> bool:
    """Whether a process working in `directory` waits in the open of a FIFO for a writer (found without opening
    the FIFO for writing, which would let it go on)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/wchan").read_text() == "wait_for_partner" and \
                    os.readlink(f"/proc/{pid}/cwd") == str(directory):
                return True
        except OSError:
            continue
    return False


# A fork server whose supervisors die once their step has run, before they report its pid.
DYING_SUPERVISORS = """
import json, os, socket, subprocess, sys
control = socket.socket(fileno=int(sys.argv[1]))
while True:
    message, fds, _, _ = socket.recv_fds(control, 1024, 4)
    if not message:
        break
    conn = socket.socket(fileno=fds[0])
    request = json.loads(conn.makefile("rb").readline())
    subprocess.run(request["argv"], cwd=request["cwd"], env=request["env"], check=False)
    conn.close()
    for fd in fds[1:]:
        os.close(fd)
"""


async def test_a_step_whose_supervisor_died_unheard_is_never_run_again(monkeypatch, tmp_path):
    # Bug: the spawn took the silence for a fork server that never started and ran the step again through the
    # launcher: twice, side effects and all (in the chaos test, a second `sleep 60` the turn waited for).
    script = tmp_path / "dying_supervisors.py"
    script.write_text(DYING_SUPERVISORS)
    server = ForkServer(script)
    monkeypatch.setattr(spawn_module, "_server", server)
    ran = tmp_path / "ran"
    try:
        with pytest.raises(HelperDiedError, match=r"^ollie's sandbox helper \(this step's supervisor\) died"):
            await spawn_sandboxed(["/bin/sh", "-c", f"echo once >> {ran}"], policy=None, cwd=tmp_path, env={})
        assert ran.read_text() == "once\n"
    finally:
        server.close()


def _parent(pid: int) -> int:
    return int(next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                    if line.startswith("PPid:")))


def _watched(pid: int) -> bool:
    """Whether this process holds a pidfd of `pid` (run_process watches its step's exit with one)."""
    for fdinfo in Path("/proc/self/fdinfo").iterdir():
        try:
            if f"\nPid:\t{pid}\n" in fdinfo.read_text():
                return True
        except OSError:
            continue
    return False


@pytest.mark.skipif(landlock_abi() < 1, reason="needs a kernel with Landlock")
async def test_a_stop_that_lands_as_the_step_ends_still_stops_the_call(ws):
    """Bug (CI, loaded): a Stop that came in the loop pass where the step's end was seen was lost (3.11's
    asyncio.wait_for returns the result then): the call went on, and the edit after it waited 30 s for a step."""
    marker = f"ollie-stop-at-exit-{new_mark()}"
    go = ws.work / "go"
    run = asyncio.ensure_future(run_process(
        ["bash", "-c", "while [ ! -e go ]; do sleep 0.01; done", marker], policy=ws.default_policy(), cwd=ws.work,
        env=ws.env, stdin=None, timeout=60, limit_bytes=1 << 16))
    await eventually(lambda: processes_with(marker), "the step runs")
    tool = processes_with(marker)[0]
    init = _parent(tool)  # the step's init (or supervisor): the pid run_process waits on
    await eventually(lambda: _watched(init) or run.done(), "run_process waits for the step's end")
    ends = [os.pidfd_open(pid) for pid in (tool, init)]
    try:
        go.touch()
        # The loop is held (on purpose, on events) until the step is over: its next pass sees the end...
        while ends:
            ready, _, _ = select.select(ends, [], [], 30)
            assert ready, "the step did not end"
            for fd in ready:
                ends.remove(fd)
                os.close(fd)
    finally:
        for fd in ends:
            os.close(fd)
    loop = asyncio.get_running_loop()
    loop.call_soon(loop.call_soon, run.cancel)  # ...and the Stop comes in the pass after
    with pytest.raises(asyncio.CancelledError):
        await run
