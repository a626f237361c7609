"""The in-process tree diff and blob reads of the shadow's loose objects agree with git, and give way to it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ollie.workspace import objects
from ollie.workspace.checkpoints import Checkpoints
from ollie.workspace.shadowgit import git_env


def _every_kind_of_change(root: Path) -> None:
    """Adds, deletes, edits, a mode change, a symlink, file <-> dir swaps and names that sort around a dir's."""
    (root / "README.md").unlink()
    (root / "src" / "app.py").write_text("changed\n")
    (root / "src" / "new.py").write_text("new\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(root / "run.sh", 0o755)
    (root / "link").symlink_to("src/app.py")
    (root / "a.txt").write_text("a\n")
    (root / "a").mkdir()
    (root / "a" / "inner.txt").write_text("inner\n")
    (root / "a-b").write_text("dash\n")
    (root / "deep" / "er").mkdir(parents=True)
    (root / "deep" / "er" / "file.bin").write_bytes(b"\0binary")


def _shadow_git(cps: Checkpoints, *args: str) -> None:
    subprocess.run(["git", *args], env=git_env(cps.git.git_dir, cps.root), cwd=cps.root, check=True,
                   capture_output=True)


async def test_tree_diff_is_diff_tree_and_a_step_diff_runs_no_git(project: Path, git_ran: list[str]) -> None:
    cps = Checkpoints(project)
    before = await cps.snapshot()
    (project / "src" / "gone.py").write_text("x\n")
    (project / "swap").write_text("a file, then a dir\n")
    mid = await cps.snapshot()
    _every_kind_of_change(project)
    (project / "src" / "gone.py").unlink()
    (project / "swap").unlink()
    (project / "swap").mkdir()
    (project / "swap" / "x").write_text("x\n")
    after = await cps.snapshot()
    for old, new in [(before, after), (after, before), (mid, after), (after, mid), (before, mid)]:
        mine = objects.tree_diff(cps.git.git_dir, old, new)
        assert mine == await cps._git_diff(old, new)
        assert mine
    git_ran.clear()
    changes = {c.path: c for c in await cps.changes(before, after)}
    assert git_ran == []  # the diff and the blobs came from the loose objects
    assert changes["link"].binary and changes["link"].new_data == b"src/app.py" and changes["link"].new_mode == "120000"
    assert changes["run.sh"].new_mode == "100755" and changes["src/app.py"].new_text == "changed\n"
    assert changes["deep/er/file.bin"].binary and changes["README.md"].status == "deleted"


async def test_a_packed_shadow_is_read_by_git(project: Path, git_ran: list[str]) -> None:
    cps = Checkpoints(project)
    before = await cps.snapshot()
    _every_kind_of_change(project)
    after = await cps.snapshot()
    loose = await cps.changes(before, after)
    _shadow_git(cps, "-c", "gc.auto=0", "repack", "-a", "-d", "-q")
    _shadow_git(cps, "prune-packed")
    with pytest.raises(objects.NotLoose):
        objects.tree_diff(cps.git.git_dir, before, after)
    git_ran.clear()
    assert await cps.changes(before, after) == loose
    assert git_ran == ["diff-tree", "cat-file"]
    restored = await cps.restore(before)  # the rewind's own diff goes to git too
    assert {c.path for c in restored.changes} == {c.path for c in loose}
    assert (project / "README.md").read_text() == "# demo\n" and not (project / "link").exists()


def test_only_an_object_id_is_ever_a_path(tmp_path: Path) -> None:
    (tmp_path / "objects" / "..").mkdir(parents=True, exist_ok=True)
    for name in ("../../etc/passwd", "HEAD", "4b825dc", "4B825DC642CB6EB9A060E54BF8D69288FBEE4904"):
        with pytest.raises(objects.NotLoose):
            objects.read(tmp_path, name, b"tree")
    assert objects.read(tmp_path, objects.EMPTY_TREE, b"tree") == b""
