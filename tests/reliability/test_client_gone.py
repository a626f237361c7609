"""A daemon whose client is gone always ends, quickly, leaving no process behind, whatever the turn was doing."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bench.lspwire import LSPProcess
from ollie.log import default_log_file
from ollie.testing import Reply
from tests.procs import children_of, new_mark, process_gone, processes_with, wait_until

# A ceiling on a hang only: how fast the daemon closed itself is its backstop's business, checked by its log line.
GONE_WITHIN_S = 30.0
# What exit_backstop logs before it ends a daemon that did not close by itself (`ollie_lsp.server.exit_backstop`).
BACKSTOP_LINE = "did not end"


class SilentClient(LSPProcess):
    """The raw client, except that it never answers `ollie/permission` or `ollie/editor/*` (the user walked away)."""

    def _dispatch(self, message: dict[str, Any], stamp: float) -> None:
        if "id" in message and str(message.get("method")).startswith(("ollie/permission", "ollie/editor/")):
            self.server_requests.append(message)
            with self._notified:
                self._notified.notify_all()
            return
        super()._dispatch(message, stamp)


def fork_server_of(daemon: LSPProcess) -> int:
    """The host pid of the daemon's fork server (running once a step was spawned)."""
    for pid in children_of(daemon.pid):
        with contextlib.suppress(OSError):
            if b"forkserver.py" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
    raise AssertionError(f"the daemon {daemon.pid} has no fork server")


@pytest.fixture
def start(workdir: Path, tmp_path: Path):
    """`start(srv, client_cls=..., options=..., approval=...)`: an initialized daemon; killed at teardown if alive."""
    from tests.reliability.conftest import DAEMON, daemon_env  # the suite's own daemon command and env

    started: list[LSPProcess] = []

    def make(srv: Any, *, client_cls: type[LSPProcess] = LSPProcess, options: Any = None,
             approval: str = "auto") -> LSPProcess:
        daemon = client_cls(DAEMON, env=daemon_env(srv.env(approval=approval)))
        started.append(daemon)
        daemon.initialize(workdir, options=options)
        return daemon

    yield make
    for daemon in started:
        if daemon.alive():
            daemon.proc.kill()
            daemon.proc.wait(10)


def assert_all_gone(daemon: LSPProcess, fork_server: int | None, mark: str | None) -> None:
    """The daemon ended by closing itself, before its backstop, its fork server and the step's processes with it."""
    try:
        daemon.proc.wait(GONE_WITHIN_S)
    except Exception:
        raise AssertionError(f"the daemon still runs {GONE_WITHIN_S} s after its client went:\n"
                             + daemon.stderr_text()[-3000:]) from None
    if fork_server is not None:
        assert process_gone(fork_server), "the fork server outlived the daemon"
    if mark is not None:
        deadline = time.monotonic() + 15.0
        while processes_with(mark) and time.monotonic() < deadline:
            time.sleep(0.02)
        left = processes_with(mark)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert not left, "a step's process outlived the daemon"
    # The backstop is the last resort: closing itself must not hang (the backstop ends it EXIT_BACKSTOP_S after).
    log = default_log_file()
    assert BACKSTOP_LINE not in (log.read_text() if log.exists() else ""), "the daemon ended only through its backstop"


def close_stdin(daemon: LSPProcess) -> None:
    """The client's end of the daemon's stdin closed: EOF, without waiting for anything."""
    assert daemon.proc.stdin is not None
    daemon.proc.stdin.close()


def start_tool_turn(start: Any, scripted_llm: Any, workdir: Path) -> tuple[LSPProcess, int, str]:
    """A daemon whose turn runs a long step; its fork server's pid and the step's marker."""
    mark = new_mark()
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", {
        "steps": [{"code": f"echo started > started.txt; exec sleep 60.{mark}"}], "timeout": 120})))
    daemon = start(srv)
    daemon.request_async("ollie/submit", {"text": "run the long step"})
    wait_until(lambda: processes_with(mark), "the step never started")
    return daemon, fork_server_of(daemon), mark


@pytest.mark.parametrize("ending", ["shutdown-exit-eof", "shutdown-eof", "exit-eof", "eof", "sigterm", "sighup"])
def test_the_daemon_ends_with_its_steps_when_the_client_goes_mid_tool(start, scripted_llm, workdir, ending):
    daemon, fork_server, mark = start_tool_turn(start, scripted_llm, workdir)
    if ending.startswith("sig"):
        signum = signal.SIGTERM if ending == "sigterm" else signal.SIGHUP
        os.kill(daemon.pid, signum)
        assert_all_gone(daemon, fork_server, mark)
        # Ended as when the client leaves (not killed by the signal: the turn closed and saved), its status 128 + the
        # signal (no `shutdown` asked for it: the editor restarts it).
        assert daemon.proc.returncode == 128 + signum, daemon.stderr_text()[-2000:]
        return
    # Neovim's quit: the requests go out and nobody waits for the answers.
    if "shutdown" in ending:
        daemon.request_async("shutdown", None)
    if "exit" in ending:
        daemon.notify("exit", None)
    close_stdin(daemon)
    assert_all_gone(daemon, fork_server, mark)


@pytest.mark.parametrize("wait_for_shutdown", [True, False], ids=["vscode-order", "exit-during-shutdown"])
def test_exit_ends_the_daemon_at_once_with_status_0_while_the_client_keeps_its_pipe_open(
        start, scripted_llm, workdir, wait_for_shutdown):
    # VS Code's stop: shutdown, exit, and the pipe stays open until the process ends. The daemon hung until its
    # backstop (status 1), or pygls' SystemExit broke asyncio.run's cleanup (a traceback, status 1).
    daemon, fork_server, mark = start_tool_turn(start, scripted_llm, workdir)
    shutdown = daemon.request_async("shutdown", None)
    if wait_for_shutdown:
        shutdown.result(30)
    daemon.notify("exit", None)
    assert_all_gone(daemon, fork_server, mark)
    stderr = daemon.stderr_text()
    assert daemon.proc.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]


def test_exit_without_shutdown_ends_with_status_1(start, scripted_llm, workdir):
    daemon = start(scripted_llm("openai"))
    daemon.notify("exit", None)
    assert_all_gone(daemon, None, None)
    assert daemon.proc.returncode == 1, daemon.stderr_text()[-3000:]


@pytest.mark.parametrize("ending", ["shutdown-exit-eof", "eof"])
def test_the_daemon_ends_when_the_client_goes_while_a_permission_question_waits(start, scripted_llm, workdir, ending):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": "touch asked.txt"}]})))
    daemon = start(srv, client_cls=SilentClient, options={"permissionRequest": True}, approval="")
    # The fork server, when one was started already (a pre-warmed one), must go with the daemon.
    fork_server = fork_server_of(daemon) if _has_fork_server(daemon) else None
    daemon.request_async("ollie/submit", {"text": "touch it"})
    wait_until(lambda: any(r["method"] == "ollie/permission" for r in daemon.server_requests),
               "the permission question never came")
    if ending != "eof":
        daemon.request_async("shutdown", None)
        daemon.notify("exit", None)
    close_stdin(daemon)
    assert_all_gone(daemon, fork_server, None)
    assert not (workdir / "asked.txt").exists()


def _has_fork_server(daemon: LSPProcess) -> bool:
    try:
        fork_server_of(daemon)
    except AssertionError:
        return False
    return True


def test_the_daemon_ends_when_stdin_closes_mid_stream(start, scripted_llm, workdir):
    srv = scripted_llm("openai")
    srv.script(Reply(text="word " * 400, chunk_size=5, delay=0.05))
    daemon = start(srv)
    daemon.request_async("ollie/submit", {"text": "talk a while"})
    daemon.wait_for(lambda notes: any(m.get("method") == "ollie/event" and m["params"].get("role") == "assistant"
                                      for _, m in notes), timeout=60)
    close_stdin(daemon)
    assert_all_gone(daemon, None, None)


def test_the_daemon_ends_when_the_client_goes_while_an_editor_question_waits(start, scripted_llm, workdir):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "editor_diagnostics", "args": []}]})))
    daemon = start(srv, client_cls=SilentClient, options={"editorTools": True})
    daemon.request_async("ollie/submit", {"text": "what does the editor say"})
    wait_until(lambda: any(r["method"].startswith("ollie/editor/") for r in daemon.server_requests),
               "the editor question never came")
    daemon.request_async("shutdown", None)
    close_stdin(daemon)
    assert_all_gone(daemon, None, None)


def test_the_backstop_ends_a_process_that_hangs_and_its_fork_server_with_it(tmp_path):
    # What the daemon runs once its client is gone; here the main thread hangs for good with a fork server up.
    script = (
        "import asyncio, threading, sys\n"
        "from ollie.sandbox.spawn import fork_server\n"
        "from ollie_lsp.server import exit_backstop\n"
        "fork_server()._ensure()\n"
        "print(fork_server().pid, flush=True)\n"
        "threading.Thread(target=exit_backstop, args=(0.5,), daemon=True).start()\n"
        "threading.Event().wait()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    fork_server = int(proc.stdout.readline())
    assert proc.wait(30) == 1
    assert process_gone(fork_server), "the backstop left the fork server behind"


def test_the_daemon_ends_when_the_client_goes_while_compacting(start, scripted_llm, workdir):
    srv = scripted_llm("openai")
    srv.script(Reply.text("a first answer " * 20), Reply(text="the summary " * 200, chunk_size=4, delay=0.05))
    daemon = start(srv)
    assert daemon.request("ollie/submit", {"text": "say something"}, timeout=60)["stop"] == "end"
    daemon.request_async("ollie/command", {"line": "/compact"})
    wait_until(lambda: len(srv.chat_requests) == 2, "the compaction never asked the model")
    daemon.request_async("shutdown", None)
    daemon.notify("exit", None)
    close_stdin(daemon)
    assert_all_gone(daemon, None, None)
