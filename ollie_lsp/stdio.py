"""The daemon's stdio: a reader that never blocks exit, a writer that never blocks the event loop.

(ollie.stdio keeps fds 0/1 private for JSON-RPC.)
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, BinaryIO, Protocol

logger = logging.getLogger("ollie.lsp.stdio")

# Unsent output above which the sessions' event streams pause (PROTOCOL.md, "A client that reads slowly"),
# and below which they resume.
HIGH_WATER = 1024 * 1024
LOW_WATER = 256 * 1024
# How long closing waits for the client to take what is still unsent.
FLUSH_ON_CLOSE_S = 5.0


class ThreadedReader:
    """pygls' async reader interface over a blocking stream, read in one daemon thread.

    pygls' own reader uses its thread pool, whose worker (blocked in `readline`)
    is joined at exit: the daemon would hang after `exit` until the client closed
    its pipe. A daemon thread does not hold up the process.
    """

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._jobs: queue.SimpleQueue[tuple[Callable[..., bytes], tuple[Any, ...], asyncio.Future[bytes]]] = (
            queue.SimpleQueue()
        )
        self._thread = threading.Thread(target=self._work, name="ollie-lsp-stdin", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        while True:
            read, args, future = self._jobs.get()
            loop = future.get_loop()
            try:
                data = read(*args)
            except BaseException as exc:  # handed to the awaiting coroutine
                done: Callable[[], None] = partial(_fail, future, exc)
            else:
                done = partial(_succeed, future, data)
            if loop.is_closed():  # `exit` ended the daemon while this read waited: nobody wants it
                return
            try:
                loop.call_soon_threadsafe(done)
            except RuntimeError:  # the loop closed meanwhile
                return

    def _submit(self, read: Callable[..., bytes], *args: Any) -> Awaitable[bytes]:
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._jobs.put((read, args, future))
        return future

    def readline(self) -> Awaitable[bytes]:
        """The next line (b"" at end of input)."""
        return self._submit(self._stream.readline)

    def readexactly(self, n: int) -> Awaitable[bytes]:
        """The next `n` bytes (fewer at end of input)."""
        return self._submit(self._stream.read, n)


def _succeed(future: asyncio.Future[bytes], data: bytes) -> None:
    if not future.done():
        future.set_result(data)


def _fail(future: asyncio.Future[bytes], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


class OutputWriter(Protocol):
    """What the daemon writes its messages through (pygls' writer, plus the backlog that paces events)."""

    def write(self, data: bytes) -> None: ...

    def backlog(self) -> int: ...

    def paused(self) -> bool: ...

    async def writable(self) -> None: ...


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
    """pygls' writer over the client's pipe through a non-blocking asyncio transport.

    `write` never waits: what the client has not read yet stays in the
    transport's buffer (the pipe itself holds 64 KiB). The event forwarders
    await `writable()` before each notification, so past HIGH_WATER unsent
    bytes the sessions' events wait in the daemon (joined, see events.py)
    instead of the buffer growing; replies to requests are always queued.
    """

    def __init__(self, transport: asyncio.WriteTransport, flow: _Flow) -> None:
        self._transport = transport
        self._flow = flow
        transport.set_write_buffer_limits(high=HIGH_WATER, low=LOW_WATER)

    def write(self, data: bytes) -> None:
        """Queue `data` for the client (dropped once the client is gone)."""
        if not self._flow.lost and not self._transport.is_closing():
            self._transport.write(data)

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
        """Give the client what is still unsent (at most FLUSH_ON_CLOSE_S), then close the pipe."""
        deadline = time.monotonic() + FLUSH_ON_CLOSE_S
        while self.backlog() and not self._flow.lost and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        self._transport.close()


class BlockingWriter:
    """The plain writer for output that is not a pipe (a regular file never waits for a reader)."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream

    def write(self, data: bytes) -> None:
        """Write and flush `data`."""
        self._stream.write(data)
        self._stream.flush()

    def backlog(self) -> int:
        """Nothing is ever held back."""
        return 0

    def paused(self) -> bool:
        """Never."""
        return False

    async def writable(self) -> None:
        """Always at once."""

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
