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
_freeze = False  # a pause that wanted its objects frozen ended while another still ran


@contextmanager
def cyclic_gc_paused(*, freeze: bool = False) -> Iterator[None]:
    """No cyclic collection meanwhile (overlapping threads: the last one out restores what the first found)."""
    # `freeze`: what was built lives on (a parsed session): frozen at the end, so no later collection walks it
    # again; refcounting still frees it. Otherwise what was built is soon garbage (a request body), freed by
    # refcounting: nothing made here forms a cycle.
    global _pauses, _was_enabled, _freeze
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
            _freeze |= freeze
            if _pauses == 0 and _freeze:
                gc.freeze()
                _freeze = False
            if _pauses == 0 and _was_enabled:
                gc.enable()
