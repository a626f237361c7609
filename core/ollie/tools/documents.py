"""The editor's open documents as the file tools see them: unsaved text read, edits applied into the buffer."""

from __future__ import annotations

import asyncio
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from ollie import beneath

# An LSP document version, or (ACP, which has none) a digest of the text read.
Version = int | str

STALE = "the file changed in the editor since you read it; read it again"
UNREAD = ("not written: the file has the user's unsaved changes in the editor, which you have not read and a whole-file "
          "write would drop; read it, then write it again keeping them (or edit it with file_edit)")
# How long an edit waits for the steps that may write its file to end (the editor would follow a link one put there).
EDIT_WAIT_S = 30.0


def busy(step: str | None) -> str:
    """Why an edit was refused after waiting EDIT_WAIT_S for the step (`step` runs it; None: another process's)."""
    running = f"`{step}`" if step else "a step of another ollie process"
    return (f"a step that may write this file is still running after {EDIT_WAIT_S:g} s ({running}): the editor was "
            "not asked to write it, as it would follow a link that step could put there; edit it once that step ends")


def disk_text(path: Path, errors: str = "replace") -> str | None:
    """`path`'s text on disk through the chokepoint (a FIFO, device, link or giant file is no text); None when
    absent, unreadable or (`errors` "strict") not UTF-8. Blocking."""
    try:
        return beneath.read_text_sync(path.parent, path.name, errors=errors)
    except (OSError, UnicodeDecodeError):
        return None


# Windows-1252 as editors decode it (the WHATWG encoding: Helix's, Sublime's and Kate's fallback, VS Code's guess):
# Latin-1 but for 0x80-0x9F, its smart quotes, dashes and euro sign; the five bytes it leaves undefined stay Latin-1's.
_WINDOWS_1252 = {byte: bytes([byte]).decode("cp1252", "ignore") or chr(byte) for byte in range(0x80, 0xA0)}


def disk_bytes(path: Path) -> bytes | None:
    """`path`'s bytes on disk through the chokepoint; None when absent; OSError when unreadable (a link, a FIFO, a
    giant file). Blocking."""
    try:
        return beneath.read_bytes_sync(path.parent, path.name)
    except FileNotFoundError:
        return None


def disk_holds(path: Path, text: str) -> bool:
    """Whether `path` on disk (through the chokepoint; unreadable: never) is what a buffer of `text` shows (`holds`).
    Blocking."""
    try:
        return holds(disk_bytes(path), text)
    except OSError:  # a link, a FIFO, a giant file: no text a buffer holds
        return False


def holds(data: bytes | None, text: str) -> bool:
    """Whether a buffer of `text` shows file bytes `data` (None: no file, an empty buffer): its bytes as UTF-8 (a BOM
    left out, as editors show it), each that is none a U+FFFD, or, not UTF-8, as Latin-1 (Neovim's fallback) or as
    Windows-1252 (`_WINDOWS_1252`)."""
    if data is None:
        return text == ""
    try:
        # An editor shows a file's BOM as no text: her clean buffer of one was taken for unsaved typing.
        return text in (utf8 := data.decode("utf-8"), utf8.removeprefix("\ufeff"))
    except UnicodeDecodeError:  # (only then: a UTF-8 file's "é" read as Latin-1 is "Ã©", which she may have typed)
        # Each an exact decoding of the whole file: typing anywhere in the buffer still differs from all three.
        latin = data.decode("latin-1")
        return text in (data.decode("utf-8", "replace"), latin, latin.translate(_WINDOWS_1252))


@dataclass(eq=False, repr=False)
class ApplyResult:
    """What became of an edit: applied in the editor, refused (why), or left to the disk (no editor support)."""

    status: Literal["applied", "refused", "disk"]
    reason: str = ""
    # Applied: the editor also wrote the document to disk (so commands the model runs next see the edit).
    saved: bool = False
    # Applied: the document's text was not the disk's before the edit (the user's unsaved changes).
    unsaved: bool = False
    # Applied but not saved: the file changed on disk since the editor last read or wrote it (not overwritten).
    changed_on_disk: bool = False
    # Saved: the text the save wrote when not the edit's (the user's format on save changed it), else None.
    formatted: str | None = None


class EditorDocuments(Protocol):
    """A front end's open documents (see docs/ENGINE-API.md, "Editor documents")."""

    async def text(self, path: Path) -> tuple[str, Version] | None:
        """The editor's text of `path` and its version; None when the editor has no content of its own for it."""
        ...

    async def apply(self, path: Path, new_text: str, version: Version) -> ApplyResult:
        """Replace the document's whole text, refused when its version is no longer `version`; save it if it can."""
        ...


async def plain_path_beneath(root: Path, path: Path | str) -> Path | None:
    """`path`'s real path when it is beneath `root` with no symlink on the way or at its end (a file or nothing there),
    else None. Resolved once (`beneath.located_sync`): the policy check, the editor's lookup and the copy take this
    path and never resolve the name again, which a step may have swapped for a link to ~/.aws meanwhile."""
    try:
        rel = beneath.relative(root, path)
        real, info = await asyncio.to_thread(beneath.located_sync, root, rel)
    except OSError:
        return None
    return real if rel != "." and (info is None or stat.S_ISREG(info.st_mode)) else None


class RootedDocuments:
    """A front end's documents, asked only about files beneath the session's root, resolved without symlinks.

    So `fs/read_text_file`, `fs/write_text_file` and `workspace/applyEdit` never name a file outside the
    workspace, whatever path a tool call, a symlink planted by tool code or a saved edit names.
    """

    def __init__(self, inner: EditorDocuments, root: Callable[[], Path]) -> None:
        self.inner = inner
        self._root = root

    async def text(self, path: Path) -> tuple[str, Version] | None:
        """The editor's text of `path`; None outside the root (the tool then reads the disk, sandboxed)."""
        target = await plain_path_beneath(self._root(), path)
        # A real path given (the file tools': the one their policy check took) is asked about as itself or not at all.
        if target is None or (path.is_absolute() and target != path):
            return None
        return await self.inner.text(target)

    async def apply(self, path: Path, new_text: str, version: Version) -> ApplyResult:
        """Apply through the editor once no step that may write there runs (EDIT_WAIT_S at most); refused outside
        the root."""
        return await while_no_step_writes(self._root(), path, lambda target: self.inner.apply(target, new_text, version))


async def while_no_step_writes(root: Path, path: Path, write: Callable[[Path], Awaitable[ApplyResult]]) -> ApplyResult:
    """`write(target)` (an editor's write of `path` beneath `root`) once no step that may write it runs (EDIT_WAIT_S at
    most) and it is still beneath `root` with no symlink; refused otherwise."""
    target = await plain_path_beneath(root, path)
    if target is None:
        return ApplyResult("refused", f"{path} is outside the workspace or behind a symlink")
    # The editor writes the file by its name and follows a link (Neovim's `:write`, VS Code's save, an ACP client's
    # fs/write_text_file): no step may swap one in until it has (`writers.quiet`), the path checked again inside.
    from ollie.sandbox import writers  # (with the first edit, not the daemon's start)

    async with writers.quiet(target, wait_s=EDIT_WAIT_S) as quiet:
        if not quiet:
            return ApplyResult("refused", busy(writers.holder(target)))
        if await plain_path_beneath(root, target) != target:
            return ApplyResult("refused", f"{path} became a symlink or left the workspace")
        return await write(target)
