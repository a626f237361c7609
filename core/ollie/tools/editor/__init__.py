"""The editor's knowledge (diagnostics, definitions, references, symbols, open files) as model-facing tools."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ollie.tools.editor.specs import EDITOR_KINDS, TOOLS, describe_call

if TYPE_CHECKING:
    from ollie.tools.editor.knowledge import (
        Diagnostic,
        DiagnosticsAnswer,
        EditorKnowledge,
        EditorUnavailable,
        OpenFile,
        Span,
        Symbol,
    )

# The answers' shapes load with the first editor call: a session's start and first turn name them only as types.
_KNOWLEDGE = frozenset({"Diagnostic", "DiagnosticsAnswer", "EditorKnowledge", "EditorUnavailable", "OpenFile", "Span",
                        "Symbol"})


def __getattr__(name: str) -> Any:
    """The knowledge module's names, imported at first use."""
    if name in _KNOWLEDGE:
        from ollie.tools.editor import knowledge

        return getattr(knowledge, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
