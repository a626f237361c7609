"""What a hostile step leaves in a workspace for the daemon to trip on: programs on PATH, FIFOs, links to secrets."""

from __future__ import annotations

import os
from pathlib import Path


def plant(directory: Path, name: str, marker: Path) -> None:
    """An executable `name` in `directory` that leaves `marker` behind if anyone runs it."""
    directory.mkdir(parents=True, exist_ok=True)
    program = directory / name
    program.write_text(f"#!/bin/sh\necho planted > {marker}\nexit 0\n")
    program.chmod(0o755)


def git_fifo_and_link(ws: Path, marker: Path, fifo: str, link: str) -> str:
    """A `git` planted in `ws/.venv/bin` (leaving `marker` if run), `fifo` swapped for a FIFO and `link` for a link to
    /etc/passwd; returns the PATH of an activated venv (its bin first)."""
    plant(ws / ".venv" / "bin", "git", marker)
    (ws / fifo).unlink()
    os.mkfifo(ws / fifo)
    (ws / link).unlink()
    (ws / link).symlink_to("/etc/passwd")
    return f"{ws / '.venv' / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"
