"""The daemon's one way to files beneath a workspace or session root: no symlinks, only files and dirs, sizes capped.

The workspace is hostile: anything in it may be a symlink to a secret, a FIFO that blocks for good, a device that
never ends. Every file access the daemon makes under a root goes through here (test_chokepoint_scan.py keeps it so):
paths resolve beneath the root with no symlink followed (`openat2`, else an O_NOFOLLOW walk), writes are relative to
the held parent's fd, fstat admits only files and dirs (opened O_NONBLOCK), reads stop at a cap (OLLIE_MAX_FILE_BYTES).
A session's cwd is held open from when it was checked (`hold`): a root at or beneath it is reached through that fd,
never by its name again (a dir on its way swapped for a link meanwhile leads nowhere).
The async functions run in a thread; the `*_sync` ones are for code already in a worker thread.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import functools
import glob
import os
import stat
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from ollie.regularfile import NotRegular, read_regular
from ollie.regularfile import TooLarge as TooLarge  # beneath.TooLarge, as its readers know it

CAP_ENV = "OLLIE_MAX_FILE_BYTES"
DEFAULT_CAP = 16 * 1024 * 1024
_SYS_OPENAT2 = 437  # x86-64 and arm64 alike
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_O_PATH = getattr(os, "O_PATH", 0o10000000)


class OutsideRoot(OSError):
    """A path the daemon refuses to touch: it leaves the root (`..`, absolute elsewhere) or goes through a symlink (not a
    file, too large: `ollie.regularfile`)."""


def cap() -> int:
    """The read cap in bytes: OLLIE_MAX_FILE_BYTES when set to a positive integer, else 16 MiB."""
    raw = os.environ.get(CAP_ENV, "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_CAP


def relative(root: Path | str, given: Path | str) -> str:
    """`given` as a normalised path beneath `root` ("." for it); lexical only (symlinks are refused on open)."""
    text = os.fspath(given)
    if "\0" in text or not text:
        raise OutsideRoot(errno.EINVAL, f"{text!r}: not a path")
    base = os.fspath(root)
    if os.path.isabs(text):
        for candidate in dict.fromkeys((base, os.path.realpath(base))):
            rel = os.path.relpath(os.path.normpath(text), candidate)
            if rel != ".." and not rel.startswith("../"):
                return rel
        raise OutsideRoot(errno.EXDEV, f"{text}: not inside {base}")
    rel = os.path.normpath(text)
    if rel == ".." or rel.startswith("../"):
        raise OutsideRoot(errno.EXDEV, f"{text}: leaves {base}")
    return rel


def inside(root: Path | str, given: Path | str) -> bool:
    """Whether `given` names a path beneath `root` lexically (symlinks are still refused on open)."""
    try:
        relative(root, given)
    except OutsideRoot:
        return False
    return True


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_openat2_ok = hasattr(_libc, "syscall")


def _openat2(dir_fd: int, rel: str, flags: int) -> int:
    """openat2(dir_fd, rel, flags, BENEATH|NO_SYMLINKS); ENOSYS when the kernel lacks it."""
    how = _OpenHow(flags | os.O_CLOEXEC, 0, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    fd = _libc.syscall(_SYS_OPENAT2, dir_fd, os.fsencode(rel), ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), rel)
    return fd


def _walk_open(dir_fd: int, rel: str, flags: int) -> int:
    """The same as `_openat2` by hand: each directory opened O_NOFOLLOW from the one before."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise OSError(errno.EXDEV, "a path with '..' is refused", rel)
    if not parts:
        return os.open(".", flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    current = os.dup(dir_fd)
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, _O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=current)
            except NotADirectoryError:
                if stat.S_ISLNK(os.stat(part, dir_fd=current, follow_symlinks=False).st_mode):
                    raise OSError(errno.ELOOP, "a symlink on the way", rel) from None
                raise
            os.close(current)
            current = nxt
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=current)
    finally:
        os.close(current)


def _open_at(dir_fd: int, rel: str, flags: int) -> int:
    global _openat2_ok
    if _openat2_ok:
        try:
            return _openat2(dir_fd, rel, flags)
        except OSError as exc:
            if exc.errno not in (errno.ENOSYS, errno.EPERM):  # EPERM: a seccomp filter that forbids it
                raise
            _openat2_ok = False
    return _walk_open(dir_fd, rel, flags)


@contextmanager
def _fd(root: Path | str, rel: str, flags: int) -> Iterator[int]:
    """An fd of `rel` beneath `root` opened with `flags`; OutsideRoot for a symlink or an escape."""
    try:
        root_fd = _open_root(root)
        try:
            fd = _open_at(root_fd, rel, flags)
        finally:
            os.close(root_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EXDEV):
            raise OutsideRoot(exc.errno, f"{rel}: a symlink on the way, or outside {root}") from exc
        if exc.errno == errno.ENXIO:  # a FIFO opened for writing with no reader, a socket
            raise NotRegular(exc.errno, f"{rel} is not a regular file") from exc
        raise
    try:
        yield fd
    finally:
        os.close(fd)


# The held roots by the real path each had when held: fds, the latest last (two sessions may hold one path).
_holds: dict[str, list[int]] = {}
_holds_lock = threading.Lock()  # calls run in threads: an fd is never looked up while its release closes it


def hold(real: Path | str) -> Callable[[], None]:
    """Hold directory `real` (a real path, just checked) open until the returned release is called: every call here
    with a root at or beneath it reaches that very directory from then on; OutsideRoot when it leads elsewhere now."""
    key = os.path.abspath(real)
    fd = os.open(key, _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    if (now := os.readlink(f"/proc/self/fd/{fd}")) != key:
        os.close(fd)
        raise OutsideRoot(errno.ELOOP, f"{key} now leads to {now} (a directory on its way was swapped for a link)")
    with _holds_lock:
        _holds.setdefault(key, []).append(fd)

    def release() -> None:
        with _holds_lock:
            if fd in (fds := _holds.get(key, [])):
                fds.remove(fd)
                if not fds:
                    del _holds[key]
                os.close(fd)

    return release


def _open_root(root: Path | str) -> int:
    """An O_PATH fd of `root`: beneath the nearest held root at or above it (no link followed), else by its name."""
    path = above = os.path.abspath(root)
    with _holds_lock:  # a copy of the fd: its release may close the held one meanwhile (a stalled mount: no lock held)
        while (fds := _holds.get(above)) is None and (up := os.path.dirname(above)) != above:
            above = up
        held = os.dup(fds[-1]) if fds and not _users_own(above, path) else None
    if held is None:
        return os.open(path, _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return _open_at(held, os.path.relpath(path, above), _O_PATH | os.O_DIRECTORY)
    finally:
        os.close(held)


def _users_own(held: str, path: str) -> bool:
    """Whether `path`, beneath held root `held`, is reached by name as before: `held` holds the user's home (a session
    opened at $HOME, or /), where ollie's own dirs are, reached through the user's own links (a dotfiles `~/.config`,
    a /home that leads to /var/home)."""
    return path != held and os.path.commonpath([held, os.path.expanduser("~")]) == held


def read_bytes_sync(root: Path | str, path: Path | str, limit: int | None = None) -> bytes:
    """The bytes of regular file `path` beneath `root`; FileNotFoundError, OutsideRoot, NotRegular or TooLarge."""
    rel = relative(root, path)
    most = cap() if limit is None else limit
    with _fd(root, rel, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY) as fd:
        return read_regular(fd, rel, most)


def read_text_sync(root: Path | str, path: Path | str, limit: int | None = None, errors: str = "strict") -> str:
    """`read_bytes_sync` decoded as UTF-8 (UnicodeDecodeError with errors='strict')."""
    return read_bytes_sync(root, path, limit).decode("utf-8", errors=errors)


def lstat_sync(root: Path | str, path: Path | str) -> os.stat_result | None:
    """The entry's own stat (a symlink's, never its target's); None when absent; OutsideRoot past a symlinked dir."""
    rel = relative(root, path)
    parent, name = os.path.split(rel)
    try:
        with _fd(root, parent or ".", _O_PATH | os.O_DIRECTORY) as dir_fd:
            return os.stat(name or ".", dir_fd=dir_fd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


def located_sync(root: Path | str, path: Path | str) -> tuple[Path, os.stat_result | None]:
    """`path`'s real path, as the kernel names its directory opened beneath `root` with no symlink followed, and the
    entry's own stat (None: absent); FileNotFoundError when its directory is. One resolve: a check and a lookup both
    given this path agree, whatever a step swaps on the way after (its names are never resolved again here)."""
    real, fd = pin_sync(root, path)
    if fd is None:
        return real, None
    try:
        return real, os.fstat(fd)
    finally:
        os.close(fd)


def pin_sync(root: Path | str, path: Path | str) -> tuple[Path, int | None]:
    """`path`'s real path (see `located_sync`) and an O_PATH fd of the entry there, the link itself for a link (None:
    absent), for the caller to close: while it is open, no other file takes that inode's number."""
    parent, name = os.path.split(relative(root, path))
    with _fd(root, parent or ".", _O_PATH | os.O_DIRECTORY) as dir_fd:
        where = os.readlink(f"/proc/self/fd/{dir_fd}")
        try:
            return Path(where, name), os.open(name or ".", _O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        except FileNotFoundError:
            return Path(where, name), None


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    """The own stat of entry `name` of a dir held open (a `walk_sync` dir_fd); None when it is gone."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None


def kind_sync(root: Path | str, path: Path | str) -> str | None:
    """'file', 'dir', 'symlink' or 'other' (FIFO, device, socket); None when absent."""
    info = lstat_sync(root, path)
    if info is None:
        return None
    mode = info.st_mode
    return ("file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode)
            else "symlink" if stat.S_ISLNK(mode) else "other")


@contextmanager
def _parent(root: Path | str, rel: str, *, create: bool) -> Iterator[tuple[int, str]]:
    """(fd of `rel`'s directory, its last name); missing directories made when `create`, none through a symlink."""
    parent, name = os.path.split(rel)
    if not name or name in (".", ".."):
        raise OutsideRoot(errno.EINVAL, f"{rel}: not a file beneath the root")
    if create and parent:
        _makedirs(root, parent)
    with _fd(root, parent or ".", _O_PATH | os.O_DIRECTORY) as dir_fd:
        yield dir_fd, name


def _makedirs(root: Path | str, rel: str) -> None:
    with _fd(root, ".", _O_PATH | os.O_DIRECTORY) as start:
        current = os.dup(start)
    try:
        for part in rel.split("/"):
            with suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=current)
            try:
                nxt = os.open(part, _O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=current)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise OutsideRoot(exc.errno, f"{rel}: {part} is a symlink or not a directory") from exc
                raise
            os.close(current)
            current = nxt
    finally:
        os.close(current)


def temporary(name: str) -> str:
    """The glob of the temporary files `write_bytes_sync` writes `name` through (a killed process leaves one)."""
    return f".ollie-{'[0-9a-f]' * 12}-{glob.escape(name)}"


def write_bytes_sync(root: Path | str, path: Path | str, data: bytes, mode: int = 0o644, *, sync: bool = False) -> int:
    """Replace `path` beneath `root` atomically (a symlink there is replaced, not followed), durably with `sync`; the
    user's file in a directory they may not write is overwritten in place. Returns the inode written (a session log
    knows its file so, with no stat of a path another process may have replaced meanwhile)."""
    rel = relative(root, path)
    with _parent(root, rel, create=True) as (dir_fd, name):
        tmp = f".ollie-{os.urandom(6).hex()}-{name}"[:255]
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
        except PermissionError:
            # No file can be made beside it to rename over it (a normal user's undo of an edit the tools made in
            # place there failed): written in place, as an editor does.
            if (inode := _overwrite(dir_fd, name, data, mode, sync=sync)) is None:
                raise
            return inode
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                os.fchmod(out.fileno(), mode)
                inode = os.fstat(out.fileno()).st_ino
                if sync:
                    out.flush()
                    os.fsync(out.fileno())
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
        if sync:  # the rename too
            listing = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dir_fd)
            try:
                os.fsync(listing)
            finally:
                os.close(listing)
    return inode


def _overwrite(dir_fd: int, name: str, data: bytes, mode: int, *, sync: bool) -> int | None:
    """Write `data` over the regular file `name` in `dir_fd` (never through a symlink): its inode; None when none is
    there."""
    try:
        # O_NONBLOCK: a FIFO there fails at once (ENXIO) instead of waiting for a reader.
        fd = os.open(name, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except PermissionError:
        raise
    except OSError:  # absent, a symlink (ELOOP), a FIFO (ENXIO)
        return None
    with os.fdopen(fd, "wb") as out:
        if not stat.S_ISREG((st := os.fstat(fd)).st_mode):
            return None
        os.ftruncate(fd, 0)
        out.write(data)
        with suppress(PermissionError):  # another user's file (group-writable) keeps its mode
            os.fchmod(fd, mode)
        if sync:
            out.flush()
            os.fsync(fd)
    return st.st_ino


def symlink_sync(root: Path | str, path: Path | str, target: str) -> None:
    """Make `path` beneath `root` a symlink to `target` (replacing what is there); the link is never followed here."""
    rel = relative(root, path)
    with _parent(root, rel, create=True) as (dir_fd, name):
        tmp = f".ollie-{os.urandom(6).hex()}-{name}"[:255]
        os.symlink(target, tmp, dir_fd=dir_fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def remove_sync(root: Path | str, path: Path | str) -> bool:
    """Remove `path` beneath `root` (a symlink itself, never its target; an empty dir); False when absent."""
    rel = relative(root, path)
    try:
        with _parent(root, rel, create=False) as (dir_fd, name):
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                os.rmdir(name, dir_fd=dir_fd)
            else:
                os.unlink(name, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return True


def real_dir(path: Path | str, guarded: Iterable[Path | str]) -> Path:
    """The real path of directory `path` (absolute), walked a name at a time; OutsideRoot for a symlink in a
    `guarded` dir (one tool code can write: it may have planted the link), NotADirectoryError, FileNotFoundError."""
    roots = [os.path.realpath(root) for root in guarded]
    names, real, hops = os.fspath(path).split("/")[::-1], "/", 0
    while names:
        name = names.pop()
        if name in ("", "."):
            continue
        if name == "..":
            real = os.path.dirname(real)  # `real` has no link in it: its parent is what the kernel's `..` is
            continue
        step = os.path.join(real, name)
        info = os.lstat(step)
        if stat.S_ISLNK(info.st_mode):
            # Above every guarded dir the links are the user's own (/home -> /usr/home): followed, each hop checked.
            inside = next((root for root in roots if os.path.commonpath((real, root)) == root), None)
            if inside is not None:
                raise OutsideRoot(errno.ELOOP, f"{step} is a symlink inside {inside}, where tool code writes: not followed")
            hops += 1
            if hops > 40:
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), os.fspath(path))
            target = os.readlink(step)
            real = "/" if target.startswith("/") else real
            names.extend(target.split("/")[::-1])
        elif not stat.S_ISDIR(info.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), step)
        else:
            real = step
    return Path(real)


def moved(cwd: Path | str) -> str | None:
    """Where `cwd`, a real path when it was set, leads now if elsewhere (a dir on its way swapped for a link)."""
    now = os.path.realpath(cwd)
    return now if now != os.path.abspath(cwd) else None


@contextmanager
def dir_sync(root: Path | str, path: Path | str) -> Iterator[int]:
    """An O_PATH fd of the directory `path` beneath `root` (closed after), never reached through a symlink (`"."`:
    `root` itself, reached as every call here reaches it; for a child process, its `/proc/self/fd/N`)."""
    with _fd(root, relative(root, path), _O_PATH | os.O_DIRECTORY) as fd:
        yield fd


def listdir_sync(root: Path | str, path: Path | str) -> list[str]:
    """The names in the directory `path` beneath `root`, never reached through a symlink."""
    with _fd(root, relative(root, path), os.O_RDONLY | os.O_DIRECTORY) as fd:
        return os.listdir(fd)


def walk_sync(root: Path | str, path: Path | str = ".") -> Iterator[tuple[str, list[str], list[str], int]]:
    """os.fwalk beneath `root`, never into a symlinked directory: (dir, dirs, files, dir_fd), dir relative."""
    rel = relative(root, path)
    with _fd(root, rel, _O_PATH | os.O_DIRECTORY) as start:
        yield from os.fwalk(".", dir_fd=start, follow_symlinks=False)


async def read_bytes(root: Path | str, path: Path | str, limit: int | None = None) -> bytes:
    """`read_bytes_sync` in a thread."""
    return await asyncio.to_thread(read_bytes_sync, root, path, limit)


async def read_text(root: Path | str, path: Path | str, limit: int | None = None, errors: str = "strict") -> str:
    """`read_text_sync` in a thread."""
    return await asyncio.to_thread(read_text_sync, root, path, limit, errors)


async def kind(root: Path | str, path: Path | str) -> str | None:
    """`kind_sync` in a thread."""
    return await asyncio.to_thread(kind_sync, root, path)


async def write_bytes(root: Path | str, path: Path | str, data: bytes, mode: int = 0o644, *, sync: bool = False) -> int:
    """`write_bytes_sync` in a thread."""
    return await asyncio.to_thread(functools.partial(write_bytes_sync, root, path, data, mode, sync=sync))


async def remove(root: Path | str, path: Path | str) -> bool:
    """`remove_sync` in a thread."""
    return await asyncio.to_thread(remove_sync, root, path)
