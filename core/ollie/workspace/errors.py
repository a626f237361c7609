"""The workspace engine's errors (apart from its data, `types`: a turn that writes nothing catches these only)."""

from __future__ import annotations


class WorkspaceError(Exception):
    """Base of the workspace engine's errors."""


class CheckpointUnavailable(WorkspaceError):
    """This CWD cannot be checkpointed (not a project, too many files, no git); `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class StaleChange(WorkspaceError):
    """The file on disk is no longer what the step left: undoing would clobber someone else's edits."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class GitError(WorkspaceError):
    """A shadow git command failed."""
