"""HTTP MCP servers (the SDK's, over uvicorn: streamable HTTP and legacy SSE) reached by the daemon's host."""

from __future__ import annotations

import asyncio
import http.server
import json
import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from ollie.backend.urls import shown_url
from ollie.mcp import client
from ollie.mcp.config import ServerSpec
from ollie.mcp.host import McpHost

SERVER = Path(__file__).with_name("server.py")
pytestmark = pytest.mark.timeout(120)


class HttpServer:
    """tests/mcp/server.py serving `transport` on a fixed port: started, killed, started again."""

    def __init__(self, transport: str, home: Path) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.transport, self.home = transport, home
        self.url = f"http://127.0.0.1:{self.port}/{'sse' if transport == 'sse' else 'mcp'}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, str(SERVER), self.transport, str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     env={"HOME": str(self.home), "PATH": "/usr/bin:/bin"})
        for _ in range(1200):  # until it listens (it exits on a start failure)
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                assert self.proc.poll() is None, "the HTTP server did not start"
                time.sleep(0.05)

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(params=["http", "sse"])
def http_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[HttpServer]:
    server = HttpServer(request.param, tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()


def spec(server: HttpServer) -> ServerSpec:
    return ServerSpec("web", url=server.url, sse=server.transport == "sse")


async def test_http_server_tools_and_prompts(http_server: HttpServer, tmp_path: Path) -> None:
    host = McpHost(cwd=tmp_path, environ={}, network_from="default")
    try:
        await host.add({"web": spec(http_server)}, wait=60)
        (status,) = host.status()
        assert (status["state"], status["transport"]) == ("ready", http_server.transport), status
        result = await host.call("mcp__web__add", {"a": 1, "b": 2})
        assert (result.text, result.is_error) == ("3", False)
        owner = host.prompt_owner("web", "review")
        assert owner is not None and "review x.py" in await owner.get_prompt("review", {"path": "x.py"})
    finally:
        await host.aclose()


async def test_a_dead_server_is_shown_failed_and_reconnected(http_server: HttpServer, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client, "BACKOFF_S", ())  # given up at once: what a user sees after the backoff
    host = McpHost(cwd=tmp_path, environ={}, network_from="default")
    try:
        await host.add({"web": spec(http_server)}, wait=60)
        assert host.status()[0]["state"] == "ready"
        http_server.kill()
        async with asyncio.timeout(3):  # (it waited out the ping's 5 s: the SDK left the ping of a dead server pending)
            await host.probe()  # what /mcp and ollie/mcp/list do before listing
        (status,) = host.status()
        assert status["state"] == "failed" and status["error"] and status["tools"] == [], status
        # Back again: the next use reconnects.
        http_server.start()
        result = await host.call("mcp__web__add", {"a": 2, "b": 2})
        assert (result.text, result.is_error, host.status()[0]["state"]) == ("4", False, "ready")
        # /mcp restart reconnects at once too.
        await host.restart(["web"])
        assert host.status()[0]["state"] == "ready"
        assert (await host.call("mcp__web__add", {"a": 3, "b": 2})).text == "5"
    finally:
        await host.aclose()


def test_an_acp_clients_sse_server_is_reached_over_sse() -> None:
    from acp.schema import HttpHeader, SseMcpServer

    from ollie.mcp.config import from_acp

    sent = SseMcpServer(type="sse", name="old", url="http://127.0.0.1:1/sse", headers=[HttpHeader(name="A", value="b")])
    (spec,) = from_acp([sent]).values()
    assert (spec.transport, spec.url, dict(spec.headers)) == ("sse", "http://127.0.0.1:1/sse", {"A": "b"})



async def test_an_unreachable_server_is_named_by_its_url_with_what_to_do(http_server: HttpServer, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # Bug: `/mcp` and the model read "All connection attempts failed": which server, where, and what to do?
    monkeypatch.setattr(client, "BACKOFF_S", ())
    host = McpHost(cwd=tmp_path, environ={}, network_from="default")
    config = tmp_path / "mcp.json"
    secret = attrs.evolve(spec(http_server), url=http_server.url + "?token=s3cret", source=str(config))
    hint = f"; check that the server runs there and that its url and headers in {config} are right, then /mcp restart web"
    try:
        await host.add({"web": secret}, wait=60)
        assert host.status()[0]["state"] == "ready"
        http_server.kill()
        # The model's call, once the server is gone (it fails, or finds it failed on its way).
        told = (await host.call("mcp__web__add", {"a": 1, "b": 2})).text
        assert told.startswith(f"MCP server 'web' went away during the call ({http_server.url}?...: "), told
        again = await host.call("mcp__web__add", {"a": 1, "b": 2})
        assert (again.text.startswith(f"MCP server 'web' failed: {http_server.url}?...: "), again.is_error) == (True, True)
        # /mcp shows the server's state and error.
        (status,) = host.status()
        assert status["state"] == "failed" and status["error"].startswith(f"{http_server.url}?...: "), status
        for text in (told, again.text, status["error"]):
            assert text.rstrip(")").endswith(hint) and "s3cret" not in text, text
    finally:
        await host.aclose()


def test_a_shown_url_keeps_no_credentials() -> None:
    assert shown_url("https://user:pw@mcp.example.com:8443/v1/mcp?key=k#f") == "https://mcp.example.com:8443/v1/mcp?..."
    assert shown_url("http://[::1]:9/mcp") == "http://[::1]:9/mcp"
    assert shown_url("http://user:pw@host:99999/v1") == "http://host/v1"  # a port out of range: the host alone
    assert shown_url("user:pw@host") == ""  # no host to show (nor the password urlsplit takes for a path)


class _Endless(http.server.BaseHTTPRequestHandler):
    """Answers every POST with one message that never ends (64 MiB of it, then silence), counting what it got out."""

    protocol_version = "HTTP/1.0"  # the body runs until the connection closes

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", self.server.kind)  # type: ignore[attr-defined]
        self.end_headers()
        try:
            self.wfile.write(b'data: {"jsonrpc": "2.0", "id": 0, "result": "')
            for _ in range(64):
                self.wfile.write(b"x" * (1 << 20))
                self.server.sent += 1 << 20  # type: ignore[attr-defined]
            time.sleep(40)
        except OSError:
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("kind", ["application/json", "text/event-stream"])
async def test_a_server_answering_without_end_is_read_no_further_than_a_message(tmp_path: Path, kind: str) -> None:
    """An HTTP server whose answer never ends (a workspace's, once allowed): the daemon read it all into memory
    (+550 MB for 400 MB sent); now it stops past one message's bound (8 MiB), as it does for a stdio server's line,
    and the request fails at once saying so (an event stream's waited out the start's 30 s: the SDK dropped the
    error; a JSON answer's said "Connection closed")."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Endless)
    server.daemon_threads, server.kind, server.sent = True, kind, 0  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host = McpHost(cwd=tmp_path, environ={"PATH": "/usr/bin:/bin"}, network_from="default")
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
        await host.add({"h": ServerSpec("h", url=url)}, wait=60)
        (status,) = host.status()
        assert status["state"] == "failed" and status["error"].startswith(
            f"{url}: the server sent a message over 8388608 bytes; ") and status["error"].endswith("/mcp restart h")
        assert server.sent < 32 << 20, server.sent  # type: ignore[attr-defined]
    finally:
        await host.aclose()
        server.shutdown()


PINNED = """
import asyncio, json, socket, subprocess, sys, time
from pathlib import Path
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
subprocess.run(["mount", "--bind", sys.argv[1], "/etc/hosts"], check=True)  # mcp.test is 127.0.0.1 here
port = int(sys.argv[3])
server = subprocess.Popen([sys.executable, sys.argv[2], "http", str(port)], stderr=subprocess.DEVNULL)
while socket.socket().connect_ex(("127.0.0.1", port)):
    time.sleep(0.05)
from ollie.mcp.config import ServerSpec
from ollie.mcp.host import McpHost

async def main():
    out = {}
    local = {"Host": f"127.0.0.1:{port}"}  # the SDK's server answers only to its own name (its rebinding guard)
    for name, url, home in [("ws_name", f"http://mcp.test:{port}/mcp", "workspace/0123/x"),
                            ("ws_literal", f"http://127.0.0.1:{port}/mcp", "workspace/0123/y"),
                            ("users", f"http://mcp.test:{port}/mcp", "")]:
        host = McpHost(cwd=Path.cwd(), environ={"PATH": "/usr/bin:/bin"}, network_from="default")
        await host.add({name: ServerSpec(name, url=url, home=home, headers=local)}, wait=60)
        out[name] = host.status()[0]["state"] + ": " + host.status()[0]["error"]
        await host.aclose()
    print(json.dumps(out))

asyncio.run(main())
server.kill()
"""


async def test_a_workspace_servers_name_is_reached_only_at_a_public_address(tmp_path: Path) -> None:
    """A workspace's `.mcp.json` naming `http://mcp.test/` (the question shows that name), which resolves to this
    machine: the daemon itself connected there (not a step: no proxy), so what listens on its loopback got the
    server's requests and the workspace's headers. Now a workspace's server name must resolve to a public address,
    as a step's host must; a loopback literal, shown as such, and the user's own servers are reached as before."""
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 mcp.test\n")
    script = tmp_path / "pinned.py"
    script.write_text(PINNED)
    run = await asyncio.create_subprocess_exec("unshare", "--net", "--mount", sys.executable, str(script), str(hosts),
                                               str(SERVER), "8765", stdout=asyncio.subprocess.PIPE, cwd=tmp_path)
    out = json.loads((await run.communicate())[0])
    assert out["ws_name"].startswith("failed:") and "resolves only to non-public addresses" in out["ws_name"], out
    assert out["ws_literal"] == "ready: ", out["ws_literal"]
    assert out["users"] == "ready: ", out["users"]


class _SseMessagesRefused(http.server.BaseHTTPRequestHandler):
    """A legacy SSE server whose event stream names its message endpoint, which answers every message 404."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b"event: endpoint\ndata: /messages?session_id=abc\n\n")
        self.wfile.flush()
        self.rfile.read(1)  # open until the client leaves

    def do_POST(self) -> None:  # noqa: N802
        page = b"<html><body>Not here</body></html>"
        self.send_response(404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, *args: object) -> None:
        pass


async def test_a_legacy_sse_server_whose_message_endpoint_refuses_fails_at_once_saying_what_answered(
        tmp_path: Path) -> None:
    """The message endpoint of a legacy SSE server answered 404: the SDK only logged it, and the start (the first
    turn with it) waited out its 30 s to say "did not answer"."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _SseMessagesRefused)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host = McpHost(cwd=tmp_path, environ={"PATH": "/usr/bin:/bin"}, network_from="default")
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/sse"
        began = time.monotonic()
        await host.add({"old": ServerSpec("old", url=url, sse=True)}, wait=60)
        (status,) = host.status()
        assert status["state"] == "failed" and status["error"].startswith(
            f"{url}: the server's message endpoint answered HTTP 404 Not Found (text/html); "), status
        assert time.monotonic() - began < 20, "at once, not after the start's 30 s"
    finally:
        await host.aclose()
        server.shutdown()
