"""Watching a git run through /proc: the daemon's shadow git reads a hostile work tree, unsandboxed.

git opens the work tree's `.gitignore` and `.gitattributes` files and a would-be nested repository's `.git` (its
`HEAD`, its `commondir`, wherever a `.git` file points), following symlinks there, with a blocking open(2) and
reads them to the end. A FIFO planted at one of those names holds it in open(2) until a writer comes, which never
does between steps; a link to /dev/ptmx holds it in read(2); a link to /dev/zero or a huge sparse file grows its
memory. So each run is looked at while it lasts, and stopped with a note naming what held it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import stat
import time

from ollie.workspace.errors import CheckpointUnavailable, GitError, WorkspaceError

# A git run longer than this is killed (GitError): the last bound, where /proc cannot show what git waits on.
RUN_TIMEOUT_S = 300.0
# git reads each `.gitignore` whole into memory (no cap in git 2.39): a run holding more than this is stopped.
MEMORY_CAP = 2 << 30
# How often a running git is looked at (first, and at most): /proc says whether it is stuck opening a FIFO.
_WATCH_FIRST_S, _WATCH_MAX_S = 0.02, 0.25
# The kernel functions open(2) of a FIFO waits for a writer in (older kernels: pipe_wait): where git's memory cannot
# be read for the path it opens, these say it is a FIFO.
_FIFO_WAITS = frozenset({"wait_for_partner", "fifo_open", "pipe_wait"})
# The devices git opens itself: /dev/null (its hooks and excludes settings here), /dev/random and /dev/urandom (temp
# file names). Read through a planted link, the last two grow git's memory to MEMORY_CAP.
_GITS_DEVICES = frozenset({os.makedev(1, 3), os.makedev(1, 8), os.makedev(1, 9)})
# Syscall number -> index of its path argument, for the open calls (x86-64, arm64).
_OPENS = {"x86_64": {2: 0, 257: 1, 437: 1}, "aarch64": {56: 1, 437: 1}}.get(platform.machine(), {})

def _fifo_opening(pid: int) -> str | None:
    """The path process `pid` is stuck opening as a FIFO (its open(2) waits for a writer that never comes), ""
    when /proc shows the wait but not the path; None when it is not stuck so. May block on the disk (stat):
    call it in a thread."""
    try:
        with open(f"/proc/{pid}/syscall") as syscall:
            fields = syscall.read().split()
        arg = _OPENS[int(fields[0])]
        address = int(fields[1 + arg], 16)
    except (OSError, KeyError, ValueError, IndexError):
        return None  # running, or in another call (a pipe read of its stdin, from us, is no FIFO open)
    try:
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            mem.seek(address)
            name = os.fsdecode(mem.read(4096).split(b"\0", 1)[0])
        path = os.path.join(os.readlink(f"/proc/{pid}/cwd"), name)
    except (OSError, ValueError, OverflowError):
        path = None  # git's memory is not readable here (ptrace restricted)
    if path is not None:
        with contextlib.suppress(OSError):
            if stat.S_ISFIFO(os.stat(path).st_mode):
                return path
    try:  # the path is not readable, or relative to another dir than git's cwd: the kernel's wait says it
        with open(f"/proc/{pid}/wchan") as wchan:
            return "" if wchan.read().strip() in _FIFO_WAITS else None
    except OSError:
        return None


def _device_opened(pid: int) -> str | None:
    """What process `pid` (git) holds open past its stdio that is no file: a device other than its own, a pipe or a
    socket. git opens none of those itself; one reached through a symlink in a nested repository's metadata (its
    `commondir` naming /dev/ptmx, /dev/zero, another terminal) is read until it ends, which it never does."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for fd in fds:
        if fd in ("0", "1", "2"):
            continue
        with contextlib.suppress(OSError):
            info = os.stat(f"/proc/{pid}/fd/{fd}")
            special = stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode) or stat.S_ISBLK(info.st_mode)
            if special or stat.S_ISCHR(info.st_mode) and info.st_rdev not in _GITS_DEVICES:
                return os.readlink(f"/proc/{pid}/fd/{fd}")
    return None


def _resident(pid: int) -> int:
    """Process `pid`'s resident memory in bytes (0 when /proc does not say)."""
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


async def watched(proc: asyncio.subprocess.Process, stdin: bytes | None, command: str) -> tuple[bytes, bytes]:
    """(stdout, stderr) of git `proc` once it exits. Stuck opening a FIFO, holding a device, pipe or socket open,
    or more than MEMORY_CAP resident, it is CheckpointUnavailable naming what; past RUN_TIMEOUT_S, GitError. git is
    killed then."""
    talk = asyncio.ensure_future(proc.communicate(stdin))
    with contextlib.suppress(OSError):  # as for every step: the OOM killer takes git, never the daemon
        with open(f"/proc/{proc.pid}/oom_score_adj", "w") as adj:
            adj.write("1000")
    deadline = time.monotonic() + RUN_TIMEOUT_S
    wait = _WATCH_FIRST_S
    problem: WorkspaceError | None = None
    try:
        while problem is None:
            done, _ = await asyncio.wait([talk], timeout=wait)
            if done:
                return talk.result()
            wait = min(wait * 2, _WATCH_MAX_S)
            fifo = await asyncio.to_thread(_fifo_opening, proc.pid)
            device = await asyncio.to_thread(_device_opened, proc.pid) if fifo is None else None
            if fifo is not None:
                problem = CheckpointUnavailable(
                    f"the workspace holds a FIFO where git reads a file{f' ({fifo})' if fifo else ''}: git would "
                    "wait on it for ever; remove it, and a new session has them again")
            elif device is not None:
                problem = CheckpointUnavailable(
                    f"git was led to read {device} (a symlink in the workspace, in a nested repository's .git?); "
                    "remove it, and a new session has them again")
            elif _resident(proc.pid) > MEMORY_CAP:
                problem = CheckpointUnavailable(f"git {command} used more than {MEMORY_CAP >> 20} MiB over this "
                                                "workspace (a huge .gitignore?) and was stopped")
            elif time.monotonic() > deadline:
                problem = GitError(f"git {command} did not finish in {RUN_TIMEOUT_S:g}s and was stopped")
        raise problem
    finally:
        if not talk.done():
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(Exception):
                await talk
            await proc.wait()
