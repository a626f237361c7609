"""Session temp dirs: owned by the live process that has the session open, swept once that process is gone."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ollie.tools.execute.sessiondirs import OWNER_LOCK, UNOWNED_GRACE_S, SessionDirs, sweep_stale

# A separate process opens session `argv[1]`'s dirs, says so, and keeps them until its stdin closes.
OWNER = """
import sys
from ollie.tools.execute.sessiondirs import SessionDirs
SessionDirs.for_session(sys.argv[1]).create()
print("ready", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's private runtime tmp root ($TMPDIR/ollie-UID), the egress proxy's socket root too (too deep for a
    socket's path, it would be the machine's /tmp/ollie-UID: other tests' dirs, swept by this one's sweep)."""
    from ollie import paths

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(paths, "runtime_socket_dir", paths.runtime_tmp_dir)
    return tmp_path / f"ollie-{os.geteuid()}"


def _owner(session_id: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", OWNER, session_id], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def test_dirs_of_a_process_that_died_are_swept_and_a_live_ones_kept(root: Path) -> None:
    dead = _owner("dead-session")
    dead.kill()  # no clean close: what a crash or kill -9 leaves behind
    dead.wait()
    live = _owner("live-session")
    try:
        assert (root / "dead-session" / OWNER_LOCK).exists() and (root / "live-session").is_dir()
        swept = sweep_stale()
        assert swept == [root / "dead-session"]
        assert not (root / "dead-session").exists()
        assert (root / "live-session" / "tmp").is_dir(), "another live process's session stays"
    finally:
        assert live.stdin is not None
        live.stdin.close()
        live.wait()
    assert sweep_stale() == [root / "live-session"], "once its process ends, it is stale too"


def test_this_process_sessions_are_kept_until_closed(root: Path) -> None:
    mine = SessionDirs.for_session("mine")
    mine.create()
    assert sweep_stale() == [] and mine.tmp.is_dir()
    mine.remove()
    assert not mine.root.exists()
    mine.create()  # a session opened again owns its dirs again
    assert sweep_stale() == [] and mine.tmp.is_dir()
    mine.remove()


def test_unowned_dirs_go_only_once_old(root: Path) -> None:
    root.mkdir(parents=True)
    fresh, old = root / "cmd-fresh", root / "from-an-older-ollie"
    fresh.mkdir()
    old.mkdir()
    (old / "left.txt").write_text("x")
    past = time.time() - UNOWNED_GRACE_S - 60
    os.utime(old, (past, past))
    assert sweep_stale() == [old]
    assert fresh.is_dir() and not old.exists()


async def test_a_new_session_sweeps_what_a_dead_process_left(root: Path, tmp_path: Path) -> None:
    from ollie.agent.core import Core

    dead = _owner("crashed-session")
    dead.kill()
    dead.wait()
    live = _owner("other-daemon-session")
    work = tmp_path / "work"
    work.mkdir()
    core = await Core.create(cwd=work, sessions_dir=tmp_path / "sessions", env={"OLLIE_BACKEND": "ollama"})
    try:
        assert not (root / "crashed-session").exists()
        assert (root / "other-daemon-session").is_dir()
    finally:
        await core.close()
        assert live.stdin is not None
        live.stdin.close()
        live.wait()


def test_a_session_resumed_while_a_sweep_removes_its_stale_dirs_gets_whole_dirs(root: Path) -> None:
    """A daemon resumes a session whose dead owner left its dirs while a sweep (its own, or another daemon's)
    removes them: the resume gets complete dirs it owns, never a FileNotFoundError or a half-deleted root."""
    import threading

    stop = threading.Event()
    root.mkdir(mode=0o700, parents=True, exist_ok=True)

    def sweeping() -> None:
        while not stop.is_set():
            sweep_stale()

    sweeper = threading.Thread(target=sweeping)
    sweeper.start()
    try:
        for n in range(60):
            dirs = SessionDirs.for_session(f"resumed-{n}")
            # What a killed daemon left (an owner lock nobody holds), put in place in one step.
            left = root.parent / f"left-{n}"  # built outside the swept root, then moved in
            (left / "tmp").mkdir(parents=True)
            (left / OWNER_LOCK).touch()
            left.rename(dirs.root)
            dirs.create()
            time.sleep(0.002)  # the sweeper passes again: an owned root stays
            assert dirs.tmp.is_dir() and dirs.scratch.is_dir() and dirs.private.is_dir(), n
            assert (dirs.root / OWNER_LOCK).exists(), n
            dirs.remove()
    finally:
        stop.set()
        sweeper.join()


def test_a_root_a_sweep_removes_as_it_is_made_is_made_again(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep removes a resumed session's stale root just after `mkdir` found it there and before pathlib saw it was
    a directory (CI: FileExistsError from the resume): it is made again. Something that is no directory there is
    said, never looped on."""
    dirs = SessionDirs.for_session("resumed")
    (dirs.root / "tmp").mkdir(parents=True)
    real_is_dir = Path.is_dir

    def swept_meanwhile(path: Path) -> bool:
        if path == dirs.root and (path / "tmp").exists():
            (path / "tmp").rmdir()
            path.rmdir()  # what another daemon's sweep does between the two looks
        return real_is_dir(path)

    monkeypatch.setattr(Path, "is_dir", swept_meanwhile)
    dirs.create()
    assert (dirs.root / OWNER_LOCK).exists() and dirs.tmp.is_dir()
    dirs.remove()
    monkeypatch.undo()

    blocked = SessionDirs.for_session("blocked")
    blocked.root.parent.mkdir(parents=True, exist_ok=True)
    blocked.root.write_text("not a directory")
    with pytest.raises(FileExistsError):
        blocked.create()


DEEP = "import os\nfor _ in range(1500):\n    os.mkdir('d')\n    os.chdir('d')\n"


def test_a_tree_deeper_than_python_recurses_is_swept(root: Path) -> None:
    # Tool code may make one in its TMPDIR: shutil.rmtree raised RecursionError (not an OSError, so not ignored),
    # and every later session's start, which sweeps first, failed with it.
    left = root / "crashed-session"
    (left / "tmp").mkdir(parents=True)
    subprocess.run([sys.executable, "-c", DEEP], cwd=left / "tmp", check=True)
    try:
        assert sweep_stale(now=time.time() + UNOWNED_GRACE_S + 60) == [left]
        assert not left.exists() and not list(root.glob("crashed-session*"))
    finally:  # never left for pytest's recursive cleanup, if this fails
        subprocess.run(["rm", "-rf", str(root)], check=False)


def test_a_call_remakes_what_went_since_the_first_made_the_dirs(root: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Later calls only check the session's dirs: one removed, loosened or no longer locked is made again."""
    from ollie.tools.execute.runner import Runner, memory_dir, plan_file

    monkeypatch.setenv("OLLIE_DATA_DIR", str(tmp_path / "data"))
    work = tmp_path / "work"
    work.mkdir()
    runner = Runner(session_id="checked", cwd=work, lock_dir=SessionDirs.for_session("checked").root)
    dirs = runner.dirs
    runner.prepare_dirs()
    assert dirs.ready()
    memory_dir(work).rmdir()
    plan_file("checked").parent.rmdir()
    runner.prepare_dirs()
    assert memory_dir(work).is_dir() and plan_file("checked").parent.is_dir()
    dirs.tmp.rmdir()
    runner.prepare_dirs()
    assert dirs.tmp.is_dir()
    dirs.scratch.chmod(0o755)
    runner.prepare_dirs()
    assert dirs.scratch.stat().st_mode & 0o777 == 0o700
    dirs.release()
    assert not dirs.ready()
    runner.prepare_dirs()
    assert sweep_stale() == [] and dirs.ready(), "the owner lock is held again"
    dirs.remove()


def test_a_workspace_re_pointed_has_its_own_notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ollie.tools.execute.runner import memory_dir

    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    link = tmp_path / "current"
    link.symlink_to("one")
    assert memory_dir(link).name.startswith("one-") and memory_dir(link) == memory_dir(link)
    link.unlink()
    link.symlink_to("two")
    assert memory_dir(link).name.startswith("two-")
    monkeypatch.setenv("OLLIE_DATA_DIR", str(tmp_path / "elsewhere"))
    assert memory_dir(link).parent == tmp_path / "elsewhere" / "memory"
