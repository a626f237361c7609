"""Finding a sandboxed step's processes from the host.

A sandboxed step runs in a PID namespace of its own: the pids it sees (`$$`, `$!`,
`os.getpid()`) are not the host's, so a test looks its processes up by a marker in
their command line (`sleep 60.<mark>`), or translates a namespace pid through a
host process known to be in the step's namespace (`host_pid`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import select
import time
from collections.abc import Awaitable, Callable, Iterable
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
    while (found := processes_with(marker)) and (left := deadline - time.monotonic()) > 0:
        await outliving(found, left)  # then a new look: one may have started another before it exited
    return found


def _pidfd(pid: int) -> int | None:
    """A pidfd of `pid`, readable once it has exited (a zombie awaiting its reaper has); None when it is gone."""
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        return None


def exited(pids: Iterable[int], within: float) -> list[int]:
    """Those of `pids` that have exited, once one has or `within` seconds have passed (their pidfds say)."""
    fds = {pid: _pidfd(pid) for pid in pids}
    try:
        if all(fds.values()):
            ready = set(select.select([*fds.values()], [], [], within)[0])
            return [pid for pid, fd in fds.items() if fd in ready]
        return [pid for pid, fd in fds.items() if fd is None]
    finally:
        for fd in filter(None, fds.values()):
            os.close(fd)


async def outliving(pids: Iterable[int], timeout: float) -> list[int]:
    """Those of `pids` still running after `timeout` ([] as soon as every one has exited: their pidfds say)."""
    loop = asyncio.get_running_loop()
    waits: dict[int, tuple[int, asyncio.Future[None]]] = {}

    def ready(fd: int, done: asyncio.Future[None]) -> None:
        loop.remove_reader(fd)
        done.set_result(None)

    try:
        for pid in pids:
            if (fd := _pidfd(pid)) is not None:
                waits[pid] = (fd, done := loop.create_future())
                loop.add_reader(fd, ready, fd, done)
        if waits:
            await asyncio.wait([done for _, done in waits.values()], timeout=timeout)
        return [pid for pid, (_, done) in waits.items() if not done.done()]
    finally:
        for fd, _ in waits.values():
            loop.remove_reader(fd)
            os.close(fd)


def children_of(pid: int) -> list[int]:
    """The host pids whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


def open_files(pid: int | str = "self") -> set[str]:
    """What `pid`'s descriptors lead to, as /proc shows it (`socket:[inode]`, a deleted file's path + ` (deleted)`)."""
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):  # closed since the listing (the listing's own, for one)
            found.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return found


def process_gone(pid: int, within: float = 15.0) -> bool:
    """True once `pid` no longer exists (or is only a zombie awaiting its reaper), within `within` seconds."""
    return bool(exited([pid], within))


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
