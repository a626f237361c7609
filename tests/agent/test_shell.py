"""The user's `!cmd` runner: real `sh` through the tool runner's spawn, unsandboxed, its group killed at the end."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from ollie.agent.shell import run_shell
from tests.procs import eventually, outliving, timed_out_once_begun


async def _gone(pid: int, within: float = 15.0) -> bool:
    return not await outliving([pid], within)


async def _pid_in(path: Path) -> int:
    await eventually(lambda: path.exists() and path.read_text().strip(), f"a pid in {path}")
    return int(path.read_text())


async def test_merged_output_interleaves_in_order(tmp_path: Path) -> None:
    run = await run_shell("echo one; echo two >&2; echo three; exit 4", cwd=tmp_path, env=os.environ,
                          timeout=30, merge_stderr=True)
    assert (run.stdout, run.stderr, run.code, run.timed_out) == ("one\ntwo\nthree\n", "", 4, False)


async def test_separate_streams_cwd_env_and_stdin(tmp_path: Path) -> None:
    run = await run_shell('pwd; echo "$X $0"; cat; echo err >&2', cwd=tmp_path, env={**os.environ, "X": "x"},
                          stdin=b"piped\n", timeout=30)
    assert run.stdout == f"{tmp_path}\nx sh\npiped\n" and run.stderr == "err\n" and run.code == 0


async def test_a_first_line_syntax_error_is_in_the_merged_output_with_its_line_number(tmp_path: Path) -> None:
    run = await run_shell("echo never; foo(", cwd=tmp_path, env=os.environ, timeout=30, merge_stderr=True)
    assert "never" not in run.stdout and " 1: " in run.stdout and "Syntax error" in run.stdout
    assert run.code == 2 and run.stderr == ""


async def test_timeout_kills_the_whole_group_and_what_left_it(tmp_path: Path) -> None:
    # One child stays in the group, one leaves it (setsid): neither outlives the command.
    command = f"sleep 60 & echo $! > {tmp_path}/a; setsid sleep 60 & echo $! > {tmp_path}/b; echo begun; wait"
    run = await timed_out_once_begun(
        lambda timeout: run_shell(command, cwd=tmp_path, env=os.environ, timeout=timeout, merge_stderr=True),
        lambda run: run.stdout)
    assert run.timed_out and run.code == -9 and run.stdout == "begun\n"
    for name in ("a", "b"):
        assert await _gone(int((tmp_path / name).read_text())), f"the {name} child survived the timeout"


async def test_cancelling_kills_the_group(tmp_path: Path) -> None:
    task = asyncio.ensure_future(run_shell(f"sleep 60 & echo $! > {tmp_path}/pid; wait", cwd=tmp_path,
                                           env=os.environ, timeout=60, merge_stderr=True))
    pid = await _pid_in(tmp_path / "pid")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _gone(pid), "the command's child survived the cancellation"


async def test_a_missing_directory_is_an_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        await run_shell("true", cwd=tmp_path / "missing", env=os.environ, timeout=30)
