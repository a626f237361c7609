"""Start-up of a long-lived front end: no cycle collection over its modules before a first answer; room for many fds."""

from __future__ import annotations

import asyncio
import gc
import logging
import resource

_frozen_at_load = 0  # objects frozen by resume_gc, until collect_load_garbage


def pause_gc() -> None:
    """Stop the cycle collector while the modules load (each run walks every class so far: a tenth of the start)."""
    gc.disable()


def resume_gc() -> None:
    """Once the modules are loaded: the collector runs again, over what is made from now on.

    What loaded is frozen first: unfrozen, the collector's next young pass walked every object made while it
    was paused (the SDK's schema, the engine's), and the pass after it again: ~55-130 ms of CPU before a
    first token. `collect_load_garbage` frees the cycles loading made, later.
    """
    global _frozen_at_load
    if not gc.isenabled():  # only after pause_gc: a process that never paused it keeps its own settings
        gc.freeze()
        _frozen_at_load = gc.get_freeze_count()
        gc.enable()


def raise_fd_limit() -> None:
    """Raise the soft limit on open descriptors to the hard one: each connection of a step through the egress proxy
    holds six of them, and a soft limit of 1024 (common) would run out at a few busy steps."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (OSError, ValueError):  # a hard limit the kernel caps lower (nr_open): keep what it is
            pass


def collect_load_garbage() -> None:
    """Once, when the first request is answered: free loading's cycles, then freeze what lives on.

    One full pass where nobody waits for it. Frozen again afterwards: the modules' objects live as long as the
    process, and no later pass need walk them.
    """
    global _frozen_at_load
    if not _frozen_at_load:
        return
    freed = 0
    # Skipped when more was frozen since (a resumed history, ollie.sessions.persist): unfreezing it would make
    # every later pass walk it again. (The count only shrinks otherwise: frozen objects freed by refcounting.)
    if gc.get_freeze_count() <= _frozen_at_load and gc.isenabled():
        gc.unfreeze()
        freed = gc.collect()
        gc.freeze()
    _frozen_at_load = 0
    # The bench's idle reference waits for this line: the pass holds the loop ~70 ms once.
    logging.getLogger("ollie.startup").info("start-up collection done: %d objects freed", freed)


def collect_after_this_answer() -> None:
    """From a request's handler: `collect_load_garbage` two loop turns on, once the answer is written."""
    if _frozen_at_load:
        loop = asyncio.get_running_loop()
        loop.call_soon(loop.call_soon, collect_load_garbage)
