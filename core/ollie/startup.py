"""Start-up of a long-lived front end: no cycle collection over its modules, less source text kept; many fds."""

from __future__ import annotations

import gc
import linecache
import resource
from contextlib import suppress


def pause_gc() -> None:
    """Stop the cycle collector while the modules load (each run walks every class so far: a tenth of the start)."""
    gc.disable()


def resume_gc() -> None:
    """Once the modules are loaded: the collector runs again, over what is made from now on.

    What loaded is frozen first: unfrozen, the collector's next young pass walked every object made while it
    was paused (the SDK's schema, the engine's), and the pass after it again: ~55-130 ms of CPU before a
    first token. The few cycles loading made stay with it (~0.35 MiB of RSS: freeing them took a full pass,
    ~70 ms with the loop held, after the first answer).
    """
    if not gc.isenabled():  # only after pause_gc: a process that never paused it keeps its own settings
        gc.freeze()
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


def release_free_memory() -> None:
    """Give the C heap's free pages back to the OS (glibc's malloc_trim): what start-up freed stays resident otherwise."""
    with suppress(OSError, AttributeError):  # no malloc_trim (musl, macOS)
        import ctypes  # already loaded: the workspace's file access (ollie.beneath) uses it

        ctypes.CDLL(None).malloc_trim(0)
