"""Undo one hunk (or a whole file) of a step's change on disk, refusing when the file moved on since."""

from __future__ import annotations

import asyncio
import os
import stat
import tempfile
from pathlib import Path

from ollie.workspace.diff import text_after_undo
from ollie.workspace.types import FileChange, StaleChange, WorkspaceError


def _target(root: Path, rel: str) -> Path:
    """`root/rel`, refused when it would leave `root` (`..`, absolute, or a symlinked directory on the way)."""
    if os.path.isabs(rel) or ".." in Path(rel).parts:
        raise WorkspaceError(f"{rel}: not a path inside the workspace")
    path = root / rel
    parent = os.path.realpath(path.parent)
    if parent != str(root) and not parent.startswith(str(root) + os.sep):
        raise WorkspaceError(f"{rel}: its directory leads outside the workspace")
    return path


def _read_current(path: Path) -> bytes | None:
    """The file's bytes (None when absent), never following a symlink at the file itself."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StaleChange(str(path), f"cannot read it as a regular file ({exc.strerror})") from exc
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise StaleChange(str(path), "is no longer a regular file")
        return handle.read()


def _write(path: Path, data: bytes, mode: int) -> None:
    """Replace the file atomically (a temp file beside it, then rename), with `mode`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".ollie-undo-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _mode(change: FileChange, path: Path) -> int:
    """The mode to write with: the file's current one, else the one it had before the step."""
    try:
        return stat.S_IMODE(os.lstat(path).st_mode)
    except FileNotFoundError:
        return 0o755 if change.old_mode == "100755" else 0o644


def _undo_sync(root: Path, change: FileChange, hunk_index: int | None) -> bytes | None:
    path = _target(root, change.path)
    if change.old_mode == "120000" or change.new_mode == "120000":
        raise WorkspaceError(f"{change.path}: a symlink change is undone by a rewind, not here")
    current = _read_current(path)
    if current != change.new_data:
        what = "exists again" if change.new_data is None else ("was deleted" if current is None else "was edited")
        raise StaleChange(change.path, f"the file {what} since this change; undo refused")
    if hunk_index is None:
        result = change.old_data
    else:
        text = text_after_undo(change, hunk_index)  # raises for a binary, added or deleted file
        result = None if text is None else text.encode("utf-8")
    if result is None:
        os.unlink(path)
    else:
        _write(path, result, _mode(change, path))
    return result


async def undo(root: Path | str, path: str, hunk_index: int | None, change: FileChange) -> str | None:
    """Revert hunk `hunk_index` (None: the whole file) of `change` on disk; the file's new text (None if gone).

    Refused with StaleChange when the file on disk is no longer the change's result. `path` must be
    the change's path (the caller's check that it undoes what it means to). A binary file returns None
    whether restored or removed: read it from disk if needed.
    """
    if path != change.path:
        raise ValueError(f"undo of {path} given the change of {change.path}")
    real_root = Path(os.path.realpath(root))
    data = await asyncio.to_thread(_undo_sync, real_root, change, hunk_index)
    if data is None or change.binary:
        return None
    return data.decode("utf-8")
