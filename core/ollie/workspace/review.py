"""Undo one hunk (or a whole file) of a step's change on disk, keeping the edits since; refused when they touched it."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

from ollie import beneath
from ollie.workspace import modes
from ollie.workspace.diff import text_after_undo, undo_onto
from ollie.workspace.errors import StaleChange, WorkspaceError
from ollie.workspace.refs import shadow_dir
from ollie.workspace.types import FileChange


def _read_current(root: Path | str, rel: str) -> bytes | None:
    """The file's bytes (None when absent), through the chokepoint: never a symlink, FIFO or device."""
    try:
        return beneath.read_bytes_sync(root, rel)
    except FileNotFoundError:
        return None
    except beneath.OutsideRoot:
        raise
    except OSError as exc:
        raise StaleChange(rel, f"cannot read it as a regular file ({exc.strerror})") from exc


def _mode(change: FileChange, root: Path | str, before: str | None) -> int:
    """The mode to write with: the file's current bits, else those it had at checkpoint `before` (None: 0644); as a
    rewind's, never world-writable, setuid, setgid or sticky (a step's `chmod 4777` outlived its undo)."""
    info = beneath.lstat_sync(root, change.path)
    if info is not None:
        return modes.restored(stat.S_IMODE(info.st_mode) & 0o666, bool(info.st_mode & stat.S_IXUSR))
    bits = modes.at(shadow_dir(Path(root)), before).get(change.path) if before is not None else None
    return modes.restored(bits, change.old_mode == "100755")


def undone_onto(change: FileChange, hunk_index: int | None, now: str) -> str:
    """`now` (the file's text, edited since `change`) with the hunk (None: all of them) undone, the edits since kept;
    StaleChange when one of those touched its lines."""
    text = undo_onto(change, hunk_index, now)
    if text is None:
        where = "this change's lines" if hunk_index is not None else "lines this change made"
        raise StaleChange(change.path, f"the file was edited since this change (by you, or by a later turn) in "
                                       f"{where}; undo refused")
    return text


def _undo_sync(root: Path | str, change: FileChange, hunk_index: int | None, before: str | None) -> bytes | None:
    if change.old_mode == "120000" or change.new_mode == "120000":
        raise WorkspaceError(f"{change.path}: a symlink change is undone by a rewind, not here")
    # `root` is the session's cwd, held open (beneath.hold): a link swapped in on its way sends no write there.
    current = _read_current(root, change.path)
    if current != change.new_data:
        what = "exists again" if change.new_data is None else ("was deleted" if current is None else "was edited")
        if current is None or change.new_data is None or change.binary:
            # A later turn's edit of the file is one too: the user reviewing an earlier turn did not make it.
            raise StaleChange(change.path, f"the file {what} since this change (by you, or by a later turn); undo "
                                           "refused")
        try:
            now = current.decode("utf-8")
        except UnicodeDecodeError:
            raise StaleChange(change.path, "the file is no longer UTF-8 text since this change; undo refused") from None
        result: bytes | None = undone_onto(change, hunk_index, now).encode("utf-8")
    elif hunk_index is None:
        result = change.old_data
    else:
        text = text_after_undo(change, hunk_index)  # raises for a binary, added or deleted file
        result = None if text is None else text.encode("utf-8")
    if result is None:
        beneath.remove_sync(root, change.path)
    else:
        beneath.write_bytes_sync(root, change.path, result, _mode(change, root, before))
    return result


async def undo(root: Path | str, path: str, hunk_index: int | None, change: FileChange,
               before: str | None = None) -> str | None:
    """Revert hunk `hunk_index` (None: the whole file) of `change`, from checkpoint `before`, on disk; the file's new
    text (None if gone).

    StaleChange when the disk no longer holds the change's result and what changed it since touched the hunk (or
    the file is binary, gone, or back since). A binary file returns None.
    """
    if path != change.path:
        raise ValueError(f"undo of {path} given the change of {change.path}")
    try:
        data = await asyncio.to_thread(_undo_sync, root, change, hunk_index, before)
    except beneath.OutsideRoot as exc:
        raise WorkspaceError(f"{change.path}: outside the workspace or through a symlink ({exc.strerror})") from exc
    if data is None or change.binary:
        return None
    return data.decode("utf-8")
