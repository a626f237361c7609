"""The turn log's refs written in-process are the refs git writes, and git writes them whenever that is not safe."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ollie.workspace.checkpoints import Checkpoints
from ollie.workspace.refs import present_refs, turn_ref, write
from ollie.workspace.shadowgit import git_env

SESSION = "1700000000000000000-abcdef"


def _git(cps: Checkpoints, *args: str) -> str:
    return subprocess.run(["git", *args], env=git_env(cps.git.git_dir, cps.root), cwd=cps.root, check=True,
                          capture_output=True, text=True).stdout


async def test_a_turn_is_logged_without_git_and_git_reads_it(project: Path, git_ran: list[str]) -> None:
    cps = Checkpoints(project)
    before = await cps.snapshot()
    (project / "new.txt").write_text("new\n")
    after = await cps.snapshot()
    git_ran.clear()
    await cps.record_turns([(SESSION, 1, before), (SESSION + "-after", 1, after), ("odd id/é", 2, after)])
    assert git_ran == []  # a session id that is not ref-safe too (hex-encoded)
    await cps.record_turns([(SESSION, 1, after), (SESSION, 2, before)])  # an update, and a new ref
    assert git_ran == []
    refs = _git(cps, "for-each-ref", "--format=%(refname) %(objectname)", "refs/ollie/")
    assert f"{turn_ref(SESSION, 1)} {after}" in refs and f"{turn_ref(SESSION, 2)} {before}" in refs
    assert f"{turn_ref(SESSION + '-after', 1)} {after}" in refs
    assert [t.checkpoint for t in await cps.list_turns(SESSION)] == [after, before]
    assert [t.checkpoint for t in await cps.list_turns("odd id/é")] == [after]
    assert not list(cps.git.git_dir.rglob("*.lock"))
    _git(cps, "fsck", "--no-dangling")  # the refs are well-formed where git checks them


async def test_a_held_lock_packed_refs_or_an_unknown_object_go_to_git(project: Path, git_ran: list[str]) -> None:
    cps = Checkpoints(project)
    tree = await cps.snapshot()
    await cps.record_turns([(SESSION, 1, tree)])
    ref = cps.git.git_dir / turn_ref(SESSION, 2)
    held = ref.with_name(ref.name + ".lock")
    held.write_text("another process's\n")
    # A lock another git holds: nothing written here, nothing of its lock touched (git then waits for it).
    assert not write(cps.git.git_dir, [(turn_ref(SESSION, 3), tree), (turn_ref(SESSION, 2), tree)])
    assert held.read_text() == "another process's\n" and not ref.exists()
    assert not (cps.git.git_dir / turn_ref(SESSION, 3)).exists()
    assert not list(cps.git.git_dir.rglob("00000003*"))
    held.unlink()
    assert not write(cps.git.git_dir, [(turn_ref(SESSION, 2), "f" * 40)])  # no such object: git refuses it
    assert not write(cps.git.git_dir, [("refs/heads/main", tree)])  # only the turn log's own refs
    _git(cps, "pack-refs", "--all")
    git_ran.clear()
    await cps.record_turns([(SESSION, 2, tree)])
    assert git_ran == ["update-ref"]
    assert [t.turn for t in await cps.list_turns(SESSION)] == [1, 2]


async def test_a_lock_left_by_a_kill_between_lock_and_rename_does_not_block_that_turn_for_good(project: Path) -> None:
    # git's own update-ref outlives a kill -9 of ollie and renames its lock; the in-process write does not.
    cps = Checkpoints(project)
    tree = await cps.snapshot()
    ref = cps.git.git_dir / turn_ref(SESSION, 4)
    ref.parent.mkdir(parents=True)
    lock = ref.with_name(ref.name + ".lock")
    lock.write_text("")
    os.utime(lock, (1, 1))  # long ago
    await cps.record_turns([(SESSION, 4, tree)])
    assert [(t.turn, t.checkpoint) for t in await cps.list_turns(SESSION)] == [(4, tree)] and not lock.exists()
    lock.write_text("")  # a fresh one: another process writing it now, which git waits for and reports
    assert not write(cps.git.git_dir, [(turn_ref(SESSION, 4), tree)]) and lock.exists()


async def test_present_refs_sees_a_planted_symlink_without_following_it(project: Path, tmp_path: Path) -> None:
    # The state dir may lie inside a workspace (one opened at $HOME): what is there is read through ollie.beneath.
    cps = Checkpoints(project)
    tree = await cps.snapshot()
    await cps.record_turns([(SESSION, 1, tree)])
    assert present_refs(project, [turn_ref(SESSION, 1), turn_ref(SESSION, 2)]) == [turn_ref(SESSION, 1)]
    # A dangling symlink where a ref goes: Path.exists followed it and found nothing; it is there, for git to judge.
    (cps.git.git_dir / turn_ref(SESSION, 2)).symlink_to(tmp_path / "nowhere")
    # A symlinked dir on the way: not walked through, left to git too.
    outside = tmp_path / "outside"
    outside.mkdir()
    (cps.git.git_dir / "refs" / "ollie" / "sessions" / "elsewhere").symlink_to(outside)
    refs = [turn_ref(SESSION, 2), turn_ref(SESSION, 3), turn_ref("elsewhere", 1)]
    assert present_refs(project, refs) == [turn_ref(SESSION, 2), turn_ref("elsewhere", 1)]
    assert present_refs(tmp_path / "never-snapshotted", refs) == []
