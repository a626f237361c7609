"""The daemon's stdio: a reader that never blocks exit, a writer that never blocks the event loop.

(ollie.stdio keeps fds 0/1 private for JSON-RPC.)
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import select
import stat
import struct
import termios
import threading
from collections.abc import Callable
from typing import BinaryIO

from ollie_lsp.framing import FrameParser, Item, stall_seconds

logger = logging.getLogger("ollie.lsp.stdio")

# Unsent output above which the sessions' event streams pause (PROTOCOL.md, "A client that reads slowly"),
# and below which they resume.
HIGH_WATER = 1024 * 1024
LOW_WATER = 256 * 1024
READ_CHUNK = 1 << 16
# Frames read but not yet taken by the loop above which the reader waits for it.
QUEUED_MAX = 8 * 1024 * 1024
# How long closing waits for the client to take what is still unsent.
FLUSH_ON_CLOSE_S = 5.0
# How often `read_by_client` looks into the pipe (nothing tells when the client reads), and how long at most it
# waits for a client that stopped reading.
READ_POLL_S = 0.005
READ_WAIT_S = 5.0


class StdinFrames:
    """The client's frames, read whole in one daemon thread and handed to the loop in batches.

    The loop gets one callback for all the frames that came together, however busy it is with
    sending events: a request is never queued behind them once per header line (pygls' reader).
    A daemon thread, not pygls' pool (joined at exit), so it never holds up the process once
    `exit` came while the client keeps its pipe open.
    """

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream  # kept open as long as the reader uses its fd
        self._lock = threading.Lock()
        self._batch: list[Item] = []
        self._queued = 0
        self._ended = False
        self._scheduled = False
        self._taken = threading.Event()

    async def run(self, deliver: Callable[[list[Item]], list[Item]]) -> None:
        """Hand each batch to `deliver` on this loop (what it leaves, first, a pass later); return when input ends."""
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[None] = loop.create_future()

        def hand_over() -> None:
            with self._lock:
                batch, self._batch, self._queued = self._batch, [], 0
            left = deliver(batch) if batch else []
            with self._lock:  # still scheduled meanwhile: what the reader queued is handed over from here
                self._batch[:0] = left
                self._queued += sum(len(item) for item in left if isinstance(item, bytes))
                again = self._scheduled = bool(self._batch)
                done = self._ended and not again
            if not left:  # the frames left count towards QUEUED_MAX still
                self._taken.set()
            if again:
                loop.call_soon(hand_over)
            if done and not ended.done():
                ended.set_result(None)

        threading.Thread(target=self._read, args=(loop, hand_over), name="ollie-lsp-stdin", daemon=True).start()
        await ended

    def _read(self, loop: asyncio.AbstractEventLoop, hand_over: Callable[[], None]) -> None:
        fd = self._stream.fileno()
        parser = FrameParser()
        stall = stall_seconds()
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while True:
            # A frame begun waits at most `stall` for its next byte: a too-long Content-Length is answered.
            if parser.pending() and not poller.poll(stall * 1000):
                problem = parser.stalled()
                if problem is not None and not self._push(loop, hand_over, [problem]):
                    return
                continue
            try:
                data = os.read(fd, READ_CHUNK)
            except OSError as exc:
                logger.warning("reading the client's input failed: %s", exc)
                data = b""
            if not data:
                left = parser.end()
                if left is not None:
                    logger.warning(left)
                self._push(loop, hand_over, [], end=True)
                return
            items = parser.feed(data)
            if items and not self._push(loop, hand_over, items):
                return

    def _push(self, loop: asyncio.AbstractEventLoop, hand_over: Callable[[], None], items: list[Item], *,
              end: bool = False) -> bool:
        """Queue `items` for the loop (False: the loop is gone); past QUEUED_MAX bytes, wait until it takes them."""
        with self._lock:
            self._batch.extend(items)
            self._queued += sum(len(item) for item in items if isinstance(item, bytes))
            self._ended |= end
            schedule, self._scheduled = not self._scheduled, True
            full = self._queued > QUEUED_MAX
            self._taken.clear()
        if schedule:
            try:
                loop.call_soon_threadsafe(hand_over)
            except RuntimeError:  # the loop closed: `exit` ended the daemon while this read waited
                return False
        if full:  # a client that writes faster than the loop handles waits in its pipe, not in our memory
            self._taken.wait()
        return True


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
        self._written = 0  # bytes queued for the client in all
        transport.set_write_buffer_limits(high=HIGH_WATER, low=LOW_WATER)

    def write(self, data: bytes) -> None:
        """Queue `data` for the client (dropped once the client is gone)."""
        if not self._flow.lost and not self._transport.is_closing():
            self._transport.write(data)
            self._written += len(data)

    async def read_by_client(self) -> None:
        """Return once the client has read all that was written so far (at most READ_WAIT_S: it stopped reading)."""
        mark = self._written
        loop = asyncio.get_running_loop()
        deadline = loop.time() + READ_WAIT_S
        while self._written - self.backlog() - self._unread() < mark and not self._flow.lost and loop.time() < deadline:
            await asyncio.sleep(READ_POLL_S)

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
        """Give the client what is still unsent (at most FLUSH_ON_CLOSE_S), then close the pipe."""
        if self.backlog() and not self._flow.lost:
            # Writing pauses until nothing is left unsent (low water 0): `ready` is set again then (or the client
            # left).
            self._transport.set_write_buffer_limits(high=0, low=0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._flow.ready.wait(), FLUSH_ON_CLOSE_S)
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
