"""A stdio MCP server, contained: spawned in ollie's sandbox under a policy of its own, spoken to line by line.

The SDK's own stdio client spawns the program unconfined and buffers a line without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ollie import beneath, paths, programs
from ollie.escapes import one_name
from ollie.mcp.config import MAX_MESSAGE_BYTES, ServerSpec
from ollie.mcp.transport import CannotStart
from ollie.sandbox.policy import Policy, load_policy
from ollie.sandbox.process import SandboxedProcess
from ollie.sandbox.spawn import spawn_sandboxed
from ollie.tools.execute.protect import protect
from ollie.tools.execute.pythonenvs import venv_base

# Lines that are not JSON-RPC are skipped; this many in a row mean the server is broken.
MAX_BAD_LINES = 100
STDERR_LINES = 20
# The environment a server gets besides its configured `env`: no API keys, none of the daemon's secrets.
_PASSED = ("PATH", "LANG", "LC_ALL", "TERM", "TZ")


def state_dir(name: str) -> Path:
    """A server's own writable directory (its HOME and TMPDIR): `<state dir>/mcp/<name>` (`name`: its `home`)."""
    return paths.state_dir() / "mcp" / name


def server_env(spec: ServerSpec, home: Path, environ: Mapping[str, str], workspace: Path) -> dict[str, str]:
    """PATH and locale from the daemon, HOME/TMPDIR in the server's own dir, then exactly the configured `env`."""
    env = {k: environ[k] for k in _PASSED if k in environ}
    # Its command, and what it runs, never from where tool code may write (`.venv/bin`, `./node_modules/.bin`, the
    # workspace): a program planted there would start with the server's `env` (its tokens) and grants.
    env["PATH"] = programs.trusted(environ.get("PATH") or programs.FALLBACK_PATH, workspace)
    env.update(HOME=str(home), TMPDIR=str(home / "tmp"), XDG_CACHE_HOME=str(home / "cache"))
    env.update(spec.env)
    return env


def _installation(program: str, env: Mapping[str, str]) -> list[Path]:
    """What running `program` needs to read: its directory, the whole virtualenv or node_modules it lives in."""
    found = shutil.which(program, path=env.get("PATH")) if "/" not in program else program
    if not found:
        return []
    bin_dir = Path(os.path.abspath(found)).parent
    root = bin_dir.parent
    if bin_dir.name == ".bin" and root.name == "node_modules":  # an npm install: its packages beside it
        return [root]
    try:  # through the chokepoint: the program may live in a workspace (no FIFO, no link followed)
        if beneath.kind_sync(root, "pyvenv.cfg") != "file":
            return [bin_dir]
    except OSError:
        return [bin_dir]
    # A virtualenv runs its base interpreter (pyvenv.cfg's `home`, its bin dir): that installation too. The
    # cfg may be a hostile workspace's (read through the chokepoint): only a real Python install, and never
    # one so wide it is "/" or holds the user's home (`home = /x` made the whole filesystem readable).
    base = venv_base(root / "pyvenv.cfg")
    if base is None:
        return [root]
    user_home = Path(os.path.realpath(Path.home()))
    if base == Path(base.anchor) or user_home.is_relative_to(base):
        return [root]
    return [root, base]


def _unlinked(paths: list[Path]) -> list[Path]:
    """`paths` less those with a symlink or a `..` on them (a grant takes effect where they lead: with
    `${workspaceFolder}` filled in, `<ws>/../..` names the user's home without knowing where it is)."""
    return [p for p in paths if ".." not in p.parts and os.path.realpath(p) == os.path.normpath(p)]


def server_policy(spec: ServerSpec, *, cwd: Path, env: Mapping[str, str], network_from: str) -> Policy:
    """The read-only policy: workspace readable, the server's dir writable, the agent policy's network."""
    home = state_dir(spec.home or spec.name)
    # The policies' templates: the user's home ({HOME}/.gitconfig), the server's own TMPDIR, never a value of the
    # config's `env` (a workspace entry's `"env": {"HOME": "/etc"}`, or TMPDIR, made that dir writable to it).
    templates = {"HOME": str(Path.home()), "TMPDIR": str(home / "tmp"), "XDG_CACHE_HOME": str(home / "cache")}
    base = load_policy("readonly", cwd=cwd, env=templates)
    network = load_policy(network_from, cwd=cwd, env=templates).network
    # What the user named in the config (a script, a directory it serves) is readable, never writable.
    named = [Path(a) for a in spec.args if os.path.isabs(a) and os.path.exists(a)]
    if spec.cwd:
        named.append(Path(spec.cwd))
    installed = _installation(spec.command, env)
    if spec.from_workspace:  # the user approved paths as written, not where a symlink or `..` on them leads
        named, installed = _unlinked(named), _unlinked(installed)
    policy = replace(base, network=network).extended(ro=named, rox=installed, rwx=[home])
    protected, _ = protect(policy, home=Path.home())
    # Looked at again once `protect` pinned them: a link another step swapped in before the pin shows now, one after
    # is refused at the server's start (landlock.open_rules).
    if spec.from_workspace and (moved := set(named + installed) - set(_unlinked(named + installed))):
        raise OSError(errno.ELOOP, f"{', '.join(map(str, sorted(moved)))}: now a symlink, swapped in since approved")
    return protected


def missing(program: str, env: Mapping[str, str], environ: Mapping[str, str], workspace: Path) -> str | None:
    """Why `program` (a name, or an absolute path) cannot start with the server's `env`, else None."""
    if "/" in program:
        absent = os.path.isabs(program) and not os.path.exists(program)
        return f"{program} does not exist: install it, or fix the \"command\"" if absent else None
    if shutil.which(program, path=env.get("PATH")):
        return None
    # The user's own shell finds it (an activated venv, a project's node_modules/.bin): say why the server does not.
    theirs = shutil.which(program, path=environ.get("PATH") or "")
    if theirs and programs.step_may_write(theirs, workspace):
        # Never "name it by that path": a program planted there is what leaving the dir out of PATH guards against.
        return (f"{program!r} is {theirs}, where tool code may write (a program a step put there would start as "
                "this server, with its env): install it elsewhere (pipx, npm -g) and name that path as the \"command\"")
    if theirs:
        return (f"{program!r} is {theirs}, in a directory left out of MCP servers' PATH (a project's or Python "
                f"environment, or one tool code may write): name it by that absolute path as the \"command\"")
    return f"{program!r} is not on PATH ({env.get('PATH', '')}): install it, or name it by its absolute path"


async def spawn_server(spec: ServerSpec, *, cwd: Path, environ: Mapping[str, str],
                       network_from: str) -> SandboxedProcess:
    """Start `spec`'s program in its sandbox with an open stdin; OSError/SandboxError when it cannot start."""
    home = state_dir(spec.home or spec.name)
    env = server_env(spec, home, environ, cwd)
    workdir = Path(spec.cwd) if spec.cwd else cwd

    def prepare() -> tuple[Policy, Path]:  # file reads and mkdirs: off the event loop
        if why := missing(spec.command, env, environ, cwd):
            raise CannotStart(why)  # not "[Errno 2] No such file or directory" with nothing of where it was looked for
        for sub in (home, home / "tmp", home / "cache"):
            sub.mkdir(parents=True, exist_ok=True, mode=0o700)
        # A process starts only in its cwd's real path (forkserver): a user's may name a link of hers; a workspace
        # server's was checked to hold none.
        real = workdir if spec.from_workspace else Path(os.path.realpath(workdir))
        return server_policy(spec, cwd=cwd, env=env, network_from=network_from), real

    policy, real = await asyncio.to_thread(prepare)
    return await spawn_sandboxed([spec.command, *spec.args], policy=policy, cwd=real, env=env, stdin_pipe=True)


class _StderrTail(asyncio.Protocol):
    """Keeps a server's last stderr lines (to say why it failed); drains the rest."""

    def __init__(self) -> None:
        self.lines: deque[str] = deque(maxlen=STDERR_LINES)
        self._partial = b""
        self.ended = asyncio.Event()

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended.set()

    def data_received(self, data: bytes) -> None:
        *whole, self._partial = (self._partial + data).split(b"\n")
        self._partial = self._partial[-4096:]
        # Escaped: the server's words, quoted where it failed (/mcp, the chat's notices, both editors).
        self.lines.extend(one_name(line.decode("utf-8", "replace"), 500) for line in whole if line.strip())


@contextlib.asynccontextmanager
async def message_streams(proc: SandboxedProcess, stderr: _StderrTail) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's (read, write) memory streams over `proc`'s stdout/stdin; closing them closes the pipes."""
    import anyio
    from mcp.shared.message import SessionMessage
    from mcp.types import JSONRPCMessage

    loop = asyncio.get_running_loop()
    out_fd, err_fd = proc.take_output_fds()
    assert proc.stdin_fd is not None  # spawned with stdin_pipe
    reader = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES)
    out_t, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                            os.fdopen(out_fd, "rb", buffering=0))
    err_t, _ = await loop.connect_read_pipe(lambda: stderr, os.fdopen(err_fd, "rb", buffering=0))
    in_t, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(proc.stdin_fd, "wb", buffering=0))
    proc.stdin_fd = None
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](32)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](32)

    async def pump_in() -> None:
        bad = 0
        async with read_send:
            while True:
                try:
                    line = await reader.readline()
                except ValueError:  # asyncio's LimitOverrunError: one message over MAX_MESSAGE_BYTES
                    stderr.lines.append(f"[ollie] the server sent a message over {MAX_MESSAGE_BYTES} bytes")
                    proc.kill_group()
                    return
                if not line:
                    return
                if not line.strip():
                    continue
                try:
                    message = JSONRPCMessage.model_validate_json(line)
                except ValueError as exc:
                    bad += 1
                    if bad >= MAX_BAD_LINES:
                        stderr.lines.append("[ollie] the server sent too many lines that are not JSON-RPC")
                        proc.kill_group()
                        return
                    await read_send.send(exc)
                    continue
                bad = 0
                await read_send.send(SessionMessage(message))

    async def pump_out() -> None:
        async with write_recv:
            async for session_message in write_recv:
                if in_t.is_closing():
                    return
                data = session_message.message.model_dump_json(by_alias=True, exclude_none=True)
                in_t.write(data.encode() + b"\n")

    tasks = [asyncio.ensure_future(pump_in()), asyncio.ensure_future(pump_out())]
    try:
        yield read_recv, write_send
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for transport in (in_t, out_t, err_t):
            transport.close()
