"""The per-user runtime root, where session dirs and the egress proxy's socket live: ours and private, or refused."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from pathlib import Path

from ollie import paths
from ollie.sandbox.errors import SandboxError

PRIVATE_MODE = 0o700
# A live process holds a shared flock on this file in each of its dirs (a session's, the egress proxy's), released
# however it ends, so a sweep tells a dead process's dirs (lock free) from a live one's without trusting reused pids.
OWNER_LOCK = "owner.lock"


def runtime_root(root: Path | None = None, *, make: bool = True) -> Path:
    """The per-user runtime root (`paths.runtime_tmp_dir`, or `root`), made 0700 if missing (FileNotFoundError when not
    `make`), and checked to be ours.

    It usually lies in a directory every user may write (/tmp): a symlink or a dir
    of another user's planted at its name is refused, never used or followed.
    """
    root = root or paths.runtime_tmp_dir()
    if make:
        root.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(root, PRIVATE_MODE)
    info = os.lstat(root)
    if not stat.S_ISDIR(info.st_mode):
        raise SandboxError(f"{root} is not a directory (a symlink or a file is there): ollie keeps its session "
                           "dirs and sockets there and will not follow it; remove it, or set XDG_RUNTIME_DIR")
    if info.st_uid != os.geteuid():
        raise SandboxError(f"{root} belongs to uid {info.st_uid}, not to you (uid {os.geteuid()}): ollie will not "
                           "keep its session dirs and sockets there; remove it, or set XDG_RUNTIME_DIR")
    if info.st_mode & 0o077:
        os.chmod(root, PRIVATE_MODE)
    return root


def make_private_dir(path: Path) -> Path:
    """Create `path` (and its parents) as 0700, tightening it when it already existed."""
    path.mkdir(mode=PRIVATE_MODE, parents=True, exist_ok=True)
    os.chmod(path, PRIVATE_MODE)
    return path


def hold_owner_lock(root: Path) -> int:
    """Make `root` (0700) and hold its owner lock (shared): the descriptor, to keep open while the dir is in use."""
    while True:
        try:
            make_private_dir(root)
            fd = os.open(root / OWNER_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except FileNotFoundError:  # a sweep moved the (stale) root away meanwhile: make it again
            continue
        except FileExistsError:  # there as mkdir looked, gone as pathlib saw whether it is a directory: again
            with contextlib.suppress(FileNotFoundError):
                if not stat.S_ISDIR(os.lstat(root).st_mode):
                    raise  # no directory there to make again: say so, never loop
            continue
        # Blocks only while another process's sweep holds it exclusively for a moment.
        fcntl.flock(fd, fcntl.LOCK_SH)
        with contextlib.suppress(FileNotFoundError):
            if os.stat(root / OWNER_LOCK).st_ino == os.fstat(fd).st_ino:
                return fd
        # A sweep removed the dir between its lock file's making and its locking: make it again.
        os.close(fd)
