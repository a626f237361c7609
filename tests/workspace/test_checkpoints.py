"""Snapshots and changes on a real tree, for edits made any way; ignores, the size cap, the turn log."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ollie.workspace.checkpoints import Checkpoints
from ollie.workspace.errors import WorkspaceError
from ollie.workspace.refs import shadow_dir, turn_ref
from ollie.workspace.shadowgit import git_env
from tests.workspace.conftest import changed_since_snapshot, git


async def test_changes_see_every_kind_of_writer(project: Path) -> None:
    cps = Checkpoints(project)
    before = await cps.snapshot()
    subprocess.run(["sed", "-i", "s/^line 5$/LINE FIVE/", "src/app.py"], cwd=project, check=True)
    subprocess.run([sys.executable, "-c", "open('gen.py', 'w').write('print(1)\\n')"], cwd=project, check=True)
    (project / "README.md").unlink()
    (project / "notes.txt").write_text("one\n")
    os.rename(project / "notes.txt", project / "docs.txt")
    (project / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    changes = {c.path: c for c in await cps.changes(before)}
    assert set(changes) == {"src/app.py", "gen.py", "README.md", "docs.txt", "blob.bin"}
    app = changes["src/app.py"]
    assert app.status == "modified" and app.new_text and app.old_text
    assert "LINE FIVE\n" in app.new_text and "line 5\n" in app.old_text
    assert [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in app.hunks] == [(5, 1, 5, 1)]
    assert app.hunks[0].lines == ("-line 5\n", "+LINE FIVE\n")
    assert changes["gen.py"].status == "added" and changes["gen.py"].new_text == "print(1)\n"
    assert changes["README.md"].status == "deleted" and changes["README.md"].old_text == "# demo\n"
    docs = changes["docs.txt"]
    assert (docs.path, docs.status, docs.old_text, docs.new_text) == ("docs.txt", "added", None, "one\n")
    blob = changes["blob.bin"]
    assert blob.binary and blob.new_text is None and blob.hunks == () and blob.new_data == b"\x00\x01\x02binary"
    # A snapshot of an unchanged tree is the same checkpoint, and nothing differs.
    after = await cps.snapshot()
    assert await cps.snapshot() == after and await cps.changes(after) == []


async def test_ignored_and_oversize_files_are_skipped(project: Path) -> None:
    cps = Checkpoints(project, max_file_bytes=1024)
    before = await cps.snapshot()
    (project / "build").mkdir()
    (project / "build" / "out.o").write_text("object\n")
    (project / "run.log").write_text("log\n")
    (project / "big.dat").write_bytes(b"x" * 4096)
    (project / "small.txt").write_text("ok\n")
    assert [c.path for c in await cps.changes(before)] == ["small.txt"]
    # A tracked file that grows past the cap leaves the checkpoints (it is never read whole).
    (project / "small.txt").write_bytes(b"y" * 4096)
    mid = await cps.snapshot()
    assert [(c.path, c.status) for c in await cps.changes(before, mid)] == []
    # A rewind leaves ignored and over-cap files alone.
    restored = await cps.restore(before)
    assert restored.changes == ()
    assert (project / "run.log").exists() and (project / "big.dat").stat().st_size == 4096
    assert (project / "small.txt").stat().st_size == 4096


async def test_shadow_lives_in_state_dir_not_in_the_project(project: Path, tmp_path: Path) -> None:
    cps = Checkpoints(project)
    await cps.snapshot()
    shadow = shadow_dir(project)
    assert (shadow / "HEAD").exists()
    assert str(shadow).startswith(os.environ["XDG_STATE_HOME"])
    # The same tree through a symlink shares the shadow (keyed by the real path).
    link = tmp_path / "link"
    link.symlink_to(project)
    assert shadow_dir(link) == shadow
    assert sorted(p.name for p in project.iterdir()) == [".git", ".gitignore", "README.md", "src"]


async def test_turn_log_survives_a_fresh_object_and_a_second_process(project: Path) -> None:
    cps = Checkpoints(project)
    t1 = await cps.record_turn("sess-1", 1, await cps.snapshot())
    (project / "README.md").write_text("# changed\n")
    t2 = await cps.record_turn("sess-1", 2, await cps.snapshot())
    await cps.record_turn("other session/odd id", 1, await cps.snapshot())
    assert t1.checkpoint != t2.checkpoint
    fresh = Checkpoints(project)
    assert [(t.turn, t.checkpoint) for t in await fresh.list_turns("sess-1")] == [(1, t1.checkpoint),
                                                                                 (2, t2.checkpoint)]
    assert [t.turn for t in await fresh.list_turns("other session/odd id")] == [1]
    # Another process rewinds to before turn 2... of turn 1, finding the log on disk.
    script = ("import asyncio, sys\nfrom ollie.workspace.checkpoints import Checkpoints\n"
              "async def main():\n    c = Checkpoints(sys.argv[1])\n    turns = await c.list_turns('sess-1')\n"
              "    r = await c.restore(turns[0].checkpoint)\n    print(r.undo_checkpoint)\n"
              "asyncio.run(main())\n")
    out = subprocess.run([sys.executable, "-c", script, str(project)], check=True, capture_output=True, text=True)
    assert (project / "README.md").read_text() == "# demo\n"
    await fresh.restore(out.stdout.strip())
    assert (project / "README.md").read_text() == "# changed\n"


async def test_a_file_rewritten_while_a_snapshot_reads_it_fails_no_snapshot(project: Path) -> None:
    # An editor or a step saving a file truncates it first: git, reading it mid-save, finds it shorter than it
    # looked (a short read, or SIGBUS on its map, which leaves git's index lock behind). The snapshot tries again
    # rather than failing the turn, and no lock stays to fail the next ones.
    cps = Checkpoints(project)
    await cps.snapshot()

    def save_again_and_again() -> None:
        for n in range(100):
            (project / "busy.txt").write_bytes(str(n).encode() * 40_000)  # mapped by git: over 32 KiB
            time.sleep(0.005)  # an editor saving often, not a writer that never lets go

    writer = threading.Thread(target=save_again_and_again)
    writer.start()
    try:
        while writer.is_alive():
            await cps.snapshot()
    finally:
        writer.join()
    final = await cps.snapshot()
    assert await cps.changes(final) == []  # the last save is what the checkpoint holds
    assert not (shadow_dir(project) / "index.lock").exists()


async def test_concurrent_processes_share_the_shadow_and_a_stale_lock_is_cleared(project: Path) -> None:
    cps = Checkpoints(project)
    await cps.snapshot()
    script = ("import asyncio, sys, pathlib\nfrom ollie.workspace.checkpoints import Checkpoints\n"
              "async def main():\n    c = Checkpoints(sys.argv[1])\n    for i in range(15):\n"
              "        pathlib.Path(sys.argv[1], sys.argv[2]).write_text(str(i))\n        await c.snapshot()\n"
              "asyncio.run(main())\n")
    procs = [subprocess.Popen([sys.executable, "-c", script, str(project), f"w{n}.txt"]) for n in range(2)]
    for i in range(15):
        (project / "main.txt").write_text(str(i))
        await cps.snapshot()
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    final = await cps.snapshot()
    assert {c.path for c in await cps.changes(final)} == set()
    lock = shadow_dir(project) / "index.lock"
    lock.write_text("")
    os.utime(lock, (1, 1))  # left by a process that died long ago
    (project / "main.txt").write_text("after a crash")
    [change] = await cps.changes(final)
    assert change.new_text == "after a crash" and not lock.exists()


async def test_rewind_refuses_to_overwrite_a_file_it_does_not_track(project: Path) -> None:
    cps = Checkpoints(project, max_file_bytes=1024)
    (project / "data.txt").write_text("small\n")
    before = await cps.snapshot()
    (project / "data.txt").write_bytes(b"z" * 4096)  # now over the cap: no longer checkpointed
    (project / "README.md").write_text("edited\n")
    with pytest.raises(WorkspaceError, match="cannot rewind"):
        await cps.restore(before)
    assert (project / "data.txt").stat().st_size == 4096 and (project / "README.md").read_text() == "edited\n"


async def test_rewind_restores_a_tracked_directory_replaced_by_a_symlink_and_writes_nothing_outside(
        project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "app.py").write_text("outside\n")
    (project / "src" / "app.py").write_text("mine\n")
    cps = Checkpoints(project)
    before = await cps.snapshot()
    (project / "src" / "app.py").unlink()
    (project / "src").rmdir()
    (project / "src").symlink_to(outside)  # tool code swaps the tracked directory for a symlink
    await cps.restore(before)
    assert not (project / "src").is_symlink()
    assert (project / "src" / "app.py").read_text() == "mine\n"
    assert (outside / "app.py").read_text() == "outside\n" and sorted(os.listdir(outside)) == ["app.py"]
    assert await cps.changes(before) == []


async def test_rewind_refuses_a_write_through_a_directory_swapped_for_a_symlink_during_it(
        project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "src" / "app.py").write_text("mine\n")
    cps = Checkpoints(project)
    before = await cps.snapshot()
    (project / "src" / "app.py").write_text("changed\n")
    changed = await cps.snapshot()
    await cps.restore(before)
    # An untracked symlink where the tracked directory was (as if swapped between listing and writing).
    (project / "src" / "app.py").unlink()
    (project / "src").rmdir()
    (project / "src").symlink_to(outside)
    from ollie.workspace import checkpoints as module
    changes = await cps.changes(await cps.snapshot(), changed)
    src_change = [c for c in changes if c.path == "src/app.py"]
    with pytest.raises(OSError):
        module._apply(Path(os.path.realpath(project)), src_change, {})  # the write alone, as in the race
    assert os.listdir(outside) == []


async def test_build_output_is_told_apart_without_git_as_git_tells_it(tmp_path: Path, monkeypatch) -> None:
    # No project or user excludes: the listing's filter matches BUILD_OUTPUT itself (no git process per step).
    from ollie.workspace.ignored import BUILD_OUTPUT, ignored

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q"], cwd=ws, env=env, check=True)
    paths = ["a.py", "a.pyc", "x/__pycache__/m.cpython-311.pyc", "x/__pycache__/notes.txt", "__pycache__",
             "y.pyd/z.txt", "pkg/mod.pyo", "mypy.py", "__pycache__x/a.txt", "d/a.pyc~"]
    excludes = tmp_path / "excludes"
    excludes.write_text("\n".join(BUILD_OUTPUT) + "\n")
    by_git = subprocess.run(["git", "-c", f"core.excludesFile={excludes}", "check-ignore", "--no-index", "--stdin"],
                            cwd=ws, env=env, input="\n".join(paths) + "\n", capture_output=True,
                            text=True).stdout.split()
    cps = Checkpoints(ws)
    # Bytecode outside `__pycache__` (a sourceless module, which an import runs) is no build output.
    assert await ignored(cps.git, ws, paths) == set(by_git) == {"x/__pycache__/m.cpython-311.pyc",
                                                                "x/__pycache__/notes.txt"}


async def test_a_rewind_brings_a_deleted_file_back_with_the_bits_it_had_at_that_checkpoint(project: Path) -> None:
    """A step made a 0600 secret 0666, a snapshot saw that, then it was deleted: a rewind to the checkpoint before
    the chmod brings it back 0600 (the bits last seen, 0666, came back: any user could then write it); to the one
    after, 0664 (a world-writable bit or setuid a step set is never restored)."""
    secret = project / ".env"
    secret.write_text("KEY=1\n")
    secret.chmod(0o600)
    cps = Checkpoints(project)
    private = await cps.snapshot()
    secret.chmod(0o4666)
    secret.write_text("KEY=2\n")
    shared = await cps.snapshot()
    secret.unlink()
    await cps.snapshot()
    await cps.restore(private)
    assert secret.read_text() == "KEY=1\n" and oct(secret.stat().st_mode & 0o7777) == oct(0o600)
    secret.unlink()
    await Checkpoints(project).restore(shared)  # a fresh object: the record is on disk
    assert secret.read_text() == "KEY=2\n" and oct(secret.stat().st_mode & 0o7777) == oct(0o664)


async def test_the_modes_of_a_checkpoint_go_with_its_last_ref(project: Path) -> None:
    """Deleting the refs of a rewound timeline's turns drops the file modes kept for their checkpoints (they piled up
    in the shadow repository, one file per checkpoint, never removed); a checkpoint another ref names keeps its own,
    and one taken after gets them again."""
    secret = project / ".env"
    cps, kept = await changed_since_snapshot(project, ".env", ("KEY=1\n", 0o600), ("KEY=2\n", 0o640))
    dropped = await cps.snapshot()
    folder = cps.git.git_dir / "ollie-modes"
    await cps.record_turns([("s", 1, kept), ("s", 2, dropped), ("t", 1, kept)])
    await cps.delete_refs([turn_ref("s", 1), turn_ref("s", 2)])
    assert sorted(p.name for p in folder.iterdir() if not p.name.endswith(".json")) == [kept]
    assert len(list(folder.glob("*.json"))) == 1
    assert await cps.snapshot() == dropped  # the same work tree: its checkpoint's modes are kept again
    secret.unlink()
    await cps.restore(dropped)
    assert oct(secret.stat().st_mode & 0o777) == oct(0o640)


@pytest.mark.parametrize("packed", [False, True])
async def test_a_checkpoint_with_edited_files_keeps_their_modes_in_one_index(project: Path, git_ran: list[str],
                                                                            packed: bool) -> None:
    """A step's edits of open buffers are logged with `tree_with`: an executable script keeps 100755 (its step diff
    showed a mode change the step never made), a new file is 100644; all in one index (it took five git processes a
    file), their modes read in-process (by git when the shadow is packed)."""
    script = project / "run.sh"
    script.write_text("echo 1\n")
    script.chmod(0o755)
    (project / "gone.txt").write_text("bye\n")
    cps = Checkpoints(project)
    before = await cps.snapshot()
    if packed:
        subprocess.run(["git", "-c", "gc.auto=0", "repack", "-a", "-d", "-q"], env=git_env(cps.git.git_dir, cps.root),
                       cwd=cps.root, check=True)
        subprocess.run(["git", "prune-packed"], env=git_env(cps.git.git_dir, cps.root), cwd=cps.root, check=True)
    git_ran.clear()
    after = await cps.tree_with(before, {"run.sh": (b"echo 2\n", ""), "new [1].py": (b"x = 1\n", ""),
                                         "sub/a\nb.txt": (b"y\n", "100755"), "gone.txt": (None, "")})
    assert sorted(git_ran) == ["hash-object"] * 3 + ["ls-files"] * packed + ["read-tree", "update-index", "write-tree"]
    assert [e[:4] for e in await cps.diff_entries(before, after)] == [
        ("gone.txt", "D", "100644", "000000"), ("new [1].py", "A", "000000", "100644"),
        ("run.sh", "M", "100755", "100755"), ("sub/a\nb.txt", "A", "000000", "100755")]


async def test_a_rewind_to_an_option_is_refused_and_git_writes_nothing(project: Path, tmp_path: Path) -> None:
    # The id goes to git: `--output=<path>` would write any file. The callers check it too (a rewind backup's), so with
    # this check removed no test failed.
    cps = Checkpoints(project)
    await cps.snapshot()
    written = tmp_path / "written"
    with pytest.raises(WorkspaceError, match="is no checkpoint id"):
        await cps.restore(f"--output={written}")
    assert not written.exists()


@pytest.mark.parametrize("watched", [True, False])
async def test_an_edit_inside_a_nested_repository_is_named_as_no_diff_shows_it(project: Path, monkeypatch,
                                                                              watched: bool) -> None:
    """A nested repository (a vendored one, a submodule's checkout, one a step made) is in no checkpoint: it was named
    only when its own dir changed, so a step's edit of a file already in it (`tools/conftest.py`, which pytest runs)
    or a file written in a folder of its showed in no diff and was never said. Told from the kernel's events, or
    from a scan of the whole tree (no watch: too many dirs, or a step's 300 other files since)."""
    if not watched:
        monkeypatch.setattr("ollie.workspace.treewatch.MAX_DIRS", 0)
    tools = project / "tools"
    (tools / "sub").mkdir(parents=True)
    git(tools, "init", "-q")
    (tools / "conftest.py").write_text("x = 1\n")
    cps = Checkpoints(project)
    await cps.snapshot()
    await cps.snapshot()
    assert cps.left_out == []  # nothing changed
    with (tools / "conftest.py").open("a") as f:
        f.write("import os\n")
    await cps.snapshot()
    assert cps.left_out == ["tools/"]
    (tools / "sub" / "new.py").write_text("y = 2\n")
    await cps.snapshot()
    assert cps.left_out == ["tools/"]
    (tools / "sub" / "__pycache__").mkdir()  # a test run's bytecode: no warning at each run
    (tools / "sub" / "__pycache__" / "new.cpython-311.pyc").write_bytes(b"\0")
    await cps.snapshot()
    assert cps.left_out == []
    (tools / "sub" / "new.py").unlink()
    await cps.snapshot()
    assert cps.left_out == ["tools/"]
    await cps.snapshot()
    assert cps.left_out == []


@pytest.mark.parametrize("watched", [True, False])
async def test_start_files_a_step_writes_where_git_ignores_are_named_once(project: Path, monkeypatch,
                                                                         watched: bool) -> None:
    """A venv's `bin/python` made a link, a `node_modules/.bin` script and `.env` (each run or sourced later, outside any
    sandbox) under `.gitignore` rules are in no checkpoint: named when made or changed, and not again unchanged; a
    package's own files there, and a start file git does not ignore (checkpointed: its diff shows), are not."""
    if not watched:
        monkeypatch.setattr("ollie.workspace.treewatch.MAX_DIRS", 0)
    (project / ".gitignore").write_text(".venv/\nnode_modules/\n.env\n")
    (project / ".venv" / "bin").mkdir(parents=True)
    (project / ".venv" / "bin" / "python").symlink_to("/usr/bin/python3")
    (project / "node_modules" / ".bin").mkdir(parents=True)
    cps = Checkpoints(project)
    await cps.snapshot()
    assert cps.started == []  # the user's own
    (project / ".venv" / "bin" / "python").unlink()
    (project / ".venv" / "bin" / "python").write_text("#!/bin/sh\nexec evil\n")
    (project / "node_modules" / ".bin" / "jest").write_text("#!/bin/sh\n")
    (project / "node_modules" / "jest").mkdir()
    (project / "node_modules" / "jest" / "index.js").write_text("module.exports = 1\n")
    (project / ".env").write_text("NODE_OPTIONS=--require ./evil.js\n")
    (project / ".envrc").write_text("export X=1\n")  # not ignored: checkpointed
    await cps.snapshot()
    assert cps.started == [".env", ".venv/bin/python", "node_modules/.bin/jest"]
    await cps.snapshot()
    assert cps.started == []
    with (project / ".env").open("a") as f:
        f.write("X=2\n")
    await cps.snapshot()
    assert cps.started == [".env"]


@pytest.mark.parametrize("watched", [True, False], ids=["watched", "scanned"])
async def test_start_files_planted_as_a_fifo_a_link_out_or_a_fake_git_are_named_never_opened_or_run(
        project: Path, tmp_path: Path, monkeypatch, watched: bool) -> None:
    """Hostile data for the start-file listing (ignoredstart): a FIFO named `.venv/bin/python` is never opened (an
    open would hang the snapshot; no program runs a FIFO and git lists none, so it is not named); `.venv/lib` made a
    link to a dir outside is never followed (its `.pth` is neither listed nor read); a `git` planted in `.venv/bin`
    ahead on PATH never runs (the shadow git is ollie's), and is named."""
    if not watched:
        monkeypatch.setattr("ollie.workspace.treewatch.MAX_DIRS", 0)
    (project / ".gitignore").write_text(".venv/\n")
    (project / ".venv" / "bin").mkdir(parents=True)
    cps = Checkpoints(project)
    await cps.snapshot()
    outside = tmp_path / "outside" / "python3.11" / "site-packages"
    outside.mkdir(parents=True)
    (outside / "theirs.pth").write_text("import os\n")
    (project / ".venv" / "lib").symlink_to(outside.parent.parent)
    os.mkfifo(project / ".venv" / "bin" / "python")
    ran = tmp_path / "fake-git-ran"
    fake = project / ".venv" / "bin" / "git"
    fake.write_text(f"#!/bin/sh\ntouch {ran}\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{project / '.venv' / 'bin'}:{os.environ['PATH']}")
    await asyncio.wait_for(cps.snapshot(), 60)
    assert cps.started == [".venv/bin/git"], cps.started
    assert not ran.exists()
