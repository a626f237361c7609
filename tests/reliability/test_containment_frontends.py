"""The front ends' containment (issue 11 items 7 and 9): `ollie-lsp --tcp` needs the token; `ollie` prints no escapes.

The daemon runs as a real subprocess listening on a free loopback port, spoken
to by raw sockets (what sandboxed tool code could do) and by pygls' client (what
an editor does). The terminal client runs as a real process on a pty against
the scripted LLM server, and the pty's raw bytes are checked.
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bench.lspwire import frame
from ollie.testing import Reply
from tests.reliability.conftest import DAEMON, daemon_env

OLLIE = [sys.executable, "-m", "ollie.cli"]
PROMPT = r"default> "  # the terminal's prompt: the agent's name
UNAUTHORIZED, BUSY = -32003, -32004
# ollie's own styling (render.py): reset, dim, red, yellow, cyan. Every other ESC came from the model or a tool.
OWN_SGR = re.compile(rb"\x1b\[(?:0|2|31|33|36)m")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class TcpDaemon:
    """`ollie-lsp --tcp 127.0.0.1:PORT` as a subprocess; `token_path` is the file its announcement names."""

    def __init__(self, tmp_path: Path, cwd: Path, env: dict[str, str] | None = None, args: tuple[str, ...] = ()):
        self.port = free_port()
        self.err_path = tmp_path / f"daemon-{self.port}.err"
        with self.err_path.open("wb") as err:
            self.proc = subprocess.Popen([*DAEMON, "--tcp", f"127.0.0.1:{self.port}", *args], env=daemon_env(env),
                                         cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 30
        while "listening on" not in self.stderr():
            assert self.proc.poll() is None, self.stderr()
            assert time.monotonic() < deadline, self.stderr()
            time.sleep(0.05)
        found = re.search(r"the token in (\S+)", self.stderr())
        self.token_path = Path(found.group(1)) if found else None

    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")

    def token(self) -> str:
        assert self.token_path is not None
        return self.token_path.read_text().strip()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


def message(method: str, params: Any = None, msg_id: int | None = None) -> bytes:
    """One LSP-framed JSON-RPC message (a notification when `msg_id` is None)."""
    payload: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if msg_id is not None:
        payload["id"] = msg_id
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def initialize(root: Path, options: dict[str, Any] | None, msg_id: int = 1) -> bytes:
    params: dict[str, Any] = {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}
    if options is not None:
        params["initializationOptions"] = options
    return message("initialize", params, msg_id)


def replies_until_closed(sock: socket.socket, *, timeout: float = 15) -> list[dict[str, Any]]:
    """Every message the daemon sends on `sock` until it closes the connection (fails if it stays open)."""
    sock.settimeout(timeout)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
        out.append(json.loads(rest[:length]))
        data = rest[length:]
    return out


def attempt(port: int, data: bytes) -> list[dict[str, Any]]:
    """Connect, send `data` at once, and collect what comes back before the daemon hangs up."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        return replies_until_closed(sock)


def test_tcp_without_the_right_token_runs_nothing_and_is_cut_off(tmp_path, workdir):
    marker = workdir / "marker"
    command = message("ollie/command", {"line": f"!touch {marker}"}, msg_id=2)
    daemon = TcpDaemon(tmp_path, workdir)
    try:
        assert daemon.token_path is not None and daemon.token_path.is_file()
        assert stat.S_IMODE(daemon.token_path.stat().st_mode) == 0o600
        assert daemon.token() not in daemon.stderr()  # the path is printed, never the secret
        attempts = {
            "command first": message("ollie/command", {"line": f"!touch {marker}"}, msg_id=1),
            "no token": initialize(workdir, None) + message("initialized", {}) + command,
            "wrong token": initialize(workdir, {"token": "x" * 43}) + message("initialized", {}) + command,
            "token of the wrong type": initialize(workdir, {"token": 1234}) + command,
            "not LSP at all": b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
            "nested past the parser's limit": frame(b"[" * 200_000 + b"]" * 200_000),
            "not UTF-8": frame(b'{"method": "initialize", "id": 1, "params": "\xff"}'),
        }
        for name, data in attempts.items():
            replies = attempt(daemon.port, data)
            # One error, then the connection is closed: the pipelined command is never answered, never run.
            assert len(replies) == 1, (name, replies)
            assert replies[0]["error"]["code"] == UNAUTHORIZED, (name, replies)
            assert "unauthorized" in replies[0]["error"]["message"]
            assert not marker.exists(), name
        assert daemon.proc.poll() is None  # refused clients do not end the daemon
        # The same command with the token does run: the refusals above were the gate, not a broken command.
        with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as sock:
            sock.sendall(initialize(workdir, {"token": daemon.token()}) + message("initialized", {}) + command)
            deadline = time.monotonic() + 60
            while not marker.exists():
                assert time.monotonic() < deadline, daemon.stderr()
                time.sleep(0.05)
        daemon.proc.terminate()
        assert daemon.proc.wait(timeout=30) == 0
        assert not daemon.token_path.exists()  # a token made for this run goes with it
    finally:
        daemon.stop()


def test_tcp_with_the_token_serves_an_editor_and_refuses_a_second_client(scripted_llm, tmp_path, workdir, agents_dir):
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    from ollie_lsp.protocol import raw_params_converter

    llm = scripted_llm("openai")
    llm.script(Reply.text("hello from the model"))
    token = "a-token-the-editor-chose-0123456789"
    daemon = TcpDaemon(tmp_path, workdir, env={**llm.env(), "OLLIE_AGENTS_DIR": str(agents_dir),
                                               "OLLIE_LSP_TOKEN": token})
    marker = workdir / "taken-over"

    async def editor() -> dict[str, Any]:
        client = LanguageClient("editor", "1", converter_factory=raw_params_converter)
        await client.start_tcp("127.0.0.1", daemon.port)
        result = await client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=workdir.as_uri(),
            initialization_options={"token": token}))
        assert "ollie" in result.capabilities.experimental
        client.initialized(types.InitializedParams())
        reply = await asyncio.wait_for(client.protocol.send_request_async("ollie/submit", {"text": "hi"}), 60)
        # A second client, even one that knows the token, cannot take the session over.
        second = await asyncio.to_thread(attempt, daemon.port, initialize(workdir, {"token": token})
                                         + message("ollie/command", {"line": f"!touch {marker}"}, msg_id=2))
        state = await asyncio.wait_for(client.protocol.send_request_async("ollie/state", {}), 30)
        await client.shutdown_async(None)
        client.exit(None)
        return {"reply": reply, "second": second, "state": state}

    try:
        out = asyncio.run(asyncio.wait_for(editor(), 120))
        assert out["reply"]["reply"] == "hello from the model" and out["reply"]["stop"] == "end"
        assert len(out["second"]) == 1 and out["second"][0]["error"]["code"] == BUSY, out["second"]
        assert not marker.exists()
        assert out["state"]["state"] == "idle"  # the first client's connection still works
        assert daemon.proc.wait(timeout=30) == 0  # its client gone, the daemon ends
        assert "OLLIE_LSP_TOKEN" in daemon.stderr() and token not in daemon.stderr()
    finally:
        daemon.stop()


def test_tcp_refuses_a_non_loopback_address_and_a_token_file_others_can_read(tmp_path):
    port = free_port()
    out = subprocess.run([*DAEMON, "--tcp", f"0.0.0.0:{port}"], env=daemon_env(), capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 2
    assert "loopback only" in out.stderr and "ssh" in out.stderr
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    loose = tmp_path / "token"
    loose.write_text("a-token-that-is-long-enough\n")
    loose.chmod(0o644)
    out = subprocess.run([*DAEMON, "--tcp", f"127.0.0.1:{port}", "--token-file", str(loose)], env=daemon_env(),
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "chmod 600" in out.stderr
    # A home that is not there: pathlib raised, and the daemon died with a traceback.
    out = subprocess.run([*DAEMON, "--tcp", f"127.0.0.1:{port}", "--token-file", "~nosuchuser-ollie/token"],
                         env=daemon_env(), capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert out.returncode == 2 and "--token-file ~nosuchuser-ollie/token" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and not list(tmp_path.glob("~*"))


def run_on_a_pty(args: list[str], env: dict[str, str], cwd: Path, lines: list[tuple[str, str]], *,
                 timeout: float = 90) -> bytes:
    """Run `ollie ARGS` with a pty as its terminal; type each `(pattern, line)`'s line once what it printed since the
    last line shows the pattern (a regex, styles aside), as a person answers what they see, then Ctrl-D at the next
    prompt; the raw bytes it printed. (Lines typed all at once would read as one pasted prompt.)"""
    master, slave = pty.openpty()
    proc = subprocess.Popen([*OLLIE, *args], env={**daemon_env(env), "TERM": "xterm-256color"}, cwd=cwd,
                            stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    output = bytearray()
    grew = threading.Condition()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the last holder of the slave side is gone
                chunk = b""
            with grew:
                output.extend(chunk)
                grew.notify_all()
            if not chunk:
                return

    def shown(pattern: str, after: int) -> int:
        """Where `pattern` ends in the output's text past `after`, once it shows."""
        def found() -> re.Match[str] | None:
            return re.compile(pattern).search(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", output.decode(errors="replace")), after)
        with grew:
            assert grew.wait_for(found, timeout=timeout), f"{pattern!r} never showed:\n{output.decode(errors='replace')}"
            match = found()
            assert match is not None
            return match.end()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        at = 0
        for pattern, line in [*lines, (PROMPT, "\x04")]:
            at = shown(pattern, at)
            os.write(master, line.encode() + (b"" if line == "\x04" else b"\n"))  # Ctrl-D on an empty line: the end
        assert proc.wait(timeout=timeout) == 0, bytes(output).decode(errors="replace")
        reader.join(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return bytes(output)


def foreign_controls(raw: bytes) -> bytes:
    """What is left of the pty's output once ollie's own SGR codes and the pty's CR-LF are taken out: no controls."""
    rest = OWN_SGR.sub(b"", raw).replace(b"\r\n", b"\n")
    text = rest.decode("utf-8", errors="replace")
    return bytes(c for c in rest if c < 0x20 and c not in b"\n\t") + "".join(
        c for c in text if 0x80 <= ord(c) <= 0x9f or 0x202a <= ord(c) <= 0x202e or 0x2066 <= ord(c) <= 0x2069
    ).encode()


def test_terminal_prints_no_escape_from_a_tool_or_the_model(scripted_llm, tmp_path):
    work = tmp_path / "proj"
    work.mkdir()
    (work / "README.md").write_text(
        "\x1b[2J\x1b[H All tests passed\n\x1b]52;c;ZXZpbA==\x07clipboard\nbidi \u202eevil\u202c\n", encoding="utf-8")
    llm = scripted_llm("openai")
    llm.script(
        Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_read", "args": ["README.md"]}]})),
        Reply.text("Done\x1b]0;title\x07 reading.\rOverwritten? \x9b31mno\x1b[0m"),
    )
    raw = run_on_a_pty(["--cwd", str(work)], llm.env(), work,
                       [(PROMPT, "read the readme"), (PROMPT, "!printf 'sh\\033[2J\\033]0;pwn\\007ell-out\\r\\n'")])
    assert b"\x1b" in raw  # colour was on: the check below is about foreign sequences, not all of them
    assert foreign_controls(raw) == b"", raw
    text = raw.decode("utf-8", errors="replace")
    assert "All tests passed" in text and "clipboard" in text  # shown, as inert text
    assert "Done reading.Overwritten? no" in text  # the model's text, less its title and CR
    assert "shell-out" in text  # a `!` command's output too


def test_elevation_prompt_shows_control_characters_escaped(scripted_llm, tmp_path):
    work, scratch = tmp_path / "proj", tmp_path / "scratch"
    work.mkdir()
    scratch.mkdir()
    code = "echo hi\r\x1b[2Kecho harmless"
    llm = scripted_llm("openai")
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": code, "elevated": True}]})),
               Reply.text("not run"))
    raw = run_on_a_pty(["--cwd", str(work)], {**llm.env(), "TMPDIR": str(scratch)}, work,
                       [(PROMPT, "go"), (r"Allow\? \[y\]es once", "n")])
    text = raw.decode("utf-8", errors="replace")
    assert "Allow? [y]es once, [n]o, [f]eedback: " in text
    assert "echo hi\\r\\x1b[2Kecho harmless" in text, text  # exactly what would run, escapes visible
    assert "shown escaped" in text
    assert foreign_controls(raw) == b"", raw
    assert "not run" in text
