"""Durability off the event loop: one thread that fdatasyncs session logs after their rounds were written.

The write (to the page cache) stays where `save` runs; only the wait for the disk moves here, so a crash
loses nothing and a power loss at most the round being synced. `wait` blocks until every sync so far is done.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable

_fdatasync = getattr(os, "fdatasync", os.fsync)

_jobs: queue.SimpleQueue[tuple[int, Callable[[OSError], None]]] = queue.SimpleQueue()
_done = threading.Condition()
_pending = 0
_thread: threading.Thread | None = None


def sync_later(fd: int, on_error: Callable[[OSError], None]) -> None:
    """fdatasync `fd` on the sync thread, then close it (the caller's own duplicate); `on_error` if it fails."""
    global _pending, _thread
    with _done:
        _pending += 1
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_run, name="ollie-session-sync", daemon=True)
            _thread.start()
    _jobs.put((fd, on_error))


def wait() -> None:
    """Return once every sync asked for so far is done."""
    with _done:
        _done.wait_for(lambda: _pending == 0)


def _run() -> None:
    global _pending
    while True:
        fd, on_error = _jobs.get()
        try:
            _fdatasync(fd)
        except OSError as exc:  # EIO, ENOSPC on a delayed allocation: the next save writes the whole session
            on_error(exc)
        finally:
            os.close(fd)
            with _done:
                _pending -= 1
                _done.notify_all()
