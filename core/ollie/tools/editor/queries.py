"""An editor tool call's arguments, checked into a typed query, and the step title it reads as.

Pure: no I/O. Loaded with the first editor call (the listing, `specs`, is what a session needs before).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ollie.tools.editor.specs import EDITOR_KINDS, TOOLS, EditorArgumentError, EditorKind


@dataclass(frozen=True)
class DiagnosticsQuery:
    """editor_diagnostics: the paths as given (none: the whole workspace) and whether to keep hints."""

    paths: tuple[str, ...] = ()
    all_severities: bool = False


@dataclass(frozen=True)
class PositionQuery:
    """editor_definition / editor_references: a position, or a symbol name (with an optional file to prefer)."""

    what: Literal["definition", "references"]
    path: str | None = None
    line: int = 0
    column: int = 0
    symbol: str | None = None


@dataclass(frozen=True)
class SymbolsQuery:
    """editor_symbols: the query."""

    query: str


@dataclass(frozen=True)
class OpenFilesQuery:
    """editor_open_files."""


EditorQuery = DiagnosticsQuery | PositionQuery | SymbolsQuery | OpenFilesQuery

_PATH_LINE_COLUMN = re.compile(r"^(.+):(\d+):(\d+)$")


def _positive(value: str, what: str, tool: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise EditorArgumentError(f"{tool}: {what} must be a number from 1, got {value!r}")
    return int(value)


def _split_options(args: tuple[str, ...], tool: str, known: set[str]) -> tuple[list[str], dict[str, str]]:
    """Positional arguments and `--key=value` / `--key value` / `--flag` options (unknown ones are errors)."""
    positional: list[str] = []
    options: dict[str, str] = {}
    items = list(args)
    while items:
        arg = items.pop(0)
        if arg == "--":
            positional.extend(items)
            break
        if not arg.startswith("--") or arg == "-":
            positional.append(arg)
            continue
        key, eq, value = arg[2:].partition("=")
        if key not in known:
            raise EditorArgumentError(f"{tool}: unknown option --{key}; usage: {tool} {TOOLS[tool].args.splitlines()[0]}")
        if key == "symbol" and not eq:
            if not items:
                raise EditorArgumentError(f"{tool}: --symbol needs a name: --symbol=NAME")
            value = items.pop(0)
        options[key] = value
    return positional, options


def _position(tool: str, args: tuple[str, ...]) -> PositionQuery:
    what: Literal["definition", "references"] = "definition" if tool == "editor_definition" else "references"
    positional, options = _split_options(args, tool, {"symbol"})
    if "symbol" in options:
        symbol = options["symbol"].strip()
        if not symbol or len(positional) > 1:
            raise EditorArgumentError(f"{tool}: use --symbol=NAME [PATH] (a non-empty name, at most one PATH)")
        return PositionQuery(what, positional[0] if positional else None, symbol=symbol)
    if len(positional) == 1 and (match := _PATH_LINE_COLUMN.match(positional[0])):
        positional = [match.group(1), match.group(2), match.group(3)]
    if len(positional) != 3 or not positional[0]:
        raise EditorArgumentError(
            f"{tool}: give PATH LINE COLUMN (the position of the name, 1-based) or --symbol=NAME; got {list(args)!r}")
    return PositionQuery(what, positional[0], _positive(positional[1], "LINE", tool),
                         _positive(positional[2], "COLUMN", tool))


def parse_query(tool: str, args: tuple[str, ...]) -> EditorQuery:
    """The typed query of an editor tool call; EditorArgumentError says how to call it."""
    if tool == "editor_diagnostics":
        positional, options = _split_options(args, tool, {"all"})
        return DiagnosticsQuery(tuple(p for p in positional if p), "all" in options)
    if tool in ("editor_definition", "editor_references"):
        return _position(tool, args)
    if tool == "editor_symbols":
        query = " ".join(a for a in args).strip()
        if not query:
            raise EditorArgumentError("editor_symbols: give a QUERY (a name or part of one)")
        return SymbolsQuery(query)
    if tool == "editor_open_files":
        if args:
            raise EditorArgumentError("editor_open_files takes no arguments")
        return OpenFilesQuery()
    raise EditorArgumentError(f"{tool} is not an editor tool ({', '.join(TOOLS)})")


@dataclass(frozen=True)
class EditorStepInfo:
    """How a step of an editor tool reads: its kind, title and the paths (as given) with their lines."""

    kind: EditorKind
    title: str
    locations: tuple[tuple[str, int | None], ...] = ()


def describe_call(tool: str, args: tuple[str, ...], relative: Callable[[str], str] = str) -> EditorStepInfo:
    """The readable step of an editor tool call (`Diagnostics for src/app.ts`), paths through `relative`; never raises."""
    kind = EDITOR_KINDS.get(tool, "read")
    try:
        query = parse_query(tool, args)
    except EditorArgumentError:
        return EditorStepInfo(kind, f"Ask the editor ({tool})")
    if isinstance(query, DiagnosticsQuery):
        paths = [relative(p) for p in query.paths]
        if not paths:
            return EditorStepInfo(kind, "Diagnostics for the workspace")
        more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
        return EditorStepInfo(kind, f"Diagnostics for {paths[0]}{more}", tuple((p, None) for p in paths))
    if isinstance(query, PositionQuery):
        path = relative(query.path) if query.path else None
        noun = "Definition of" if query.what == "definition" else "References to"
        if query.symbol is not None:
            where = ((path, None),) if path else ()
            return EditorStepInfo(kind, f"{noun} `{query.symbol}`", where)
        at = "Definition at" if query.what == "definition" else "References at"
        return EditorStepInfo(kind, f"{at} {path}:{query.line}:{query.column}", ((path or "", query.line),))
    if isinstance(query, SymbolsQuery):
        return EditorStepInfo(kind, f"Find symbols matching `{query.query}`")
    return EditorStepInfo(kind, "List the files open in the editor")
