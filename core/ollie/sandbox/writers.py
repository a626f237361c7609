"""Where running steps may write, as shared flocks in ollie's state dir (one lock file per directory or file, named by
the hash of its device and inode).

A program outside the sandbox that opens a workspace path by name (an ACP client answering `fs/read_text_file` or
`fs/write_text_file`) follows a link a step swapped in after ollie checked the path. `quiet` tells when no running
step of any session, in any ollie process of the user, may write that path or a directory above it (waiting a while
for them to end), and keeps it so while held: steps starting meanwhile wait for it.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import logging
import os
import stat
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, suppress
from contextvars import ContextVar
from pathlib import Path

from ollie import paths

log = logging.getLogger("ollie.sandbox.writers")

# Steps wait here for a `quiet` holder (one answer of the editor), not in the loop's default executor, which the
# holder may need meanwhile.
_waiting = ThreadPoolExecutor(max_workers=64, thread_name_prefix="ollie-writers")
# What a step started in this context runs, as the user is shown it (its code, a tool call): named to the model when
# it holds up an editor's edit. The places this process's running steps hold, with that.
running: ContextVar[str] = ContextVar("ollie_writers_running", default="")
_holders: dict[str, list[str]] = {}


def _lock(folder: str, path: str) -> int:
    """A descriptor of `path`'s lock file in `folder` (made when missing; never through a link)."""
    name = os.path.join(folder, hashlib.sha256(os.fsencode(path)).hexdigest()[:32])
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(name, flags, 0o600)
    except FileNotFoundError:  # no folder yet: made here, not looked for on every step's path
        os.makedirs(folder, mode=0o700, exist_ok=True)
        return os.open(name, flags, 0o600)


def _close(fds: Iterable[int]) -> None:
    for fd in fds:
        os.close(fd)


def _locked(places: Iterable[str], how: int) -> list[int] | None:
    """Descriptors holding `how` locks on every place's lock file; None when a LOCK_NB one is taken, or the lock
    files cannot be made (a read-only state dir: then no `quiet` either). Blocking."""
    fds: list[int] = []
    folder = os.path.join(paths.state_dir(), "writers")
    try:
        for place in places:
            fds.append(_lock(folder, place))
            fcntl.flock(fds[-1], how)
    except OSError as exc:
        _close(fds)
        if not isinstance(exc, BlockingIOError):
            log.warning("no lock file for a path steps may write", extra={"reason": str(exc)})
        return None
    except BaseException:
        _close(fds)
        raise
    return fds


def _key(st: os.stat_result) -> str:
    """The lock's name for a file or directory: its device and inode, which a rename or a second name keeps."""
    return f"{st.st_dev}:{st.st_ino}"


def places(writable: Iterable[Path]) -> dict[str, str]:
    """Each path a step may write (as its policy names it), with the directory or file it leads to now (`_key`; ""
    when there is none: the step then gets no rule for it, a parent's covers what appears there).

    Resolved once per step: the lock is taken on that directory, and the step's Landlock rule is granted only if its
    path still leads there when the step opens it (landlock.open_rules), so a link swapped in between is never both.
    Keyed by inode, not name: a directory another step renames away keeps its rule (Landlock's are on inodes), and so
    its lock. A key starting with `~` (a session's own temp dir, which holds no workspace file; a device, FIFO or
    socket) is pinned, not locked: no lock file for each of them."""
    runtime = os.path.realpath(paths.runtime_tmp_dir())
    inside = runtime.rstrip("/") + "/"
    found: dict[str, str] = {}
    for path in map(str, writable):
        # The policy's paths are the user's: their links count. No lock for a device (the default policy's
        # /dev/null, /dev/tty...): `quiet` guards plain files and the directories above them, and writing a device
        # swaps no link. (Strings, not pathlib: this runs on every step's path.)
        # One lookup: the key and where it lies are of one inode (between two, a step could swap a link in and have
        # a workspace dir taken for a temp dir).
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except (OSError, ValueError):
            found[path] = ""
            continue
        try:
            st = os.fstat(fd)
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                found[path] = "~" + _key(st)  # pinned all the same: a FIFO swapped for a link to a tree gets no rule
                continue
            try:
                real = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:  # no /proc to say where it lies: locked
                real = ""
            found[path] = ("~" if real == runtime or real.startswith(inside) else "") + _key(st)
        finally:
            os.close(fd)
    return found


def pinned(readable: Iterable[Path | str]) -> dict[str, str]:
    """Each of the paths a step may only read with what it leads to now (`~` and its key: pinned, not locked), but those
    not there and those under /proc (whose rules are opened on the step's own procfs)."""
    found: dict[str, str] = {}
    for path in map(str, readable):
        if path != "/proc" and not path.startswith("/proc/"):
            with suppress(OSError, ValueError):
                found[path] = "~" + _key(os.stat(path))
    return found


def _keys(path: Path) -> list[str]:
    """The keys of `path` (followed) and of each directory above it that is there."""
    real = os.path.realpath(path)
    keys = []
    for place in (real, *map(str, Path(real).parents)):
        try:
            keys.append(_key(os.stat(place)))
        except (OSError, ValueError):
            continue
    return keys


def _exclusive(path: Path) -> list[int] | None:
    return _locked(_keys(path), fcntl.LOCK_EX | fcntl.LOCK_NB)


async def _taken(taking: asyncio.Future[list[int] | None]) -> list[int] | None:
    """The locks a thread is taking; cancelled, they are let go once taken (never left held by no one)."""
    try:
        return await asyncio.shield(taking)
    except asyncio.CancelledError:
        taking.add_done_callback(lambda done: done.cancelled() or done.exception() or _close(done.result() or []))
        raise


def _held(fds: list[int], places: list[str], what: str) -> Callable[..., None]:
    for place in places:
        _holders.setdefault(place, []).append(what)

    def release(*_: object) -> None:
        _close(fds)
        for place in places:
            _holders[place].remove(what)
            if not _holders[place]:
                del _holders[place]
    return release


async def hold(resolved: Mapping[str, str]) -> Callable[..., None]:
    """Shared locks on the paths a step starting may write (`places`), once no `quiet` holder is left; the callback
    (call it once, when every process of the step is gone) releases them."""
    places = sorted({key for key in resolved.values() if key and not key.startswith("~")})
    # Almost always no editor holds one: taken here, without the thread hop every step would pay.
    fds = _locked(places, fcntl.LOCK_SH | fcntl.LOCK_NB)
    if fds is None:
        loop = asyncio.get_running_loop()
        fds = await _taken(loop.run_in_executor(_waiting, lambda: _locked(places, fcntl.LOCK_SH) or [])) or []
    return _held(fds, places, running.get() or "a step")


def holder(path: Path) -> str | None:
    """What a step of this process that may write `path` (or a directory above it) runs; None when none does."""
    return next((_holders[key][0] for key in _keys(path) if key in _holders), None)


@asynccontextmanager
async def quiet(path: Path, *, wait_s: float = 0.0) -> AsyncIterator[bool]:
    """True inside when no running step may write `path` or a directory above it (their locks held exclusively
    until the end), waiting up to `wait_s` for those running to end; False when one still may."""
    deadline = time.monotonic() + wait_s
    pause = 0.02
    # Polled, not a blocking LOCK_EX in a thread: that one could not be cancelled (Stop).
    while (fds := await _taken(asyncio.ensure_future(asyncio.to_thread(_exclusive, path)))) is None:
        if time.monotonic() >= deadline:
            break
        await asyncio.sleep(min(pause, deadline - time.monotonic()))
        pause = min(pause * 2, 0.25)
    try:
        yield fds is not None
    finally:
        _close(fds or [])
