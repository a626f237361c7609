"""The daemon's start-up path: a first turn imports no pydantic; the fork server starts at `initialized`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from pathlib import Path

from lsprotocol import types
from pytest_lsp import ClientServerConfig

from ollie.testing import Reply

from .conftest import capabilities, child_env, make_client

# The daemon exactly as `python -m ollie_lsp` runs it, with an audit hook that logs, in the daemon's own
# process (not the tool processes it forks), every pydantic module it loads, and the engine as a witness.
_WATCHED = """
import os, runpy, sys
log, pid = sys.argv.pop(1), os.getpid()
def hook(event, args):
    if event == "import" and os.getpid() == pid and args[0].partition(".")[0] in ("pydantic", "ollie"):
        if args[0].partition(".")[0] == "pydantic" or args[0] == "ollie.agent.core":
            with open(log, "a") as f:
                f.write(args[0] + "\\n")
sys.addaudithook(hook)
runpy.run_module("ollie_lsp", run_name="__main__", alter_sys=True)
"""


async def _first_turn(log: Path, env: dict[str, str], workspace: Path) -> list[str]:
    """Start the watched daemon, answer a first turn, read the state; the modules it logged."""
    config = ClientServerConfig(server_command=[sys.executable, "-c", _WATCHED, str(log)],
                                client_factory=make_client, server_env=child_env(env))
    client = await config.start()
    try:
        await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=capabilities(), root_uri=workspace.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")])), 30)
        result = await asyncio.wait_for(client.protocol.send_request_async("ollie/submit", {"text": "hi"}), 30)
        assert result["reply"] == "hello"
        await asyncio.wait_for(client.protocol.send_request_async("ollie/state", {}), 30)
        await asyncio.wait_for(client.shutdown_session(), 20)
    finally:
        await client.stop()
    return log.read_text().split() if log.exists() else []


async def test_a_first_turn_imports_no_pydantic(llm, tmp_path):
    llm.script(Reply.text("hello"), Reply.text("hello"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    # The very first start validates the default agent config and the sandbox policies in full, with pydantic
    # (then kept in the validated-config cache): this also shows the hook sees pydantic when it loads.
    first = await _first_turn(tmp_path / "first.log", llm.env(), workspace)
    assert "ollie.agent.core" in first and "pydantic" in first
    # Every later start: the engine loads, pydantic never does (params are checked by ollie_lsp.params).
    later = await _first_turn(tmp_path / "later.log", llm.env(), workspace)
    assert "ollie.agent.core" in later
    assert [m for m in later if m.startswith("pydantic")] == []


def _fork_servers(daemon_pid: int) -> list[int]:
    """The daemon's children that run the sandbox's fork server."""
    # Each thread's own children: the fork server is started from the engine-loading thread.
    children = [pid for task in Path(f"/proc/{daemon_pid}/task").iterdir()
                for pid in (task / "children").read_text().split()]
    found = []
    for pid in children:
        with contextlib.suppress(OSError):
            if b"forkserver.py" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
    return found


async def test_the_fork_server_starts_at_initialized_before_any_spawn(start_daemon, tmp_path):
    # An agent whose prompt is plain text: nothing would spawn a process before a tool call.
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "plain.json").write_text(json.dumps({"prompt": "You are plain."}))
    daemon = await start_daemon(env={"OLLIE_AGENTS_DIR": str(agents)}, init_options={"agent": "plain"})
    pid = daemon.client._server.pid  # type: ignore[attr-defined]
    deadline = time.monotonic() + 10
    while not _fork_servers(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert len(_fork_servers(pid)) == 1
    assert (await daemon.request("ollie/state", {}))["agent"] == "plain"
