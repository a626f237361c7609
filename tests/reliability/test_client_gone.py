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

from .conftest import DAEMON, daemon_env

# A ceiling on a hang only: how fast the daemon closed itself is its backstop's business, checked by its log line.
GONE_WITHIN_S = 30.0
# What exit_backstop logs before it ends a daemon that did not close by itself (`ollie_lsp.server.exit_backstop`).
BACKSTOP_LINE = "did not end"
# An editor stand-in that starts the daemon through a shell that waits for it (a wrapper script, `nix develop`): its
# pipes, this test's, stay open when it is killed.
EDITOR = [sys.executable, "-c", "import subprocess, sys; "
          "sys.exit(subprocess.call(['sh', '-c', '\"$@\"; exit $?', 'sh', *sys.argv[1:]]))", *DAEMON]


class SilentClient(LSPProcess):
    """The raw client, except that it never answers `ollie/permission` or `ollie/editor/*` (the user walked away)."""

    def _dispatch(self, message: dict[str, Any], stamp: float) -> None:
        if "id" in message and str(message.get("method")).startswith(("ollie/permission", "ollie/editor/")):
            self.server_requests.append(message)
            with self._notified:
                self._notified.notify_all()
            return
        super()._dispatch(message, stamp)


def server_pid(client: LSPProcess) -> int:
    """The daemon's pid: the client's child, or the end of the chain of processes the client started it through."""
    pid = client.pid
    while Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1:3] != [b"-m", b"ollie_lsp"]:
        (pid,) = children_of(pid)
    return pid


def fork_server_of(daemon: int) -> int:
    """The host pid of the fork server of the daemon `daemon` (running once a step was spawned)."""
    for pid in children_of(daemon):
        with contextlib.suppress(OSError):
            if b"forkserver.py" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
    raise AssertionError(f"the daemon {daemon} has no fork server")


@pytest.fixture
def start(workdir: Path, tmp_path: Path):
    """`start(srv, client_cls=..., options=..., approval=..., editor=..., process_id=...)`: an initialized daemon
    (`editor`: started through EDITOR, whose pid is the processId); killed at teardown if alive."""
    started: list[LSPProcess] = []

    def make(srv: Any, *, client_cls: type[LSPProcess] = LSPProcess, options: Any = None,
             approval: str = "auto", editor: bool = False, process_id: int | None = None) -> LSPProcess:
        daemon = client_cls(EDITOR if editor else DAEMON, env=daemon_env(srv.env(approval=approval)))
        started.append(daemon)
        daemon.initialize(workdir, options=options, process_id=daemon.pid if editor else process_id)
        return daemon

    yield make
    for daemon in started:
        if daemon.alive():
            daemon.proc.kill()
            daemon.proc.wait(10)


def assert_all_gone(daemon: LSPProcess, fork_server: int | None, mark: str | None, pid: int | None = None) -> None:
    """The daemon (`pid`, when it is not the client's child) ended by closing itself, before its backstop, its fork
    server and the step's processes with it."""
    try:
        if pid is None:
            daemon.proc.wait(GONE_WITHIN_S)
        else:
            assert process_gone(pid, GONE_WITHIN_S)
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


def start_tool_turn(start: Any, scripted_llm: Any, workdir: Path, **how: Any) -> tuple[LSPProcess, int, str]:
    """A daemon (`how`: start's options) whose turn runs a long step; its fork server's pid and the step's marker."""
    mark = new_mark()
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", {
        "steps": [{"code": f"echo started > started.txt; exec sleep 60.{mark}"}], "timeout": 120})))
    daemon = start(srv, **how)
    daemon.request_async("ollie/submit", {"text": "run the long step"})
    wait_until(lambda: processes_with(mark), "the step never started")
    return daemon, fork_server_of(server_pid(daemon)), mark


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
    fork_server = fork_server_of(daemon.pid) if _has_fork_server(daemon) else None
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
        fork_server_of(daemon.pid)
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



def test_the_daemon_ends_with_its_steps_when_its_editor_is_killed_while_its_pipes_stay_open(start, scripted_llm,
                                                                                              workdir):
    """LSP's processId: an editor SIGKILLed while another process (here this test, as a wrapper can) keeps the
    daemon's pipes open left it running for ever, its step with it. Its exit is seen: the daemon ends as on `exit`."""
    client, fork_server, mark = start_tool_turn(start, scripted_llm, workdir, editor=True)
    daemon = server_pid(client)
    try:
        log = default_log_file()
        wait_until(lambda: f"watching processId {client.pid}:" in log.read_text(), "the watch never began")
        client.proc.kill()  # the editor stand-in, the daemon's grandparent and the processId it was given
        assert_all_gone(client, fork_server, mark, daemon)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(daemon, signal.SIGKILL)
    assert f"the client's process {client.pid} has exited" in log.read_text()


@pytest.mark.parametrize("given", ["no such process", "not the client"])
def test_a_process_id_that_is_not_the_clients_is_logged_and_never_ends_the_daemon(start, scripted_llm, given):
    """Over ssh, or from a container, the editor's pid names another machine's process, or none: watching whatever
    had that pid here would end the daemon with an unrelated process (or at once). It is logged and ignored."""
    other = subprocess.Popen(["sleep", "600"])  # no ancestor of the daemon: its sibling
    if given == "no such process":
        other.kill()
        other.wait()
    daemon = start(scripted_llm("openai"), process_id=other.pid)
    try:
        log = default_log_file()
        wait_until(lambda: f"processId {other.pid} " in log.read_text() and "not watched" in log.read_text(),
                   "the daemon never said it does not watch the processId")
    finally:
        other.kill()
        other.wait()
    assert daemon.request("ollie/state", {}, timeout=30)["state"] == "idle"
    # Had it been watched, its exit (before the requests were sent) would have been seen, and said, before these end.
    assert daemon.shutdown() == 0, daemon.stderr_text()[-2000:]
    assert "has exited" not in log.read_text()
