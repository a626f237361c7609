"""Every process a sandboxed step starts dies with the step: setsid escapees, a killed daemon, fork bombs.

Through the real engine path (ExecuteServer.call, as a model calls it) and, for
a SIGKILLed daemon, the real daemon under pytest-lsp. An "escapee" is what a
model can write to outlive its step: `setsid` (out of the step's process group)
with stdio closed (so no pipe links it to the step either).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from ollie.sandbox.forkserver import SHUTDOWN_WAIT_S
from ollie.sandbox.spawn import fork_server
from ollie.testing import Reply
from ollie.tools.execute.server import ExecuteServer
from tests.procs import (
    children_of,
    new_mark,
    processes_with,
    run_watching,
    timed_out_once_begun,
    wait_for_processes,
    wait_no_processes,
)

from .conftest import pid_gone, wait_gone

SESSION = "1700000000000000000-c0nta1"

# A step runs in a PID namespace of its own: the pids it sees are not the host's. So the processes
# a test must see die carry a mark in their command line (`sleep 1000.<mark>`), found on the host.
# Leaves a session-leading, stdio-less `sleep` behind, then runs the rest of the step.
ESCAPE_BASH = ("setsid sh -c 'exec >/dev/null 2>&1 </dev/null; echo $$ > escapee.pid; exec sleep 1000.{mark}' & "
               "while [ ! -s escapee.pid ]; do sleep 0.01; done; ")
# The same in Python: double fork, setsid, stdio closed.
ESCAPE_PYTHON = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in (0, 1, 2):
            os.close(fd)
        with open("escapee.pid.tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename("escapee.pid.tmp", "escapee.pid")
        os.execvp("sleep", ["sleep", "1000.{mark}"])
    os._exit(0)
while not os.path.exists("escapee.pid"):
    time.sleep(0.01)
"""
# The rest of an escaping step: wait for the test's go-ahead.
AWAIT_GO = {"bash": "while [ ! -e go ]; do sleep 0.01; done",
            "python3": "while not os.path.exists('go'):\n    time.sleep(0.01)\n"}


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project dir ({CWD}); TMPDIR is a scratch dir beside it."""
    (tmp_path / "work").mkdir()
    (tmp_path / "scratch").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "scratch"))
    return tmp_path / "work"


@pytest.fixture
def server(work: Path) -> ExecuteServer:
    """The execute server of one session, as the Core builds it."""
    return ExecuteServer(cwd=work, session_id=SESSION, lock_dir=work.parent / "scratch" / "locks")


def escape_step(language: str, mark: str, then: str = "") -> dict:
    """An execute_code step that leaves an escapee marked `mark`, then runs `then` (same language)."""
    code = (ESCAPE_BASH if language == "bash" else ESCAPE_PYTHON).format(mark=mark) + then
    return {"code": code, "language": language}


def sleep_marked(mark: str) -> str:
    """The rest of a bash step: the tool process itself becomes a marked ten-minute sleep."""
    return f"exec sleep 600.{mark}"


async def call_watching(server: ExecuteServer, step: dict, mark: str, work: Path, *left: str,
                        first_s: float) -> tuple[Any, list[int]]:
    """The result of `step` timed out once its marked processes (two or more) were seen running, and those seen;
    the files in `left` that a try leaves in `work` are removed before each."""

    async def call(timeout: float) -> tuple[Any, list[int]]:
        for name in left:
            (work / name).unlink(missing_ok=True)
        return await run_watching(server.call("execute_code", {"steps": [step], "timeout": timeout}), mark)

    return await timed_out_once_begun(call, lambda ran: len(ran[1]) >= 2, first_s=first_s)


@pytest.mark.parametrize("language", ["bash", "python3"])
async def test_an_escapee_is_dead_when_the_step_returns(server, work, language):
    mark = new_mark()
    call = asyncio.ensure_future(server.call("execute_code", {"steps": [escape_step(language, mark,
                                                                                    AWAIT_GO[language])]}))
    escapee = await wait_for_processes(f"1000.{mark}")  # found while it runs, so its absence below means dead
    (work / "go").touch()
    result = await asyncio.wait_for(call, 30)
    assert not result.is_error, result.text
    # No wait: the status is reported only after the sweep, so "the step returned" means "all of it is dead".
    assert processes_with(mark) == [], f"the setsid'd escapee {escapee} outlived its step"


async def test_an_escapee_is_dead_after_the_step_times_out(server, work):
    mark = new_mark()
    # Ten minutes' sleeps: a call that waited for them runs past run_watching's ceiling.
    result, running = await call_watching(server, escape_step("bash", mark, sleep_marked(mark)), mark, work,
                                          "escapee.pid", first_s=3)
    assert len(running) >= 2, "the escapee and the tool never ran together before the timeout"
    assert "timed out" in result.text.lower() or "timeout" in result.text.lower(), result.text
    assert processes_with(mark) == [], f"{running} outlived the timeout"


async def test_an_escapee_is_dead_after_an_interrupt(server, work):
    mark = new_mark()
    call = asyncio.ensure_future(server.call("execute_code", {"steps": [escape_step("bash", mark, sleep_marked(mark))],
                                                             "timeout": 60}))
    await wait_for_processes(mark, 2)  # the escapee and the tool, running
    call.cancel()  # what an interrupt does to the running call
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(call, 30)
    assert await wait_no_processes(mark) == [], "the escapee or the tool outlived the interrupt"


async def test_closing_the_fork_server_ends_running_steps_and_their_escapees(server, work):
    mark = new_mark()
    call = asyncio.ensure_future(server.call("execute_code", {"steps": [escape_step("bash", mark, sleep_marked(mark))],
                                                             "timeout": 60}))
    await wait_for_processes(mark, 2)  # the escapee and the tool, running
    forkserver = fork_server().pid
    assert forkserver is not None
    began = time.monotonic()
    await asyncio.to_thread(fork_server().close)  # what daemon shutdown (atexit) does
    # The server stopped the supervisors and waited for their sweeps: not its bound on that wait, then PDEATHSIG
    # (which also ends the step, only later: the daemon's exit waited SHUTDOWN_WAIT_S with a step running).
    assert time.monotonic() - began < SHUTDOWN_WAIT_S, "the fork server never stopped its supervisors"
    assert processes_with(mark) == [], "a step outlived its fork server"
    assert pid_gone(forkserver)
    result = await asyncio.wait_for(call, 30)  # the step ends (killed), it does not hang
    assert result.is_error or "exit" in result.text.lower(), result.text


def low_limit_policy(limit: int) -> None:
    """Make the user's default policy the bundled one with `limits.processes: limit`."""
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "ollie"
    config.mkdir(parents=True, exist_ok=True)
    bundled = (Path(__file__).resolve().parents[2] / "sandbox.yaml").read_text()
    limited = bundled.replace("processes: 512", f"processes: {limit}")
    assert limited != bundled
    (config / "sandbox.yaml").write_text(limited)


# Bounded, so a broken limit cannot take the machine down: at most 2**9 processes, each
# noting its pid; the first failed fork is noted too. Then everything sleeps.
FORK_BOMB = """
import os, time
limited = False
for _ in range(9):
    try:
        os.fork()
    except OSError:
        limited = True
        break
with open("pids", "a") as f:
    f.write(f"{os.getpid()}\\n")
if limited:
    with open("limited", "a") as f:
        f.write("x")
os.execvp("sleep", ["sleep", "600.MARK"])
"""


async def test_a_fork_bomb_hits_the_process_limit_and_leaves_nothing(server, work):
    low_limit_policy(16)
    mark = new_mark()
    result, running = await call_watching(server, {"code": FORK_BOMB.replace("MARK", mark), "language": "python3"},
                                          mark, work, "pids", "limited", first_s=3)
    assert len(running) >= 2, "the bomb's processes never ran before the timeout"  # each ends as a marked sleep
    assert "timed out" in result.text.lower() or "timeout" in result.text.lower(), result.text
    assert (work / "limited").exists(), "no fork ever failed: the process limit was not applied"
    pids = [int(line) for line in (work / "pids").read_text().split()]  # the step's namespace pids: a count
    assert 2 <= len(pids) <= 16, pids
    assert processes_with(mark) == [], "part of the fork bomb outlived its step"
    # The machine (and this session) still runs steps.
    after = await server.call("execute_code", {"steps": [{"code": "echo still fine", "language": "bash"}]})
    assert "still fine" in after.text, after.text


# A self-spawning script rather than a `f(){ f|f& }` function, which the validation gate refuses
# before it runs; depth-bounded like FORK_BOMB (at most 2**9 shells if the limit failed).
# The script's name and every sleep carry MARK: each of its processes is found on the host by it.
SHELL_BOMB = """echo $$ > bomb.pid
cat > b.MARK.sh <<'END'
echo $$ >> pids
d=${D:-0}
if [ "$d" -lt 9 ]; then D=$((d + 1)) sh b.MARK.sh & D=$((d + 1)) sh b.MARK.sh & fi
sleep 600.MARK
END
sh b.MARK.sh & exec sleep 600.MARK
"""


async def test_a_shell_fork_bomb_is_stopped_and_swept(server, work):
    low_limit_policy(16)
    mark = new_mark()
    result, running = await call_watching(server, {"code": SHELL_BOMB.replace("MARK", mark), "language": "bash"},
                                          mark, work, "bomb.pid", "pids", first_s=2)
    assert len(running) >= 2, "the bomb's shells and sleeps never ran before the timeout"
    assert (work / "bomb.pid").exists(), result.text
    assert "fork" in result.text.lower(), result.text  # sh: "Cannot fork" / "Resource temporarily unavailable"
    pids = (work / "pids").read_text().split()  # the step's namespace pids: a count
    # sh exits when a fork fails, freeing slots for others: more than 16 may run over time, never the
    # 1 + 1023 an unlimited run records.
    assert len(pids) < 200, len(pids)
    assert processes_with(mark) == [], "part of the fork bomb outlived its step"
    after = await server.call("execute_code", {"steps": [{"code": "echo still fine", "language": "bash"}]})
    assert "still fine" in after.text, after.text


async def test_a_pipeline_still_runs_under_a_low_limit(server, work):
    low_limit_policy(16)
    result = await server.call("execute_code", {"steps": [{
        "code": "seq 1 100 | sort -rn | head -3 | tr '\\n' ' ' | sed 's/ $//'; echo", "language": "bash"}]})
    assert not result.is_error and "100 99 98" in result.text, result.text


# --- the daemon, killed with SIGKILL, under pytest-lsp ---------------------------------------------

def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    return ""


async def test_a_sigkilled_daemon_takes_its_steps_processes_with_it(scripted_llm, tmp_path):
    llm = scripted_llm("openai")
    mark = new_mark()
    code = ESCAPE_BASH.format(mark=mark) + sleep_marked(mark)
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": code, "language": "bash"}], "timeout": 120})))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OLLIE_")}, **llm.env()}
    config = ClientServerConfig(server_command=[sys.executable, "-m", "ollie_lsp"], server_env=env,
                                client_factory=LanguageClient)
    client = await config.start()
    try:
        await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=workspace.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")])), 30)
        submit = asyncio.ensure_future(client.protocol.send_request_async("ollie/submit", {"text": "run it"}))
        await wait_for_processes(mark, 2, timeout=30)  # the escapee and the tool, running
        daemon = client._server.pid
        servers = [pid for pid in children_of(daemon) if "forkserver.py" in _cmdline(pid)]
        assert len(servers) == 1, [(_cmdline(pid), pid) for pid in children_of(daemon)]
        os.kill(daemon, signal.SIGKILL)
        assert await wait_no_processes(mark) == [], "the escapee or the tool outlived the SIGKILLed daemon"
        assert await wait_gone(servers[0]), "the fork server outlived the SIGKILLed daemon"
        submit.cancel()
    finally:
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(client.stop(), 10)


# --- steps together against the daemon's own process slots ---------------------------------------

# Forks (at most 200) until a fork fails, each child blocked on a pipe the step holds; notes the count in `ready`
# and waits for the test's `go`. Leaving the step closes the pipe: its children end.
HOG = """
import os, time
r, w = os.pipe()
n = 0
for _ in range(200):
    try:
        if os.fork() == 0:
            os.close(w)
            os.read(r, 1)
            os._exit(0)
    except OSError:
        break
    n += 1
with open("ready.tmp", "w") as f:
    f.write(str(n))
os.rename("ready.tmp", "ready")
while not os.path.exists("go"):
    time.sleep(0.01)
"""
# The engine in a process of its own, placed in a small pids cgroup: it runs HOG as a step and, once the step holds
# what it could take, starts a program itself (as the daemon starts git, a hook, the next step).
ENGINE = """
import asyncio, os, sys
from pathlib import Path
from ollie.tools.execute.server import ExecuteServer
work = Path(sys.argv[1])
async def main():
    server = ExecuteServer(cwd=work, session_id="1700000000000000000-h0gpid", lock_dir=work.parent / "scratch" / "locks")
    call = asyncio.ensure_future(server.call("execute_code", {"steps": [{"code": sys.argv[2], "language": "python3"}]}))
    while not (work / "ready").exists() and not call.done():
        await asyncio.sleep(0.01)
    try:
        os.waitpid(os.posix_spawn("/bin/true", ["true"], {}), 0)
        print("engine forked")
    except OSError as exc:
        print("engine could not fork", exc)
    (work / "go").touch()
    print((await call).text)
asyncio.run(main())
"""


def test_steps_together_leave_the_daemon_room_to_fork(work):
    # Each step has its own process limit, but a parallel group of steps (or sessions side by side) multiplies it:
    # together they took every process slot the daemon's cgroup has (a systemd user slice's TasksMax, pid_max),
    # and the daemon, the editor and the user's session could not fork. Modelled small: the engine in a cgroup of
    # 150 tasks, one step under the default limit (512) that forks what it can.
    from ollie.sandbox import cgroup

    base = cgroup.bases().get("pids")
    if os.geteuid() != 0 or base is None or cgroup._is_v2(base):
        # v2 enables no controller below a cgroup that holds processes: the engine's cell could have no steps' base.
        pytest.skip("needs root and a writable v1 pids hierarchy")
    cell = Path(base).parent / f"ollie-test-{os.getpid()}"
    cell.mkdir()
    try:
        (cell / "pids.max").write_text("150")
        run = subprocess.run([sys.executable, "-c", ENGINE, str(work), HOG], capture_output=True, text=True,
                             timeout=120, preexec_fn=lambda: (cell / "cgroup.procs").write_text(str(os.getpid())))
    finally:
        for leftover in (cell / "ollie").glob("*/"):
            leftover.rmdir()
        for directory in (cell / "ollie", cell):
            if directory.exists():
                directory.rmdir()
    assert "engine forked" in run.stdout, run.stdout + run.stderr
    taken = int((work / "ready").read_text())
    assert 10 <= taken <= 75, taken  # it forked, within half the cell
