"""The editor's knowledge as a front end provides it: diagnostics, definitions, references, symbols, open files.

Paths are absolute both ways; the tools (ollie.tools.editor.answers) make them
relative to the session CWD and drop what lies outside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from ollie.errors import OllieError

Severity = Literal["error", "warning", "information", "hint"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "information", "hint")


class EditorUnavailable(OllieError):
    """The editor could not answer (it failed, answered an error, or took too long); the text says which."""


@dataclass(frozen=True)
class Diagnostic:
    """One diagnostic of a language server the editor runs; positions 1-based, columns in characters."""

    path: Path
    line: int
    column: int
    severity: Severity
    message: str
    source: str = ""
    code: str = ""


class DiagnosticsAnswer(list[Diagnostic]):
    """Diagnostics, and the files the editor says they are up to date for (of the file's content now, analyzed).

    A plain list is an answer that says nothing about it: after an edit, an unchanged
    answer may then still be the language server's old one (see PostEditDiagnostics).
    """

    def __init__(self, found: list[Diagnostic] | None = None, *, up_to_date: frozenset[Path] = frozenset()) -> None:
        super().__init__(found or [])
        self.up_to_date = up_to_date


@dataclass(frozen=True)
class Span:
    """A place in a file (a definition, a reference): 1-based line and column."""

    path: Path
    line: int
    column: int


@dataclass(frozen=True)
class Symbol:
    """A workspace symbol: its name, lower-case kind (`function`, `class`...), where it is, what contains it."""

    name: str
    kind: str
    path: Path
    line: int
    column: int
    container: str = ""


@dataclass(frozen=True)
class OpenFile:
    """A file open in the editor: whether it is the focused one, whether it has unsaved changes."""

    path: Path
    focused: bool = False
    dirty: bool = False


class EditorKnowledge(Protocol):
    """What the editor knows (see docs/ENGINE-API.md, "Editor knowledge"); each method may raise EditorUnavailable."""

    async def diagnostics(self, paths: list[Path] | None) -> list[Diagnostic]:
        """The diagnostics of `paths` (None: of every file the editor knows), unsaved buffers included."""
        ...

    async def definition(self, path: Path, line: int, column: int) -> list[Span]:
        """Where the symbol at that 1-based position is defined ([] when the editor knows none)."""
        ...

    async def references(self, path: Path, line: int, column: int) -> list[Span]:
        """Every reference to the symbol at that 1-based position, its declaration included."""
        ...

    async def symbols(self, query: str) -> list[Symbol]:
        """The workspace symbols matching `query`."""
        ...

    async def open_files(self) -> list[OpenFile]:
        """The files open in the editor."""
        ...
