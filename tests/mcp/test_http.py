"""A streamable HTTP MCP server (the SDK's, over uvicorn) reached by the daemon's host: tools, prompts."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ollie.mcp.config import ServerSpec
from ollie.mcp.host import McpHost

SERVER = Path(__file__).with_name("server.py")
pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(SERVER), "http", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    try:
        for _ in range(600):  # until it listens (it exits on a start failure)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, "the HTTP server did not start"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()


async def test_http_server_tools_and_prompts(http_server: str, tmp_path: Path) -> None:
    host = McpHost(cwd=tmp_path, environ={}, network_from="default")
    try:
        await host.add({"web": ServerSpec("web", url=http_server)}, wait=60)
        (status,) = host.status()
        assert (status["state"], status["transport"]) == ("ready", "http"), status
        result = await host.call("mcp__web__add", {"a": 1, "b": 2})
        assert (result.text, result.is_error) == ("3", False)
        owner = host.prompt_owner("web", "review")
        assert owner is not None and "review x.py" in await owner.get_prompt("review", {"path": "x.py"})
    finally:
        await host.aclose()
