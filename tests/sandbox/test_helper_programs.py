"""The daemon's own helpers (git, ldd) are never run from where a sandboxed step may write, however late it got there."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ollie import programs
from ollie.sandbox.rules import landlock_abi
from tests.planted import plant


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A fresh lookup state; temp dirs count as trusted PATH entries here (the tests' dirs live in /tmp)."""
    monkeypatch.setattr(programs, "_written", set())
    monkeypatch.setattr(programs, "_noted", set())
    monkeypatch.setattr(programs, "_found", {})
    monkeypatch.setattr(programs, "_writable_roots", lambda: [])
    programs._trusted_entries.cache_clear()
    yield
    programs._trusted_entries.cache_clear()


def helper(directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text("#!/bin/sh\nexit 0\n")
    (directory / name).chmod(0o755)
    return directory / name


@pytest.mark.skipif(landlock_abi() < 1, reason="needs Landlock")
async def test_a_helper_found_before_a_step_could_write_its_dir_is_not_run_after(ws, fresh, monkeypatch) -> None:
    # The user's PATH names ~/src/scripts/bin, which holds a `git` wrapper of theirs; a session's policy then
    # grants ~/src/scripts to its steps (its workspace). The daemon had cached that git for good, for every session.
    scripts = ws.root / "scripts"
    wrapper = helper(scripts / "bin", "git")
    system_git = os.path.realpath(shutil.which("git", path="/usr/bin:/bin") or "")
    monkeypatch.setenv("PATH", f"{scripts / 'bin'}:/usr/bin:/bin")
    assert programs.program("git") == str(wrapper)
    policy = ws.policy('filesystem: {rox: ["/usr", "/bin", "/lib", "/lib64"], ro: ["/etc"], '
                       f'rw: ["{{CWD}}", "{scripts}"]}}\n')
    status, _, err = await ws.run(["/bin/sh", "-c", f"echo 'echo planted' >> {wrapper}"], policy)
    assert status == 0, err
    assert programs.program("git") == system_git
    assert str(scripts) not in programs.trusted_path()  # an elevated step's PATH neither


def test_a_helper_removed_is_found_again_or_named_as_gone(tmp_path: Path, fresh, monkeypatch) -> None:
    first, second = helper(tmp_path / "a", "olliehelper"), helper(tmp_path / "b", "olliehelper")
    monkeypatch.setenv("PATH", f"{tmp_path / 'a'}:{tmp_path / 'b'}")
    assert programs.program("olliehelper") == str(first)
    first.unlink()
    assert programs.program("olliehelper") == str(second)
    second.unlink()
    with pytest.raises(programs.ProgramNotFound, match=f"it was {second}, now gone"):
        programs.program("olliehelper")


def test_when_steps_may_write_every_path_entry_no_helper_and_no_path_is_left(tmp_path: Path, fresh, monkeypatch):
    # A policy granting / (or /usr) writable: the fallback PATH must not bring those dirs back, nor an empty
    # PATH mean the current directory.
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    programs.note_writable(["/"])
    assert programs.trusted_path() == os.devnull
    with pytest.raises(programs.ProgramNotFound):
        programs.program("git")


def test_a_relative_path_entry_is_never_trusted_even_for_a_daemon_started_in_root(tmp_path: Path, fresh, monkeypatch):
    # A desktop launcher starts the daemon in `/`, where `.` and `bin` lead nowhere a step writes; an elevated step
    # runs in its workspace, where `.` is the workspace and a step's planted `git` is the first one found.
    ws, marker = tmp_path / "ws", tmp_path / "ran"
    for place in (ws, ws / "bin"):
        plant(place, "git", marker)
    monkeypatch.chdir("/")
    monkeypatch.setenv("PATH", ".:bin:/usr/bin:/bin")
    assert programs.trusted_path() == programs.trusted(os.environ["PATH"], ws) == "/usr/bin:/bin"
    subprocess.run(["/bin/sh", "-c", "git --version"], cwd=ws, env={"PATH": programs.trusted_path()},
                   capture_output=True, check=True)
    assert not marker.exists()


async def _pid_in(path: Path) -> int:
    """The pid the slow ldd wrote to `path`, once it has."""
    while not (text := path.read_text() if path.exists() else "").endswith("\n"):
        await asyncio.sleep(0.01)
    return int(text)


async def _gone(pid: int) -> None:
    """Return once process `pid` is gone (or a zombie, its kill done)."""
    while True:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return
        except FileNotFoundError:
            return
        await asyncio.sleep(0.01)


async def test_a_slow_ldd_is_bounded_and_killed_with_what_it_started_on_a_cancel(tmp_path: Path, fresh, monkeypatch):
    # Round 35: the daemon's wait for ldd had no limit and its process outlived a cancelled step: a FIFO swapped in
    # for the program once ldd had checked it holds ld.so's open for ever. A slow ldd of the user's own (a trusted
    # dir, not the workspace) stands in, its ld.so a `sleep` it starts.
    from ollie.sandbox import ldd

    pids = tmp_path / "pids"
    stand_in = helper(tmp_path / "trusted", "ldd")
    stand_in.write_text(f"#!/bin/sh\nsleep 1000 &\necho $! > {pids}\nwait\n")
    monkeypatch.setenv("PATH", f"{stand_in.parent}:/usr/bin:/bin")
    monkeypatch.setattr(ldd, "_cache", {})
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {"PATH": "/usr/bin:/bin"}
    task = asyncio.create_task(ldd.library_rules("true", env, workspace))
    loader = await asyncio.wait_for(_pid_in(pids), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(_gone(loader), 30)
    # Unanswered in time: the program alone is granted (it fails to load), nothing is kept, the loader is killed.
    pids.unlink()
    monkeypatch.setattr(ldd, "LIMIT_S", 0.2)
    true = os.path.realpath(shutil.which("true", path=env["PATH"]) or "")
    rules = await asyncio.wait_for(ldd.library_rules("true", env, workspace), 30)
    assert [path for path, _ in rules] == [true] and not ldd._cache
    await asyncio.wait_for(_gone(await _pid_in(pids)), 30)
