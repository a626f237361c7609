"""Build output left out of change listings: kept in the checkpoints (undone and rewound as any file), but not
listed as a change of the turn unless asked for.

Checkpoints already skip what the workspace's `.gitignore` files ignore. What they still see, and a user does not
count as a change: Python's bytecode (`__pycache__/`, `*.pyc`), which a run of the code writes, and whatever the
project's `.git/info/exclude` or the user's global git excludes file ignores (the shadow git reads neither).
Without those two, the match is made here (no git process); with them, git's `check-ignore` also hides a tracked
file that a `.gitignore` came to ignore later (without them it is listed, as it is checkpointed).
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
from collections.abc import Sequence
from pathlib import Path

from ollie import beneath
from ollie.workspace.errors import WorkspaceError
from ollie.workspace.shadowgit import ShadowGit
from ollie.workspace.types import FileChange

BUILD_OUTPUT = ("__pycache__/", "*.py[cod]")
# An excludes file larger than this is not read (a hostile workspace's could be huge).
_MAX_EXCLUDES = 256 * 1024


def _project_text(root: Path, rel: str) -> str:
    """A workspace file's text through the chokepoint (the workspace is hostile); empty when absent, too large or
    anything but a regular file."""
    try:
        return beneath.read_text_sync(root, rel, limit=_MAX_EXCLUDES, errors="replace")
    except OSError:
        return ""


def _user_text(path: Path) -> str:
    """The user's own file (a dotfiles link is fine there); empty when absent."""
    try:
        with open(path, "rb") as source:
            return source.read(_MAX_EXCLUDES).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _global_excludes() -> Path:
    """The user's global git excludes file at its default place (core.excludesFile unset)."""
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(config) / "git" / "ignore"


def _build_output(path: str) -> bool:
    """BUILD_OUTPUT's match, as git makes it: a `__pycache__` dir on the path, or any part named `*.py[cod]`."""
    parts = path.split("/")
    return "__pycache__" in parts[:-1] or any(fnmatch.fnmatchcase(part, "*.py[cod]") for part in parts)


async def ignored(git: ShadowGit, root: Path, paths: Sequence[str]) -> set[str]:
    """Those of `paths` (relative to `root`) that are build output or that the project's git ignores."""
    if not paths:
        return set()
    extra = await asyncio.to_thread(lambda: _project_text(root, ".git/info/exclude") + "\n" +
                                    _user_text(_global_excludes()))
    if not any(line.strip() and not line.startswith("#") for line in extra.splitlines()):
        # BUILD_OUTPUT alone (the usual case): no git process. Off the loop: a turn may change 50,000 files (~0.1 s).
        return await asyncio.to_thread(lambda: {p for p in paths if _build_output(p)})
    excludes = git.git_dir / "listing-excludes"
    await asyncio.to_thread(excludes.write_text, "\n".join([*BUILD_OUTPUT, extra]) + "\n")
    try:
        out = await git.run("-c", f"core.excludesFile={excludes}", "check-ignore", "--no-index", "-z", "--stdin",
                            stdin=b"".join(os.fsencode(p) + b"\0" for p in paths), ok_codes=(0, 1))
    except WorkspaceError:
        return set()  # nothing is hidden when git cannot tell
    return {os.fsdecode(p) for p in out.split(b"\0") if p}


async def listed(git: ShadowGit, root: Path, changes: list[FileChange]) -> list[FileChange]:
    """`changes` without the ignored build output."""
    hidden = await ignored(git, root, [c.path for c in changes])
    return [c for c in changes if c.path not in hidden] if hidden else changes
