"""A session's private dirs: its TMPDIR, the scratch dir of sandboxed programs, and one no sandbox grants.

`sweep_stale` removes those whose owner lock (ollie.sandbox.runtimedir) no live process holds.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ollie import paths, programs
from ollie.sandbox.errors import SandboxError
from ollie.sandbox.runtimedir import OWNER_LOCK, PRIVATE_MODE, hold_owner_lock, make_private_dir, runtime_root

# A dir without an owner lock is being created right now, or was left by an older ollie (or a crashed
# prompt command's private dir): swept only once it is this old.
UNOWNED_GRACE_S = 600.0
# A swept root is renamed `<root><SWEPT_SUFFIX><random>` before it is deleted (see `_discard`).
SWEPT_SUFFIX = ".swept-"

# root -> the descriptor holding its owner lock, for the sessions this process has open.
_held: dict[Path, int] = {}
_held_guard = threading.Lock()


def remove_tree(path: Path) -> None:
    """Remove `path` and everything in it, following no link; also a tree nested deeper than Python recurses (tool
    code may make one in its TMPDIR: shutil.rmtree raises RecursionError, no OSError), which `rm -rf` removes."""
    try:
        shutil.rmtree(path, ignore_errors=True)
    except RecursionError:
        with contextlib.suppress(OSError):
            subprocess.run([programs.program("rm"), "-rf", "--", str(path)], stdin=subprocess.DEVNULL,
                           capture_output=True, check=False)


@dataclass(eq=False, repr=False)
class SessionDirs:
    """The layout under one session's root (0700): only `tmp` is writable and `scratch` readable by tool code.

    The root's lock file is granted to no policy; `private` keeps approved elevated programs where sandboxed
    code cannot swap them between approval and exec.
    """

    root: Path

    @classmethod
    def for_session(cls, session_id: str) -> SessionDirs:
        """The default layout of `session_id`, under the runtime tmp root."""
        return cls(paths.runtime_tmp_dir() / session_id)

    @property
    def tmp(self) -> Path:
        """The TMPDIR of the session's children: the only writable dir granted as {TMPDIR}."""
        return self.root / "tmp"

    @property
    def scratch(self) -> Path:
        """Where the programs of sandboxed steps are written (granted read-only)."""
        return self.root / "scratch"

    @property
    def private(self) -> Path:
        """Where approved elevated programs are written (granted to nothing)."""
        return self.root / "private"

    def create(self) -> None:
        """Create the root and its dirs, each 0700 (the runtime root too, when it is ollie's), and own them."""
        if self.root.parent == paths.runtime_tmp_dir():
            runtime_root()
        self.claim()  # makes the root (again, when a sweep takes a stale one away meanwhile)
        for directory in (self.tmp, self.scratch, self.private):
            make_private_dir(directory)

    def ready(self) -> bool:
        """Whether `create` has nothing to do: the owner lock held, the dirs and their parent ours, 0700, no symlink."""
        if self.root not in _held:
            return False
        uid = os.geteuid()
        for directory in (self.root.parent, self.root, self.tmp, self.scratch, self.private):
            try:
                info = os.lstat(directory)
            except OSError:
                return False
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid or stat.S_IMODE(info.st_mode) != PRIVATE_MODE:
                return False
        return True

    def claim(self) -> None:
        """Hold the root's owner lock (shared), making the root, for as long as this process has it open."""
        with _held_guard:
            if self.root in _held:
                return
            _held[self.root] = hold_owner_lock(self.root)

    def release(self) -> None:
        """Let go of the owner lock (the dirs stay until removed or swept)."""
        with _held_guard:
            fd = _held.pop(self.root, None)
        if fd is not None:
            os.close(fd)

    def fresh(self, parent: Path) -> Path:
        """A new 0700 dir for one call under `parent` (scratch or private)."""
        make_private_dir(parent)
        path = parent / f"run-{uuid.uuid4().hex[:12]}"
        path.mkdir(mode=PRIVATE_MODE)
        return path

    def remove(self) -> None:
        """Remove the whole session root (when the session closes) and let go of its owner lock."""
        self.release()
        remove_tree(self.root)


def sweep_stale(*, now: float | None = None) -> list[Path]:
    """Remove the dirs under the runtime tmp root (and the proxy's socket root, when elsewhere) no live process owns:
    sessions', the egress proxy's; returns them.

    A dir without an owner lock goes once older than UNOWNED_GRACE_S. A root is checked to be ours first
    (`runtime_root`): a planted symlink or dir is never swept.
    """
    now = time.time() if now is None else now
    entries: list[os.DirEntry[str]] = []
    for root in dict.fromkeys([paths.runtime_tmp_dir(), paths.runtime_socket_dir()]):
        try:
            entries += os.scandir(runtime_root(root, make=False))
        except (SandboxError, OSError):
            continue  # none made yet; or not ours: the session's first step says what is wrong, naming the dir
    return _sweep(entries, now)


def sweep_unowned(parent: Path, prefix: str) -> list[Path]:
    """Remove this user's dirs `parent/<prefix>*` (not links) no live process owns, as `sweep_stale` does; returns
    them (a shared /tmp holds other users' and other programs' dirs: those are never touched)."""
    uid = os.geteuid()
    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(prefix)
                   and e.is_dir(follow_symlinks=False) and e.stat(follow_symlinks=False).st_uid == uid]
    except OSError:
        return []
    return _sweep(entries, time.time())


def _sweep(entries: list[os.DirEntry[str]], now: float) -> list[Path]:
    swept: list[Path] = []
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        path = Path(entry.path)
        with _held_guard:
            if path in _held:
                continue
        if _remove_if_unowned(path, now):
            swept.append(path)
    return swept


def _remove_if_unowned(path: Path, now: float) -> bool:
    try:
        fd = os.open(path / OWNER_LOCK, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        try:
            old = now - path.stat().st_mtime > UNOWNED_GRACE_S
        except OSError:
            return False
        if old:
            _discard(path)
        return old
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a live process has the session open
        # Holding it exclusively: a process resuming this session waits, then sees the dir gone and remakes it.
        return _discard(path)
    finally:
        os.close(fd)


def _discard(path: Path) -> bool:
    """Move `path` out of the way in one step, then delete it: a session that claims the same root meanwhile
    makes a fresh one instead of racing a half-done rmtree (which would delete its new lock file or dirs)."""
    trash = path.with_name(f"{path.name}{SWEPT_SUFFIX}{uuid.uuid4().hex[:8]}")
    try:
        os.rename(path, trash)
    except OSError:
        return False
    remove_tree(trash)
    return True
