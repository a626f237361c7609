"""Answering an editor tool call: ask the editor, keep what lies in the workspace, and write it for the model."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ollie import beneath
from ollie.escapes import clipped
from ollie.tools.editor.knowledge import SEVERITIES, Diagnostic, EditorKnowledge, OpenFile, Span, Symbol
from ollie.tools.editor.queries import DiagnosticsQuery, EditorQuery, OpenFilesQuery, PositionQuery, SymbolsQuery
from ollie.tools.editor.specs import EditorArgumentError

MAX_DIAGNOSTICS = 200
MAX_SPANS = 100
MAX_SYMBOLS = 50
# How many symbols of one name the `--symbol` form asks the editor about.
SYMBOL_LOOKUPS = 5
# A line shown next to a definition or reference is cut here; bigger files are not read for it.
LINE_CHARS = 160
MAX_SOURCE_BYTES = 2 * 1024 * 1024
_RANK = {severity: n for n, severity in enumerate(SEVERITIES)}


@dataclass
class Workspace:
    """The session CWD: paths inside it as relative text, everything else dropped."""

    cwd: Path
    _real: str = field(init=False)
    # Many diagnostics name the same file: each path is resolved once.
    _seen: dict[str, str | None] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._real = os.path.realpath(self.cwd)

    def relative(self, path: Path | str) -> str | None:
        """`path` relative to the CWD (symlinks resolved), or None when it lies outside it."""
        key = str(path)
        if key not in self._seen:
            real = os.path.realpath(path)
            self._seen[key] = os.path.relpath(real, self._real) if _within(real, self._real) else None
        return self._seen[key]

    def resolve(self, given: str) -> Path:
        """The absolute path of a path the model gave; EditorArgumentError when it is outside the workspace."""
        full = Path(os.path.realpath(self.cwd / os.path.expanduser(given)))
        if self.relative(full) is None:
            raise EditorArgumentError(f"{given}: outside the workspace ({self.cwd}); the editor tools answer only there")
        return full


def severity_counts(diagnostics: Iterable[Diagnostic]) -> str:
    """`2 errors, 1 warning` (severities that occur, most severe first)."""
    counts = {s: 0 for s in SEVERITIES}
    for d in diagnostics:
        counts[d.severity] += 1
    names = {"error": "error", "warning": "warning", "information": "info", "hint": "hint"}
    return ", ".join(f"{n} {names[s]}{'s' if n != 1 and s != 'information' else ''}" for s, n in counts.items() if n)


def diagnostic_line(rel: str, d: Diagnostic) -> str:
    """`src/app.ts:3:7: error: message [source code]` (a message's later lines indented under it)."""
    origin = " ".join(part for part in (d.source, d.code) if part)
    message = d.message.strip().replace("\n", "\n    ")
    return f"{rel}:{d.line}:{d.column}: {d.severity}: {message}" + (f" [{origin}]" if origin else "")


class _Lines:
    """Source lines of regular files in the workspace, read once per answer (off the event loop).

    Read unsandboxed, so through the chokepoint (`ollie.beneath`): a swapped dir or symlink cannot lead the
    read outside the workspace, and a FIFO or device is never read.
    """

    def __init__(self, ws: Workspace) -> None:
        self._ws = ws
        self._files: dict[Path, list[str] | None] = {}

    def _read(self, path: Path) -> list[str] | None:
        try:
            text = beneath.read_text_sync(self._ws.cwd, path, MAX_SOURCE_BYTES, errors="replace")
        except OSError:
            return None  # outside, behind a symlink, not a regular file, or too large
        return text.splitlines()

    def line(self, path: Path, number: int) -> str | None:
        if path not in self._files:
            self._files[path] = self._read(path)
        lines = self._files[path]
        return lines[number - 1] if lines is not None and 0 < number <= len(lines) else None


def _spans_text(spans: list[Span], ws: Workspace, lines: _Lines) -> list[str]:
    out: list[str] = []
    seen: set[tuple[str, int, int]] = set()
    for span in spans:
        rel = ws.relative(span.path)
        if rel is None or (rel, span.line, span.column) in seen:
            continue
        seen.add((rel, span.line, span.column))
        text = lines.line(span.path, span.line)
        out.append(f"{rel}:{span.line}:{span.column}" + (f": {clipped(text.strip(), LINE_CHARS)}" if text else ""))
    return out


def _capped(lines: list[str], limit: int, noun: str) -> list[str]:
    if len(lines) <= limit:
        return lines
    return [*lines[:limit], f"... and {len(lines) - limit} more {noun} not shown; narrow the request"]


def render_diagnostics(found: list[Diagnostic], ws: Workspace, query: DiagnosticsQuery,
                       wanted: list[Path] | None) -> str:
    """The diagnostics in the workspace (and under `wanted`, when given), errors first, capped."""
    keep: list[tuple[str, Diagnostic]] = []
    for d in found:
        rel = ws.relative(d.path)
        if rel is None or (not query.all_severities and d.severity in ("information", "hint")):
            continue
        if wanted is not None and not any(_within(os.path.realpath(d.path), str(w)) for w in wanted):
            continue
        keep.append((rel, d))
    where = ", ".join(query.paths) if query.paths else "the workspace"
    if not keep:
        kinds = "diagnostics" if query.all_severities else "errors or warnings"
        return (f"no {kinds} in {where} (the editor reports only files its language servers have checked; "
                "open files always are)")
    keep.sort(key=lambda item: (_RANK[item[1].severity], item[0], item[1].line, item[1].column))
    files = len({rel for rel, _ in keep})
    lines = _capped([diagnostic_line(rel, d) for rel, d in keep], MAX_DIAGNOSTICS, "diagnostics")
    summary = f"{severity_counts(d for _, d in keep)} in {files} file{'s' if files != 1 else ''}"
    return "\n".join([*lines, summary])


def _within(real: str, root: str) -> bool:
    """Whether the real path `real` is the real path `root` or lies below it."""
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def render_symbols(found: list[Symbol], ws: Workspace, query: str) -> str:
    """`function add  src/util.ts:10:17  (in Maths)` per symbol in the workspace, capped."""
    lines = [f"{s.kind} {s.name}  {rel}:{s.line}:{s.column}" + (f"  (in {s.container})" if s.container else "")
             for s in found if (rel := ws.relative(s.path)) is not None]
    if not lines:
        return f"no symbols matching `{query}` in the workspace"
    return "\n".join(_capped(lines, MAX_SYMBOLS, "symbols"))


def render_open_files(found: list[OpenFile], ws: Workspace) -> str:
    """The open files in the workspace, the focused one marked, unsaved ones said."""
    lines = []
    for f in found:
        rel = ws.relative(f.path)
        if rel is None:
            continue
        notes = [n for n, on in (("focused", f.focused), ("unsaved changes", f.dirty)) if on]
        lines.append(rel + (f" ({', '.join(notes)})" if notes else ""))
    return "\n".join(lines) if lines else "no files of the workspace are open in the editor"


def name_column(line_text: str | None, name: str, column: int) -> int:
    """The 1-based column of `name` on the line at or after `column` (a symbol's range often starts at `export`)."""
    if not line_text:
        return column
    found = line_text.find(name, max(column - 1, 0))
    if found < 0:
        found = line_text.find(name)
    return found + 1 if found >= 0 else column


async def answer(editor: EditorKnowledge, query: EditorQuery, cwd: Path) -> str:
    """Ask the editor for `query` and write the answer (paths relative to `cwd`, nothing outside it)."""
    ws = await asyncio.to_thread(Workspace, cwd)
    if isinstance(query, DiagnosticsQuery):
        return await _diagnostics(editor, query, ws)
    if isinstance(query, SymbolsQuery):
        found = await editor.symbols(query.query)
        return await asyncio.to_thread(render_symbols, found, ws, query.query)
    if isinstance(query, OpenFilesQuery):
        return await asyncio.to_thread(render_open_files, await editor.open_files(), ws)
    return await _position(editor, query, ws)


async def _diagnostics(editor: EditorKnowledge, query: DiagnosticsQuery, ws: Workspace) -> str:
    wanted = [await asyncio.to_thread(ws.resolve, p) for p in query.paths] or None
    # A directory is no document: ask for everything and keep what lies under it.
    ask_all = wanted is None or any([await _is_dir(ws, p) for p in wanted])
    found = await editor.diagnostics(None if ask_all else wanted)
    return await asyncio.to_thread(render_diagnostics, found, ws, query, wanted)


async def _is_dir(ws: Workspace, path: Path) -> bool:
    try:
        return await beneath.kind(ws.cwd, path) == "dir"
    except OSError:
        return False


async def _position(editor: EditorKnowledge, query: PositionQuery, ws: Workspace) -> str:
    lines = _Lines(ws)
    ask = editor.definition if query.what == "definition" else editor.references
    noun = "definition" if query.what == "definition" else "reference"
    if query.symbol is None:
        assert query.path is not None
        path = await asyncio.to_thread(ws.resolve, query.path)
        spans = await ask(path, query.line, query.column)
        at = f"{query.path}:{query.line}:{query.column}"
    else:
        targets = await _symbol_targets(editor, query, ws, lines)
        if not targets:
            return (f"no symbol named `{query.symbol}` in the workspace; editor_symbols {query.symbol} lists "
                    "partial matches")
        answers = await asyncio.gather(*(ask(s.path, s.line, s.column) for s in targets))
        spans = [span for got, target in zip(answers, targets, strict=True)
                 for span in (got or ([target] if query.what == "definition" else []))]
        at = f"`{query.symbol}`"
    shown = await asyncio.to_thread(_spans_text, spans, ws, lines)
    if not shown:
        return f"the editor knows no {noun} of {at} in the workspace"
    return "\n".join(_capped(shown, MAX_SPANS, f"{noun}s"))


async def _symbol_targets(editor: EditorKnowledge, query: PositionQuery, ws: Workspace, lines: _Lines) -> list[Span]:
    """The positions of the workspace symbols named exactly `query.symbol` (those in `query.path` first)."""
    assert query.symbol is not None
    name = query.symbol
    # `Maths.add`: the symbol `add` whose container is (or ends with) `Maths`.
    container, _, short = name.rpartition(".")
    found = await editor.symbols(short or name)

    def named(s: Symbol, wanted: str) -> bool:
        if container and not (s.container == container or s.container.endswith(f".{container}")):
            return False
        return s.name == wanted

    def pick() -> list[Span]:
        inside = [s for s in found if ws.relative(s.path) is not None]
        wanted = short or name
        exact = ([s for s in inside if named(s, wanted)]
                 or [s for s in inside if named(s, s.name) and s.name.lower() == wanted.lower()])
        if query.path is not None:
            preferred = ws.resolve(query.path)
            exact = [s for s in exact if Path(os.path.realpath(s.path)) == preferred] or exact
        return [Span(s.path, s.line, name_column(lines.line(s.path, s.line), s.name, s.column))
                for s in exact[:SYMBOL_LOOKUPS]]

    return await asyncio.to_thread(pick)
