"""Hostile bytes on the daemon's input (stdio and --tcp): each gets a JSON-RPC error, and the daemon serves on.

Every test writes raw bytes to the real `python -m ollie_lsp` subprocess, then a normal request that must
still be answered. Errors whose id cannot be read come back with id null (JSON-RPC 2.0, section 5).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bench.lspwire import LSPProcess, frame
from ollie_lsp.framing import MAX_DEPTH, MAX_FRAME_BYTES
from tests.procs import wait_until

from .conftest import DAEMON, daemon_env

STATE = b'{"jsonrpc": "2.0", "id": %d, "method": "ollie/state", "params": {}}'
EXIT = frame(b'{"jsonrpc": "2.0", "method": "exit"}')
NO_BACKEND = {"OLLIE_BACKEND": "openai", "OLLIE_OPENAI_URL": "http://127.0.0.1:9/v1", "OLLIE_OPENAI_KEY": "sk-unused",
              "OLLIE_LSP_STALL_S": "1"}
DAEMON_ENV = NO_BACKEND  # the module's `served`'s (tests/reliability/conftest.py)


@pytest.fixture
def daemon(start_daemon):
    """A daemon with its default session ready; frames stalled for a second are answered."""
    started = start_daemon(env=NO_BACKEND)
    started.request("ollie/state", {}, timeout=60)
    return started


def null_errors(daemon: LSPProcess) -> list[int]:
    """The codes of the errors answered with id null so far."""
    return [m["error"]["code"] for m in list(daemon.unmatched) if m.get("id") is None and "error" in m]


def serves(daemon: LSPProcess) -> None:
    """A normal request is still answered, and the daemon still runs."""
    assert daemon.request("ollie/state", {}, timeout=30)["state"] == "idle"
    assert daemon.alive(), daemon.stderr_text()[-2000:]


def answer_to(daemon: LSPProcess, msg_id: int) -> dict:
    """The (error) answer to a request this test sent raw with `msg_id`."""
    wait_until(lambda: any(m.get("id") == msg_id for m in daemon.unmatched), f"an answer to {msg_id}")
    return next(m for m in daemon.unmatched if m.get("id") == msg_id)


def test_a_body_that_is_not_utf8_is_a_parse_error(served):
    served.send_raw(frame(b'{"jsonrpc": "2.0", "id": 5, "method": "ollie/state", "params": {"x": "\xff\xfe"}}'))
    # UTF-16 is JSON to Python's json.loads(bytes), but not to LSP.
    served.send_raw(frame(json.dumps({"jsonrpc": "2.0", "method": "x"}).encode("utf-16")))
    serves(served)
    assert null_errors(served) == [-32700, -32700]


def test_deep_nesting_is_refused_with_the_requests_id(served):
    deep = "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)
    served.send_raw(frame(b'{"jsonrpc": "2.0", "id": 7001, "method": "ollie/state", "params": {"x": %s}}'
                          % deep.encode()))
    # Past the JSON parser's own recursion limit: a parse error, not a crash.
    served.send_raw(frame(b"[" * 200_000 + b"]" * 200_000))
    assert answer_to(served, 7001)["error"]["code"] == -32600
    serves(served)
    assert null_errors(served) == [-32700]


def test_a_batch_answers_each_request_in_it(served):
    batch = [{"jsonrpc": "2.0", "id": 7101, "method": "ollie/state", "params": {}},
             {"jsonrpc": "2.0", "method": "initialized", "params": {}},
             {"jsonrpc": "2.0", "id": "7102", "method": "ollie/state", "params": {}}]
    served.send(batch)  # type: ignore[arg-type]  # a list, as a batching client sends it
    assert answer_to(served, 7101)["error"]["code"] == -32600
    assert "batch" in answer_to(served, "7102")["error"]["message"]  # type: ignore[arg-type]
    served.send([])  # type: ignore[arg-type]
    serves(served)
    assert null_errors(served) == [-32600]


@pytest.mark.parametrize("header", [
    b"Content-Length: -5\r\n",
    b"Content-Length: 5x\r\n",
    b"Content-Length: 99999999999999999999999999\r\n",
    b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n",  # no Content-Length at all
    b"Content-Length 12\r\n",  # no colon
    b"Content-Length: 12\r\nContent-Length: 13\r\n",
    b"Content-Length: 0\r\n",
])
def test_a_broken_content_length_is_answered_and_the_next_message_is_read(served, header):
    served.send_raw(header + b"\r\n" + STATE % 7201)
    # What followed the broken headers is skipped up to the next message's Content-Length.
    serves(served)
    assert null_errors(served) == [-32700], served.unmatched
    assert not any(m.get("id") == 7201 for m in served.unmatched)


def test_a_content_length_over_the_limit_is_refused_at_once_and_not_read(served):
    served.send_raw(b"Content-Length: %d\r\n\r\n" % (MAX_FRAME_BYTES + 1) + b"x" * 4096)
    serves(served)
    assert null_errors(served) == [-32600]


def test_a_content_length_shorter_than_the_body_loses_only_that_message(served):
    body = STATE % 7301
    served.send_raw(b"Content-Length: %d\r\n\r\n" % (len(body) - 10) + body)
    serves(served)
    # The cut body, then its tail (not a header): both parse errors; the next message is read.
    assert null_errors(served) == [-32700, -32700]


def test_a_content_length_longer_than_what_comes_is_answered_after_the_stall(served):
    body = STATE % 7401
    served.send_raw(b"Content-Length: %d\r\n\r\n" % (len(body) + 100) + body)
    # Nothing more comes: after OLLIE_LSP_STALL_S (1 s here) the half message is answered, not waited on for ever.
    wait_until(lambda: null_errors(served) == [-32700], "the stalled message answered")
    assert "Content-Length said" in str(served.unmatched)
    serves(served)


def test_input_that_ends_mid_message_is_a_logged_clean_exit(tmp_path, workdir):
    log = tmp_path / "daemon.log"
    daemon = LSPProcess([*DAEMON, "--log-file", str(log)], env=daemon_env(NO_BACKEND))
    daemon.initialize(workdir)
    daemon.send_raw(b"Content-Length: 500\r\n\r\n{\"jsonrpc\": ")
    assert daemon.proc.stdin is not None
    daemon.proc.stdin.close()
    assert daemon.proc.wait(30) == 0
    assert "ended in the middle of a message" in log.read_text()


@contextmanager
def tcp_daemon(workdir: Path, *, env: dict[str, str] | None = None, args: tuple[str, ...] = (),
               process_id: Callable[[socket.socket], int | None] = lambda conn: None,
               ) -> Iterator[tuple[socket.socket, subprocess.Popen]]:
    """A `--tcp` daemon (`env` added, `args` after --tcp) and a connection to it that has sent the initialize with
    the token (and the processId `process_id` gives for the connection)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token = "a-token-of-the-tests-own-choosing"
    proc = subprocess.Popen([*DAEMON, "--tcp", f"127.0.0.1:{port}", *args],
                            env=daemon_env({**NO_BACKEND, "OLLIE_LSP_TOKEN": token, **(env or {})}),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "the daemon never listened"
                time.sleep(0.1)
        with conn:
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "processId": process_id(conn), "rootUri": workdir.as_uri(), "capabilities": {},
                "initializationOptions": {"token": token}}}
            conn.sendall(frame(json.dumps(init).encode()))
            yield conn, proc
    finally:
        proc.kill()
        proc.wait()


def test_tcp_gets_the_same_answers_after_initialize(workdir):
    with tcp_daemon(workdir) as (conn, _):
        conn.sendall(b"Content-Length: -1\r\n\r\n" + frame(b'{"x": "\xff"}') + frame(b"[]") + frame(STATE % 2))
        answers = read_answers(conn, until_id=2)
    assert [a["error"]["code"] for a in answers if a.get("id") is None] == [-32700, -32700, -32600]
    assert answers[-1]["result"]["state"] == "idle"


@pytest.mark.parametrize("leave", ["exit", "half-close"])
def test_a_tcp_client_that_leaves_right_after_a_request_gets_its_whole_answer(workdir, leave):
    cwd = "/nowhere/" + ("d" * 200 + "/") * 45000  # answered with the path: many times what a socket buffers
    new = {"jsonrpc": "2.0", "id": 2, "method": "ollie/session/new", "params": {"cwd": cwd}}
    with tcp_daemon(workdir) as (conn, proc):
        read_answers(conn, until_id=1)
        conn.sendall(frame(json.dumps(new).encode()))
        # Its answer has begun (whole, as Content-Length says), many buffers yet to come: a request still being
        # handled gets ANSWER_ON_END_S at most, a timer a loaded machine ran past (load 20: no answer).
        conn.settimeout(60)
        assert conn.recv(1, socket.MSG_PEEK)
        if leave == "exit":
            conn.sendall(frame(b'{"jsonrpc": "2.0", "method": "exit"}'))
        else:
            conn.shutdown(socket.SHUT_WR)
        answer = read_answers(conn, until_id=2)[-1]
        assert proc.wait(30) in (0, 1)
    assert answer["error"]["code"] == -32602 and f"{cwd} is not an existing directory" in answer["error"]["message"]


def test_a_tcp_request_still_being_handled_when_exit_comes_is_answered(workdir):
    """`exit` in the same write as a request, whose cwd is still being looked up (off the loop) when `exit` is read:
    the daemon waits for its answer (ANSWER_ON_END_S at most) before it ends. The test above leaves once its answer
    has begun, so it covers the flush, not this wait."""
    new = {"jsonrpc": "2.0", "id": 2, "method": "ollie/session/new", "params": {"cwd": "/nowhere/at/all"}}
    with tcp_daemon(workdir) as (conn, proc):
        read_answers(conn, until_id=1)
        conn.sendall(frame(json.dumps(new).encode()) + EXIT)
        answer = read_answers(conn, until_id=2)[-1]
        assert proc.wait(30) == 1
    assert "/nowhere/at/all is not an existing directory" in answer["error"]["message"]


# The daemon's wait on a client that takes nothing (5 s by default): the slow readers below read for longer than it.
FLUSH_STALL = {"OLLIE_FLUSH_STALL_S": "2"}


def test_a_tcp_client_that_reads_its_last_answer_slowly_gets_all_of_it(workdir):
    """The daemon's flush on close waits on a client that keeps reading, however slowly (a loaded machine): it gave
    up FLUSH_ON_CLOSE_S after the client left, with the answer cut off (Bug: failed on CI's loaded cores)."""
    cwd = "/nowhere/" + ("d" * 200 + "/") * 90000  # 18 MB: more than the kernel's socket buffers take
    new = {"jsonrpc": "2.0", "id": 2, "method": "ollie/session/new", "params": {"cwd": cwd}}
    with tcp_daemon(workdir, env=FLUSH_STALL) as (conn, proc):
        read_answers(conn, until_id=1)
        conn.sendall(frame(json.dumps(new).encode()))
        # The reader's pace is what is tested: ~3.5 s for the answer, longer than FLUSH_ON_CLOSE_S (2 s here), never a
        # pause of it. It leaves once the answer is coming (made: a loaded machine takes seconds to make 18 MB of it,
        # which the closing's own bound, not the flush, covers).
        answer = read_answers(conn, until_id=2, pause=0.012, leave=lambda: conn.sendall(EXIT))[-1]
        assert proc.wait(30) in (0, 1)
    assert f"{cwd} is not an existing directory" in answer["error"]["message"]


def test_a_tcp_client_that_stops_reading_but_keeps_its_socket_open_does_not_hold_the_daemon(workdir, tmp_path):
    """A client holding the token asks for a large answer and never reads it, its socket left open: the daemon lived
    on for ever (one client per daemon: no editor could use it again). Once none of its waiting output was taken
    for OLLIE_LSP_READER_STALL_S, the connection is dropped and the daemon ends as when a client leaves."""
    log = tmp_path / "daemon.log"
    cwd = "/nowhere/" + ("d" * 200 + "/") * 45000  # 9 MB: many times what the kernel's socket buffers take
    new = {"jsonrpc": "2.0", "id": 2, "method": "ollie/session/new", "params": {"cwd": cwd}}
    with tcp_daemon(workdir, env={"OLLIE_LSP_READER_STALL_S": "1"}, args=("--log-file", str(log))) as (conn, proc):
        read_answers(conn, until_id=1)
        conn.sendall(frame(json.dumps(new).encode()))
        assert proc.wait(60) in (0, 1), log.read_text()[-2000:]
        # Its side is closed: what the kernel had taken is still there to read, then the end.
        conn.settimeout(60)
        with contextlib.suppress(ConnectionResetError):
            while conn.recv(1 << 20):
                pass
    assert "took none of the daemon's output for 1 s: dropping it" in log.read_text()


def test_a_tcp_client_that_left_and_takes_only_a_trickle_of_its_answer_does_not_hold_the_daemon(workdir, tmp_path):
    """Round 32 judged that a client that left, its receive buffer tiny, reading a kilobyte at a time of a large
    answer kept the daemon for days. The closing counts what the client took from the daemon's own buffer, which the
    kernel drains only once a good part of the socket's send buffer is free (megabytes): a trickle shows as nothing
    taken, and the daemon ends within its 5 s of that (here 2 s; measured: 6 s after the client left at 5)."""
    log = tmp_path / "daemon.log"
    cwd = "/nowhere/" + ("d" * 200 + "/") * 45000  # 9 MB: more than the kernel's socket buffers take
    new = {"jsonrpc": "2.0", "id": 2, "method": "ollie/session/new", "params": {"cwd": cwd}}
    with tcp_daemon(workdir, env=FLUSH_STALL, args=("--log-file", str(log))) as (conn, proc):
        read_answers(conn, until_id=1)
        conn.sendall(frame(json.dumps(new).encode()))
        received = 0
        while received < 1 << 20:  # the answer is coming: all of it waits in the daemon
            received += len(conn.recv(1 << 16))
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # from now on a tiny window
        conn.sendall(EXIT)
        deadline = time.monotonic() + 60
        while proc.poll() is None:  # a kilobyte a second: the pace is what is tested
            assert time.monotonic() < deadline, f"the daemon still runs for a client that took {received} bytes"
            received += len(conn.recv(1024))
            time.sleep(1)
    assert proc.returncode == 1 and received < len(cwd)  # ended with most of the answer never taken
    # By the closing's own give-up, not the exit backstop's (EXIT_BACKSTOP_S later: it too ends with status 1).
    assert "exiting now" not in log.read_text(), log.read_text()[-2000:]


def test_a_tcp_daemon_ends_when_its_clients_process_is_killed_while_another_holds_the_socket(workdir, tmp_path):
    """LSP's processId over --tcp: the client's process (a stand-in holding the connection) is SIGKILLed while another
    (a child that inherited the socket; here this test) keeps it open: the daemon ran on for ever, nobody to serve."""
    log = tmp_path / "daemon.log"
    editors: list[subprocess.Popen] = []

    def editor(conn: socket.socket) -> int:
        editors.append(subprocess.Popen(["sleep", "600"], pass_fds=[conn.fileno()]))
        return editors[0].pid

    with tcp_daemon(workdir, args=("--log-file", str(log)), process_id=editor) as (conn, proc):
        try:
            read_answers(conn, until_id=1)
            wait_until(lambda: f"watching processId {editors[0].pid}:" in log.read_text(), "the watch never began")
            editors[0].kill()
            assert proc.wait(60) == 1, log.read_text()[-2000:]  # ended as on `exit` with no `shutdown` before
        finally:
            editors[0].kill()
            editors[0].wait()
    assert f"the client's process {editors[0].pid} has exited" in log.read_text()


def test_a_tcp_daemon_whose_terminal_closes_ends_as_when_its_client_leaves(workdir, tmp_path):
    """SIGHUP (the terminal `ollie-lsp --tcp` ran in closed) killed it at once, the token file it wrote left behind
    and its sessions unsaved; it now ends as on SIGTERM."""
    token_file = tmp_path / "lsp.token"  # absent: the daemon writes a new token there, and removes it at its end
    with tcp_daemon(workdir, args=("--token-file", str(token_file))) as (conn, proc):
        # Its token is not the test's: the refusal comes once the daemon serves (its signal handlers set).
        conn.settimeout(60)
        assert b"unauthorized: wrong token" in conn.recv(65536)
        assert token_file.exists()
        proc.send_signal(signal.SIGHUP)
        assert proc.wait(60) >= 0
    assert not token_file.exists()


def test_a_flood_of_connections_that_prove_nothing_is_turned_away_at_once(workdir):
    """Round 32: another local process opens connection after connection to a `--tcp` daemon and sends nothing (or
    most of a megabyte): each held a descriptor (and up to 1 MiB) for the 10 s it had to prove the token, so a flood
    ran the daemon out of descriptors or memory while its client worked. Past a few at once, each is answered at once."""
    from ollie_lsp.tcp import MAX_UNPROVEN

    with tcp_daemon(workdir) as (conn, proc):
        read_answers(conn, until_id=1)
        port = conn.getpeername()[1]
        flood = [socket.create_connection(("127.0.0.1", port)) for _ in range(MAX_UNPROVEN + 40)]
        try:
            refused = []
            for sock in flood[MAX_UNPROVEN:]:  # those past the first few, answered before their 10 s are up
                sock.settimeout(60)
                refused.append(sock.recv(65536))
            assert all(b"connections are proving their token already" in answer for answer in refused), refused[0]
            conn.sendall(frame(STATE % 2))
            assert read_answers(conn, until_id=2)[-1]["result"]["state"] == "idle"
        finally:
            for sock in flood:
                sock.close()


class _StdoutPipe:
    """A stdio daemon's stdout as `read_answers` reads a connection (a pipe, as an editor's is)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        self._fd = proc.stdout.fileno()

    def settimeout(self, _: float) -> None:
        """A pipe read has none: pytest's own timeout ends a daemon that never answers."""

    def recv(self, size: int) -> bytes:
        return os.read(self._fd, size)


def test_a_stdio_client_that_reads_its_last_answer_slowly_gets_all_of_it(workdir):
    """As over TCP: the flush on close waits on a client that keeps reading its stdout pipe, however slowly; it gave
    up FLUSH_ON_CLOSE_S after the client left, and the process's end cut the answer off."""
    cwd = "/nowhere/" + ("d" * 200 + "/") * 90000  # 18 MB: ~290 reads of a 64 KiB pipe
    proc = subprocess.Popen(DAEMON, env=daemon_env({**NO_BACKEND, **FLUSH_STALL}), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": workdir.as_uri(), "capabilities": {}}}
        proc.stdin.write(frame(json.dumps(init).encode()))
        proc.stdin.flush()
        read_answers(_StdoutPipe(proc), until_id=1)  # type: ignore[arg-type]  # reads as a socket does
        new = {"jsonrpc": "2.0", "id": 2, "method": "ollie/session/new", "params": {"cwd": cwd}}
        proc.stdin.write(frame(json.dumps(new).encode()))
        proc.stdin.flush()

        def leave() -> None:
            assert proc.stdin is not None
            proc.stdin.write(EXIT)
            proc.stdin.close()

        # As over TCP: ~3.5 s of reading, the client gone once the answer is coming.
        answer = read_answers(_StdoutPipe(proc), until_id=2, pause=0.012, leave=leave)[-1]  # type: ignore[arg-type]
        assert proc.wait(30) in (0, 1)
    finally:
        proc.kill()
        proc.wait()
    assert f"{cwd} is not an existing directory" in answer["error"]["message"]


def read_answers(conn: socket.socket, *, until_id: int, pause: float = 0,
                 leave: Callable[[], None] | None = None) -> list[dict]:
    """The messages read off `conn` until the answer with `until_id` (requests to the client skipped); `pause`: a
    slow reader's pause after each chunk; `leave`: called once a megabyte came (an answer that large is coming)."""
    conn.settimeout(60)
    data, answers, received = bytearray(), [], 0
    while not answers or answers[-1].get("id") != until_id:
        end = data.find(b"\r\n\r\n")  # a buffer taken from in place: a long answer is read in linear time
        if end >= 0:
            length = int(re.search(rb"Content-Length: (\d+)", data[:end]).group(1))  # type: ignore[union-attr]
            if len(data) >= end + 4 + length:
                message = json.loads(data[end + 4:end + 4 + length])
                del data[:end + 4 + length]
                if "method" not in message:
                    answers.append(message)
                continue
        chunk = conn.recv(65536)
        assert chunk, "the daemon closed the connection"
        data += chunk
        received += len(chunk)
        if leave is not None and received > 1 << 20:
            leave()
            leave = None
        time.sleep(pause)
    return answers


def test_nothing_after_exit_is_handled_even_in_the_same_write(daemon):
    daemon.send_raw(frame(b'{"jsonrpc": "2.0", "method": "exit"}') + frame(STATE % 7501))
    assert daemon.proc.wait(30) == 1  # exit without shutdown: status 1, as LSP says
    assert not any(m.get("id") == 7501 for m in daemon.unmatched), daemon.unmatched
