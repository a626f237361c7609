"""Which daemon on this machine runs a session: one lock file per live session, held while it runs.

Two editor windows on one folder each start a daemon, and both would resume the session the folder showed last:
two Cores appending to one session log, each blind to the other's turns. A session's lock is an `flock` on
`<data>/ollie/live/<id>.lock`, taken when a daemon starts or resumes it and dropped when it closes it; the kernel
drops it too when the daemon dies, so a crash never leaves a session locked.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
from pathlib import Path

from ollie_lsp.errors import LiveElsewhere

logger = logging.getLogger(__name__)
# A session id fit for a file name; any other (a client's typo, `../x`) gets no lock and fails its load as before.
_SAFE_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")


def _lock_dir() -> Path:
    from ollie.paths import sessions_dir  # light, but only needed once a session starts

    return sessions_dir().parent / "live"


class LiveLock:
    """The held lock of one session; `release` once the session closed."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self._path = path

    def release(self) -> None:
        """Drop the lock and its file (closing the file drops the flock)."""
        if self._fd is not None:
            # Removed while still held: a daemon that opened it meanwhile sees it gone once it locks it (see `hold`).
            self._path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None


def hold(session_id: str) -> LiveLock | None:
    """Take `session_id`'s lock; -32007 naming the daemon that holds it when another process runs the session.

    None when no lock file can be made (a read-only data dir): the session runs unguarded rather than not at all.
    """
    if not _SAFE_ID.fullmatch(session_id):
        return None
    while True:
        try:
            directory = _lock_dir()
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"{session_id}.lock"
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            logger.warning("no live-session lock for %s: %s", session_id, exc)
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if same_file(fd, path):
                break
            os.close(fd)  # locked a file its holder removed on release: lock the current one
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            why = f"session {session_id} is open in another editor window (ollie-lsp pid {holder})"
            raise LiveElsewhere(session_id, why) from None
        except BaseException:
            os.close(fd)
            raise
    # The holder's pid, for the message another daemon shows; written after the lock, so it is never a stale one.
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return LiveLock(fd, path)


def same_file(fd: int, path: Path) -> bool:
    """Whether `fd` is still the file at `path` (a lock file its holder removed on release is not)."""
    try:
        return os.path.samestat(os.fstat(fd), path.stat())
    except FileNotFoundError:
        return False
