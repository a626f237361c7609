"""The editor's open documents as the file tools see them: unsaved text read, edits applied into the buffer."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

# An LSP document version, or (ACP, which has none) a digest of the text read.
Version = int | str

STALE = "the file changed in the editor since you read it; read it again"


@dataclass(frozen=True)
class ApplyResult:
    """What became of an edit: applied in the editor, refused (why), or left to the disk (no editor support)."""

    status: Literal["applied", "refused", "disk"]
    reason: str = ""


class EditorDocuments(Protocol):
    """A front end's open documents (see docs/ENGINE-API.md, "Editor documents")."""

    async def text(self, path: Path) -> tuple[str, Version] | None:
        """The editor's text of `path` and its version; None when the editor has no content of its own for it."""
        ...

    async def apply(self, path: Path, new_text: str, version: Version) -> ApplyResult:
        """Replace the document's whole text, refused when its version is no longer `version`."""
        ...

    async def open_unsaved_paths(self) -> list[Path]:
        """The open documents whose text differs from the disk (other writers ask before touching them)."""
        ...


@runtime_checkable
class DocumentsSetter(Protocol):
    """A tool server that consults the editor's documents (the execute server's file tools)."""

    def set_documents(self, documents: EditorDocuments | None) -> None: ...
