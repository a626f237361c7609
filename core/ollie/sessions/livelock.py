"""Which process on this machine runs a session: one lock file per live session, held while it runs.

Two Cores on one session would append to one log blind to each other's turns. The lock is an `flock` on
`<data>/ollie/live/<id>.lock`, taken when a Core starts or resumes the session; the kernel drops it when
the process dies, so a crash never leaves a session locked.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import socket
import sys
from collections.abc import Iterable
from pathlib import Path

from ollie.sessions.errors import LiveElsewhereError
from ollie.sessions.session import is_valid_session_id

log = logging.getLogger("ollie.sessions.livelock")


class LiveLock:
    """The held lock of one session; `release` once the session closed."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self._path = path

    def release(self) -> None:
        """Drop the lock and its file (closing the file drops the flock)."""
        if self._fd is not None:
            # Removed while still held: a process that opened it meanwhile sees it gone once it locks it (see `hold`).
            self._path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None


def lock_dir(sessions_dir: Path) -> Path:
    """Where the live-session locks of a sessions dir are: beside it (`<data>/ollie/live`)."""
    return sessions_dir.parent / "live"


def program() -> str:
    """This process as the user started it, for the message another one shows: `ollie-lsp`, `ollie acp`, `ollie`."""
    path = Path(sys.argv[0] if sys.argv else "")
    # `python -m ollie_acp` (what `ollie acp` execs) runs .../ollie_acp/__main__.py
    name = path.parent.name if path.name == "__main__.py" else path.name
    return _PROGRAMS.get(name, name or "ollie")


_PROGRAMS = {"ollie_lsp": "ollie-lsp", "ollie_acp": "ollie acp", "cli": "ollie"}


def hold(lock_dir: Path, session_id: str) -> LiveLock | None:
    """Take `session_id`'s lock in `lock_dir`; LiveElsewhereError (-32007) naming the process that holds it.

    None when no lock file can be made (a read-only data dir): the session runs unguarded rather than not at all.
    """
    if not is_valid_session_id(session_id):  # a client's typo, `../x`: no lock, and its load fails as before
        return None
    while True:
        try:
            lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            path = lock_dir / f"{session_id}.lock"
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            log.warning("no live-session lock for %s: %s", session_id, exc)
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _same_file(fd, path):
                break
            os.close(fd)  # locked a file its holder removed on release: lock the current one
        except BlockingIOError:
            holder = os.pread(fd, 128, 0).decode("utf-8", "replace").strip() or "?"
            os.close(fd)
            raise LiveElsewhereError(f"session {session_id} is open in another editor window or terminal "
                                     f"({holder}): close it there first") from None
        except BaseException:
            os.close(fd)
            raise
    # Who holds it, for the message another process shows; written after the lock, so it is never a stale one.
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{program()} pid {os.getpid()}".encode(), 0)
    return LiveLock(fd, path)


def _same_file(fd: int, path: Path) -> bool:
    """Whether `fd` is still the file at `path` (a lock file its holder removed on release is not)."""
    try:
        return os.path.samestat(os.fstat(fd), path.stat())
    except FileNotFoundError:
        return False


_HOLDER_PID = re.compile(rb" pid (\d+)$")


def held_elsewhere(lock_dir: Path, session_ids: Iterable[str]) -> dict[str, str]:
    """Of these sessions, those another process of this machine runs now: id -> "<host> (pid N)".

    Read from each lock file's holder, never by taking the lock (a probe holding it a moment would refuse a
    process opening the session then). A holder gone without releasing (a crash) left its file: its pid is dead.
    """
    found: dict[str, str] = {}
    for session_id in session_ids:
        if not is_valid_session_id(session_id):
            continue
        try:
            fd = os.open(lock_dir / f"{session_id}.lock", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            match = _HOLDER_PID.search(os.pread(fd, 128, 0).strip())
        except OSError:
            match = None
        finally:
            os.close(fd)
        pid = int(match.group(1)) if match else 0
        if pid and pid != os.getpid() and _alive(pid):
            found[session_id] = f"{socket.gethostname()} (pid {pid})"
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True
