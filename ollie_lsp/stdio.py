"""The daemon's stdin: a reader that never blocks exit (ollie.stdio keeps fds 0/1 private and writes the output)."""

from __future__ import annotations

import asyncio
import logging
import os
import select
import threading
from collections.abc import Callable
from typing import BinaryIO

from ollie_lsp.framing import FrameParser, Item, stall_seconds

logger = logging.getLogger("ollie.lsp.stdio")

READ_CHUNK = 1 << 16
# Frames read but not yet taken by the loop above which the reader waits for it.
QUEUED_MAX = 8 * 1024 * 1024


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
            except BlockingIOError:  # a terminal is one open file: stdout's writer made stdin non-blocking too
                poller.poll()
                continue
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
