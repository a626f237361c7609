"""A turn's checkpoint from the kernel's events (treewatch): what happens between turns is in it, however it was
made; what the events cannot show is counted as the first step's change, never hidden; lost events mean a scan."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ollie.agent.changes import ChangeTracker

SESSION = "1700000000000000000-abcdef"


async def _turn(tracker: ChangeTracker, number: int, step: Callable[[], object]) -> list[str]:
    """One turn with one write step; the paths the step's diff lists."""
    await tracker.begin_turn(number)
    token = await tracker.before_step()
    step()
    changed = sorted(c.path for c in await tracker.after_step(token))
    await tracker.end_turn()
    return changed


async def _files(tracker: ChangeTracker, checkpoint: str | None) -> set[str]:
    assert tracker.checkpoints is not None and checkpoint is not None
    return set((await tracker.checkpoints.git.run("ls-tree", "-r", "--name-only", checkpoint)).decode().split())


async def test_between_turns_new_dirs_moves_symlink_swaps_and_gitignore_are_the_users(project: Path) -> None:
    tracker = ChangeTracker(project, SESSION)
    deep = project / "d1" / "d2" / "d3"
    assert await _turn(tracker, 1, lambda: (deep.mkdir(parents=True), (deep / "x.txt").write_text("x\n"))) == [
        "d1/d2/d3/x.txt"]
    # The user, between turns: in dirs the step made (watched once seen), a moved dir, a dir swapped for a link to
    # one outside (never looked through), a file un-ignored by a .gitignore edit.
    (deep / "y.txt").write_text("y\n")
    (project / "src").rename(project / "lib")
    (project / "lib" / "new.py").write_text("n\n")
    os.symlink(project.parent, project / "d1" / "d2" / "d3" / "up")
    token = None

    def step() -> None:
        nonlocal token
        token = tracker.turn_begin
        (project / "step.txt").write_text(f"{token}\n")

    assert await _turn(tracker, 2, step) == ["step.txt"]
    files = await _files(tracker, token)
    assert {"d1/d2/d3/y.txt", "lib/new.py", "lib/app.py", "d1/d2/d3/up"} <= files
    assert not any(p.startswith("src/") for p in files)
    (project / "build").mkdir()
    (project / "build" / "out.o").write_text("o\n")
    (project / ".gitignore").write_text("*.log\n")
    assert await _turn(tracker, 3, step) == ["step.txt"]
    assert "build/out.o" in await _files(tracker, token)


async def test_a_change_the_events_cannot_show_is_the_first_steps_never_hidden(project: Path) -> None:
    # A hard link named outside the watched tree: writes through it make no event in the work tree's dirs.
    outside = project.parent / "elsewhere.py"
    os.link(project / "src" / "app.py", outside)
    tracker = ChangeTracker(project, SESSION)
    assert await _turn(tracker, 1, lambda: (project / "a.txt").write_text("a\n")) == ["a.txt"]
    outside.write_text("changed behind the watch\n")
    assert await _turn(tracker, 2, lambda: (project / "b.txt").write_text("b\n")) == ["b.txt", "src/app.py"]


async def test_lost_events_mean_a_full_scan(project: Path) -> None:
    tracker = ChangeTracker(project, SESSION)
    assert await _turn(tracker, 1, lambda: (project / "a.txt").write_text("a\n")) == ["a.txt"]
    # More events than the kernel queues (alternating files: repeated ones are merged), then a file whose event
    # is lost: the overflow makes the next turn's checkpoint a full scan, which has it.
    with open("/proc/sys/fs/inotify/max_queued_events") as limit:
        flood = int(limit.read()) + 10
    one, two = (os.open(project / name, os.O_WRONLY | os.O_CREAT) for name in ("f1.log", "f2.log"))
    try:
        for i in range(flood):
            os.write(one if i % 2 else two, b"x")
    finally:
        os.close(one)
        os.close(two)
    (project / "late.txt").write_text("late\n")
    assert await _turn(tracker, 2, lambda: (project / "b.txt").write_text("b\n")) == ["b.txt"]
