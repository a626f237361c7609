"""No cycle collection while a thread builds or parses a long history: the collector would walk it, GIL held.

A collection runs in whichever thread allocates when it is due, with every
other thread stopped: a 100,000-message history's request built in a worker
thread set off collections that held the daemon's event loop ~200 ms (one
full pass) and 10-20 ms (each middle one).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_pauses = 0
_was_enabled = False


@contextmanager
def cyclic_gc_paused(*, freeze: bool = False) -> Iterator[None]:
    """No cyclic collection meanwhile; threads may overlap: the last one out restores what the first found.

    `freeze`: what was built lives on (a parsed session): frozen when the last pause ends, so no later
    collection walks it again; refcounting still frees it. Without it, what was built is garbage soon (a
    request body) and refcounting frees it: nothing made here forms a cycle.
    """
    global _pauses, _was_enabled
    with _lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and freeze:
                gc.freeze()
            if _pauses == 0 and _was_enabled:
                gc.enable()
