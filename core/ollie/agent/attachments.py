"""What a front end attaches to a session's tool servers: its open documents, its editor; and who approves elevation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ollie.agent.behind import BehindBuffers
from ollie.agent.editoredits import RecordingDocuments
from ollie.agent.events import Bus
from ollie.agent.review import Review
from ollie.agent.rewind import Rewound
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
    approve_elevation: Approver  # asks the user as a step's question is asked (ApprovalGate.ask_outside)
    documents: BehindBuffers | None = None  # None: the file tools see the disk only
    editor: EditorKnowledge | None = None  # None: no editor tools, no post-edit diagnostics

    def wire(self, *, editor_was_set: bool = False) -> None:
        """Hand the current runtime's tool servers what they take of these (elevation, documents, editor)."""
        runtime = self.runtime()
        for server in execute_servers(runtime.dispatcher):
            server.set_elevation(runtime.config.elevation, self.approve_elevation)
            server.set_documents(self.documents)
            if self.editor is not None or editor_was_set:
                server.set_editor(self.editor)
                refresh_tools(runtime)

    def forget_reads(self, rewound: Rewound) -> None:
        """Forget what the model saw of the documents `rewound` put back: the turns that saw them are cut."""
        cwd = self.cwd()
        paths = [cwd / p for p in (*rewound.files, *rewound.build_output, *(b.path for b in rewound.buffers))]
        for server in execute_servers(self.runtime().dispatcher):
            server.forget_reads(paths)

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
