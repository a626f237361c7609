"""What changed in a work tree since a point, from inotify: the kernel's events, which tool code cannot fake.

Every snapshot uses it (`Checkpoints.snapshot`): the tree as the last one left it, re-read where events came. A write
makes an event in the dir of the name it went through; a file with another name (a hard link) is re-`lstat`ed at each
answer instead, and sandboxed steps cannot make links (docs/SECURITY.md, "Snapshots from the kernel's events"). A
lost event (the queue overflowed), a watch that could not be added, a `.gitignore` changed, a new file with another
name, or a process that could make links (`sandbox.unconfined`) make the answer "unknown": the caller scans all.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import struct
import threading
import weakref
from pathlib import Path

from ollie import beneath
from ollie.sandbox import unconfined

_libc = ctypes.CDLL(None, use_errno=True)
_MODIFY, _ATTRIB, _CLOSE_WRITE, _MOVED_FROM, _MOVED_TO, _CREATE, _DELETE = 0x2, 0x4, 0x8, 0x40, 0x80, 0x100, 0x200
_DELETE_SELF, _MOVE_SELF, _OVERFLOW, _IGNORED, _ISDIR = 0x400, 0x800, 0x4000, 0x8000, 0x40000000
# IN_ONLYDIR, IN_EXCL_UNLINK. A dir is watched through /proc/self/fd/N of an O_PATH fd opened beneath the root (the
# kernel would follow a symlink anywhere in a path, IN_DONT_FOLLOW covers only its last part).
_MASK = (_MODIFY | _ATTRIB | _CLOSE_WRITE | _MOVED_FROM | _MOVED_TO | _CREATE | _DELETE | _DELETE_SELF | _MOVE_SELF
         | 0x1000000 | 0x4000000)
_EVENT = struct.Struct("iIII")
# More dirs than this, or than an eighth of the user's watch limit (editors watch the same tree), are not watched (a
# tree that large is scanned whole each time); more paths than this since a point are answered "unknown" too (a
# pathspec each would cost git more than a scan).
MAX_DIRS, MAX_PATHS = 20_000, 256
MAX_LINKED = 100_000  # files with other names (more: not watched); those checkpointed are re-`lstat`ed each answer


def _max_dirs() -> int:
    try:
        with open("/proc/sys/fs/inotify/max_user_watches") as limit:
            return min(MAX_DIRS, int(limit.read()) // 8)
    except (OSError, ValueError):
        return 0


class _Full(Exception):
    """The user's inotify watch limit, or our share of it, is reached."""


class TreeWatch:
    """inotify watches on every directory of one tree (`.git` dirs left out); one per tree, shared by its users."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._fd = {"fd": -1}  # held apart, so the finalizer closes what is open when the watch goes
        weakref.finalize(self, _close, self._fd)
        self._failed = False  # too many dirs, or the user's inotify limits reached: not tried again
        self._cap = MAX_DIRS
        self._dirs: dict[int, str] = {}  # watch descriptor -> dir, relative ("" is the root)
        self._seq = 0
        self._marks: dict[str, int] = {}  # path -> the sequence number of its last event
        self._broken = 0  # the sequence number after which what happened is unknown
        self._linked: dict[str, tuple[int, int, int]] = {}  # files with another name -> (ctime, size, inode)
        self._kept: set[str] | None = None  # those of them git does not ignore (None: not known yet)
        self._unconfined = unconfined.count

    def since(self, cursor: int | None) -> tuple[int, set[str] | None]:
        """(a new cursor, the paths with events since `cursor`: None when unknown). Blocks on the disk: in a thread."""
        with self._lock:
            if self._fd["fd"] < 0 or self._unconfined != unconfined.count:
                self._start()  # a process that could make hard links ran: where files have other names is unknown
            else:
                self._drain()
            self._seq += 1
            self._relink()  # a write through another name makes no event here
            if (cursor is None or self._fd["fd"] < 0 or self._broken > cursor or unconfined.running
                    or (self._kept is None and self._linked)):  # which files with other names matter: a scan says
                return self._seq, None
            paths = {path for path, seq in self._marks.items() if seq > cursor}
            return self._seq, paths if len(paths) <= MAX_PATHS else None

    def _start(self) -> None:
        _close(self._fd)
        self._dirs.clear()
        self._marks.clear()
        self._linked.clear()
        self._kept = None
        self._unconfined = unconfined.count
        self._broken = self._seq + 1
        if self._failed:
            return
        self._cap = _max_dirs()
        self._fd["fd"] = _libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self._fd["fd"] < 0 or not self._add("", root=True):
            self._failed = True
            _close(self._fd)

    def _add(self, rel: str, root: bool = False) -> bool:
        """Watch `rel` and every dir below it, each before it is listed (so none made meanwhile is missed), and note
        its files with other names; False when the user's inotify limit or MAX_DIRS is reached, or (`root` False) a
        file with another name came (where the others are is unknown)."""
        linked = False
        try:
            if not self._watch(rel):
                return not root
            for top, dirs, files, top_fd in beneath.walk_sync(self.root, rel or "."):
                base = os.path.normpath(os.path.join(rel, top))
                base = "" if base == "." else base
                dirs[:] = [d for d in dirs if d != ".git" and self._watch(os.path.join(base, d))]
                for name in files:
                    linked = self._note_linked(os.path.join(base, name), beneath.lstat_at(top_fd, name)) or linked
        except _Full:
            return False
        except OSError:
            return not root  # gone, or swapped for a symlink meanwhile (never followed): its parent's events say so
        return root or not linked

    def _watch(self, rel: str) -> bool:
        """Watch the dir `rel` through /proc/self/fd/N of an fd opened beneath the root (the kernel resolves no path
        again); False when it is gone, not a dir, or reached through a symlink."""
        try:
            with beneath.dir_sync(self.root, rel or ".") as fd:
                wd = _libc.inotify_add_watch(self._fd["fd"], f"/proc/self/fd/{fd}".encode(), _MASK)
        except OSError:
            return False
        if wd < 0:
            if ctypes.get_errno() in (errno.ENOSPC, errno.ENOMEM):
                raise _Full
            return False
        self._dirs[wd] = os.path.normpath(rel) if rel else ""
        if len(self._dirs) > self._cap:
            raise _Full
        return True

    def _note_linked(self, rel: str, st: os.stat_result | None) -> bool:
        """Remember `rel` when it is a file with other names (a write through one makes no event here); True then."""
        if st is None or not stat.S_ISREG(st.st_mode) or st.st_nlink < 2:
            self._linked.pop(rel, None)
            if self._kept is not None:
                self._kept.discard(rel)
            return False
        if rel not in self._linked and len(self._linked) >= MAX_LINKED:
            raise _Full
        self._linked[rel] = (st.st_ctime_ns, st.st_size, st.st_ino)
        return True

    def keep_linked(self, ignored: set[str]) -> None:
        """Re-`lstat` only those files with other names that are not in or below `ignored` (files and dirs git ignores,
        told after each full scan; ignored files are never read): a `uv` venv or a pnpm tree of hard links costs
        nothing."""
        with self._lock:
            self._kept = {rel for rel in self._linked if not any(
                "/".join(rel.split("/")[:depth]) in ignored for depth in range(1, rel.count("/") + 2))}

    @property
    def has_linked(self) -> bool:
        """Whether some file of the tree has other names."""
        return bool(self._linked)

    def _relink(self) -> None:
        """Mark each file with other names whose ctime, size or inode changed (or that went) since last looked at."""
        for rel in list(self._kept or ()):
            key = self._linked.get(rel)
            try:
                st = beneath.lstat_sync(self.root, rel)
            except OSError:
                st = None
            if st is None or (st.st_ctime_ns, st.st_size, st.st_ino) != key:
                self._marks[rel] = self._seq
                self._note_linked(rel, st)

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self._fd["fd"], 1 << 16)
            except BlockingIOError:
                return
            pos = 0
            while pos < len(data):
                wd, mask, _, size = _EVENT.unpack_from(data, pos)
                name = os.fsdecode(data[pos + 16:pos + 16 + size].rstrip(b"\0"))
                pos += 16 + size
                if not self._event(wd, mask, name):
                    self._start()  # what happened is unknown: start again (a full scan follows)
                    return

    def _event(self, wd: int, mask: int, name: str) -> bool:
        """Note one event; False when events were lost or the root itself went away."""
        if mask & _OVERFLOW:
            return False
        if mask & _IGNORED:
            self._dirs.pop(wd, None)
            return True
        top = self._dirs.get(wd)
        if top is None or not name or name == ".git":
            return top != "" or not mask & (_DELETE_SELF | _MOVE_SELF)  # the root itself went away
        rel = f"{top}/{name}" if top else name
        self._seq += 1
        if name == ".gitignore" or len(self._marks) >= 64 * MAX_PATHS:
            self._broken, self._marks = self._seq, {}  # what is ignored changed, or too much to remember
        self._marks[rel] = self._seq
        if mask & _ISDIR and mask & (_MOVED_FROM | _DELETE):
            for gone in [w for w, d in self._dirs.items() if d == rel or d.startswith(rel + "/")]:
                _libc.inotify_rm_watch(self._fd["fd"], gone)  # its path is no longer where its events happen
                del self._dirs[gone]
        if mask & (_MOVED_TO | _CREATE):
            if mask & _ISDIR:
                return self._add(rel)
            try:  # a new name of a file that has others (only a process outside the sandbox can make one)
                return not self._note_linked(rel, beneath.lstat_sync(self.root, rel))
            except OSError:
                return True  # gone, or below a symlink: nothing to write through here
            except _Full:
                return False
        return True


def _close(fd: dict[str, int]) -> None:
    if fd["fd"] >= 0:
        os.close(fd["fd"])
        fd["fd"] = -1


_watches: weakref.WeakValueDictionary[Path, TreeWatch] = weakref.WeakValueDictionary()
_watches_lock = threading.Lock()


def watch(root: Path) -> TreeWatch:
    """The one watch of `root` in this process (started at its first use)."""
    with _watches_lock:
        found = _watches.get(root)
        if found is None:
            found = _watches[root] = TreeWatch(root)
        return found
