"""Processes spawned without the seccomp filter (no sandbox, an elevated step, best_effort without seccomp).

They can make hard links, which sandboxed steps cannot: a write through a link named outside the work tree makes no
inotify event in it, so `workspace.treewatch` trusts no events while one runs, and starts over once one ran.
"""

from __future__ import annotations

from collections.abc import Callable

count = 0  # bumped when one is about to start and when one is gone
running = 0


def starting() -> Callable[..., None]:
    """Count one more such process from now, before it can run; the callback that counts it gone (call it once)."""
    global count, running
    count, running = count + 1, running + 1

    def gone(_: object = None) -> None:
        global count, running
        count, running = count + 1, running - 1

    return gone
