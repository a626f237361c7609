"""Finding a sandboxed step's processes from the host.

A sandboxed step runs in a PID namespace of its own: the pids it sees (`$$`, `$!`,
`os.getpid()`) are not the host's, so a test looks its processes up by a marker in
their command line (`sleep 60.<mark>`), or translates a namespace pid through a
host process known to be in the step's namespace (`host_pid`).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def new_mark() -> str:
    """A unique run of digits: `sleep 60.<mark>` sleeps a minute and names its process."""
    return f"{secrets.randbelow(10**12):012d}"


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains `marker` (a zombie's is empty: excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def wait_for_processes(marker: str, count: int = 1, *, timeout: float = 30.0) -> list[int]:
    """The host pids of the `count` (or more) processes marked `marker`, once they all run."""
    deadline = time.monotonic() + timeout
    while len(found := processes_with(marker)) < count:
        assert time.monotonic() < deadline, f"{count} process(es) marked {marker} never ran (found {found})"
        await asyncio.sleep(0.01)
    return found


async def wait_no_processes(marker: str, *, timeout: float = 15.0) -> list[int]:
    """The processes marked `marker` still running after `timeout` ([] as soon as none is)."""
    deadline = time.monotonic() + timeout
    while (found := processes_with(marker)) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return found


def children_of(pid: int) -> list[int]:
    """The host pids whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie, or a process reaped meanwhile, counts as gone: it runs nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def process_gone(pid: int, within: float = 15.0) -> bool:
    """True once `pid` no longer exists (or is only a zombie awaiting its reaper)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):  # the latter: reaped between open and read
            return True
        if state == "Z":
            return True
        time.sleep(0.02)
    return False


def _status(pid: int | str, field: str) -> list[str]:
    """A field of /proc/`pid`/status, split."""
    text = Path(f"/proc/{pid}/status").read_text()
    return text.split(f"\n{field}:", 1)[1].splitlines()[0].split()


def host_pid(step: int, pid: int) -> int:
    """The host pid of `pid` as seen in the PID namespace of host process `step` (any process of the step).

    From /proc/*/status alone: a step's processes are not dumpable, so a user who is not root may not read their
    /proc/*/ns links (root may: where the suite ran before)."""
    levels = len(_status(step, "NSpid"))
    if levels == len(_status("self", "NSpid")):
        return pid  # the step has no PID namespace of its own
    init = step
    while int(_status(init, "NSpid")[-1]) != 1:  # its namespace's init: every process of it descends from that one
        init = int(_status(init, "PPid")[0])
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            nspid = _status(entry.name, "NSpid") if entry.name.isdigit() else []
            if len(nspid) == levels and int(nspid[-1]) == pid and _descends(int(entry.name), init):
                return int(entry.name)
    raise AssertionError(f"no process {pid} in {step}'s PID namespace")


def _descends(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        pid = int(_status(pid, "PPid")[0])
    return False


def wait_until(predicate: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    """Poll `predicate` until it is true; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


async def eventually(predicate: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    """Poll `predicate` (on the loop) until it is true; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def run_watching(run: Awaitable[T], marker: str, *, ceiling: float = 60.0) -> tuple[T, list[int]]:
    """`run`'s result, and the most processes marked `marker` seen at once while it ran (at most `ceiling` s)."""
    task = asyncio.ensure_future(run)
    seen: list[int] = []
    try:
        async with asyncio.timeout(ceiling):
            while not task.done():
                if len(found := processes_with(marker)) > len(seen):
                    seen = found
                await asyncio.sleep(0.01)
    finally:
        task.cancel()  # a run past the ceiling ends with the test (once done, this does nothing)
    return task.result(), seen


async def timed_out_once_begun(run: Callable[[float], Awaitable[T]], begun: Callable[[T], object], *,
                               first_s: float = 1.0, last_s: float = 16.0) -> T:
    """`run(timeout)`'s result once what it starts `begun` before the timeout; tried again with twice the time (up
    to `last_s`) when not: a loaded machine can be slow to start it, and a timeout that came first proves nothing."""
    timeout = first_s
    while timeout * 2 <= last_s:
        result = await run(timeout)
        if begun(result):
            return result
        timeout *= 2
    return await run(timeout)
