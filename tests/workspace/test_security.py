"""The workspace is hostile: ollie's git never touches the user's .git, and runs none of its (or the user's) code."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from ollie import paths
from ollie.workspace.checkpoints import Checkpoints
from ollie.workspace.review import undo

HOOKS = ("pre-commit", "post-commit", "post-checkout", "post-index-change", "reference-transaction",
         "pre-auto-gc", "post-rewrite", "fsmonitor-watchman")


def script(path: Path, marker: Path) -> None:
    """An executable that leaves `marker` behind when anything runs it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\ntouch '{marker}'\ncat\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def tree_bytes(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under `root`: its mode and bytes (the byte-exact picture of a .git dir)."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            out[str(path.relative_to(root))] = (path.lstat().st_mode, path.read_bytes())
    return out


@pytest.fixture
def trapped(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project's .git, the user's global git config and the environment, all planted with code to run."""
    markers = tmp_path / "markers"
    markers.mkdir()
    for hook in HOOKS:
        script(project / ".git" / "hooks" / hook, markers / hook)
    script(tmp_path / "evil" / "fsmonitor", markers / "fsmonitor")
    script(tmp_path / "evil" / "filter", markers / "filter")
    script(tmp_path / "evil" / "textconv", markers / "textconv")
    evil = (f"[core]\n\tfsmonitor = {tmp_path}/evil/fsmonitor\n\thooksPath = {project}/.git/hooks\n"
            f"[filter \"evil\"]\n\tclean = {tmp_path}/evil/filter\n\tsmudge = {tmp_path}/evil/filter\n"
            f"\trequired = true\n[diff \"evil\"]\n\ttextconv = {tmp_path}/evil/textconv\n")
    with (project / ".git" / "config").open("a") as handle:
        handle.write(evil)
    (project / ".gitattributes").write_text("* filter=evil diff=evil\n")
    home = tmp_path / "userhome"
    home.mkdir()
    (home / ".gitconfig").write_text(evil)
    (Path(os.environ["XDG_CONFIG_HOME"]) / "git").mkdir()
    (Path(os.environ["XDG_CONFIG_HOME"]) / "git" / "config").write_text(evil)
    (Path(os.environ["XDG_CONFIG_HOME"]) / "git" / "attributes").write_text("* filter=evil\n")
    monkeypatch.setenv("HOME", str(home))
    # A caller's git environment must not leak in either.
    monkeypatch.setenv("GIT_DIR", str(project / ".git"))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", f"{tmp_path}/evil/fsmonitor")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'filter.evil.clean'='{tmp_path}/evil/filter'")
    return markers


async def test_user_git_untouched_and_nothing_of_theirs_runs(project: Path, trapped: Path) -> None:
    git_before = tree_bytes(project / ".git")
    cps = Checkpoints(project)
    start = await cps.record_turn("s", 1, await cps.snapshot())
    (project / "src" / "app.py").write_text("changed\n")
    (project / "new.txt").write_text("new\n")
    (project / "README.md").unlink()
    changes = {c.path: c for c in await cps.changes(start.checkpoint)}
    # Content is byte-exact: no clean filter rewrote it on the way in.
    assert changes["src/app.py"].new_text == "changed\n" and changes["new.txt"].new_text == "new\n"
    restored = await cps.restore(start.checkpoint)
    assert (project / "README.md").read_text() == "# demo\n"
    await cps.restore(restored.undo_checkpoint)
    assert await undo(project, "new.txt", None, changes["new.txt"]) is None
    assert sorted(p.name for p in trapped.iterdir()) == []
    assert tree_bytes(project / ".git") == git_before
    assert hashlib.sha256((project / ".gitattributes").read_bytes()).hexdigest()  # still the user's file


async def _snapshotted(tmp_path: Path) -> tuple[Path, Checkpoints]:
    """A workspace `ws` with one file, and its checkpoints after a first snapshot."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x\n")
    cps = Checkpoints(ws)
    await cps.snapshot()
    return ws, cps


def _plant(ws: Path, where: str, outside: Path) -> None:
    """A FIFO where git opens a file as it walks the work tree (its open(2) waits for a writer for ever)."""
    if where == "gitignore":
        os.mkfifo(ws / ".gitignore")
    elif where == "nested gitignore":
        (ws / "deep" / "er").mkdir(parents=True)
        os.mkfifo(ws / "deep" / "er" / ".gitignore")
    elif where == "gitattributes":  # read for each file hashed in its directory
        (ws / "sub").mkdir()
        (ws / "sub" / "f.txt").write_text("f\n")
        os.mkfifo(ws / "sub" / ".gitattributes")
    elif where == "nested repository":  # is `sub/` a repository? git reads its .git/HEAD
        for name in ("objects", "refs"):
            (ws / "sub" / ".git" / name).mkdir(parents=True)
        os.mkfifo(ws / "sub" / ".git" / "HEAD")
    elif where == "gitfile":  # a `.git` file sends git to a directory outside (a session's TMPDIR)
        for name in ("objects", "refs"):
            (outside / name).mkdir(parents=True)
        os.mkfifo(outside / "HEAD")
        (ws / "sub").mkdir()
        (ws / "sub" / ".git").write_text(f"gitdir: {outside}\n")


@pytest.mark.parametrize("where", ["gitignore", "nested gitignore", "gitattributes", "nested repository", "gitfile"])
async def test_a_fifo_where_git_reads_stops_checkpoints_with_a_note_never_a_hang(tmp_path: Path, where: str) -> None:
    # Planted by tool code between two snapshots: git blocked in open(2) until its 300 s timeout, per call.
    import asyncio

    from ollie.workspace.errors import CheckpointUnavailable
    from ollie.workspace.ignored import ignored

    ws, cps = await _snapshotted(tmp_path)
    _plant(ws, where, tmp_path / "elsewhere")
    with pytest.raises(CheckpointUnavailable, match="FIFO") as caught:
        await asyncio.wait_for(cps.snapshot(), 60)  # the bound only keeps a broken guard from hanging the suite
    if where != "gitfile":
        assert str(ws) in caught.value.reason  # names the file (the gitfile's FIFO is outside: named as it is)
    # The ignored-files reader (a turn's listing) hides nothing, and goes on.
    assert await asyncio.wait_for(ignored(cps.git, ws, ["a.py", "sub/f.txt"]), 60) == set()


@pytest.mark.parametrize("device", ["/dev/ptmx", "/dev/zero", "/dev/tty"])
async def test_a_nested_repository_linking_git_to_a_device_never_holds_it(tmp_path: Path, device: str) -> None:
    # git follows a nested repository's `commondir` symlink and reads what it names to the end: /dev/ptmx never
    # ends (a 300 s hang per git call), /dev/zero grows git's memory, /dev/tty read the user's terminal.
    import asyncio

    from ollie.workspace.errors import WorkspaceError

    ws, cps = await _snapshotted(tmp_path)
    meta = ws / "sub" / ".git"
    for name in ("objects", "refs"):
        (meta / name).mkdir(parents=True)
    (meta / "HEAD").write_text("ref: refs/heads/main\n")
    (meta / "commondir").symlink_to(device)
    # git has no terminal (its own session): /dev/tty fails to open (else it is seen open and stopped too); the
    # others are seen open and stopped.
    with pytest.raises(WorkspaceError, match=f"led to read {device}|failed to read sub/.git/commondir"):
        await asyncio.wait_for(cps.snapshot(), 60)


async def test_a_huge_gitignore_stops_the_shadow_git_at_its_memory_cap(tmp_path: Path, monkeypatch) -> None:
    # git 2.39 reads a `.gitignore` whole: a sparse one up to the step's file size limit (8G) became its memory.
    import asyncio

    from ollie.workspace import gitwatch
    from ollie.workspace.errors import CheckpointUnavailable

    monkeypatch.setattr(gitwatch, "MEMORY_CAP", 48 << 20)
    ws, cps = await _snapshotted(tmp_path)
    with open(ws / ".gitignore", "wb") as huge:
        huge.truncate(1 << 30)
    with pytest.raises(CheckpointUnavailable, match="MiB"):
        await asyncio.wait_for(cps.snapshot(), 60)


async def test_where_gits_memory_cannot_be_read_the_kernels_wait_still_says_fifo(tmp_path: Path, monkeypatch) -> None:
    # ptrace restricted (Yama 2, a container): no path from /proc/<pid>/mem, but /proc/<pid>/wchan shows the wait.
    import asyncio

    from ollie.workspace import gitwatch
    from ollie.workspace.errors import CheckpointUnavailable

    real_readlink = os.readlink

    def no_proc_cwd(path, *args, **kwargs):
        if str(path).startswith("/proc/"):
            raise PermissionError(1, "Operation not permitted")
        return real_readlink(path, *args, **kwargs)

    monkeypatch.setattr(gitwatch.os, "readlink", no_proc_cwd)
    ws, cps = await _snapshotted(tmp_path)
    os.mkfifo(ws / ".gitignore")
    with pytest.raises(CheckpointUnavailable, match="holds a FIFO where git reads a file: "):
        await asyncio.wait_for(cps.snapshot(), 60)


async def test_checkpoints_refuse_a_state_dir_inside_the_workspace(tmp_path: Path, monkeypatch) -> None:
    # Tool code writes the workspace: it would plant config (a hook, `core.fsmonitor`) in ollie's own git. With the
    # refusal removed, no test failed.
    from ollie.workspace.checkpoints import Checkpoints
    from ollie.workspace.errors import CheckpointUnavailable

    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("OLLIE_STATE_DIR", str(ws / ".ollie"))
    with pytest.raises(CheckpointUnavailable, match="is inside the workspace"):
        await Checkpoints(ws).snapshot()
    assert not (ws / ".ollie" / "checkpoints").exists()


async def test_a_workspaces_gitattributes_never_change_the_bytes_a_rewind_puts_back(tmp_path: Path) -> None:
    # `text` stored a CRLF file with LF and `working-tree-encoding` a UTF-16 one as UTF-8: a rewind wrote those back.
    # With the shadow's lockdown of either left out, no test failed (mutants28).
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".gitattributes").write_text("crlf.txt text\nwide.txt working-tree-encoding=UTF-16\n")
    files = {"crlf.txt": b"one\r\ntwo\r\n", "wide.txt": "wide\n".encode("utf-16")}
    for name, data in files.items():
        (ws / name).write_bytes(data)
    cps = Checkpoints(ws)
    start = await cps.snapshot()
    for name in files:
        (ws / name).write_text("changed\n")
    await cps.restore(start)
    assert {name: (ws / name).read_bytes() for name in files} == files


async def test_the_shadows_an_older_ollie_left_open_to_others_are_made_private(tmp_path: Path) -> None:
    # They hold a copy of every workspace file (a 0600 key too) as a 0444 object; an older ollie made their dir 0755.
    # With the fix of an existing dir dropped, no test failed (mutants28).
    paths.checkpoints_dir().mkdir(mode=0o755, parents=True, exist_ok=True)
    paths.checkpoints_dir().chmod(0o755)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "id_key").write_text("secret\n")
    await Checkpoints(ws).snapshot()
    assert stat.S_IMODE(paths.checkpoints_dir().stat().st_mode) == 0o700
