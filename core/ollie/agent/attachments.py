"""What a front end attaches to a session's tool servers: its open documents, its editor, who approves elevation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ollie.agent.approval import question_timeout_s, within_question_timeout
from ollie.agent.behind import BehindBuffers
from ollie.agent.editoredits import RecordingDocuments
from ollie.agent.events import Bus
from ollie.agent.review import Review
from ollie.agent.runtime import Runtime, execute_servers, refresh_tools
from ollie.tools.base import Approver
from ollie.tools.documents import EditorDocuments, RootedDocuments

if TYPE_CHECKING:  # the editor's knowledge loads with the first editor call
    from ollie.tools.editor.knowledge import EditorKnowledge


@dataclass(eq=False, repr=False)
class Attachments:
    """The front end's parts a session's tools use; wired into every tool server again after an /agent switch."""

    runtime: Callable[[], Runtime]
    bus: Bus
    review: Review
    cwd: Callable[[], Path]
    approver: Approver | None = None  # None: nobody can approve an elevated step, so such steps are refused
    documents: BehindBuffers | None = None  # None: the file tools see the disk only
    editor: EditorKnowledge | None = None  # None: no editor tools, no post-edit diagnostics
    tell_answers: bool = True  # False: an elevation question and its answer are no `info` lines (Core.tell_answers)
    tell_asking: bool = True  # False: no "asking to run outside the sandbox" line (Core.tell_asking)

    def wire(self, *, editor_was_set: bool = False) -> None:
        """Hand the current runtime's tool servers what they take of these (elevation, documents, editor)."""
        runtime = self.runtime()
        for server in execute_servers(runtime.dispatcher):
            server.set_elevation(runtime.config.elevation, self.approve_elevation)
            server.set_documents(self.documents)
            if self.editor is not None or editor_was_set:
                server.set_editor(self.editor)
                refresh_tools(runtime)

    def set_documents(self, documents: EditorDocuments | None) -> None:
        """Let the file tools read the editor's unsaved text and edit its buffers through `documents`."""
        # Asked only about files beneath the session's root (ollie.tools.documents.RootedDocuments). Edits that
        # land in a buffer are changes of the turn too: review lists them (ollie.agent.editoredits). A buffer a step
        # changed the file under is not edited until it agrees with the disk again (ollie.agent.behind).
        self.documents = None if documents is None else BehindBuffers(RecordingDocuments(
            RootedDocuments(documents, self.cwd), self.review.note_editor_edit), self.cwd)
        self.wire()

    def set_editor(self, editor: EditorKnowledge | None) -> None:
        """Offer the editor tools answered by `editor` (None: take them away)."""
        had, self.editor = self.editor, editor
        self.wire(editor_was_set=had is not None)

    async def approve_elevation(self, what: str) -> bool | None:
        """Ask `approver` whether `what` may run outside the sandbox (None: nobody to ask, or nobody answered in time)."""
        if self.approver is None:
            return None
        if self.tell_answers and self.tell_asking:
            self.bus.emit("info", f"asking to run outside the sandbox:\n{what}")
        approved, answered = await within_question_timeout(self.approver(what), False)
        if not answered:
            self.bus.emit("info", f"nobody answered within {question_timeout_s():g} s: denied, not run")
            return None
        if self.tell_answers:
            self.bus.emit("info", "approved: running outside the sandbox" if approved else "declined: not run")
        return bool(approved)
