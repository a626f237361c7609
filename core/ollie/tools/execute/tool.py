"""Tool scripts: finding them on the tools path and reading their header comment block."""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path
from typing import Literal, get_args

import attrs

from ollie import paths, regularfile
from ollie.errors import OllieError
from ollie.tools.base import Tier
from ollie.tools.execute.languages import Language, LanguageError, script_language

ParallelAnnotation = Literal["read", "write"]
# What a step of the tool does, in the Agent Client Protocol's tool kinds (ollie.agent.steps).
KindAnnotation = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
_COMMENT = re.compile(r"^\s*(#|--|//)\s?(.*)$")
_KEY = re.compile(r"^(description|args)\s*:\s*(.*)$", re.IGNORECASE)
_ANNOTATION = re.compile(r"^ollie:(parallel|tier|kind)\s+(\w+)\b", re.IGNORECASE)
_ANNOTATIONS = {"parallel": get_args(ParallelAnnotation), "tier": get_args(Tier),
                "kind": get_args(KindAnnotation)}
_HEADER_BYTES = 8192
# Entries looked at per tools dir: one a step may write (OLLIE_TOOLS_PATH inside the project) could hold a million,
# each stat'ed and read on the daemon's loop, and each named to the model in call_tool's list.
MAX_ENTRIES = 1024


def mtime_ns(path: Path) -> int:
    """`path`'s modification time in ns (0 when it cannot be read): part of the cache keys of what is read from it."""
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


class ToolNameError(OllieError):
    """A tool name that could reach outside the tools dirs, or names no script."""


@attrs.frozen(eq=False, repr=False, slots=False)
class ToolScript:
    """One tool script: where it is, how to run it, and what its header says."""

    name: str
    path: Path
    language: Language
    shebang_flags: tuple[str, ...]
    description: str = ""
    args: str = ""
    parallel: ParallelAnnotation | None = None
    tier: Tier | None = None
    kind: KindAnnotation | None = None

    def bundled(self) -> bool:
        """Whether this is ollie's own script, found in the bundled tools dir (no step writes there), not one of its
        name in a tools dir ahead of it (`OLLIE_TOOLS_PATH` in the project, which a step may write)."""
        return self.path.parent == paths.bundled("tools")

    def trusted(self) -> bool:
        """Whether the user put this script where it is: ollie's own, or one in her config's tools dir, which no step
        reads or writes (`protect`); not one a step could have planted (a tools dir in the project)."""
        return self.bundled() or self.path.parent == paths.config_dir() / "tools"


def check_name(name: str) -> str:
    """`name` when it is a plain script name; ToolNameError for `/`, `..` and the like."""
    if not isinstance(name, str) or not name:
        raise ToolNameError("tool name must be a non-empty string")
    if "/" in name or "\\" in name or ".." in name or not _NAME.match(name):
        raise ToolNameError(
            f"invalid tool name {name!r}: a tool is named by its script's plain name "
            "(no '/', no '..'); see call_tool's list of tools"
        )
    return name


def _header_lines(text: str) -> list[str]:
    """The comment block at the top of a script (after the `#!` line), without comment markers."""
    lines = text.splitlines()
    if lines and lines[0].startswith("#!"):
        lines = lines[1:]
    block: list[str] = []
    for line in lines:
        if not line.strip():
            if block:
                break
            continue
        match = _COMMENT.match(line)
        if match is None:
            break
        block.append(match.group(2).rstrip())
    return block


def parse_header(text: str) -> dict[str, str]:
    """The header's fields: `description`, `args` (continuation lines kept), `parallel`, `tier`, `kind`."""
    fields: dict[str, str] = {}
    current: str | None = None
    for line in _header_lines(text):
        stripped = line.strip()
        if (match := _ANNOTATION.match(stripped)) is not None:
            key, value, current = match.group(1).lower(), match.group(2).lower(), None
            if value in _ANNOTATIONS[key]:
                fields[key] = value
        elif (match := _KEY.match(stripped)) is not None:
            key = match.group(1).lower()
            fields[key], current = match.group(2).strip(), key
        elif current is not None and line[:1].isspace() and stripped:
            # An indented line continues the field above it (e.g. one line per argument).
            fields[current] = f"{fields[current]}\n{stripped}".strip()
        else:
            current = None
    return fields


def load_script(name: str, path: Path) -> ToolScript:
    """Read `path`'s header into a ToolScript; LanguageError when its language is unknown, OSError when it is no
    regular file (a FIFO swapped in after the listing: its open never waits)."""
    head = regularfile.read_file_sync(path, _HEADER_BYTES, head=True).decode("utf-8", errors="replace")
    lang, flags = script_language(path, head.split("\n", 1)[0])
    fields = parse_header(head)
    return ToolScript(
        name=name,
        path=path,
        language=lang,
        shebang_flags=flags,
        description=fields.get("description", ""),
        args=fields.get("args", ""),
        parallel=fields.get("parallel"),  # type: ignore[arg-type]
        tier=fields.get("tier"),  # type: ignore[arg-type]
        kind=fields.get("kind"),  # type: ignore[arg-type]
    )


def candidates(directory: Path) -> dict[str, Path]:
    """Tool name → file for one dir (its first MAX_ENTRIES entries): `name` or `name.ext`; `_x`, `.x` and README
    files are not tools."""
    found: dict[str, Path] = {}
    try:
        with os.scandir(directory) as scan:
            entries = sorted(itertools.islice(scan, MAX_ENTRIES), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return found
    for entry in entries:
        path = Path(entry.path)
        if entry.name.startswith(("_", ".")) or path.stem.upper() == "README" or not entry.is_file():
            continue
        # An extension-less file wins over `name.ext` in the same dir.
        name = path.stem if path.suffix else entry.name
        if name not in found or not path.suffix:
            found[name] = path
    return found


def discover(dirs: list[Path]) -> dict[str, ToolScript]:
    """Every tool script on `dirs`; an earlier dir shadows a later one; unreadable ones are skipped."""
    scripts: dict[str, ToolScript] = {}
    for directory in dirs:
        for name, path in candidates(directory).items():
            if name in scripts or not _NAME.match(name):
                continue
            try:
                scripts[name] = load_script(name, path)
            except (LanguageError, OSError):
                continue
    return scripts


def find_script(name: str, dirs: list[Path]) -> ToolScript:
    """The script called `name` on `dirs` (first dir wins); ToolNameError when none or the name is unsafe."""
    check_name(name)
    for directory in dirs:
        path = candidates(directory).get(name)
        if path is not None:
            try:
                return load_script(name, path)
            except (LanguageError, OSError) as exc:
                raise ToolNameError(f"tool {name!r} ({path}): {exc}") from exc
    raise ToolNameError(f"no tool script named {name!r}; see call_tool's list of tools")
