"""Snapshots from the kernel's events (treewatch): what happens between turns is the turn's checkpoint, what a step
does is its diff, however it was made (hard links named outside, moves in and out, mapped writes); a dir swapped for a
symlink is never watched through; lost events, or a process that could make links, mean a full scan."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from ollie import beneath
from ollie.agent.changes import ChangeTracker
from ollie.sandbox.spawn import spawn_sandboxed
from ollie.workspace import treewatch

SESSION = "1700000000000000000-abcdef"


async def _turn(tracker: ChangeTracker, number: int, step: Callable[[], object]) -> list[str]:
    """One turn with one write step; the paths the step's diff lists."""
    await tracker.begin_turn(number)
    token = await tracker.before_step()
    step()
    changed = sorted(c.path for c in (await tracker.after_step(token))[1].changes)
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


async def test_writes_through_a_hard_link_named_outside_the_tree_are_seen(project: Path) -> None:
    # Writes through a link named outside make no event in the work tree's dirs: a file with other names is
    # re-lstat'ed at each snapshot, a new name of one (made outside a sandbox) makes the watch start over.
    outside = project.parent / "elsewhere.py"
    os.link(project / "src" / "app.py", outside)
    tracker = ChangeTracker(project, SESSION)
    assert await _turn(tracker, 1, lambda: (project / "a.txt").write_text("a\n")) == ["a.txt"]
    outside.write_text("the user's, between turns\n")
    token = None

    def step() -> None:
        nonlocal token
        token = tracker.turn_begin
        with open(outside, "a") as through:
            through.write("the step's\n")

    assert await _turn(tracker, 2, step) == ["src/app.py"]
    assert tracker.checkpoints is not None and token is not None
    assert await tracker.checkpoints.git.run("cat-file", "-p", f"{token}:src/app.py") == b"the user's, between turns\n"
    # A second name made inside the tree after the watch began (the user's `ln`): both names count.
    os.link(project / "README.md", project / "src" / "readme-too.md")
    assert await _turn(tracker, 3, lambda: (project / "src" / "readme-too.md").write_text("x\n")) == [
        "README.md", "src/readme-too.md"]


async def test_ignored_files_with_other_names_are_not_looked_at(project: Path) -> None:
    # A `uv` venv or a pnpm tree: ignored files hard-linked from a cache outside. Only the checkpointed ones matter.
    (project / "build").mkdir()
    cache = project.parent / "cache.so"
    cache.write_text("c\n")
    os.link(cache, project / "build" / "lib.so")
    tracker = ChangeTracker(project, SESSION)
    assert await _turn(tracker, 1, lambda: (project / "a.txt").write_text("a\n")) == ["a.txt"]
    watch = treewatch.watch(Path(os.path.realpath(project)))
    cursor = watch.since(watch.since(None)[0])[0]
    cache.write_text("changed\n")
    assert watch.since(cursor)[1] == set()


async def test_a_file_moved_in_a_dir_moved_out_and_a_mapped_write_are_the_steps(project: Path, tmp_path: Path) -> None:
    tracker = ChangeTracker(project, SESSION)
    assert await _turn(tracker, 1, lambda: (project / "a.txt").write_text("a\n")) == ["a.txt"]
    (tmp_path / "in.txt").write_text("moved in\n")
    (project / "pkg" / "deep").mkdir(parents=True)
    (project / "pkg" / "deep" / "m.py").write_text("m\n")
    assert await _turn(tracker, 2, lambda: (tmp_path / "in.txt").rename(project / "in.txt")) == ["in.txt"]
    assert await _turn(tracker, 3, lambda: (project / "pkg").rename(tmp_path / "pkg")) == ["pkg/deep/m.py"]
    # A write through a shared mapping makes no IN_MODIFY; the file's last close (at the latest when the step's
    # processes are gone) makes IN_CLOSE_WRITE.
    mapped = ("import mmap, os\nfd = os.open('src/app.py', os.O_RDWR)\nm = mmap.mmap(fd, 0)\nos.close(fd)\n"
              "m[:4] = b'LINE'\n")
    assert await _turn(tracker, 4, lambda: subprocess.run([sys.executable, "-c", mapped], cwd=project,
                                                          check=True)) == ["src/app.py"]
    assert (project / "src" / "app.py").read_text().startswith("LINE 1\n")


def _watched_inodes() -> set[int]:
    """The inodes this process's inotify watches are on (from /proc/self/fdinfo)."""
    found = set()
    for fd in os.listdir("/proc/self/fdinfo"):
        try:
            text = (Path("/proc/self/fdinfo") / fd).read_text()
        except OSError:
            continue
        found.update(int(m, 16) for m in re.findall(r"^inotify wd:\S+ ino:([0-9a-f]+)", text, re.M))
    return found


async def test_a_dir_swapped_for_a_symlink_before_its_watch_is_never_watched_outside(project: Path,
                                                                                    tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "b").mkdir(parents=True)
    tracker = ChangeTracker(project, SESSION)
    assert await _turn(tracker, 1, lambda: (project / "a" / "b").mkdir(parents=True)) == []
    (project / "a" / "b" / "c").mkdir()  # its event names a/b/c; before it is read, `a` becomes a link outside
    (project / "a").rename(project / "a-old")
    os.symlink(outside, project / "a")
    assert await _turn(tracker, 2, lambda: (outside / "b" / "c").mkdir()) == []
    inodes = _watched_inodes()
    assert (project / "a-old" / "b" / "c").stat().st_ino in inodes
    assert not {outside.stat().st_ino, (outside / "b").stat().st_ino, (outside / "b" / "c").stat().st_ino} & inodes
    # What the swap's event would do, had it come in the middle: the watch is refused, not followed.
    watch = treewatch.watch(Path(os.path.realpath(project)))
    before = len(watch._dirs)
    assert watch._add("a/b") and len(watch._dirs) == before  # noqa: SLF001 - the step the events drive
    assert not {(outside / "b").stat().st_ino} & _watched_inodes()


async def test_while_an_unconfined_process_runs_snapshots_scan_everything(project: Path) -> None:
    # A process outside the sandbox can make a hard link: no event-based answer while it runs, and after it
    # the watch starts over (which files have other names is unknown).
    tracker = ChangeTracker(project, SESSION)
    assert await _turn(tracker, 1, lambda: (project / "a.txt").write_text("a\n")) == ["a.txt"]
    watch = treewatch.watch(Path(os.path.realpath(project)))
    cursor, _ = watch.since(None)
    outside = project.parent / "linked-by-it.py"
    proc = await spawn_sandboxed(["ln", str(project / "src" / "app.py"), str(outside)], policy=None, cwd=project,
                                 env={"PATH": "/usr/bin:/bin"})
    assert watch.since(cursor)[1] is None  # until it is gone (its status known)
    assert await proc.wait() == 0 and outside.exists()
    assert tracker.checkpoints is not None
    await tracker.checkpoints.snapshot()  # a full scan: the watch started over, and app.py has another name now
    cursor, paths = watch.since(watch.since(None)[0])
    assert paths == set()
    outside.write_text("through the link\n")
    assert watch.since(cursor)[1] == {"src/app.py"}


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


async def test_events_on_tracked_files_need_no_listing_and_others_are_listed_by_git(project: Path,
                                                                                  git_ran: list[str]) -> None:
    tracker = ChangeTracker(project, SESSION)
    cps = tracker.checkpoints
    assert cps is not None
    cps.max_file_bytes = 1024
    (project / "kept.dat").write_text("tracked, then ignored\n")
    await cps.snapshot()
    with open(project / ".gitignore", "a") as rules:
        rules.write("*.dat\n")  # a full scan follows (a .gitignore event): the tracked file stays checkpointed
    await cps.snapshot()

    async def step(act: Callable[[], object]) -> list[tuple[str, str]]:
        before = await cps.snapshot()
        git_ran.clear()
        act()
        return sorted((c.path, c.status) for c in await cps.changes(before))

    # Tracked files written, deleted, made a symlink, grown past the cap: their lstat says all, no ls-files.
    assert await step(lambda: (project / "src" / "app.py").write_text("new\n")) == [("src/app.py", "modified")]
    assert git_ran == ["update-index", "write-tree"]
    assert await step(lambda: (project / "kept.dat").write_text("ignored now, still ours\n")) == [
        ("kept.dat", "modified")]  # as `ls-files -m` has it: a tracked file is listed whether or not ignored
    assert await step(lambda: (project / "README.md").unlink()) == [("README.md", "deleted")]
    assert git_ran == ["update-index", "write-tree"]
    assert await step(lambda: ((project / "kept.dat").unlink(), (project / "kept.dat").symlink_to("src"))) == [
        ("kept.dat", "modified")]
    big = await step(lambda: (project / "src" / "app.py").write_bytes(b"y" * 4096))
    assert big == [("src/app.py", "deleted")] and git_ran == ["update-index", "write-tree"]
    # A new file (git judges the ignore rules) and a tracked file made a dir: git lists them.
    assert await step(lambda: ((project / "n.log").write_text("ignored\n"), (project / "n.txt").write_text("n\n"))) == [
        ("n.txt", "added")]
    assert git_ran[0] == "ls-files"
    assert await step(lambda: ((project / "n.txt").unlink(), (project / "n.txt").mkdir(),
                               (project / "n.txt" / "in").write_text("in\n"))) == [
        ("n.txt", "deleted"), ("n.txt/in", "added")]
    assert git_ran[0] == "ls-files"
    # ollie's own write (a temporary file renamed over the tracked one): the gone temporary file needs no listing.
    assert await step(lambda: beneath.write_bytes_sync(project, "kept.dat", b"atomic\n")) == [("kept.dat", "modified")]
    assert git_ran == ["update-index", "write-tree"]
    # A tracked dir moved away (one event, for the dir): git lists what went with it.
    (project / "pkg").mkdir()
    (project / "pkg" / "m.py").write_text("m\n")
    assert await step(lambda: (project / "pkg").rename(project.parent / "moved-out")) == [("pkg/m.py", "deleted")]
    assert git_ran[0] == "ls-files"
