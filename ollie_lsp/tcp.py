"""`ollie-lsp --tcp`: a loopback-only listener that serves one client, once it proves the start-up token.

Any local process (sandboxed tool code included) could otherwise drive the daemon, whose `!cmd` runs unsandboxed:
the first message must be `initialize` carrying `initializationOptions.token`, checked before pygls sees a byte.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import os
import secrets
import signal
import stat
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ollie import beneath
from ollie.env import env_seconds
from ollie.stdio import while_read
from ollie_lsp.framing import FrameParser, Item, stall_seconds

if TYPE_CHECKING:
    from ollie_lsp.server import OllieServer

logger = logging.getLogger("ollie.lsp.tcp")

TOKEN_ENV = "OLLIE_LSP_TOKEN"
UNAUTHORIZED = -32003
BUSY = -32004
MIN_TOKEN_CHARS = 16
AUTH_TIMEOUT_S = 10.0
# The first message is an initialize: VS Code's is ~20 KB. More is not a client we want to wait for.
MAX_FIRST_BYTES = 1 << 20
# Connections given their AUTH_TIMEOUT_S to prove the token at once: each holds a descriptor and up to MAX_FIRST_BYTES,
# so another local process's flood ran the daemon out of both. The editor's one connection proves it at once.
MAX_UNPROVEN = 16
# A client that leaves the daemon's output waiting this long without taking any of it has stopped reading: its
# connection is dropped and the daemon ends as when it leaves (one client per daemon: nothing else could use it).
READER_STALL_ENV = "OLLIE_LSP_READER_STALL_S"
DEFAULT_READER_STALL_S = 300.0


class TcpSetupError(Exception):
    """The --tcp address or the token cannot be used; the message says why and what to do."""


def loopback_host(host: str) -> str:
    """`host` when it is a loopback address (`localhost` becomes 127.0.0.1); TcpSetupError otherwise."""
    name = host.strip("[]")
    if name in ("", "localhost"):
        return "127.0.0.1"
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        raise TcpSetupError(f"--tcp host {host!r} is not an IP address; use 127.0.0.1 (or ::1)") from None
    if not address.is_loopback:
        raise TcpSetupError(
            f"--tcp listens on loopback only, not {host!r}: the daemon runs commands outside the sandbox. "
            "For a remote daemon run it over ssh (`ssh HOST ollie-lsp`, stdio) instead"
        )
    return name


@dataclass(frozen=True)
class Token:
    """The secret a client must send, and the file that holds it when the daemon wrote or read one."""

    value: str
    path: Path | None
    generated: bool


def _private(path: Path) -> bool:
    mode = path.stat().st_mode
    return stat.S_ISREG(mode) and not mode & 0o077


def resolve_token(token_file: str | None, port: int, environ: dict[str, str] | None = None) -> Token:
    """The token: from --token-file (written there when absent), else $OLLIE_LSP_TOKEN, else new (in the state dir).

    The variable is removed from the environment so that tools and hooks do not inherit it.
    """
    env = os.environ if environ is None else environ
    given = env.pop(TOKEN_ENV, None)
    if token_file:
        path = Path(os.path.expanduser(token_file))  # `~nosuchuser` stays as written (Path.expanduser raises)
        if str(path).startswith("~"):
            raise TcpSetupError(f"--token-file {token_file}: no such user, no home directory to put it in")
        if path.exists():
            if not _private(path):
                raise TcpSetupError(f"--token-file {path} must be a regular file only you can read (chmod 600)")
            value = path.read_text(encoding="utf-8").strip()
            _check_strength(value, f"--token-file {path}")
            return Token(value, path, generated=False)
    elif given is not None:
        value = given.strip()
        _check_strength(value, TOKEN_ENV)
        return Token(value, None, generated=False)
    else:
        from ollie.paths import state_dir

        path = state_dir() / f"lsp-{port}.token"
    value = secrets.token_urlsafe(32)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    beneath.write_bytes_sync(path.parent, path.name, (value + "\n").encode(), 0o600)  # a link there is not followed
    return Token(value, path, generated=True)


def _check_strength(value: str, source: str) -> None:
    if len(value) < MIN_TOKEN_CHARS:
        raise TcpSetupError(f"{source}: the token must be at least {MIN_TOKEN_CHARS} characters")


class FramingError(Exception):
    """The first message did not come whole, within a sane size."""


async def first_frames(reader: asyncio.StreamReader, parser: FrameParser) -> list[Item]:
    """The frames of the client's first reads, up to its first whole one (at most MAX_FIRST_BYTES: unproven)."""
    received = 0
    while received < MAX_FIRST_BYTES:
        data = await reader.read(min(1 << 16, MAX_FIRST_BYTES - received))
        if not data:
            raise FramingError("connection closed before the first message")
        received += len(data)
        if items := parser.feed(data):
            return items
    raise FramingError("the first message is too large")


def check_first(body: bytes, token: str) -> tuple[str | None, Any, dict[str, Any] | None]:
    """(problem, id, message without the token): problem None when `body` is an initialize with the token."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return "the first message is not JSON", None, None
    if not isinstance(message, dict):
        return "the first message is not a JSON-RPC object", None, None
    msg_id = message.get("id")
    if not isinstance(msg_id, (int, str)) or isinstance(msg_id, bool):
        msg_id = None
    if message.get("method") != "initialize" or msg_id is None:
        return "the first request must be initialize with initializationOptions.token", msg_id, None
    params = message.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    given = options.get("token") if isinstance(options, dict) else None
    if not isinstance(given, str):
        return "initializationOptions.token is missing", msg_id, None
    if not hmac.compare_digest(given.encode("utf-8", "surrogatepass"), token.encode()):
        return "wrong token", msg_id, None
    # The token goes no further: not into the logs, not into the options the sessions see.
    assert isinstance(params, dict) and isinstance(options, dict)  # a str token came from both
    cleaned = {**message, "params": {**params, "initializationOptions": {
        k: v for k, v in options.items() if k != "token"}}}
    return None, msg_id, cleaned


def frame(message: dict[str, Any]) -> bytes:
    """`message` as one LSP-framed message."""
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def refuse(writer: asyncio.StreamWriter, msg_id: int | str | None, code: int, message: str) -> None:
    """Answer with a JSON-RPC error and close the connection."""
    try:
        writer.write(frame({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}))
        async with asyncio.timeout(5):
            await writer.drain()
    except (OSError, TimeoutError):
        pass
    finally:
        writer.close()


class StreamFrames:
    """The client's frames off a TCP stream, from those read with the initialize (cleaned) on; each read's at once."""

    def __init__(self, first: list[Item], parser: FrameParser, stream: asyncio.StreamReader) -> None:
        self._first = first
        self._parser = parser
        self._stream = stream

    async def run(self, deliver: Callable[[list[Item]], list[Item]]) -> None:
        """Hand each batch to `deliver` (what it leaves, again a loop pass later); return once the client is gone."""
        parser = self._parser
        stall = stall_seconds()
        items: list[Item] = self._first
        while True:
            while items := deliver(items) if items else []:
                await asyncio.sleep(0)
            try:
                # A frame begun waits at most `stall` for its next byte (a too-long Content-Length is answered).
                async with asyncio.timeout(stall if parser.pending() else None):
                    data = await self._stream.read(1 << 16)
            except TimeoutError:
                problem = parser.stalled()
                items = [problem] if problem is not None else []
                continue
            except OSError:
                data = b""
            if not data:
                left = parser.end()
                if left is not None:
                    logger.warning(left)
                return
            items = parser.feed(data)


async def serve_tcp(server: OllieServer, host: str, port: int, token_for: Callable[[int], Token]) -> None:
    """Listen on `host:port`; serve the first client that proves the token; return when it has gone."""
    finished = asyncio.Event()
    owner: list[asyncio.StreamWriter] = []
    unproven: list[asyncio.StreamWriter] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(unproven) >= MAX_UNPROVEN:
            await refuse(writer, None, UNAUTHORIZED,
                         f"unauthorized: {MAX_UNPROVEN} connections are proving their token already")
            return
        parser = FrameParser()
        unproven.append(writer)
        try:
            async with asyncio.timeout(AUTH_TIMEOUT_S):
                first, *rest = await first_frames(reader, parser)
        except (TimeoutError, FramingError, OSError) as exc:
            logger.warning("tcp: connection dropped before initialize", extra={"why": str(exc) or type(exc).__name__})
            await refuse(writer, None, UNAUTHORIZED, "unauthorized: send initialize with initializationOptions.token")
            return
        finally:
            unproven.remove(writer)
        problem, msg_id, cleaned = (check_first(first, token) if isinstance(first, bytes)
                                    else ("the first message is not LSP-framed", None, None))
        if problem is not None or cleaned is None:
            logger.warning("tcp: refused a client", extra={"why": problem})
            await refuse(writer, msg_id, UNAUTHORIZED, f"unauthorized: {problem}")
            return
        if owner:
            logger.warning("tcp: refused a second client")
            await refuse(writer, msg_id, BUSY, "busy: another client is connected to this daemon")
            return
        owner.append(writer)
        logger.info("tcp: client authenticated")
        server.protocol.set_writer(writer)
        watchdog = asyncio.ensure_future(drop_when_stalled(writer, env_seconds(READER_STALL_ENV,
                                                                               DEFAULT_READER_STALL_S)))
        try:
            await server.serve_client(StreamFrames([json.dumps(cleaned).encode(), *rest], parser, reader))
        finally:
            watchdog.cancel()
            finished.set()

    listener = await asyncio.start_server(on_connect, host, port)
    bound = listener.sockets[0].getsockname()[1]
    try:
        # No connection is handled before the next await: the token is in place before the first one.
        secret = token_for(bound)
    except BaseException:
        listener.close()
        raise
    token = secret.value
    announce(host, bound, secret)
    # SIGTERM, and SIGHUP (the terminal it runs in closed), end the daemon as the client leaving does: sessions saved,
    # a new token's file removed (SIGHUP's default killed it there and then, the file left behind).
    for signum in (signal.SIGTERM, signal.SIGHUP):
        asyncio.get_running_loop().add_signal_handler(signum, finished.set)
    try:
        await finished.wait()
    finally:
        listener.close()
        await server.finish_with_client()  # whatever hangs while closing, the process ends (see exit_backstop)
        for writer in owner:  # the last answers the client has not read yet go out before the loop ends (bounded)
            writer.close()
            with suppress(OSError):
                # What the client took shows as the buffer shrinking.
                await while_read(writer.wait_closed(), lambda w=writer: -w.transport.get_write_buffer_size())
        if secret.generated and secret.path is not None:
            secret.path.unlink(missing_ok=True)


async def drop_when_stalled(writer: asyncio.StreamWriter, stall_s: float) -> None:
    """Abort the connection once output has waited `stall_s` (beyond what the kernel buffers) with none of it taken:
    a client that stopped reading but keeps its socket open would hold the daemon, its sessions and steps, for ever."""
    transport = writer.transport
    waiting, since = 0, time.monotonic()
    while not transport.is_closing():
        # What is unsent can only be sampled (the transport tells no one it shrank); often, so that a client taking
        # some while more is written is seen doing so.
        await asyncio.sleep(min(1.0, stall_s / 10))
        backlog = transport.get_write_buffer_size()
        if backlog == 0 or backlog < waiting:  # nothing waits, or the client took some
            since = time.monotonic()
        waiting = backlog
        if time.monotonic() - since >= stall_s:
            logger.warning("tcp: the client took none of the daemon's output for %.0f s: dropping it", stall_s,
                           extra={"unsent": backlog})
            transport.abort()
            return


def announce(host: str, port: int, token: Token) -> None:
    """Say once on stderr where the daemon listens and where its token is (never the token itself)."""
    where = f"in {token.path}" if token.path else f"from ${TOKEN_ENV}"
    print(f"ollie-lsp: listening on {host}:{port} (loopback only); clients must send "
          f"initializationOptions.token, the token {where}", file=sys.stderr, flush=True)
