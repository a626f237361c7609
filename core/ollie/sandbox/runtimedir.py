"""The per-user runtime root, where session dirs and the egress proxy's socket live: ours and private, or refused."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from ollie import paths
from ollie.sandbox.errors import SandboxError

PRIVATE_MODE = 0o700


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
