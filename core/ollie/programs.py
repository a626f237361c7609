"""The programs the daemon runs outside any sandbox (git, bash, ldd), found only where sandboxed code cannot write.

A `PATH` may name the project's `.venv/bin`, `node_modules/.bin`, `.`, or a
temp dir: tool code can plant a `git` or `bash` there, and the daemon would run
it with the user's full rights. So the daemon's own helpers are looked up on
`trusted_path()` (PATH without such entries), resolved once to absolute paths,
and checked against the session's workspace when used. Elevated steps run with
that same PATH.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import tempfile
from pathlib import Path

from ollie import paths

FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin"
# Directory names that hold what a project installs (and so tool code can write).
_PROJECT_BINS = frozenset({".venv", "venv", "node_modules", ".tox", ".nox", "__pypackages__", ".direnv"})


class ProgramNotFound(OSError):
    """A helper the daemon needs is not on any trusted PATH entry."""


def _writable_roots() -> list[Path]:
    """Dirs tool code (or anyone) may write: temp dirs, ollie's own state, the directory the daemon started in."""
    roots = [tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm", os.environ.get("TMPDIR") or "/tmp",
             paths.data_dir(), paths.state_dir(), paths.sessions_dir(), os.getcwd()]
    return [Path(os.path.realpath(r)) for r in roots]


def _refused(entry: str, writable: list[Path], home: Path) -> str | None:
    """Why PATH entry `entry` may hold a planted program, else None."""
    if not entry or not os.path.isabs(entry):
        return "relative"
    real = Path(os.path.realpath(entry))
    if any(part in _PROJECT_BINS for part in real.parts):
        return "a project's environment"
    if (real.parent / "pyvenv.cfg").exists() or (real.parent / "conda-meta").is_dir():
        return "a Python environment"
    for root in writable:
        if real == root or root in real.parents:
            # The start directory may be $HOME (VS Code without a folder): ~/bin and ~/.local/bin stay.
            if root == home and real != home:
                continue
            return f"under {root}"
    try:
        info = os.stat(real)
    except OSError:
        return "unreadable"
    if info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
        return "world-writable"
    return None


@functools.cache
def trusted_path() -> str:
    """PATH without relative, temp, project-environment, start-directory or world-writable entries (cached once)."""
    home = Path(os.path.realpath(os.path.expanduser("~")))
    writable = _writable_roots()
    kept = [e for e in (os.environ.get("PATH") or FALLBACK_PATH).split(os.pathsep)
            if _refused(e, writable, home) is None]
    return os.pathsep.join(dict.fromkeys(kept)) or FALLBACK_PATH


@functools.cache
def _find(name: str) -> str | None:
    found = shutil.which(name, path=trusted_path())
    return os.path.realpath(found) if found else None


def program(name: str, workspace: Path | str | None = None) -> str:
    """The absolute path of helper `name` on `trusted_path()`, resolved once; never one inside `workspace`."""
    found = _find(name)
    if found is None:
        raise ProgramNotFound(f"{name} is not installed (looked on {trusted_path()})")
    if workspace is not None:
        root = os.path.realpath(workspace)
        if found == root or found.startswith(root.rstrip("/") + "/"):
            raise ProgramNotFound(f"{name} resolves to {found}, inside the workspace {root}: not run")
    return found


def is_regular_file(path: str) -> bool:
    """Whether `path` (symlinks followed: interpreters are links) is a regular file; opened so a FIFO never blocks."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    finally:
        os.close(fd)


def starts_with(path: str, prefix: bytes) -> bool:
    """Whether regular file `path` begins with `prefix` (a FIFO or device is never read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, len(prefix)) == prefix
    finally:
        os.close(fd)
