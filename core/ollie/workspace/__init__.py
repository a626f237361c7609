"""The workspace engine: checkpoints (shadow git), change tracking per step, review (undo, rewind).

Its names load with their module at first use (PEP 562): a turn that writes nothing needs the errors and none of
the data types, git, inotify or sandbox machinery behind the checkpoints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ollie.lazyexports import lazy_exports

if TYPE_CHECKING:
    from ollie.workspace.checkpoints import MAX_FILE_BYTES, Checkpoints
    from ollie.workspace.diff import compute_hunks, text_after_undo
    from ollie.workspace.errors import CheckpointUnavailable, GitError, StaleChange, WorkspaceError
    from ollie.workspace.guard import DEFAULT_MAX_FILES, check_project
    from ollie.workspace.refs import shadow_dir, turn_ref
    from ollie.workspace.review import undo
    from ollie.workspace.types import FileChange, Hunk, Restored, Turn

_HOMES = {
    "MAX_FILE_BYTES": "checkpoints", "Checkpoints": "checkpoints", "compute_hunks": "diff", "text_after_undo": "diff",
    "DEFAULT_MAX_FILES": "guard", "check_project": "guard", "shadow_dir": "refs", "turn_ref": "refs",
    "undo": "review", "CheckpointUnavailable": "errors", "FileChange": "types", "GitError": "errors", "Hunk": "types",
    "Restored": "types", "StaleChange": "errors", "Turn": "types", "WorkspaceError": "errors",
}

__all__ = [
    "DEFAULT_MAX_FILES", "MAX_FILE_BYTES", "CheckpointUnavailable", "Checkpoints", "FileChange", "GitError",
    "Hunk", "Restored", "StaleChange", "Turn", "WorkspaceError", "check_project", "compute_hunks",
    "shadow_dir", "text_after_undo", "turn_ref", "undo",
]


__getattr__ = lazy_exports(__name__, _HOMES)
