"""A stdio JSON-RPC server's guard (the daemon and the ACP agent): private copies of fds 0/1 for the protocol, a
writer that never blocks the event loop, the errors malformed input earns, and its quick end."""

from __future__ import annotations

import asyncio
import atexit
import fcntl
import logging
import os
import stat
import struct
import sys
import termios
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import BinaryIO, NoReturn

from ollie.env import env_seconds

logger = logging.getLogger("ollie.stdio")

# JSON-RPC's answers to input that is no JSON (or a broken frame), and to JSON that is no request object.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
# Unsent output above which the sessions' event streams pause (PROTOCOL.md, "A client that reads slowly"),
# and below which they resume.
HIGH_WATER = 1024 * 1024
LOW_WATER = 256 * 1024
# How long a wait on the client's reading (closing, `read_by_client`) lasts in which it takes nothing: it stopped.
FLUSH_ON_CLOSE_S = env_seconds("OLLIE_FLUSH_STALL_S", 5.0)  # (shorter: the slow-reader tests)
# How often `read_by_client` looks into the pipe (nothing tells when the client reads).
READ_POLL_S = 0.005


def protect_stdio() -> tuple[BinaryIO, BinaryIO]:
    """Keep private copies of stdin/stdout for JSON-RPC; fd 0 becomes /dev/null, fd 1 stderr (a stray print is safe)."""
    sys.stdout.flush()
    rpc_out = os.dup(1)
    rpc_in = os.dup(0)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    return os.fdopen(rpc_in, "rb"), os.fdopen(rpc_out, "wb")


def end_process(code: int) -> NoReturn:
    """End the process with `code` once the sessions are closed: exit handlers run, not the interpreter's teardown
    (a second of freeing types, after everything is saved)."""
    atexit._run_exitfuncs()  # the public way to run them is the teardown this skips
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


class _Flow(asyncio.Protocol):
    """The pipe transport's flow control: `ready` is set while the backlog is under the high-water mark."""

    def __init__(self) -> None:
        self.ready = asyncio.Event()
        self.ready.set()
        self.lost = False

    def pause_writing(self) -> None:
        self.ready.clear()

    def resume_writing(self) -> None:
        self.ready.set()

    def connection_lost(self, exc: Exception | None) -> None:
        # A client gone for good: nobody waits on it any more.
        self.lost = True
        self.ready.set()


class PipeWriter:
    """The writer (pygls', the ACP agent's) over the client's pipe through a non-blocking asyncio transport.

    `write` never waits: what the client has not read yet stays in the
    transport's buffer (the pipe itself holds 64 KiB). The event forwarders
    await `writable()` before each notification, so past HIGH_WATER unsent
    bytes the sessions' events wait in the daemon (joined, see ollie_lsp.events)
    instead of the buffer growing; replies to requests are always queued.
    """

    def __init__(self, transport: asyncio.WriteTransport, flow: _Flow) -> None:
        self._transport = transport
        self._flow = flow
        self._written = 0  # bytes queued for the client in all
        transport.set_write_buffer_limits(high=HIGH_WATER, low=LOW_WATER)

    def write(self, data: bytes) -> None:
        """Queue `data` for the client (dropped once the client is gone)."""
        if not self._flow.lost and not self._transport.is_closing():
            self._transport.write(data)
            self._written += len(data)

    async def read_by_client(self) -> None:
        """Return once the client has read all that was written so far, or stopped reading (see `while_read`)."""
        mark = self._written

        async def read() -> None:
            while self.taken() < mark and not self._flow.lost:
                await asyncio.sleep(READ_POLL_S)

        await while_read(read(), self.taken)

    def taken(self) -> int:
        """Bytes the client has read in all."""
        return self._written - self.backlog() - self._unread()

    def _unread(self) -> int:
        """Bytes in the pipe (or Unix socket) that the client has not read yet: 0 where that cannot be seen."""
        pipe = self._transport.get_extra_info("pipe")
        try:
            fd = pipe.fileno()
            mode = os.fstat(fd).st_mode
            # FIONREAD counts a pipe's unread bytes from either end; a Unix socket's TIOCOUTQ (SIOCOUTQ) counts
            # what the peer has not read yet.
            request = termios.FIONREAD if stat.S_ISFIFO(mode) else termios.TIOCOUTQ if stat.S_ISSOCK(mode) else None
            if request is None:
                return 0
            return struct.unpack("i", fcntl.ioctl(fd, request, b"\0\0\0\0"))[0]
        except (AttributeError, OSError, ValueError):  # closed, or no pipe at all
            return 0

    def backlog(self) -> int:
        """Bytes written but not yet taken by the client."""
        return self._transport.get_write_buffer_size()

    def paused(self) -> bool:
        """Whether the backlog passed the high-water mark and is not yet back under the low one."""
        return not self._flow.ready.is_set()

    async def writable(self) -> None:
        """Return once the backlog is under the low-water mark (at once when it never passed the high one)."""
        await self._flow.ready.wait()

    async def close(self) -> None:
        """Give the client what is still unsent while it reads on (see `while_read`), then close the pipe."""
        if self.backlog() and not self._flow.lost:
            # Writing pauses until nothing is left unsent (low water 0): `ready` is set again then (or the client
            # left).
            self._transport.set_write_buffer_limits(high=0, low=0)
            await while_read(self._flow.ready.wait(), self.taken)
        self._transport.close()


async def while_read(done: Awaitable[object], taken: Callable[[], int]) -> None:
    """Wait for `done` while the client keeps taking output (`taken` grows): give up after FLUSH_ON_CLOSE_S in which
    it took nothing (a slow reader on a loaded machine still gets its whole answer; one that stopped reading does not
    hold the daemon)."""
    waiting = asyncio.ensure_future(done)
    before = taken()
    try:
        while True:
            with suppress(TimeoutError):
                async with asyncio.timeout(FLUSH_ON_CLOSE_S):
                    await asyncio.shield(waiting)
                return
            if (now := taken()) <= before:
                return
            before = now
    finally:
        waiting.cancel()


class BlockingWriter:
    """The plain writer for output that is not a pipe (a regular file never waits for a reader)."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._written = 0

    def write(self, data: bytes) -> None:
        """Write and flush `data`."""
        self._stream.write(data)
        self._stream.flush()
        self._written += len(data)

    def taken(self) -> int:
        """All that was written: a file holds it at once."""
        return self._written

    def backlog(self) -> int:
        """Nothing is ever held back."""
        return 0

    def paused(self) -> bool:
        """Never."""
        return False

    async def writable(self) -> None:
        """Always at once."""

    async def read_by_client(self) -> None:
        """At once: a file holds what was written, nobody reads it as it comes."""

    def close(self) -> None:
        """Close the stream."""
        self._stream.close()


async def open_writer(stream: BinaryIO) -> PipeWriter | BlockingWriter:
    """The writer for the client's end of stdio: non-blocking for a pipe, socket or terminal."""
    loop = asyncio.get_running_loop()
    flow = _Flow()
    try:
        transport, _ = await loop.connect_write_pipe(lambda: flow, stream)
    except (ValueError, OSError):
        logger.info("stdout is not a pipe: writing to it directly")
        return BlockingWriter(stream)
    return PipeWriter(transport, flow)
