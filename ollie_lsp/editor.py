"""Editor binding: turn submit's `context` into a marked block of the prompt, from the open documents."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pygls.uris import to_fs_path

if TYPE_CHECKING:  # the pydantic param models load with the first ollie/* request, not at start-up
    from ollie_lsp.params import EditorContext

# The longest selection/range copied into a prompt; beyond it the text is cut and marked.
MAX_CONTEXT_CHARS = 20_000


@dataclass(frozen=True)
class OpenDocument:
    """What the daemon knows of a document: its (possibly unsaved) text and language."""

    text: str
    language_id: str | None = None


DocumentLookup = Callable[[str], OpenDocument | None]


def is_command(text: str) -> bool:
    """True for a slash command or `!shell` line: those get no editor context."""
    return text.lstrip().startswith(("/", "!"))


def display_path(uri: str, cwd: Path) -> str:
    """The file path relative to `cwd` when inside it, else absolute; non-file URIs unchanged."""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    if not path:
        return uri
    try:
        rel = os.path.relpath(path, cwd)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def range_text(text: str, context: EditorContext) -> tuple[str, str] | None:
    """(label, the lines of the range) from `text`; an end at column 0 leaves that line out."""
    rng = context.range
    if rng is None:
        return None
    lines = text.splitlines()
    first = rng.start.line
    last = rng.end.line
    if last > first and rng.end.character == 0:
        last -= 1
    last = min(last, len(lines) - 1)
    if first > last:
        return None
    label = f"lines {first + 1}-{last + 1}" if last > first else f"line {first + 1}"
    return label, "\n".join(lines[first : last + 1])


def _clip(text: str) -> str:
    if len(text) <= MAX_CONTEXT_CHARS:
        return text
    return text[:MAX_CONTEXT_CHARS] + f"\n[... cut: {len(text) - MAX_CONTEXT_CHARS} more characters]"


def format_context(context: EditorContext, *, cwd: Path, lookup: DocumentLookup) -> str:
    """The editor-context block: file, language, and the selection or the range's lines."""
    doc = lookup(context.uri)
    language = context.language_id or (doc.language_id if doc else None) or ""
    header = f"File: {display_path(context.uri, cwd)}"
    if language:
        header += f" ({language})"
    lines = ["<editor-context>", header]
    fence = language if language.isidentifier() else ""
    if context.selection:
        lines += ["Selected text:", f"```{fence}", _clip(context.selection), "```"]
    elif doc is not None and (picked := range_text(doc.text, context)) is not None:
        label, body = picked
        lines += [f"Showing {label}:", f"```{fence}", _clip(body), "```"]
    lines.append("</editor-context>")
    return "\n".join(lines)


def with_context(text: str, context: EditorContext | None, *, cwd: Path, lookup: DocumentLookup) -> str:
    """The prompt the model gets: the editor-context block, then the user's text (commands unchanged)."""
    if context is None or is_command(text):
        return text
    return f"{format_context(context, cwd=cwd, lookup=lookup)}\n\n{text}"
