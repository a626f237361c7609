"""Snapshot reuse: the tracker's rules (turn begin → first step, step → next step, last step → turn end) and
the checkpoint's tree cache, each with the change that must still be attributed right."""

from __future__ import annotations

from pathlib import Path

from ollie.agent.changes import ChangeTracker
from ollie.workspace.checkpoints import Checkpoints
from ollie.workspace.types import FileChange

SESSION = "1700000000000000000-abcdef"


def _paths(changes: list[FileChange]) -> list[str]:
    return sorted(c.path for c in changes)


async def test_the_turn_begin_snapshot_is_the_first_steps_before_unless_something_ran(project: Path) -> None:
    tracker = ChangeTracker(project, SESSION)
    await tracker.begin_turn(1)
    assert tracker.turn_begin is None  # lazy: taken at the first step that may write
    begin = await tracker.before_step()
    assert begin is not None and tracker.turn_begin == begin and await tracker.before_step() == begin  # one scan
    # Nothing the engine ran can explain an edit here (the user's, while the model streamed): the step gets it.
    (project / "README.md").write_text("# user\n")
    token = await tracker.before_step()
    (project / "src" / "app.py").write_text("step\n")
    assert _paths((await tracker.after_step(token))[1].changes) == ["README.md", "src/app.py"]

    await tracker.end_turn()
    await tracker.begin_turn(2)
    (project / "README.md").write_text("# hook\n")
    tracker.touched()  # a hook ran (TurnHost.run_hook says so): its write is not the step's
    token = await tracker.before_step()
    (project / "src" / "app.py").write_text("step 2\n")
    assert _paths((await tracker.after_step(token))[1].changes) == ["src/app.py"]


async def test_a_steps_after_is_the_next_steps_before_and_a_change_between_stays_out(project: Path) -> None:
    tracker = ChangeTracker(project, SESSION)
    await tracker.begin_turn(1)
    first = await tracker.before_step()
    (project / "a.txt").write_text("one\n")
    assert _paths((await tracker.after_step(first))[1].changes) == ["a.txt"]
    (project / "hooked.txt").write_text("by a postTool hook\n")
    tracker.touched()
    second = await tracker.before_step()
    assert second != first  # a new snapshot: it already holds hooked.txt
    (project / "b.txt").write_text("two\n")
    assert _paths((await tracker.after_step(second))[1].changes) == ["b.txt"]
    # With nothing in between, the second step's after is the third step's before.
    third = await tracker.before_step()
    (project / "c.txt").write_text("three\n")
    assert _paths((await tracker.after_step(third))[1].changes) == ["c.txt"]


async def test_the_turn_end_is_the_last_steps_after_unless_something_ran(project: Path) -> None:
    tracker = ChangeTracker(project, SESSION)
    assert tracker.checkpoints is not None
    await tracker.begin_turn(1)
    token = await tracker.before_step()
    (project / "a.txt").write_text("one\n")
    await tracker.after_step(token)
    # The user edits while the model writes its last reply: not the turn's (the turn ended at its last step).
    (project / "README.md").write_text("# the user\n")
    begin, end = await tracker.end_turn()
    assert begin is not None and begin == token and end is not None
    assert _paths(await tracker.checkpoints.changes(begin, end)) == ["a.txt"]

    await tracker.begin_turn(2)
    token = await tracker.before_step()
    (project / "b.txt").write_text("two\n")
    await tracker.after_step(token)
    (project / "post.txt").write_text("a hook wrote this\n")
    tracker.touched()
    begin, end = await tracker.end_turn()
    assert begin is not None and end is not None
    assert _paths(await tracker.checkpoints.changes(begin, end)) == ["b.txt", "post.txt"]


async def test_the_next_turn_always_scans_so_edits_between_turns_are_nobodys(project: Path) -> None:
    tracker = ChangeTracker(project, SESSION)
    await tracker.begin_turn(1)
    token = await tracker.before_step()
    (project / "a.txt").write_text("one\n")
    await tracker.after_step(token)
    await tracker.end_turn()
    (project / "README.md").write_text("# the user, between turns\n")
    await tracker.begin_turn(2)
    token = await tracker.before_step()
    (project / "b.txt").write_text("two\n")
    assert _paths((await tracker.after_step(token))[1].changes) == ["b.txt"]


async def test_the_tree_cache_follows_an_index_another_process_rewrote(project: Path) -> None:
    ours, theirs = Checkpoints(project), Checkpoints(project)  # two ollies on one CWD share the shadow index
    first = await ours.snapshot()
    assert await ours.snapshot() == first  # nothing to update: the cached tree
    (project / "README.md").write_text("# changed\n")
    second = await theirs.snapshot()
    assert second != first
    # Ours finds nothing to update (the index is stat-fresh) but must not answer its stale cached tree.
    assert await ours.snapshot() == second
    assert _paths(await ours.changes(first, second)) == ["README.md"]


async def test_a_turn_that_runs_nothing_that_may_write_takes_no_snapshot(project: Path, monkeypatch) -> None:
    tracker = ChangeTracker(project, SESSION)
    assert tracker.checkpoints is not None
    scans: list[int] = []
    snapshot = tracker.checkpoints.snapshot

    async def counted() -> str:
        scans.append(1)
        return await snapshot()

    monkeypatch.setattr(tracker.checkpoints, "snapshot", counted)
    await tracker.begin_turn(1)
    assert await tracker.end_turn() == (None, None) and scans == []  # a read-only turn: no scan, nothing to log
    # A hook may write: the turn's checkpoint is taken before it runs, so what it writes is the turn's.
    await tracker.begin_turn(2)
    await tracker.before_hook()
    (project / "hooked.txt").write_text("by a preTurn hook\n")
    begin, end = await tracker.end_turn()
    assert begin is not None and end is not None and len(scans) == 2
    assert _paths(await tracker.checkpoints.changes(begin, end)) == ["hooked.txt"]
