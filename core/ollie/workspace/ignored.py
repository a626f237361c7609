"""Build output left out of change listings: kept in the checkpoints (undone and rewound as any file), but not
listed as a change of the turn unless asked for.

Checkpoints already skip what the workspace's `.gitignore` files ignore (never a `.gitignore` itself). What they
still see, and a user does not count as a change: Python's bytecode (`__pycache__/`), which a run of the code
writes, and whatever the project's `.git/info/exclude` (that of the `.git` there as its checkpoints began: tool
code may make one where none was) or the user's global git excludes file ignores (the shadow git reads neither).
Without those two, the match is made here (no git process); with them, by git's `check-ignore` over an empty work
tree. A `.gitignore` hides nothing here: a tracked file it came to ignore later is checkpointed, so it is listed (a
step that ignored the files it edited, and `.gitignore` itself, hid them all).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ollie import beneath
from ollie.workspace.bounds import Bound
from ollie.workspace.errors import WorkspaceError
from ollie.workspace.shadowgit import ShadowGit
from ollie.workspace.types import FileChange

if TYPE_CHECKING:
    from ollie.workspace.checkpoints import Checkpoints

# Only `__pycache__`: Python 3 writes its bytecode nowhere else, and a `*.pyc` beside the sources is a sourceless
# module that imports run (a step's `json.pyc` ran in place of the standard library's, hidden as build output).
BUILD_OUTPUT = ("__pycache__/",)
# An excludes file larger than this is not read (a hostile workspace's could be huge).
_MAX_EXCLUDES = 256 * 1024


def _project_text(root: Path, rel: str) -> str:
    """A workspace file's text through the chokepoint (the workspace is hostile); empty when absent, too large or
    anything but a regular file."""
    try:
        return beneath.read_text_sync(root, rel, limit=_MAX_EXCLUDES, errors="replace")
    except OSError:
        return ""


def _global_excludes() -> str:
    """The user's global git excludes file at its default place (core.excludesFile unset: a dotfiles link is fine
    there); empty when absent."""
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    try:
        with open(Path(config) / "git" / "ignore", "rb") as source:
            return source.read(_MAX_EXCLUDES).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _build_output(path: str) -> bool:
    """BUILD_OUTPUT's match, as git makes it: a `__pycache__` dir on the path."""
    return "__pycache__" in path.split("/")[:-1]


async def ignored(git: ShadowGit, root: Path, paths: Sequence[str]) -> set[str]:
    """Those of `paths` (relative to `root`) that are build output or that the project's git ignores."""
    if not paths:
        return set()
    # The project's excludes only from a `.git` no step could write: one a step made would hide its own changes.
    extra = await asyncio.to_thread(lambda: (_project_text(root, ".git/info/exclude") if git.project_git_kept() else "")
                                    + "\n" + _global_excludes())
    if not any(line.strip() and not line.startswith("#") for line in extra.splitlines()):
        # BUILD_OUTPUT alone (the usual case): no git process. Off the loop: a turn may change 50,000 files (~0.1 s).
        return await asyncio.to_thread(lambda: {p for p in paths if _build_output(p)})
    excludes, empty = git.git_dir / "listing-excludes", git.git_dir / "listing-tree"

    def prepare() -> None:
        excludes.write_text("\n".join([*BUILD_OUTPUT, extra]) + "\n")
        empty.mkdir(exist_ok=True)

    await asyncio.to_thread(prepare)
    try:
        # Matched in an empty work tree of ollie's: no `.gitignore` of the workspace is read. A step that named the
        # files it edited, and `.gitignore` itself, in one hid them all (each was checkpointed, and listed without
        # a global excludes file).
        out = await git.run("--work-tree", str(empty), "-C", str(empty), "-c", f"core.excludesFile={excludes}",
                            "check-ignore", "--no-index", "-z", "--stdin",
                            stdin=b"".join(os.fsencode(p) + b"\0" for p in paths), ok_codes=(0, 1))
    except WorkspaceError:
        return set()  # nothing is hidden when git cannot tell
    return {os.fsdecode(p) for p in out.split(b"\0") if p}


@dataclass(frozen=True, eq=False, repr=False)
class Listing:
    """A change list: the changes read (in path order, up to a bound), and how many files past it were not read."""

    changes: list[FileChange]
    more: int = 0


def _named(path: str, names: Sequence[str]) -> str:
    """The changed file a client means by `path`: its own name, or the one name that goes out as `path` on the wire,
    where each byte that is no UTF-8 is "?" (ollie_lsp sends them so: Neovim refuses an escaped lone surrogate)."""
    if path in names:
        return path
    meant = {n for n in names if n.encode("utf-8", "replace").decode() == path}
    return meant.pop() if len(meant) == 1 else path


async def list_changes(checkpoints: Checkpoints, between: tuple[str, str | None] | None,
                       in_editor: Mapping[str, FileChange], *, build_output: bool = False, bound: Bound | None = None,
                       path: str | None = None) -> Listing:
    """The files changed `between` two checkpoints (None: none) and the edits made in editor buffers (listed as the
    buffer has them, where a file changed both ways), without the build output unless `build_output`; only `path`,
    when given. Read in path order until `bound` (Checkpoints.read_changes): the rest only counted."""
    entries = await checkpoints.diff_entries(*between) if between is not None else []
    if path is not None:
        path = _named(path, [e[0] for e in entries])
    entries = [e for e in entries if e[0] not in in_editor and (path is None or e[0] == path)]
    if not build_output:
        hidden = await ignored(checkpoints.git, checkpoints.root, [e[0] for e in entries])
        entries = [e for e in entries if e[0] not in hidden] if hidden else entries
    extra = [c for c in in_editor.values() if path is None or c.path == path]
    items = sorted([*entries, *extra], key=lambda item: item.path if isinstance(item, FileChange) else item[0])
    changes = await checkpoints.read_changes(items, bound)
    return Listing(changes, len(items) - len(changes))
