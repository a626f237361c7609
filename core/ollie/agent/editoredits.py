"""Edits the file tools made to documents open in the editor: changes of a turn that the disk does not show.

The checkpoints read the disk, so each edit to a buffer is noted here (per turn and path, in memory, as unsaved
buffers are) for review to list and undo through the editor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ollie.tools.documents import ApplyResult, EditorDocuments, Version, plain_path_beneath

if TYPE_CHECKING:
    from ollie.workspace.types import FileChange


@dataclass(eq=False, repr=False)
class EditorEdit:
    """One document's change in one turn: its text before the turn's first edit and after the last."""

    old_text: str
    new_text: str

    def change(self, path: str) -> FileChange:
        """As a workspace change (`modified`, with its hunks)."""
        # Imported here: the types and the diff load with the first buffer edit, not with the session.
        from ollie.workspace.diff import compute_hunks
        from ollie.workspace.types import FileChange

        return FileChange(path, "modified", self.old_text, self.new_text,
                          hunks=compute_hunks(self.old_text, self.new_text),
                          old_data=self.old_text.encode(), new_data=self.new_text.encode())


class EditorEdits:
    """The editor-buffer changes of each turn, by turn number and path relative to the session CWD."""

    def __init__(self) -> None:
        self._turns: dict[int, dict[str, EditorEdit]] = {}

    def note(self, turn: int, path: str, old_text: str, new_text: str) -> None:
        """Record that `path`'s buffer went from `old_text` to `new_text` during `turn`."""
        edits = self._turns.setdefault(turn, {})
        edit = edits.get(path)
        if edit is None:
            edits[path] = EditorEdit(old_text, new_text)
        else:
            edit.new_text = new_text
        self.settle(turn, path, new_text)

    def edited(self, turn: int) -> bool:
        """Whether the turn changed a buffer (that an undo left changed)."""
        return bool(self._turns.get(turn))

    def changes(self, turn: int) -> dict[str, FileChange]:
        """The turn's buffer changes, by path."""
        return {path: edit.change(path) for path, edit in self._turns.get(turn, {}).items()}

    def settle(self, turn: int, path: str, text: str | None) -> None:
        """The buffer of `path` now holds `text` (an undo): what is left of the change, gone when nothing is."""
        edits = self._turns.get(turn, {})
        edit = edits.get(path)
        if edit is None:
            return
        if text is None or text == edit.old_text:
            del edits[path]
        else:
            edit.new_text = text

    def since(self, turn: int) -> dict[str, EditorEdit]:
        """Each path's net buffer change over the turns from `turn` on (what a rewind to before `turn` reverts)."""
        net: dict[str, EditorEdit] = {}
        for number in sorted(n for n in self._turns if n >= turn):
            for path, edit in self._turns[number].items():
                if path in net:
                    net[path].new_text = edit.new_text
                else:
                    net[path] = EditorEdit(edit.old_text, edit.new_text)
        return {path: edit for path, edit in net.items() if edit.old_text != edit.new_text}

    def forget_from(self, turn: int) -> None:
        """Drop the turns from `turn` on (a rewind cut them from the session)."""
        for number in [n for n in self._turns if n >= turn]:
            del self._turns[number]

    def saved(self, turn: int) -> dict[str, dict[str, list[str]]]:
        """The turns from `turn` on as a rewind's backup keeps them (on disk: its undo outlives a window reload)."""
        return {str(n): {path: [e.old_text, e.new_text] for path, e in edits.items()}
                for n, edits in self._turns.items() if n >= turn}

    @staticmethod
    def loaded(saved: object) -> dict[int, dict[str, EditorEdit]]:
        """The turns `saved` kept, read back; ValueError: not what `saved` makes (a damaged backup)."""
        return {int(n): {path: EditorEdit(*_texts(texts)) for path, texts in _items(edits)} for n, edits in _items(saved)}

    def put_back(self, turns: dict[int, dict[str, EditorEdit]]) -> None:
        """The turns a rewind cut, back (it was undone)."""
        self._turns.update(turns)


def _items(value: object) -> list[tuple[str, object]]:
    # (A backup's JSON: an object's keys are strings.)
    if not isinstance(value, dict):
        raise ValueError("buffer edits that are not an object")
    return list(value.items())


def _texts(value: object) -> tuple[str, str]:
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(t, str) for t in value)):
        raise ValueError("a buffer edit that is not two texts")
    return value[0], value[1]


@dataclass(eq=False, repr=False)
class BufferRevert:
    """What a rewind did to one open buffer the cut turns had edited: `reverted`, `stale` (left) or `refused`."""

    path: str
    status: Literal["reverted", "stale", "refused"]
    reason: str = ""


async def revert_buffers(edits: dict[str, EditorEdit], documents: EditorDocuments, cwd: Path, *,
                         undo: bool = False) -> list[BufferRevert]:
    """Put each still-open buffer of `edits` back to its text before them, if it still holds their result; `undo` (of
    the rewind that did so): their result back in it, if it still holds what the rewind left."""
    done = []
    for path, edit in sorted(edits.items()):
        was, to = (edit.old_text, edit.new_text) if undo else (edit.new_text, edit.old_text)
        current = await documents.text(cwd / path)
        if current is None and await plain_path_beneath(cwd, cwd / path) is None:
            # A link now (the undo's restore put back the one a cut turn's step made): the editor is never asked to
            # write through it, and she is told the buffer does not hold what the disk's restore says.
            done.append(BufferRevert(path, "refused", f"{path} is now a symbolic link (or a folder): its buffer, if "
                                     "open, was left as it is" + ("; the agent's edit is not in it" if undo else "")))
            continue
        if current is None or current[0] == to:
            # Closed (saved: the restored disk has the text; or thrown away), or there already.
            continue
        text, version = current
        if text != was:
            done.append(BufferRevert(path, "stale", "the buffer changed since the rewind; the agent's edit is not in it"
                                     if undo else "the buffer changed since the agent's edit; left as it is"))
            continue
        result = await documents.apply(cwd / path, to, version)
        if result.status == "applied":
            done.append(BufferRevert(path, "reverted"))
        elif (now := await documents.text(cwd / path)) is not None and now[0] == to:
            # The editor reloaded the clean buffer from the disk the rewind restored as the edit was on its way (and
            # refused it for that newer version): it holds the text, no "not in the editor" to say.
            continue
        else:
            done.append(BufferRevert(path, "refused", result.reason or "the editor did not apply the edit"))
    return done


class RecordingDocuments:
    """The front end's EditorDocuments, telling `record(path, old, new)` of each edit the editor applied."""

    def __init__(self, inner: EditorDocuments, record: Callable[[Path, str, str], None]) -> None:
        self.inner = inner
        self._record = record

    async def text(self, path: Path) -> tuple[str, Version] | None:
        """The editor's text of `path` and its version (see EditorDocuments)."""
        return await self.inner.text(path)

    async def apply(self, path: Path, new_text: str, version: Version) -> ApplyResult:
        """Apply through the editor; an applied edit is recorded with the text it replaced."""
        before = await self.inner.text(path)
        result = await self.inner.apply(path, new_text, version)
        if result.status == "applied" and before is not None:
            # A format on save ran on the agent's save: what it wrote is the edit's result, as a rewind counts it.
            self._record(path, before[0], result.formatted or new_text)
        return result
