"""The workspace engine's data: checkpoints, file changes and hunks (its errors: `errors`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Status = Literal["added", "modified", "deleted"]


@dataclass(frozen=True)
class Hunk:
    """One contiguous change, in unified-diff numbering (1-based; a start is the line before when its count is 0).

    `lines` are the hunk's lines, each prefixed `-` (old) or `+` (new) and keeping its own line ending.
    """

    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    lines: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        """The JSON shape (camelCase, as the protocol writes it)."""
        return {"oldStart": self.old_start, "oldLines": self.old_lines, "newStart": self.new_start,
                "newLines": self.new_lines, "lines": list(self.lines)}


@dataclass(frozen=True)
class FileChange:
    """One file that differs between two checkpoints; texts are None for a binary file or the absent side."""

    path: str
    status: Status
    old_text: str | None
    new_text: str | None
    binary: bool = False
    hunks: tuple[Hunk, ...] = ()
    old_mode: str = ""
    new_mode: str = ""
    # The raw contents, so a binary file can be undone whole; not part of the wire shape.
    old_data: bytes | None = field(default=None, repr=False)
    new_data: bytes | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Turn:
    """One recorded turn of a session: the checkpoint taken before it."""

    session_id: str
    turn: int
    checkpoint: str


@dataclass(frozen=True)
class Restored:
    """What a rewind did: the files it changed, and the checkpoint taken first (restore it to undo the rewind)."""

    checkpoint: str
    undo_checkpoint: str
    changes: tuple[FileChange, ...]
