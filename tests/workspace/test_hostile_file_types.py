"""A step's hostile work tree (FIFOs, sockets, symlinks and dirs where tracked files were, odd names) never stops the
checkpoints, and the lstat path (`Checkpoints._known`) snapshots exactly what git's own listing would."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from ollie.workspace.checkpoints import Checkpoints

CAP = 4096
# Names git and the lstat path could read apart: escapes, a newline, non-UTF-8 bytes, pathspec magic, names that
# sort around a dir's (`a`, `a-b`, `a/`).
NAMES = ["a\\b", "new\nline", os.fsdecode(b"caf\xe9"), "a", "a-b", "sp ace", "-dash", ":(glob)x", "*"]


async def _snapshot_agrees(cps: Checkpoints, project: Path, what: str) -> str:
    """`cps`'s snapshot (by its events, judged by lstat where it can) is the one a fresh object's full listing makes."""
    live = await cps.snapshot()
    fresh = await Checkpoints(project, max_file_bytes=CAP).snapshot()
    assert live == fresh == await cps.snapshot(), what
    return live


def _replace(path: Path, make) -> None:
    os.unlink(path)
    make(path)


async def test_the_lstat_path_snapshots_what_git_would_whatever_a_tracked_file_becomes(project: Path,
                                                                                       tmp_path: Path) -> None:
    cps = Checkpoints(project, max_file_bytes=CAP)
    for name in NAMES:
        (project / name).write_text("v1\n")
    await _snapshot_agrees(cps, project, "made")
    for name in NAMES:
        (project / name).write_text("v2\n")
    await _snapshot_agrees(cps, project, "edited")
    for name in NAMES:
        _replace(project / name, lambda p: p.symlink_to("/etc/passwd"))
    await _snapshot_agrees(cps, project, "a symlink out")
    for name in NAMES:
        _replace(project / name, os.mkfifo)
    await _snapshot_agrees(cps, project, "a FIFO")
    for name in NAMES:
        _replace(project / name, lambda p: p.write_bytes(b"x" * (CAP + 1)))
    await _snapshot_agrees(cps, project, "grown past the cap")
    for name in NAMES:
        (project / name).write_text("small\n")
    await _snapshot_agrees(cps, project, "small again")
    for name in NAMES:
        _replace(project / name, lambda p: (p.mkdir(), (p / "in").write_text("in\n")))
    await _snapshot_agrees(cps, project, "a dir")
    (tmp_path / "app.py").write_text("outside\n")
    (project / "src" / "app.py").unlink()
    (project / "src").rmdir()
    (project / "src").symlink_to(tmp_path)
    await _snapshot_agrees(cps, project, "a dir swapped for a symlink out")
    _replace(project / "README.md", lambda p: p.symlink_to(p.name))
    await _snapshot_agrees(cps, project, "a symlink loop")


async def test_a_fifo_or_socket_where_a_tracked_file_was_does_not_stop_the_next_checkpoints(project: Path) -> None:
    # git cannot store either: `update-index` failed on them, so every snapshot after failed, and no write made while
    # they stood was ever checkpointed (nor undoable).
    cps = Checkpoints(project)
    before = await cps.snapshot()
    _replace(project / "README.md", os.mkfifo)
    os.mkfifo(project / "new-pipe")  # untracked: never stored either
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(project / ".gitignore.sock"))
        os.rename(project / ".gitignore.sock", project / ".gitignore")
        (project / "src" / "app.py").write_text("the step's write\n")
        after = await cps.snapshot()
    finally:
        server.close()
    changed = {c.path: c.status for c in await cps.changes(before, after)}
    assert changed == {"README.md": "deleted", ".gitignore": "deleted", "src/app.py": "modified"}
    os.unlink(project / "README.md")
    os.unlink(project / ".gitignore")
    await cps.restore(before)  # the write is undone; the files the FIFO and the socket hid are back
    assert (project / "README.md").read_text() == "# demo\n" and (project / ".gitignore").read_text() == "build/\n*.log\n"
    assert (project / "src" / "app.py").read_text().startswith("line 1\n")
