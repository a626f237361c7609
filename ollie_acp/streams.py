"""The ACP agent's stdin/stdout as asyncio streams, whatever they are: pipes, sockets, files or /dev/null."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import threading
from typing import BinaryIO

# The SDK's line limit: embedded files can be big.
READ_LIMIT = 50 * 1024 * 1024
CHUNK = 64 * 1024
# JSON-RPC's answer to a message that is not JSON: the id is null, as none could be read.
PARSE_ERROR = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n'


def _polls(stream: BinaryIO) -> bool:
    """Whether the event loop can wait on the stream: a pipe or a socket (epoll never wakes for /dev/null,
    and refuses regular files)."""
    mode = os.fstat(stream.fileno()).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _pump(stream: BinaryIO, loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> None:
    """Feed `reader` from a blocking stream until its end (in a daemon thread: it never holds up the exit)."""
    try:
        while chunk := os.read(stream.fileno(), CHUNK):
            loop.call_soon_threadsafe(reader.feed_data, chunk)
    except OSError:
        pass  # a read error ends the input like EOF does
    with contextlib.suppress(RuntimeError):  # the loop already closed: nobody waits for the end
        loop.call_soon_threadsafe(reader.feed_eof)


class _FileTransport(asyncio.WriteTransport):
    """Writes to a regular file, at once (the loop's pipe transport refuses files; a file never blocks long)."""

    def __init__(self, stream: BinaryIO) -> None:
        super().__init__()
        self._stream = stream
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Append the data to the file."""
        if not self._closing:
            self._stream.write(data)
            self._stream.flush()

    def is_closing(self) -> bool:
        """Whether close() was called."""
        return self._closing

    def close(self) -> None:
        """Stop writing (the file itself stays open: it is the process's stdout copy)."""
        self._closing = True


async def _screen(raw: asyncio.StreamReader, clean: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Pass each JSON line on to the SDK; answer any other line -32700 (the SDK would only log and drop it)."""
    try:
        while True:
            try:
                line = await raw.readline()
            except ValueError:  # a line over READ_LIMIT: what was read of it is gone, so it cannot be answered
                writer.write(PARSE_ERROR)
                continue
            if not line:
                break
            if line.strip():
                try:
                    json.loads(line)  # parsed again by the SDK: it has no hook for lines it cannot read
                except ValueError:
                    writer.write(PARSE_ERROR)
                    continue
            clean.feed_data(line)
    finally:
        clean.feed_eof()


async def streams(rpc_in: BinaryIO, rpc_out: BinaryIO) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """asyncio streams over the private copies of stdin/stdout; EOF on stdin, of any kind, ends the reader.

    The reader holds only the lines that are JSON: any other is answered -32700 as JSON-RPC says.
    """
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_LIMIT)
    if _polls(rpc_in):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), rpc_in)
    else:
        threading.Thread(target=_pump, args=(rpc_in, loop, reader), name="ollie-acp-stdin", daemon=True).start()
    protocol = asyncio.streams.FlowControlMixin()
    mode = os.fstat(rpc_out.fileno()).st_mode
    if stat.S_ISREG(mode):
        transport: asyncio.WriteTransport = _FileTransport(rpc_out)
    else:
        transport, _ = await loop.connect_write_pipe(lambda: protocol, rpc_out)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    clean = asyncio.StreamReader(limit=READ_LIMIT)
    _SCREENS.add(task := asyncio.ensure_future(_screen(reader, clean, writer)))
    task.add_done_callback(_SCREENS.discard)
    return clean, writer


# The running screens (held so they are not collected while they run).
_SCREENS: set[asyncio.Task[None]] = set()
