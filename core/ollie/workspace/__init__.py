"""The workspace engine: checkpoints (shadow git), change tracking per step, review (undo, rewind)."""

from __future__ import annotations

from ollie.workspace.checkpoints import MAX_FILE_BYTES, Checkpoints, shadow_dir, turn_ref
from ollie.workspace.diff import compute_hunks, text_after_undo
from ollie.workspace.guard import DEFAULT_MAX_FILES, check_project
from ollie.workspace.review import undo
from ollie.workspace.types import (
    CheckpointUnavailable,
    FileChange,
    GitError,
    Hunk,
    Restored,
    StaleChange,
    Turn,
    WorkspaceError,
)

__all__ = [
    "DEFAULT_MAX_FILES", "MAX_FILE_BYTES", "CheckpointUnavailable", "Checkpoints", "FileChange", "GitError",
    "Hunk", "Restored", "StaleChange", "Turn", "WorkspaceError", "check_project", "compute_hunks",
    "shadow_dir", "text_after_undo", "turn_ref", "undo",
]
