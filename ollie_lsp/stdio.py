"""The daemon's stdio reader, which never blocks exit (ollie.stdio keeps fds 0/1 private for JSON-RPC)."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO


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
                loop.call_soon_threadsafe(_fail, future, exc)
            else:
                loop.call_soon_threadsafe(_succeed, future, data)

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
