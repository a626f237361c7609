"""A CWD that is not a project ($HOME, /, a huge tree) is refused fast, with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from ollie.workspace.checkpoints import Checkpoints
from ollie.workspace.errors import CheckpointUnavailable
from ollie.workspace.refs import shadow_dir


async def test_home_and_root_are_refused_fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home" / "me"
    (home / "projects" / "p").mkdir(parents=True)
    (home / "notes.txt").write_text("hi\n")
    monkeypatch.setenv("HOME", str(home))
    for cwd, words in ((home, "home directory"), (tmp_path / "home", "contains the home"), (Path("/"), "root")):
        # Refused by where it is (the reason says so), before any walk: a walk of / would take minutes.
        with pytest.raises(CheckpointUnavailable, match=words) as info:
            await Checkpoints(cwd).snapshot()
        assert info.value.reason
        assert not shadow_dir(cwd).exists()
    await Checkpoints(home / "projects" / "p").snapshot()  # a project under $HOME is fine


async def test_a_tree_over_the_file_limit_is_refused_fast(tmp_path: Path) -> None:
    root = tmp_path / "huge"
    for d in range(20):
        (root / f"d{d}").mkdir(parents=True)
        for f in range(30):
            (root / f"d{d}" / f"f{f}").write_text("")
    # Refused by the count (not by the walk's time budget, whose reason differs), before anything is hashed.
    with pytest.raises(CheckpointUnavailable, match="more than 500 files"):
        await Checkpoints(root, max_files=500).snapshot()
    assert not shadow_dir(root).exists()
    assert await Checkpoints(root, max_files=700).snapshot()


async def test_the_file_limit_is_a_whole_number_from_the_environment_or_says_why_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # OLLIE_CHECKPOINT_MAX_FILES was read as seconds: "2.5" was 2 files, "lots" the default, both without a word.
    root = tmp_path / "p"
    root.mkdir()
    for f in range(3):
        (root / f"f{f}").write_text("")
    for bad in ("2.5", "lots", "-4", "0"):
        monkeypatch.setenv("OLLIE_CHECKPOINT_MAX_FILES", bad)
        with pytest.raises(CheckpointUnavailable) as info:
            await Checkpoints(root).snapshot()
        assert info.value.reason == f"environment variable OLLIE_CHECKPOINT_MAX_FILES={bad!r} is not a whole number above 0"
    monkeypatch.setenv("OLLIE_CHECKPOINT_MAX_FILES", "2")
    with pytest.raises(CheckpointUnavailable, match="more than 2 files"):
        await Checkpoints(root).snapshot()
    monkeypatch.setenv("OLLIE_CHECKPOINT_MAX_FILES", " 3 ")
    assert await Checkpoints(root).snapshot()


async def test_git_counts_again_what_the_cheap_walk_pruned(tmp_path: Path) -> None:
    root = tmp_path / "js"
    (root / "node_modules" / "dep").mkdir(parents=True)
    for f in range(600):
        (root / "node_modules" / "dep" / f"f{f}.js").write_text("")
    with pytest.raises(CheckpointUnavailable, match="more than 500 files not ignored"):
        await Checkpoints(root, max_files=500).snapshot()
    (root / ".gitignore").write_text("node_modules/\n")
    assert await Checkpoints(root, max_files=500).snapshot()


async def test_a_state_dir_inside_the_workspace_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.setenv("OLLIE_STATE_DIR", str(root / ".state"))
    with pytest.raises(CheckpointUnavailable, match="inside the workspace"):
        await Checkpoints(root).snapshot()
    assert not (root / ".state").exists()


async def test_a_walks_refusal_is_remembered_per_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every new session on a huge tree would walk it again (up to 2 s) before its first write step."""
    from ollie.workspace import guard

    root = tmp_path / "huge"
    (root / "d").mkdir(parents=True)
    for f in range(60):
        (root / "d" / f"f{f}").write_text("")
    walks: list[Path] = []
    count = guard._count_files
    monkeypatch.setattr(guard, "_count_files", lambda *args: walks.append(args[0]) or count(*args))
    for _ in range(3):
        with pytest.raises(CheckpointUnavailable, match="more than 50 files"):
            await Checkpoints(root, max_files=50).snapshot()
    assert len(walks) == 1
    assert await Checkpoints(root, max_files=100).snapshot()  # another limit is another question
    monkeypatch.setattr(guard, "REFUSAL_TTL_S", 0.0)  # once the memory is old, the tree is walked again
    with pytest.raises(CheckpointUnavailable):
        await Checkpoints(root, max_files=50).snapshot()
    assert len(walks) == 3
