"""The npm reference filesystem server, run as users run it (an npm install's bin): contained like any other."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ollie.mcp.config import ServerSpec
from ollie.mcp.host import McpHost

BIN = Path(__file__).parent / "npm" / "node_modules" / ".bin" / "mcp-server-filesystem"
pytestmark = pytest.mark.timeout(180)


async def test_the_filesystem_server_reads_the_workspace_and_cannot_write_it(tmp_path: Path) -> None:
    if not BIN.exists() or shutil.which("node") is None:
        pytest.fail("node or the filesystem server is missing: run scripts/setup.d/45-mcp.sh (scripts/test does)")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("hello from the workspace\n")
    host = McpHost(cwd=ws, environ={"PATH": "/usr/local/bin:/usr/bin:/bin"}, network_from="default")
    try:
        await host.add({"fs": ServerSpec("fs", command=str(BIN), args=(str(ws),))}, wait=120)
        (status,) = host.status()
        assert status["state"] == "ready", status
        kinds = {t["tool"]: t["kind"] for t in status["tools"]}
        assert kinds["read_text_file"] == "read" and kinds["write_file"] == "other"
        read = await host.call("mcp__fs__read_text_file", {"path": str(ws / "hello.txt")})
        assert (read.text, read.is_error) == ("hello from the workspace\n", False)
        # It offers writes; its sandbox does not allow them.
        wrote = await host.call("mcp__fs__write_file", {"path": str(ws / "new.txt"), "content": "x"})
        assert wrote.is_error and not (ws / "new.txt").exists()
    finally:
        await host.aclose()
