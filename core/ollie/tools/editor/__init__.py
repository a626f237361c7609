"""The editor's knowledge (diagnostics, definitions, references, symbols, open files) as model-facing tools."""

from __future__ import annotations

from ollie.tools.editor.knowledge import (
    Diagnostic,
    DiagnosticsAnswer,
    EditorKnowledge,
    EditorUnavailable,
    OpenFile,
    Span,
    Symbol,
)
from ollie.tools.editor.specs import EDITOR_KINDS, TOOLS, describe_call

__all__ = [
    "EDITOR_KINDS",
    "TOOLS",
    "Diagnostic",
    "DiagnosticsAnswer",
    "EditorKnowledge",
    "EditorUnavailable",
    "OpenFile",
    "Span",
    "Symbol",
    "describe_call",
]
