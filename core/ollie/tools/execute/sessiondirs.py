"""A session's private dirs: its TMPDIR, the scratch dir of sandboxed programs, and one no sandbox grants."""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from ollie import paths

PRIVATE_MODE = 0o700


def make_private_dir(path: Path) -> Path:
    """Create `path` (and its parents) as 0700, tightening it when it already existed."""
    path.mkdir(mode=PRIVATE_MODE, parents=True, exist_ok=True)
    os.chmod(path, PRIVATE_MODE)
    return path


@dataclass(frozen=True)
class SessionDirs:
    """The layout under one session's root (0700): only `tmp` is writable and `scratch` readable by tool code.

    The root also holds the session's lock file, which no policy grants: tool
    code can neither hold the session's locks nor list what else lives there.
    `private` keeps the programs of approved elevated steps, where sandboxed
    code cannot swap them between approval and exec.
    """

    root: Path

    @classmethod
    def for_session(cls, session_id: str) -> SessionDirs:
        """The default layout of `session_id`, under the runtime tmp root."""
        return cls(paths.runtime_tmp_dir() / session_id)

    @property
    def tmp(self) -> Path:
        """The TMPDIR of the session's children: the only writable dir granted as {TMPDIR}."""
        return self.root / "tmp"

    @property
    def scratch(self) -> Path:
        """Where the programs of sandboxed steps are written (granted read-only)."""
        return self.root / "scratch"

    @property
    def private(self) -> Path:
        """Where approved elevated programs are written (granted to nothing)."""
        return self.root / "private"

    def create(self) -> None:
        """Create the root and its dirs, each 0700 (the runtime root too, when it is ollie's)."""
        runtime_root = paths.runtime_tmp_dir()
        if self.root.parent == runtime_root:
            make_private_dir(runtime_root)
        for directory in (self.root, self.tmp, self.scratch, self.private):
            make_private_dir(directory)

    def fresh(self, parent: Path) -> Path:
        """A new 0700 dir for one call under `parent` (scratch or private)."""
        make_private_dir(parent)
        path = parent / f"run-{uuid.uuid4().hex[:12]}"
        path.mkdir(mode=PRIVATE_MODE)
        return path

    def remove(self) -> None:
        """Remove the whole session root (when the session closes)."""
        shutil.rmtree(self.root, ignore_errors=True)
