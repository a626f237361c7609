"""Start-up of a long-lived front end: no cycle collection over its modules before a first answer; room for many fds."""

from __future__ import annotations

import asyncio
import gc
import linecache
import logging
import resource
from contextlib import suppress

# Made just after resume_gc froze what loaded, until collect_load_garbage: any later freeze freezes it too.
_load_mark: list[object] | None = None


def pause_gc() -> None:
    """Stop the cycle collector while the modules load (each run walks every class so far: a tenth of the start)."""
    gc.disable()


def resume_gc() -> None:
    """Once the modules are loaded: the collector runs again, over what is made from now on.

    What loaded is frozen first: unfrozen, the collector's next young pass walked every object made while it
    was paused (the SDK's schema, the engine's), and the pass after it again: ~55-130 ms of CPU before a
    first token. `collect_load_garbage` frees the cycles loading made, later.
    """
    global _load_mark
    if not gc.isenabled():  # only after pause_gc: a process that never paused it keeps its own settings
        gc.freeze()
        # Not gc.get_freeze_count(): it walks every frozen object (~8 ms of CPU before a first chunk).
        _load_mark = []  # a list is always tracked: young now, frozen by the next freeze
        gc.enable()


def drop_generated_sources() -> None:
    """Forget the source text attrs and cattrs keep of each method they generate (for debuggers and tracebacks).

    lsprotocol's ~550 classes leave ~1.5 MiB of it in `linecache`, held for the process's life; dropped before the
    engine loads, its import reuses the room (RSS after a daemon's first request -1.6 MiB). A traceback through such a
    method still names it and the line, without the line's text.
    """
    cache = linecache.cache
    for name in [name for name in cache if name.startswith(("<attrs generated", "<cattrs generated"))]:
        del cache[name]


def raise_fd_limit() -> None:
    """Raise the soft limit on open descriptors to the hard one: each connection of a step through the egress proxy
    holds six of them, and a soft limit of 1024 (common) would run out at a few busy steps."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with suppress(OSError, ValueError):  # a hard limit the kernel caps lower (nr_open): keep what it is
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def collect_load_garbage() -> None:
    """Once, when the first request is answered: free loading's cycles, then freeze what lives on.

    One full pass where nobody waits for it. Frozen again afterwards: the modules' objects live as long as the
    process, and no later pass need walk them.
    """
    global _load_mark
    mark, _load_mark = _load_mark, None
    if mark is None:
        return
    freed = 0
    # Skipped when more was frozen since (a resumed history, ollie.sessions.persist): unfreezing it would make
    # every later pass walk it again. The mark is frozen then: it is no longer among the collector's objects.
    if gc.isenabled() and _collectable(mark):
        gc.unfreeze()
        freed = gc.collect()
        gc.freeze()
    # What the pass and the first answer freed sat in the C heap's free chunks (~0.2 MiB of RSS after the first
    # request, which the trim as the warm-up ended, before both, could not hand back).
    release_free_memory()
    # The bench's idle reference waits for this line: the pass holds the loop ~70 ms once.
    logging.getLogger("ollie.startup").info("start-up collection done: %d objects freed", freed)


def release_free_memory() -> None:
    """Give the C heap's free pages back to the OS (glibc's malloc_trim): what start-up freed stays resident otherwise."""
    with suppress(OSError, AttributeError):  # no malloc_trim (musl, macOS)
        import ctypes  # already loaded: the workspace's file access (ollie.beneath) uses it

        ctypes.CDLL(None).malloc_trim(0)


def _collectable(obj: object) -> bool:
    """Whether `obj` is in one of the collector's generations (not frozen)."""
    return any(any(o is obj for o in gc.get_objects(generation)) for generation in range(3))


def collect_after_this_answer() -> None:
    """From a request's handler: `collect_load_garbage` two loop turns on, once the answer is written."""
    if _load_mark is not None:
        loop = asyncio.get_running_loop()
        loop.call_soon(loop.call_soon, collect_load_garbage)
