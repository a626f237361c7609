"""/proc as tool code sees it: the step's own procfs (a PID namespace per step), or /proc/self without one."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from ollie.tools.base import ToolResult

from .conftest import Workspace, code

# Each process of the step, by name, in /proc's order (the shell loop runs in bash itself: no child for it).
LIST_PROCESSES = 'for d in /proc/[0-9]*; do echo "${d#/proc/} $(head -1 $d/status | cut -f2)"; done'


async def test_the_steps_own_process_reads_its_proc_self(ws: Workspace) -> None:
    # Read by bash itself (a redirection, `exec`), /proc/self is the step's process.
    result = await code(ws.server(), 'read -r first < /proc/self/status; echo "$first"; exec head -1 /proc/$$/status')
    assert not result.is_error, result.text
    assert "Name:\tbash\nName:\thead" in result.text, result.text  # exec keeps the pid: head reads it too


@pytest.mark.parametrize("program", ["cat /proc/self/status", "bash -c 'cat /proc/self/status'",
                                     "bash -c 'bash -c \"cat /proc/self/status\"'"])
async def test_a_child_and_a_grandchild_read_their_own_proc_self(ws: Workspace, program: str) -> None:
    result = await code(ws.server(), program)
    assert not result.is_error and "Name:\tcat" in result.text, result.text


async def test_a_python_child_reads_its_own_proc_self(ws: Workspace) -> None:
    result = await code(ws.server(), "import os; print(os.listdir('/proc/self/fd')[:1], open('/proc/self/status')"
                                     ".readline().split()[1])", language="python")
    assert not result.is_error and "python" in result.text, result.text


async def test_proc_lists_only_the_steps_processes_and_pid_1_is_its_init(ws: Workspace) -> None:
    # The listing waits until the background child has exec'd `sleep` (forked, it is named bash a moment).
    exec_d = 'until read -r _ name < /proc/$!/status && [ "$name" = sleep ]; do :; done'
    result = await code(ws.server(), f"sleep 5 & {exec_d}; {LIST_PROCESSES}; echo \"me $$ parent $PPID\"; kill $!")
    assert not result.is_error, result.text
    lines = result.text.strip().splitlines()
    listed = dict(line.split(" ", 1) for line in lines if line[:1].isdigit())
    assert set(listed) == {"1", "2", "3"}, result.text  # the init, bash, the sleep: nothing else
    assert listed["2"] == "bash" and listed["3"] == "sleep" and listed["1"].startswith("python"), result.text
    assert "me 2 parent 1" in result.text, result.text
    init = await code(ws.server(), "tr '\\0' ' ' < /proc/1/cmdline")
    assert "forkserver.py" in init.text, init.text


async def test_the_daemon_and_the_init_stay_out_of_reach(ws: Workspace) -> None:
    daemon = os.getpid()  # the execute server runs in this process
    result = await code(ws.server(), f"ls /proc/{daemon} 2>&1; cat /proc/1/environ; kill -9 1; kill -TERM 1; "
                                     "sleep 0.1; echo still here")
    assert "still here" in result.text, result.text  # signals from inside never reach the namespace's init
    assert f"/proc/{daemon}" in result.text and "No such file" in result.text, result.text
    assert "/proc/1/environ: Permission denied" in result.text, result.text


def _host_pid_of(marker: str) -> int | None:
    """The host pid of the process whose command line holds `marker` (seen from outside every step)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    return int(entry.name)
            except OSError:
                continue
    return None


async def test_another_steps_processes_are_invisible(ws: Workspace, tmp_path: Path) -> None:
    marker = f"{tmp_path.name}-other-step"
    server = ws.server()
    other = asyncio.ensure_future(code(server, f"exec -a {marker} sleep 30", timeout=40))
    try:
        for _ in range(3000):  # 30 s at least: a loaded machine is slow to start a sandboxed step
            host = _host_pid_of(marker)
            if host is not None:
                break
            await asyncio.sleep(0.01)
        assert host is not None, "the other step never started"
        result = await code(ws.server(session_id="s2"),
                            f"cat /proc/{host}/cmdline; grep -l {marker} /proc/[0-9]*/cmdline; echo done")
        assert marker not in result.text.replace(f"grep -l {marker}", ""), result.text
        assert f"/proc/{host}/cmdline: No such file" in result.text, result.text
    finally:
        other.cancel()
        await asyncio.gather(other, return_exceptions=True)


async def test_without_a_pid_namespace_proc_narrows_to_the_first_process(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLIE_SANDBOX_PIDNS", "0")  # as on a kernel or host that cannot make one
    result: ToolResult = await code(ws.server(), "head -1 /proc/$$/status; cat /proc/self/status; ls /proc")
    assert "Name:\tbash" in result.text, result.text  # the step's first process keeps its own /proc/self
    assert "cat: /proc/self/status: Permission denied" in result.text, result.text
    assert "ls: cannot open directory '/proc': Permission denied" in result.text, result.text


async def test_without_a_pid_namespace_a_step_signals_no_process_outside_it(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without its own PID namespace a step names every pid of the host, and runs as the user (root here) whose other
    # processes (the daemon, her editor) it would stop or kill: Landlock's signal scope alone keeps them out of reach.
    from ollie.sandbox.rules import landlock_abi

    if landlock_abi() < 6:
        pytest.skip("Landlock scopes signals from ABI 6")
    monkeypatch.setenv("OLLIE_SANDBOX_PIDNS", "0")
    outside = await asyncio.create_subprocess_exec("sleep", "60")
    try:
        result = await code(ws.server(), f"kill -STOP {outside.pid}; kill -0 {outside.pid}; kill -9 {outside.pid}; "
                                         "sleep 0.2 & kill $! && echo own-child-signalled")
        assert result.text.count("Operation not permitted") == 3 and "own-child-signalled" in result.text, result.text
        assert outside.returncode is None and "State:\tS" in Path(f"/proc/{outside.pid}/status").read_text()
    finally:
        outside.kill()
        await outside.wait()
