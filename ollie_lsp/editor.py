"""Editor binding: turn submit's `context` into a marked block of the prompt, from the open documents."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
from pygls.uris import to_fs_path

from ollie import beneath
from ollie.agent.editorcontext import MAX_CONTEXT_CHARS, context_block, display_path, is_command
from ollie.tools.documents import disk_text
from ollie_lsp.lineindex import BREAK, Text, line_ends

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from ollie_lsp.params import EditorContext


@dataclass(eq=False, repr=False)
class OpenDocument:
    """What the daemon knows of a document: its (possibly unsaved) text and language."""

    text: str
    language_id: str | None = None


DocumentLookup = Callable[[str], OpenDocument | None]


async def context_documents(open_documents: Mapping[str, TextDocument], contexts: Sequence[EditorContext],
                            root: Path, through_link: Callable[[TextDocument], Awaitable[bool]]) -> DocumentLookup:
    """The documents `contexts` name: the editor's text when open, else the file on disk, read off the loop through
    the chokepoint (a regular file within the cap; never through a link, nor a FIFO or a device: a step may plant
    them where a context item names a file no editor has open). A file beneath `root`, the session's directory, is
    read with no link anywhere on its way from there (a step made `k8s` a link to `~/.kube`: `k8s/config` read the
    cluster's credentials into the prompt); one outside it is the user's own pick. An open document whose text
    `through_link` came through a link (see `documents.note_source`) is read from the disk too."""
    found: dict[str, OpenDocument | None] = {}
    for context in contexts:
        if context.mcp_server is not None or context.uri in found:
            continue
        doc = open_documents.get(context.uri)
        if doc is not None and not await through_link(doc):  # else the disk: that text was never the file's
            found[context.uri] = OpenDocument(text=doc.source, language_id=doc.language_id)
            continue
        path = to_fs_path(context.uri) if context.uri.startswith("file:") else None
        text = await asyncio.to_thread(_disk_text, Path(path), root) if path else None
        found[context.uri] = None if text is None else OpenDocument(text=text)
    return found.get


# How much of a file is looked at for a NUL, the sign of a binary file (file_read's SNIFF).
_SNIFF = 8192


def _disk_text(path: Path, root: Path) -> str | None:
    """`path`'s text: through no link beneath `root` when it lies there, else as `disk_text` reads it. Blocking."""
    try:
        rel = beneath.relative(root, path)
    except OSError:
        return disk_text(path)
    try:
        return beneath.read_text_sync(root, rel, errors="replace")
    except OSError:
        return None


def _span(context: EditorContext) -> tuple[int, int] | None:
    """The range's first and last line (0-based); an end at column 0 leaves that line out. None without a range."""
    rng = context.range
    if rng is None:
        return None
    first, last = rng.start.line, rng.end.line
    if last > first and rng.end.character == 0:
        last -= 1
    return first, max(first, last)


def _lines_label(first: int, last: int) -> str:
    return f"lines {first + 1}-{last + 1}" if last > first else f"line {first + 1}"


@attrs.frozen(eq=False, repr=False, slots=False)
class Shown:
    """What a context block shows of its lines: the label of those sent, the text, and what was cut off."""

    label: str
    body: str
    cut: str | None = None


def shown_lines(body: str, first: int, last: int) -> Shown:
    """Lines `first..last` of `body`, cut at whole lines to MAX_CONTEXT_CHARS, labelled with the lines it keeps."""
    if len(body) <= MAX_CONTEXT_CHARS:
        return Shown(_lines_label(first, last), body)
    kept = body[:MAX_CONTEXT_CHARS]
    # Whole lines, unless the first alone is longer than the cap.
    kept = kept[: kept.rfind("\n")] if "\n" in kept else kept
    shown = first + kept.count("\n")
    rest = f"{_lines_label(shown + 1, last)} are" if shown < last else f"{_lines_label(shown, shown)}'s end is"
    return Shown(_lines_label(first, shown), kept, f"Cut at {MAX_CONTEXT_CHARS:,} characters: {rest} not shown.")


def range_text(text: str, context: EditorContext) -> Shown | None:
    """The lines of the range from `text`, found without splitting it all; an end at column 0 leaves that line out."""
    span = _span(context)
    if span is None:
        return None
    offsets = Text(text).span(*span)
    if offsets is None:
        return None
    start, end = offsets
    # Enough to know whether it is over the cap once its "\r\n"s are "\n"s, never a copy of a 20 MB buffer.
    window = BREAK.sub("\n", text[start : min(end, start + 2 * MAX_CONTEXT_CHARS + 2)])
    return shown_lines(window, span[0], span[0] + line_ends(text, start, end))


def format_context(context: EditorContext, *, cwd: Path, lookup: DocumentLookup, resource: str | None = None) -> str:
    """The editor-context block: file, language, and the selection or the range's lines; or an MCP resource's text."""
    if context.mcp_server is not None:
        return context_block(f"MCP resource: {context.uri} (server {context.mcp_server})", body=resource or "")
    doc = lookup(context.uri)
    language = context.language_id or (doc.language_id if doc else None) or ""
    header = f"File: {display_path(context.uri, cwd)}"
    if language:
        header += f" ({language})"
    fence = language if language.isidentifier() else ""
    if context.selection:
        # Where the selection is: the model can cite it, a client can label it.
        if (span := _span(context)) is None:
            return context_block(header, caption="Selected text:", body=context.selection, fence=fence)
        last = min(span[1], span[0] + context.selection.removesuffix("\n").count("\n"))
        shown = shown_lines(context.selection, span[0], last)
        notes = [f"Location: {shown.label}", *([shown.cut] if shown.cut else [])]
        return context_block(header, notes=notes, caption="Selected text:", body=shown.body, fence=fence)
    if doc is not None and "\0" in doc.text[:_SNIFF]:
        # As file_read refuses it: control bytes and U+FFFD are nothing to read, and some APIs refuse a NUL.
        return context_block(header, notes=["Binary file: its bytes are not shown."])
    if doc is not None and (shown := range_text(doc.text, context)) is not None:
        notes = [shown.cut] if shown.cut else []
        return context_block(header, notes=notes, caption=f"Showing {shown.label}:", body=shown.body, fence=fence)
    return context_block(header)


def with_context(text: str, contexts: Sequence[EditorContext], *, cwd: Path, lookup: DocumentLookup,
                 resources: Sequence[str | None] = (), commands: bool = True) -> str:
    """The prompt the model gets: one editor-context block per item, in order, then the user's text (commands unchanged,
    unless not `commands`); `resources[i]` is the text of `contexts[i]` when that is an MCP resource (read by the
    caller, through its server)."""
    if not contexts or commands and is_command(text):
        return text
    texts = [*resources, *[None] * (len(contexts) - len(resources))]
    blocks = [format_context(c, cwd=cwd, lookup=lookup, resource=r) for c, r in zip(contexts, texts, strict=True)]
    return "\n\n".join([*blocks, text])
