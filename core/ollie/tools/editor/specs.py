"""The editor tools as call_tool lists them: names, descriptions, arguments, kinds and tiers (their calls'
arguments and titles: `queries`, loaded with the first call).

Pure: no I/O. A call is `{"tool": "editor_definition", "args": ["src/app.ts", "12", "5"]}` like any
tool script's, so the model batches them with file_read and the rest.
"""

from __future__ import annotations

from typing import Literal

import attrs

from ollie.errors import OllieError
from ollie.tools.base import Tier

EditorKind = Literal["read", "search"]


class EditorArgumentError(OllieError):
    """An editor tool's arguments are wrong; the message says how to call it."""


@attrs.frozen(eq=False, repr=False, slots=False)
class EditorTool:
    """One editor tool as listed in call_tool's description."""

    name: str
    description: str
    args: str
    kind: EditorKind
    tier: Tier


_POSITION_ARGS = (
    "PATH LINE COLUMN | --symbol=NAME [PATH]\n"
    "PATH LINE COLUMN: the 1-based position of the name in the file (PATH:LINE:COLUMN works too)\n"
    "--symbol=NAME: find the symbol by name instead (PATH, if given, prefers matches in that file)"
)

TOOLS: dict[str, EditorTool] = {tool.name: tool for tool in (
    EditorTool(
        "editor_diagnostics",
        "Errors and warnings the editor's language servers report now (type errors, lint), unsaved "
        "buffers included: cheaper than a build to check what an edit broke.",
        "[PATH...] [--all]\nPATH: files or directories to report on (default: every file the editor knows)\n"
        "--all: also information and hints",
        "read", "warm",
    ),
    EditorTool(
        "editor_definition",
        "Where a symbol is defined, as the editor's language server answers go-to-definition.",
        _POSITION_ARGS, "search", "cold",
    ),
    EditorTool(
        "editor_references",
        "Every reference to a symbol (its declaration included), from the editor's language server.",
        _POSITION_ARGS, "search", "cold",
    ),
    EditorTool(
        "editor_symbols",
        "Find functions, classes, methods and variables by name across the workspace (the editor's symbol search).",
        "QUERY\nQUERY: the name or part of it",
        "search", "cold",
    ),
    EditorTool(
        "editor_open_files",
        "The files open in the editor: which one the user is looking at, which have unsaved changes.",
        "(none)",
        "read", "cold",
    ),
)}
EDITOR_KINDS: dict[str, EditorKind] = {name: tool.kind for name, tool in TOOLS.items()}
