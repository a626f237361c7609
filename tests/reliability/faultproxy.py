"""A TCP proxy in front of the scripted server that closes the socket on chosen chat requests."""

from __future__ import annotations

import asyncio
import contextlib


class ClosingProxy:
    """Forwards 127.0.0.1 connections to `upstream`; the POSTs numbered in `close_on` (1-based) get the socket closed.

    A request is recognised by its request line at the start of a client chunk,
    so keep-alive connections are handled request by request.
    """

    def __init__(self, upstream_port: int, *, close_on: set[int]) -> None:
        self.upstream_port = upstream_port
        self.close_on = set(close_on)
        self.posts = 0
        self.closed = 0
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> ClosingProxy:
        """Listen on an ephemeral port."""
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        """Stop listening and drop every connection."""
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        back = asyncio.ensure_future(self._pipe(up_reader, writer))
        self._tasks.add(back)
        try:
            while chunk := await reader.read(65536):
                if chunk.startswith(b"POST "):
                    self.posts += 1
                    if self.posts in self.close_on:
                        self.closed += 1
                        writer.transport.abort()  # the server hangs up without a word
                        break
                up_writer.write(chunk)
                await up_writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            back.cancel()
            self._tasks.discard(back)
            up_writer.close()
            writer.close()

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while chunk := await reader.read(65536):
                writer.write(chunk)
                await writer.drain()
