"""Open buffers behind their file: a step changed the file on disk while the buffer held the user's unsaved edits.

Neither side may be lost silently: the editor keeps such a buffer as it is (reloading it would drop the user's
text), and an agent edit through it would be saved over the step's change. So the user and the model are told
when the step ends, and the agent's edits of that buffer are refused until the buffer and the file agree again
(the user merged and saved, or reloaded it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ollie import beneath
from ollie.tools.documents import ApplyResult, EditorDocuments, Version

if TYPE_CHECKING:
    from ollie.agent.steps import Diff


def behind_reason(rel: str) -> str:
    """Why an edit of `rel`'s buffer is refused (the model's tool error)."""
    return (f"not edited: the buffer of {rel} has the user's unsaved changes and a step changed the file on disk "
            "since, so the buffer does not show the file and saving it would overwrite the step's change. Ask the user "
            f"to merge the two and save {rel} (or reload it from disk), then read it again")


def user_notice(rel: str) -> str:
    """What the user is told when a step changed `rel` under their unsaved buffer."""
    return (f"warning: {rel} has unsaved changes in the editor, and this step changed the file on disk: the buffer "
            "does not show the step's change, and saving the buffer as it is would overwrite it. Merge the two and "
            f"save (or reload {rel}); until then the agent's edits of it are refused")


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
        self._behind: set[str] = set()  # paths relative to the CWD

    async def text(self, path: Path) -> tuple[str, Version] | None:
        """The editor's text of `path` and its version (see EditorDocuments)."""
        return await self.inner.text(path)

    async def apply(self, path: Path, new_text: str, version: Version) -> ApplyResult:
        """Apply through the editor, unless `path`'s buffer is still behind its file (refused, saying why)."""
        rel = self._relative(path)
        if rel in self._behind:
            if await self._still_behind(rel):
                return ApplyResult("refused", behind_reason(rel))
            self._behind.discard(rel)
        return await self.inner.apply(path, new_text, version)

    async def after_step(self, diffs: Sequence[Diff]) -> list[str]:
        """Note the open buffers whose file a step changed (`diffs`) under their unsaved edits; their paths."""
        found = []
        for diff in diffs:
            if diff.new_text is None:
                continue  # removed or binary: no text to compare
            got = await self.inner.text(self._cwd() / diff.path)
            # A buffer holding the old disk text is clean (the editor reloads it); one holding the new text is the
            # step's own edit of the buffer, or already reloaded.
            if got is not None and got[0] not in (diff.old_text or "", diff.new_text):
                self._behind.add(diff.path)
                found.append(diff.path)
        return found

    def _relative(self, path: Path) -> str | None:
        try:
            return beneath.relative(self._cwd(), path)
        except beneath.OutsideRoot:
            return None

    async def _still_behind(self, rel: str) -> bool:
        """Whether the open buffer of `rel` still differs from the disk (read through the chokepoint)."""
        got = await self.inner.text(self._cwd() / rel)
        if got is None:
            return False  # closed: the tools see the disk
        try:
            disk = await beneath.read_text(self._cwd(), rel, errors="replace")
        except OSError:
            return True  # gone or no longer a plain file: the buffer is not what the disk holds
        return got[0] != disk
