"""Processes spawned without the seccomp filter (no sandbox, an elevated step, best_effort without seccomp).

They can make hard links, which sandboxed steps cannot: a write through a link named outside the work tree makes no
inotify event in it, so `workspace.treewatch` trusts no events while one runs, and starts over once one ran.
"""

from __future__ import annotations

import asyncio

count = 0  # bumped when one starts and when one ends
running = 0


def track(status: asyncio.Future[int]) -> None:
    """Count one more such process, until `status` (its exit, once all of its processes are gone) is done."""
    global count, running
    count, running = count + 1, running + 1

    def ended(_: asyncio.Future[int]) -> None:
        global count, running
        count, running = count + 1, running - 1

    status.add_done_callback(ended)
