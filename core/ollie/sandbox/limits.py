"""A step's limits, set in its tool process before exec (before Landlock closes /proc and /sys to it).

Stdlib only (loaded by path in the fork server's `-I -S` interpreter). Where no cgroup is writable the
process count and memory fall back to RLIMIT_NPROC (never enforced for root) and RLIMIT_AS (counts reserved
address space too); RLIMIT_FSIZE caps each file; `oom_score_adj` makes the OOM killer pick the step first.
"""

from __future__ import annotations

import os
import resource
from contextlib import suppress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ollie.sandbox.cgroup import Cgroup


def apply(limits: dict, group: Cgroup | None) -> None:
    """Join the step's cgroup (or fall back to rlimits), cap file sizes and volunteer for the OOM killer."""
    processes = int(limits.get("processes") or 0)
    memory = int(limits.get("memory") or 0)
    file_size = int(limits.get("file_size") or 0)
    if group is not None:
        group.join()
    elif processes > 0:
        limit_rlimit(processes)
    if memory > 0 and (group is None or not group.limits_memory):
        _cap(resource.RLIMIT_AS, memory)
    if file_size > 0:
        _cap(resource.RLIMIT_FSIZE, file_size)
    if limits.get("oom_score_adj") is not None:
        with suppress(OSError):  # a /proc that refuses it (some containers): the step still runs, its limits still hold
            fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY | os.O_CLOEXEC)  # not open(): 4 syscalls less
            try:
                os.write(fd, str(int(limits["oom_score_adj"])).encode())
            finally:
                os.close(fd)


def _cap(kind: int, value: int) -> None:
    """Set rlimit `kind` to `value` (soft and hard), never above the hard limit we were given."""
    _, hard = resource.getrlimit(kind)
    limit = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(kind, (limit, limit))


def _user_tasks(uid: int) -> int:
    """How many tasks (threads included, as RLIMIT_NPROC counts them) `uid` runs now."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return count


def limit_rlimit(max_processes: int) -> bool:
    """Fallback without a cgroup: cap the user's task count at what it runs now plus `max_processes`.

    RLIMIT_NPROC counts every process of the user, not of this step, hence the
    offset; the kernel never enforces it for root (uid 0), so False there.
    """
    uid = os.getuid()
    if uid == 0:
        return False
    limit = _user_tasks(uid) + max_processes
    _, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
    return True
