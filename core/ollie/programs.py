"""The programs the daemon runs outside any sandbox (git, bash, ldd), found only where sandboxed code cannot write.

Tool code can plant a `git` in `.venv/bin` or `node_modules/.bin` on PATH, which the daemon would run with the user's
rights: helpers are found on `trusted_path()` (no entry a step may write) and checked again at each use.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from ollie import paths

FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin"
# Directory names that hold what a project installs (and so tool code can write).
_PROJECT_BINS = frozenset({".venv", "venv", "node_modules", ".tox", ".nox", "__pypackages__", ".direnv"})


class ProgramNotFound(OSError):
    """A helper the daemon needs is not on any trusted PATH entry."""


def _writable_roots() -> list[Path]:
    """Dirs tool code (or anyone) may write: temp dirs, ollie's own state, the directory the daemon started in."""
    start = os.getcwd()  # unless a launcher's `/` (a desktop entry, a service): no project, and it holds every entry
    roots = [tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm", os.environ.get("TMPDIR") or "/tmp",
             paths.data_dir(), paths.state_dir(), paths.sessions_dir(), *([start] if start != "/" else [])]
    return [Path(os.path.realpath(r)) for r in roots]


def in_project_env(path: Path | str) -> bool:
    """Whether `path` lies in what a project installs (`.venv`, `node_modules`...): its steps, or another daemon's in
    that project, may write there."""
    return any(part in _PROJECT_BINS for part in Path(path).parts)


def _refused(entry: str, writable: list[Path], home: Path) -> str | None:
    """Why PATH entry `entry` may hold a planted program, else None."""
    if not entry or not os.path.isabs(entry):
        return "relative"
    real = Path(os.path.realpath(entry))
    if in_project_env(real):
        return "a project's environment"
    try:
        # First: a dir the user may not reach (root's, kept in PATH by `su`) made the checks below raise EACCES.
        info = os.stat(real)
    except OSError:
        return "unreadable"
    if (real.parent / "pyvenv.cfg").exists() or (real.parent / "conda-meta").is_dir():
        return "a Python environment"
    for root in writable:
        if real == root or root in real.parents:
            # The start directory may be $HOME (VS Code without a folder): ~/bin and ~/.local/bin stay.
            if root == home and real != home:
                continue
            return f"under {root}"
    if info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
        return "world-writable"
    return None


# Every path a sandboxed step of this process was allowed to write (its policy's rw/rwx: workspaces, caches...).
_written: set[Path] = set()
_noted: set[tuple[Path | str, ...]] = set()
# Helper name -> the path last found for it; re-checked at each use (the set above grows, files change).
_found: dict[str, str] = {}


def note_writable(paths: Iterable[Path | str]) -> None:
    """Sandboxed code may write `paths` from now on: no helper is run from there, no elevated PATH names them, no cwd
    is reached through a link there."""
    given = tuple(paths)
    if given not in _noted:  # every spawn notes its policy's paths: resolve each set once
        _noted.add(given)
        _written.update(Path(os.path.realpath(p)) for p in given)


def step_writable() -> list[Path]:
    """Where sandboxed steps may have written: every path one of this process was granted, and ollie's dirs that hold
    the ones it grants (session temp dirs, plan files, project notes), where earlier processes' steps wrote too."""
    return [*_written, paths.runtime_tmp_dir(), paths.data_dir(), paths.state_dir(), paths.sessions_dir()]


_Root = TypeVar("_Root", Path, str)


def _root_holding(path: str, roots: Iterable[_Root]) -> _Root | None:
    """The one of `roots` that is real path `path` or holds it, if any."""
    return next((root for root in roots if path == str(root) or path.startswith(os.path.join(root, ""))), None)


def step_may_write(path: str, workspace: Path | str) -> bool:
    """Whether `path` (once links are followed) is in `workspace` or another area `step_writable` names."""
    roots = [os.path.realpath(r) for r in (workspace, *step_writable())]
    return _root_holding(os.path.realpath(path), roots) is not None


def _kept(path: str, writable: list[Path]) -> tuple[str, ...]:
    home = Path(os.path.realpath(os.path.expanduser("~")))
    return tuple(dict.fromkeys(e for e in path.split(os.pathsep) if _refused(e, writable, home) is None))


@functools.cache
def _trusted_entries() -> tuple[tuple[str, str], ...]:
    """(entry, its real path) of each PATH entry kept; resolved once (a step cannot move a dir outside what it may
    write; `program` checks each helper's own real path at every use)."""
    kept = _kept(os.environ.get("PATH") or FALLBACK_PATH, _writable_roots()) or tuple(FALLBACK_PATH.split(os.pathsep))
    return tuple((e, os.path.realpath(e)) for e in kept)


def _unwritten(entries: Iterable[tuple[str, str]]) -> str:
    kept = [e for e, real in entries if _root_holding(real, _written) is None]
    # Never empty: an empty PATH (or entry) means the current directory to shells and execvp.
    return os.pathsep.join(kept) or os.devnull


def trusted_path() -> str:
    """PATH without relative, temp, project-environment, start-directory or world-writable entries (judged once),
    nor any a sandboxed step may write (judged at each call)."""
    return _unwritten(_trusted_entries())


def trusted(path: str, workspace: Path | str) -> str:
    """`path` (a PATH) without the entries `trusted_path()` leaves out, nor any inside `workspace`."""
    kept = _kept(path, [*_writable_roots(), Path(os.path.realpath(workspace))])
    return _unwritten((e, os.path.realpath(e)) for e in kept)


def _usable(path: str, workspace: str | None) -> bool:
    """Whether real path `path` is still an executable regular file outside every area sandboxed code may write."""
    if workspace is not None and (path == workspace or path.startswith(workspace.rstrip("/") + "/")):
        return False
    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and os.access(path, os.X_OK) and _root_holding(path, _written) is None


def program(name: str, workspace: Path | str | None = None) -> str:
    """The real path of helper `name` on `trusted_path()`, never where a step may write (checked each call)."""
    root = os.path.realpath(workspace) if workspace is not None else None
    found = _found.get(name)
    if found is not None and _usable(found, root):
        return found
    refused = []
    for entry in trusted_path().split(os.pathsep):
        candidate = shutil.which(name, path=entry)
        if candidate is None:
            continue
        real = os.path.realpath(candidate)
        if _usable(real, root):
            _found[name] = real
            return real
        refused.append(real)
    if refused:
        raise ProgramNotFound(f"{name} resolves to {refused[0]}, where sandboxed code may write "
                              f"(the workspace {root}, or a path a sandbox policy grants): not run")
    raise ProgramNotFound(f"{name} is not on a trusted PATH entry (looked on {trusted_path()}: PATH without the "
                          "entries a project or sandboxed code may write)" +
                          (f"; it was {found}, now gone" if found is not None else ""))


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
