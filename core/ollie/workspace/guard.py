"""Is this CWD a project we may checkpoint? Decided cheaply (a bounded walk), never by scanning for minutes."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from ollie import beneath
from ollie.env import env_number
from ollie.workspace.errors import CheckpointUnavailable

# How many files a checkpointed tree may have; OLLIE_CHECKPOINT_MAX_FILES sets it (fewer: a test floods past it fast).
MAX_FILES_ENV = "OLLIE_CHECKPOINT_MAX_FILES"
# A walk that takes longer than this is refused: the tree is too big to checkpoint per turn anyway.
WALK_BUDGET_S = 2.0
# A tree nested deeper than this is refused: no project is, and the walk (os.fwalk recurses) must stay well within
# Python's recursion limit and the open-file limit (a dir fd per level).
MAX_DEPTH = 256
# Usually ignored and huge: pruned from the cheap count only (git's own listing, which honours the
# .gitignore files, is counted again before anything is hashed).
_PRUNED = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache",
                     ".pytest_cache", ".ruff_cache", "target", ".gradle", ".cache"})


def _refused_location(root: Path) -> str | None:
    """Why `root` is not a project by where it is ($HOME, /, or above $HOME), else None."""
    home = Path(os.path.realpath(os.path.expanduser("~")))
    if root == Path(root.anchor):
        return f"{root} is the filesystem root, not a project"
    if root == home:
        return f"{root} is the home directory, not a project: start ollie in a project directory"
    if root in home.parents:
        return f"{root} contains the home directory, not a project"
    return None


def _count_files(root: Path, limit: int) -> str | None:
    """Walk `root` until more than `limit` files or WALK_BUDGET_S seconds; why it is too big, else None."""
    deadline = time.monotonic() + WALK_BUDGET_S
    count = 0
    try:
        for top, dirs, files, _ in beneath.walk_sync(root):  # never into a symlinked directory
            dirs[:] = [d for d in dirs if d not in _PRUNED]
            if dirs and top.count("/") >= MAX_DEPTH:
                return f"{root} nests directories more than {MAX_DEPTH} deep: not a project to checkpoint"
            count += len(files)
            if count > limit:
                return f"the workspace has more than {limit:,} files: too many to checkpoint"
            if time.monotonic() > deadline:
                return f"{root} is too large to scan within {WALK_BUDGET_S:g} s: too many files to checkpoint"
    except OSError:
        pass
    return None


# A tree the walk refused (too many files, too slow to count), by (root, limit): every new session there would
# walk it again for up to WALK_BUDGET_S before its first write step. Remembered for a while, then walked again
# (the user may have cleaned it up).
REFUSAL_TTL_S = 600.0
_refused: dict[tuple[Path, int], tuple[float, str]] = {}


def file_limit() -> int:
    """How many files a checkpointed tree may have; CheckpointUnavailable saying why when its variable is bad."""
    try:
        return env_number(MAX_FILES_ENV, 50_000, int)
    except ValueError as exc:
        raise CheckpointUnavailable(str(exc)) from None


async def check_project(root: Path, max_files: int) -> None:
    """Raise CheckpointUnavailable when `root` is not a project we may checkpoint (a walk's refusal is remembered)."""
    reason = _refused_location(root)
    if reason is None:
        key = (root, max_files)
        remembered = _refused.get(key)
        if remembered is not None and time.monotonic() - remembered[0] < REFUSAL_TTL_S:
            raise CheckpointUnavailable(remembered[1])
        reason = await asyncio.to_thread(_count_files, root, max_files)
        if reason is None:
            _refused.pop(key, None)
        else:
            _refused[key] = (time.monotonic(), reason)
    if reason is not None:
        raise CheckpointUnavailable(reason)
