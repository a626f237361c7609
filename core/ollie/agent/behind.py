"""Open buffers behind their file: a step changed the file on disk, and the buffer does not show it.

A buffer with the user's unsaved edits stays so (the editor does not reload it: that would drop the user's text);
a clean one is behind until the editor reloads it. Either way an agent edit through it would be made on the old
text and saved over the step's change. So the agent's edits of such a buffer are refused until the buffer and the
file agree again (reloaded; or merged and saved), and the user and the model are told at once of an unsaved one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ollie import beneath
from ollie.tools.documents import ApplyResult, EditorDocuments, Version

if TYPE_CHECKING:
    from ollie.agent.steps import Diff


def behind_reason(rel: str, *, unsaved: bool) -> str:
    """Why an edit of `rel`'s buffer is refused (the model's tool error)."""
    if not unsaved:
        return (f"not edited: a step changed {rel} on disk and the editor has not reloaded its buffer yet, so the edit "
                "would be made on the old text; read it again (if it still shows the old text, ask the user to reload "
                f"{rel})")
    return (f"not edited: the buffer of {rel} has the user's unsaved changes and a step changed the file on disk "
            "since, so the buffer does not show the file and saving it would overwrite the step's change. Ask the user "
            f"to merge the two and save {rel} (or reload it from disk), then read it again")


def user_notice(rel: str) -> str:
    """What the user is told when a step changed `rel` under their unsaved buffer."""
    return (f"warning: {rel} has unsaved changes in the editor, and this step changed the file on disk: the buffer "
            "does not show the step's change, and saving the buffer as it is would overwrite it. Merge the two and "
            f"save (or reload {rel}); until then the agent's edits of it are refused")


def saved_notice(rel: str) -> str:
    """What the user is told when the agent's edit saved `rel`'s buffer with their unsaved changes in it."""
    return (f"{rel} had your unsaved changes in the editor: the agent's edit was made on top of them and the file was "
            "saved with them (the editor's undo takes back the agent's edit alone)")


def model_note(rels: Sequence[str]) -> str:
    """The note appended to the step's result for the model."""
    names = ", ".join(rels)
    return (f"[editor] {names}: the user has unsaved changes in the editor that this step's change on disk does not "
            "have, and the buffer does not show the step's change; your edits of it are refused until the user "
            "merges and saves (or reloads) it")


class BehindBuffers:
    """The front end's EditorDocuments, refusing edits of a buffer that a step changed the file under."""

    def __init__(self, inner: EditorDocuments, cwd: Callable[[], Path]) -> None:
        self.inner = inner
        self._cwd = cwd
        # Path relative to the CWD -> whether the buffer had unsaved edits, and its version then.
        self._behind: dict[str, tuple[bool, Version]] = {}
        # Path relative to the CWD -> the text an agent edit put into its buffer, then saved, in the step that runs.
        self._saved: dict[str, str] = {}
        # The paths whose buffer an agent edit saved with the user's unsaved changes, until the call's end tells them.
        self._saved_unsaved: list[str] = []

    async def text(self, path: Path) -> tuple[str, Version] | None:
        """The editor's text of `path` and its version (see EditorDocuments)."""
        return await self.inner.text(path)

    async def apply(self, path: Path, new_text: str, version: Version) -> ApplyResult:
        """Apply through the editor, unless `path`'s buffer is still behind its file (refused, saying why)."""
        rel = self._relative(path)
        if rel is not None and (mark := self._behind.get(rel)) is not None:
            if await self._still_behind(rel, *mark):
                return ApplyResult("refused", behind_reason(rel, unsaved=mark[0]))
            del self._behind[rel]
        result = await self.inner.apply(path, new_text, version)
        if rel is not None and result.status == "applied" and result.saved:
            self._saved[rel] = result.formatted or new_text
            if result.unsaved:
                self._saved_unsaved.append(rel)
        return result

    def saved_unsaved(self) -> list[str]:
        """The paths whose buffer an agent edit saved with the user's unsaved changes since this was last asked."""
        rels, self._saved_unsaved = self._saved_unsaved, []
        return rels

    async def after_step(self, diffs: Sequence[Diff]) -> list[str]:
        """Note the open buffers whose file a step changed (`diffs`); the paths of those with unsaved edits."""
        unsaved = []
        saved, self._saved = self._saved, {}
        for diff in diffs:
            if diff.new_text is None:
                continue  # removed or binary: no text to compare
            if saved.get(diff.path) == diff.new_text:
                continue  # the step's own edit, made in the buffer and saved: the buffer has it, whatever typed since
            got = await self.inner.text(self._cwd() / diff.path)
            # A buffer that holds the new text already is the step's own edit of it, or reloaded.
            if got is None or got[0] == diff.new_text:
                continue
            # One that holds the old text is clean: behind until the editor reloads it.
            self._behind[diff.path] = (got[0] != (diff.old_text or ""), got[1])
            if self._behind[diff.path][0]:
                unsaved.append(diff.path)
        return unsaved

    def _relative(self, path: Path) -> str | None:
        try:
            return beneath.relative(self._cwd(), path)
        except beneath.OutsideRoot:
            return None

    async def _still_behind(self, rel: str, unsaved: bool, version: Version) -> bool:
        """Whether the open buffer of `rel` still differs from the disk (read through the chokepoint)."""
        got = await self.inner.text(self._cwd() / rel)
        if got is None:
            return False  # closed: the tools see the disk
        if not unsaved and got[1] != version:
            return False  # the editor changed the clean buffer since: its reload (the user's typing comes after)
        try:
            disk = await beneath.read_text(self._cwd(), rel, errors="replace")
        except OSError:
            return True  # gone or no longer a plain file: the buffer is not what the disk holds
        return got[0] != disk
