"""A hostile MCP server is contained: its sandbox keeps secrets and the workspace out of reach, floods are cut."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import sys
from pathlib import Path

import pytest

from ollie.mcp import client
from ollie.mcp.client import MAX_RESULT_BYTES
from ollie.mcp.config import ServerSpec
from ollie.mcp.host import McpHost
from ollie.sandbox.spawn import fork_server
from tests.procs import processes_with
from tests.stalls import LoopTicks

SERVER = Path(__file__).with_name("server.py")
pytestmark = pytest.mark.timeout(180)


async def start(tmp_path: Path, *, network_from: str = "default") -> tuple[McpHost, list[str]]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "main.py").write_text("print('hi')\n")
    host = McpHost(cwd=workspace, environ={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "sk-secret"},
                   network_from=network_from)
    told: list[str] = []
    host.notify = told.append
    # The workspace after "hostile" (unread by the server) tells this test's servers from other tests' at once.
    await host.add({"h": ServerSpec("h", command=sys.executable, args=(str(SERVER), "hostile", str(workspace)),
                                    env={"TOKEN": "given"})}, wait=60)
    assert host.status()[0]["state"] == "ready", host.status()
    return host, told


async def call(host: McpHost, tool: str, **args: object) -> str:
    result = await host.call(f"mcp__h__{tool}", args)
    return result.text


async def test_secrets_and_the_workspace_are_out_of_reach(tmp_path: Path, ssh_home: Path) -> None:
    host, _ = await start(tmp_path)
    try:
        assert (await call(host, "read_file", path=str(ssh_home / ".ssh" / "id_ed25519"))).startswith("denied")
        # The workspace is readable, never writable, though the tool claims to only read.
        assert await call(host, "read_file", path=str(tmp_path / "ws" / "main.py")) == "print('hi')\n"
        assert (await call(host, "write_file", path=str(tmp_path / "ws" / "main.py"))).startswith("denied")
        assert (await call(host, "write_file", path=str(tmp_path / "elsewhere"))).startswith("denied")
        assert (tmp_path / "ws" / "main.py").read_text() == "print('hi')\n"
        # The daemon's environment (API keys) is not the server's: only what its config gave it.
        environ = await call(host, "read_file", path="/proc/self/environ")
        assert "sk-secret" not in environ and "TOKEN=given" in environ
    finally:
        await host.aclose()


async def test_a_workspace_servers_env_naming_home_or_tmpdir_grants_it_nothing(tmp_path: Path, ssh_home: Path) -> None:
    """A workspace's `.mcp.json` entry whose `env` says `HOME` (or `TMPDIR`) is a dir outside, `/etc` say: the
    question shows the variable, not that the server's policy took it as its own dir and made it writable."""
    ws, homes, tmps = tmp_path / "ws", tmp_path / "homes", tmp_path / "tmps"
    for directory in (ws, homes, tmps):
        directory.mkdir()
    host = McpHost(cwd=ws, environ={"PATH": "/usr/bin:/bin"}, network_from="default")
    await host.add({"h": ServerSpec("h", command=sys.executable, args=(str(SERVER), "hostile", str(ws)),
                                    env={"HOME": str(homes), "TMPDIR": str(tmps)}, home="workspace/0123/h",
                                    source=str(ws / ".mcp.json"))}, wait=60)
    try:
        assert host.status()[0]["state"] == "ready", host.status()
        for directory in (homes, tmps):
            assert (await call(host, "write_file", path=str(directory / "planted"))).startswith("denied")
        assert not list(homes.iterdir()) and not list(tmps.iterdir())
    finally:
        await host.aclose()


def _servers_running(tmp_path: Path) -> list[int]:
    """The pids of the hostile servers `start(tmp_path)` started (other workers' tests run the same server)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and f"{SERVER}\0hostile\0{tmp_path / 'ws'}\0".encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


async def test_the_servers_processes_die_with_the_session(tmp_path: Path, ssh_home: Path) -> None:
    host, _ = await start(tmp_path)
    assert _servers_running(tmp_path)
    await host.aclose()
    assert _servers_running(tmp_path) == []


async def test_no_network_under_a_policy_without_it(tmp_path: Path, ssh_home: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    try:
        host, _ = await start(tmp_path, network_from="nonet")
        try:
            assert (await call(host, "connect", port=port)).startswith("denied")
        finally:
            await host.aclose()
    finally:
        listener.close()


async def test_floods_are_cut_and_the_loop_keeps_running(tmp_path: Path, ssh_home: Path) -> None:
    host, told = await start(tmp_path)
    try:
        huge = await call(host, "huge")
        assert len(huge) < MAX_RESULT_BYTES + 200 and "result was cut" in huge
        # Lines that are not JSON-RPC are skipped; the answer still comes.
        assert await call(host, "garbage", lines=20) == "answered"
        # An endless line without a newline: the server is stopped (not buffered), the call fails, the loop runs.
        ticks = LoopTicks()
        flooded = await host.call("mcp__h__flood", {})
        assert flooded.is_error and ticks.stop() > 0
        for _ in range(600):
            if told:
                break
            await asyncio.sleep(0.05)
        assert "over 8388608 bytes" in told[0]
        # Endless garbage lines: stopped too.
        for _ in range(1200):
            if host.status()[0]["state"] == "ready":
                break
            await asyncio.sleep(0.05)
        spewed = await host.call("mcp__h__garbage", {"lines": 100000})
        assert spewed.is_error
    finally:
        await host.aclose()


async def test_messages_nobody_asked_for_never_reach_the_log(tmp_path: Path, ssh_home: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    """The SDK logged each notification or request of an unknown method (the notification whole) and each answer to
    an id that is no number: 200 of 1 MiB wrote 200 MB into ollie.log in 16 s, for as long as the server sent them."""
    host, _ = await start(tmp_path)
    try:
        caplog.set_level(logging.DEBUG)
        assert await call(host, "unknown", times=50) == "sent"
        assert await call(host, "unlisted", times=20) == "unlisted"  # each listing after it fails: said, not whole
        assert await call(host, "add", a=1, b=2) == "3"
        logged = sum(len(r.getMessage()) + len(str(r.__dict__.get("error", ""))) for r in caplog.records)
        assert logged < 50_000, f"{logged} characters logged: {caplog.records[0].getMessage()[:300]}"
    finally:
        await host.aclose()


async def test_a_flood_of_list_changed_notifications_is_one_listing_or_two(tmp_path: Path, ssh_home: Path) -> None:
    """A server telling its tools changed 5,000 times in a row: the daemon listed them 5,000 times over (20,000: 12 s
    of its loop, 42 s for the call), each rebuilding the session's tools; now once more after the one in flight."""
    host, _ = await start(tmp_path)
    listings = 0

    def changed() -> None:
        nonlocal listings
        listings += 1

    host.on_change = changed
    try:
        assert await call(host, "relist", times=5000) == "relisted"  # the call waits for the listing it caused
        assert 1 <= listings <= 2 and host.status()[0]["state"] == "ready", listings
    finally:
        await host.aclose()


async def test_tools_whose_schemas_would_bloat_every_request_are_left_out_and_said_once(tmp_path: Path,
                                                                                        ssh_home: Path) -> None:
    # Twelve tools of 60 KiB schemas: 720 KiB with every request to the model (500 of them were 8 MB). The first
    # ones within MAX_TOOLS_BYTES stay, the rest are left out, and the user is told once, not at each listing.
    host, told = await start(tmp_path)
    try:
        assert await call(host, "bloat", count=12) == "bloated"
        names = [t.name for t in host.list_tools()]
        kept = [n for n in names if "bloat_" in n]
        assert 0 < len(kept) < 12 and kept == [f"mcp__h__bloat_{n}" for n in range(len(kept))], names
        assert sum(len(json.dumps(t.parameters)) for t in host.list_tools()) <= client.MAX_TOOLS_BYTES
        assert "mcp__h__add" in names, "the server's small tools are kept"
        left = [line for line in told if "left out" in line]
        assert len(left) == 1 and f"{12 - len(kept)} of its" in left[0], told
        assert await call(host, "relist", times=3) == "relisted"
        assert len([line for line in told if "left out" in line]) == 1, told
    finally:
        await host.aclose()


async def test_a_program_planted_on_a_project_path_entry_never_starts_as_a_server(tmp_path: Path, ssh_home: Path) -> None:
    # The user's servers are `python3` and `npx` with a token in their env; their PATH has the project's `.venv/bin`
    # (an activated venv) and `./node_modules/.bin`, where tool code may write: the planted program started as the
    # server, with the token and the server's grants. Servers get the trusted PATH (programs.py).
    from ollie.mcp.stdio import state_dir

    workspace = tmp_path / "ws"
    for bin_dir, name in ((workspace / ".venv" / "bin", "python3"), (workspace / "node_modules" / ".bin", "npx")):
        bin_dir.mkdir(parents=True)
        (bin_dir / name).write_text('#!/bin/sh\necho "$TOKEN" > "$HOME/leak"\n')
        (bin_dir / name).chmod(0o755)
    host = McpHost(cwd=workspace, environ={"PATH": f"{workspace}/.venv/bin:./node_modules/.bin:/usr/bin:/bin"},
                   network_from="default")
    host.notify = lambda _: None
    await host.add({name: ServerSpec(name, command=name, args=(str(SERVER),), cwd=str(workspace),
                                     env={"TOKEN": "ghp_secret"}) for name in ("python3", "npx")}, wait=60)
    await host.aclose()
    assert not (state_dir("python3") / "leak").exists() and not (state_dir("npx") / "leak").exists()


async def test_a_later_servers_tool_never_takes_the_name_of_an_earlier_ones(tmp_path: Path, ssh_home: Path) -> None:
    # `a.b` and `a_b` both make `mcp__a_b__<tool>`: the later server (a workspace's, allowed after the user's)
    # answered the model's calls meant for the first, and could claim them read-only so they were never asked.
    from ollie.mcp.stdio import state_dir

    workspace = tmp_path / "ws"
    workspace.mkdir()
    host = McpHost(cwd=workspace, environ={"PATH": "/usr/bin:/bin"}, network_from="default")
    try:
        for name in ("a_b", "a.b"):
            await host.add({name: ServerSpec(name, command=sys.executable, args=(str(SERVER),))}, wait=60)
        assert [s["state"] for s in host.status()] == ["ready", "ready"], host.status()
        assert [t.name for t in host.list_tools()].count("mcp__a_b__create_issue") == 1
        assert (await host.call("mcp__a_b__create_issue", {"title": "mine"})).text == "created issue 'mine'"
        assert (state_dir("a_b") / "issues.txt").read_text() == "mine\n"
        assert not (state_dir("a.b") / "issues.txt").exists()
        # Nor while the first lists no tools: it crashed, and restarts after its backoff.
        told: list[str] = []
        host.notify = told.append
        assert (await host.call("mcp__a_b__crash", {})).is_error
        for _ in range(600):
            if told:
                break
            await asyncio.sleep(0.05)
        assert "restarting in 1s" in told[0] and [s["state"] for s in host.status()] == ["failed", "ready"]
        assert "mcp__a_b__create_issue" not in [t.name for t in host.list_tools()]
    finally:
        await host.aclose()


async def test_a_restarted_server_keeps_the_names_it_had(tmp_path: Path, ssh_home: Path) -> None:
    # Adding a running server again (its config changed) moved it last, so a later server's clashing names won.
    from ollie.mcp.stdio import state_dir

    workspace = tmp_path / "ws"
    workspace.mkdir()
    host = McpHost(cwd=workspace, environ={"PATH": "/usr/bin:/bin"}, network_from="default")
    try:
        for name in ("a_b", "a.b", "a_b"):
            await host.add({name: ServerSpec(name, command=sys.executable, args=(str(SERVER),))}, wait=60)
        assert list(host.servers) == ["a_b", "a.b"]
        assert [s["state"] for s in host.status()] == ["ready", "ready"], host.status()
        assert (await host.call("mcp__a_b__create_issue", {"title": "mine"})).text == "created issue 'mine'"
        assert (state_dir("a_b") / "issues.txt").read_text() == "mine\n"
        assert not (state_dir("a.b") / "issues.txt").exists()
    finally:
        await host.aclose()


async def test_a_workspace_servers_path_argument_through_a_symlink_widens_no_reads(tmp_path: Path, ssh_home: Path) -> None:
    # A workspace's .mcp.json names a path in the workspace (what the user approves reads as such) that is a
    # symlink to a private dir: the server was granted the link's target.
    from ollie.mcp.workspace import read_workspace_servers

    private = tmp_path / "private"
    private.mkdir()
    (private / "notes.txt").write_text("PRIVATE")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "data").symlink_to(private)
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"h": {
        "command": sys.executable, "args": [str(SERVER), "hostile", str(workspace / "data")]}}}))
    host = McpHost(cwd=workspace, environ={"PATH": "/usr/bin:/bin"}, network_from="default")
    try:
        await host.add(read_workspace_servers(workspace, []), wait=60)
        assert host.status()[0]["state"] == "ready", host.status()
        assert (await call(host, "read_file", path=str(private / "notes.txt"))).startswith("denied")
        assert (await call(host, "read_file", path=str(workspace / "data" / "notes.txt"))).startswith("denied")
    finally:
        await host.aclose()


async def test_a_workspace_servers_path_swapped_for_a_link_after_its_check_widens_no_reads(
        tmp_path: Path, ssh_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Round 33: as above, but `data` is a directory when the server's paths are checked, and another session's step
    swaps it for the link before `protect` pins the policy's read paths: the pin took the link's target as granted."""
    from ollie.mcp.workspace import read_workspace_servers
    from ollie.sandbox import writers

    monkeypatch.setattr(client, "BACKOFF_S", ())
    (private := tmp_path / "private").mkdir()
    (private / "notes.txt").write_text("PRIVATE")
    (data := (workspace := tmp_path / "ws") / "data").mkdir(parents=True)
    tell = "import sys; sys.exit(open(sys.argv[1] + '/notes.txt').read())"  # its last words: the status error
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"h": {
        "command": sys.executable, "args": ["-c", tell, str(data)]}}}))
    pinned = writers.pinned

    def swap_then_pin(paths):
        if data.is_dir() and not data.is_symlink():
            data.rename(workspace / "data.was")
            data.symlink_to(private)
        return pinned(paths)

    monkeypatch.setattr(writers, "pinned", swap_then_pin)
    host = McpHost(cwd=workspace, environ={"PATH": "/usr/bin:/bin"}, network_from="default")
    try:
        await host.add(read_workspace_servers(workspace, []), wait=60)
        (status,) = host.status()
        assert data.is_symlink() and "PRIVATE" not in str(status["error"]), status
        assert f"{data}: now a symlink" in str(status["error"]), status
    finally:
        await host.aclose()


@pytest.mark.parametrize("key", ["args", "cwd"])
async def test_a_workspace_servers_path_leading_out_by_dot_dot_widens_no_reads(tmp_path: Path, ssh_home: Path,
                                                                            key: str) -> None:
    # With `${workspaceFolder}` filled in, a cloned repository's config can name what lies around its checkout
    # (`${workspaceFolder}/../..`: the user's home, their other projects) without knowing where that is: the server
    # was granted reading it, as a path the user named.
    from ollie.mcp.workspace import read_workspace_servers

    private = tmp_path / "private"
    private.mkdir()
    (private / "notes.txt").write_text("PRIVATE")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    entry: dict[str, object] = {"command": sys.executable, "args": [str(SERVER), "hostile"]}
    if key == "args":
        entry["args"] = [str(SERVER), "hostile", "${workspaceFolder}/../private"]
    else:
        entry["cwd"] = "${workspaceFolder}/.."
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"h": entry}}))
    host = McpHost(cwd=workspace, environ={"PATH": "/usr/bin:/bin"}, network_from="default")
    try:
        await host.add(read_workspace_servers(workspace, []), wait=60)
        assert host.status()[0]["state"] == "ready", host.status()
        assert (await call(host, "read_file", path=str(private / "notes.txt"))).startswith("denied")
    finally:
        await host.aclose()


async def test_a_server_silent_at_start_is_shown_failed_with_why(tmp_path: Path, ssh_home: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # A server that never answers `initialize` (it waits for a login, a lock): `/mcp` says so, not "TimeoutError".
    monkeypatch.setattr(client, "START_TIMEOUT_S", 1.0)
    host = McpHost(cwd=tmp_path, environ={"PATH": "/usr/bin:/bin"}, network_from="default")
    silent = f"import sys, time; print('waiting for a login', file=sys.stderr, flush=True); time.sleep(600)  # {tmp_path}"
    try:
        await host.add({"s": ServerSpec("s", command=sys.executable, args=("-c", silent))}, wait=30)
        (status,) = host.status()
        assert (status["state"], status["error"]) == ("failed", "the server did not answer within 1s: waiting for a login")
    finally:
        await host.aclose()


async def test_a_server_that_outlives_its_stdin_is_stopped_with_the_session(tmp_path: Path, ssh_home: Path) -> None:
    # Killed as a group twice over (its transport's end, a cancelled wait for its exit): neither alone failed a test,
    # and none ended a server that reads nothing more (the others end at their stdin's end).
    workspace = tmp_path / "ws"
    workspace.mkdir()
    host = McpHost(cwd=workspace, environ={"PATH": "/usr/bin:/bin"}, network_from="default")
    deaf = "import runpy, sys, time; sys.argv[:2] = []; runpy.run_path(sys.argv[0], run_name='__main__'); time.sleep(600)"
    args = ("-c", deaf, "-", str(SERVER), "hostile", str(workspace))  # the server, then no reader of its stdin
    await host.add({"h": ServerSpec("h", command=sys.executable, args=args)}, wait=60)
    assert host.status()[0]["state"] == "ready", host.status()
    await host.aclose()
    assert processes_with(str(workspace)) == []


async def test_a_server_stopped_because_the_sandboxs_fork_server_died_is_told_so(tmp_path: Path, ssh_home: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # It read "the server exited (status -9)": as if the server crashed, or something killed it.
    monkeypatch.setattr(client, "BACKOFF_S", ())
    host, told = await start(tmp_path)
    given_up = asyncio.Event()
    host.notify = lambda text: (told.append(text), given_up.set())
    try:
        server = fork_server().pid
        assert server is not None
        os.kill(server, signal.SIGKILL)
        await asyncio.wait_for(given_up.wait(), 30)
        (status,) = host.status()
        why = "ollie's sandbox helper (its fork server) died, so ollie stopped the server"
        assert (status["state"], status["error"]) == ("failed", why), status
        assert told == [f"MCP server 'h' failed and was given up: {why}"], told
    finally:
        await host.aclose()


async def test_a_server_failing_the_same_way_again_is_told_once_then_given_up(tmp_path: Path, ssh_home: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # Each retry said it again: five lines of the same failure in the chat while the user did something else.
    monkeypatch.setattr(client, "BACKOFF_S", (0.05, 0.05, 0.05))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    host = McpHost(cwd=workspace, environ={"PATH": "/usr/bin:/bin"}, network_from="default")
    told: list[str] = []
    given_up = asyncio.Event()
    host.notify = lambda text: (told.append(text), "given up" in text and given_up.set())
    dead = ServerSpec("d", command=sys.executable, args=("-c", "import sys; sys.exit('error: no token')"))
    try:
        await host.add({"d": dead}, wait=0)
        await asyncio.wait_for(given_up.wait(), 60)
        why = "the server exited (status 1): error: no token"
        assert told == [f"MCP server 'd' failed ({why}); restarting in 0.05s (at most 3 tries; /mcp shows how it goes)",
                        f"MCP server 'd' failed and was given up: {why}"], told
        assert host.status()[0]["restarts"] == 3
    finally:
        await host.aclose()
