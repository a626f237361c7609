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
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from ollie.sandbox.spawn import fork_server
from ollie.testing import Reply
from ollie.tools.execute.server import ExecuteServer

from .conftest import pid_gone, wait_gone

SESSION = "1700000000000000000-c0nta1"

# Leaves a session-leading, stdio-less `sleep` behind, then `$1` (the rest of the step).
ESCAPE_BASH = ("setsid sh -c 'exec >/dev/null 2>&1 </dev/null; echo $$ > escapee.pid; exec sleep 1000' & "
               "while [ ! -s escapee.pid ]; do sleep 0.01; done; echo $$ > tool.pid; ")
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
        time.sleep(1000)
    os._exit(0)
while not os.path.exists("escapee.pid"):
    time.sleep(0.01)
with open("tool.pid", "w") as f:
    f.write(str(os.getpid()))
"""


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


def escape_step(language: str, then: str = "") -> dict:
    """An execute_code step that leaves an escapee, then runs `then` (same language)."""
    code = ESCAPE_BASH + then if language == "bash" else ESCAPE_PYTHON + then
    return {"code": code, "language": language}


def read_pid(path: Path) -> int:
    """The pid a step wrote (it must have)."""
    assert path.exists(), f"{path.name} was never written"
    return int(path.read_text().strip())


def alive(pid: int) -> bool:
    """Running (a zombie is not)."""
    return not pid_gone(pid)


async def wait_for_pid_file(path: Path, timeout: float = 15) -> int:
    """The pid in `path` once the step has written it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (path.exists() and path.read_text().strip()):
        assert loop.time() < deadline, f"{path.name} never appeared"
        await asyncio.sleep(0.02)
    return int(path.read_text().strip())


@pytest.mark.parametrize("language", ["bash", "python3"])
async def test_an_escapee_is_dead_when_the_step_returns(server, work, language):
    result = await server.call("execute_code", {"steps": [escape_step(language, "")]})
    assert not result.is_error, result.text
    escapee = read_pid(work / "escapee.pid")
    # No wait: the status is reported only after the sweep, so "the step returned" means "all of it is dead".
    assert pid_gone(escapee), f"the setsid'd escapee {escapee} outlived its step"


async def test_an_escapee_is_dead_after_the_step_times_out(server, work):
    started = time.monotonic()
    result = await server.call("execute_code", {"steps": [escape_step("bash", "sleep 60")], "timeout": 1})
    assert time.monotonic() - started < 20
    assert "timed out" in result.text.lower() or "timeout" in result.text.lower(), result.text
    for name in ("escapee.pid", "tool.pid"):
        assert pid_gone(read_pid(work / name)), f"{name} outlived the timeout"


async def test_an_escapee_is_dead_after_an_interrupt(server, work):
    call = asyncio.ensure_future(server.call("execute_code", {"steps": [escape_step("bash", "sleep 60")],
                                                             "timeout": 60}))
    escapee = await wait_for_pid_file(work / "escapee.pid")
    tool = await wait_for_pid_file(work / "tool.pid")
    assert alive(escapee) and alive(tool)
    call.cancel()  # what an interrupt does to the running call
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(call, 10)
    assert await wait_gone(escapee, timeout=3), "the escapee outlived the interrupt"
    assert pid_gone(tool)


async def test_closing_the_fork_server_ends_running_steps_and_their_escapees(server, work):
    call = asyncio.ensure_future(server.call("execute_code", {"steps": [escape_step("bash", "sleep 60")],
                                                             "timeout": 60}))
    escapee = await wait_for_pid_file(work / "escapee.pid")
    tool = await wait_for_pid_file(work / "tool.pid")
    forkserver = fork_server().pid
    assert forkserver is not None and alive(escapee)
    await asyncio.to_thread(fork_server().close)  # what daemon shutdown (atexit) does
    assert pid_gone(escapee) and pid_gone(tool), "a step outlived its fork server"
    assert pid_gone(forkserver)
    result = await asyncio.wait_for(call, 10)  # the step ends (killed), it does not hang
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
time.sleep(60)
"""


async def test_a_fork_bomb_hits_the_process_limit_and_leaves_nothing(server, work):
    low_limit_policy(16)
    result = await server.call("execute_code", {"steps": [{"code": FORK_BOMB, "language": "python3"}],
                                                "timeout": 3})
    assert "timed out" in result.text.lower() or "timeout" in result.text.lower(), result.text
    assert (work / "limited").exists(), "no fork ever failed: the process limit was not applied"
    pids = [int(line) for line in (work / "pids").read_text().split()]
    assert 2 <= len(pids) <= 16, pids
    assert [pid for pid in pids if not pid_gone(pid)] == [], "part of the fork bomb outlived its step"
    # The machine (and this session) still runs steps.
    after = await server.call("execute_code", {"steps": [{"code": "echo still fine", "language": "bash"}]})
    assert "still fine" in after.text, after.text


# A self-spawning script rather than a `f(){ f|f& }` function, which the validation gate refuses
# before it runs; depth-bounded like FORK_BOMB (at most 2**9 shells if the limit failed).
SHELL_BOMB = """echo $$ > bomb.pid
cat > b.sh <<'END'
echo $$ >> pids
d=${D:-0}
if [ "$d" -lt 9 ]; then D=$((d + 1)) sh b.sh & D=$((d + 1)) sh b.sh & fi
sleep 60
END
sh b.sh & sleep 60
"""


async def test_a_shell_fork_bomb_is_stopped_and_swept(server, work):
    low_limit_policy(16)
    result = await server.call("execute_code", {"steps": [{"code": SHELL_BOMB, "language": "bash"}], "timeout": 2})
    assert (work / "bomb.pid").exists(), result.text
    assert "fork" in result.text.lower(), result.text  # sh: "Cannot fork" / "Resource temporarily unavailable"
    pids = [read_pid(work / "bomb.pid"), *(int(line) for line in (work / "pids").read_text().split())]
    # sh exits when a fork fails, freeing slots for others: more than 16 may run over time, never the
    # 1 + 1023 an unlimited run records.
    assert len(pids) < 200, len(pids)
    assert [pid for pid in pids if not pid_gone(pid)] == [], "part of the fork bomb outlived its step"
    after = await server.call("execute_code", {"steps": [{"code": "echo still fine", "language": "bash"}]})
    assert "still fine" in after.text, after.text


async def test_a_pipeline_still_runs_under_a_low_limit(server, work):
    low_limit_policy(16)
    result = await server.call("execute_code", {"steps": [{
        "code": "seq 1 100 | sort -rn | head -3 | tr '\\n' ' ' | sed 's/ $//'; echo", "language": "bash"}]})
    assert not result.is_error and "100 99 98" in result.text, result.text


# --- the daemon, killed with SIGKILL, under pytest-lsp ---------------------------------------------

def _children_of(pid: int) -> list[int]:
    """Pids whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    return ""


async def test_a_sigkilled_daemon_takes_its_steps_processes_with_it(scripted_llm, tmp_path):
    llm = scripted_llm("openai")
    code = ESCAPE_BASH + "sleep 60"
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
        escapee = await wait_for_pid_file(workspace / "escapee.pid", timeout=30)
        tool = await wait_for_pid_file(workspace / "tool.pid")
        daemon = client._server.pid
        servers = [pid for pid in _children_of(daemon) if "forkserver.py" in _cmdline(pid)]
        assert len(servers) == 1, [(_cmdline(pid), pid) for pid in _children_of(daemon)]
        assert alive(escapee) and alive(tool)
        os.kill(daemon, signal.SIGKILL)
        for pid, what in ((escapee, "the escapee"), (tool, "the tool process"), (servers[0], "the fork server")):
            assert await wait_gone(pid, timeout=5), f"{what} outlived the SIGKILLed daemon"
        submit.cancel()
    finally:
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(client.stop(), 10)
