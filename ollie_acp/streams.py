"""The ACP agent's stdin as an asyncio stream and its stdout's writer, whatever they are: pipes, sockets, files or
/dev/null; newline-delimited JSON-RPC over them."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import select
import stat
import threading
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO

from ollie.stdio import INVALID_REQUEST, PARSE_ERROR, BlockingWriter, PipeWriter, open_writer, while_read
from ollie_acp.mcpentries import malformed_entries

logger = logging.getLogger("ollie.acp.streams")

INVALID_PARAMS = -32602
# The longest line read (embedded files can be big); a longer one is answered -32600 and skipped.
READ_LIMIT = 50 * 1024 * 1024
CHUNK = 64 * 1024


def _polls(stream: BinaryIO) -> bool:
    """Whether the event loop can wait on the stream: a pipe or a socket (epoll never wakes for /dev/null,
    and refuses regular files)."""
    mode = os.fstat(stream.fileno()).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _pump(stream: BinaryIO, loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> None:
    """Feed `reader` from a blocking stream until its end (in a daemon thread: it never holds up the exit)."""
    with contextlib.suppress(OSError):  # a read error ends the input like EOF does
        while True:
            try:
                chunk = os.read(stream.fileno(), CHUNK)
            except BlockingIOError:  # a terminal is one open file: stdout's writer made stdin non-blocking too
                select.select([stream], [], [])
                continue
            if not chunk:
                break
            loop.call_soon_threadsafe(reader.feed_data, chunk)
    with contextlib.suppress(RuntimeError):  # the loop already closed: nobody waits for the end
        loop.call_soon_threadsafe(reader.feed_eof)


def _name_fields(message: dict[str, Any]) -> None:
    """Every -32602 as `Invalid params: <field>: <why>; ...` (the daemon's words, the TS SDK's `invalidParams` with a
    message), `data` its `{field: why}`: a client that shows only the message (codecompanion.nvim) said "Invalid
    params" alone. The SDK's own for params that fail its schema named the field only as a list, `loc`, and echoed
    each bad value whole (a megabyte string sent back)."""
    error = message.get("error")
    if not isinstance(error, dict) or error.get("code") != -32602:
        return
    if isinstance(data := error.get("data"), dict) and isinstance(found := data.get("errors"), list):
        error["data"] = {".".join(map(str, e.get("loc") or ["params"])): e.get("msg") for e in found}
    if isinstance(data := error.get("data"), dict) and data and error.get("message") == "Invalid params":
        error["message"] = "Invalid params: " + "; ".join(f"{field}: {why}" for field, why in error["data"].items())


async def streams(rpc_in: BinaryIO, rpc_out: BinaryIO) -> tuple[asyncio.StreamReader, PipeWriter | BlockingWriter]:
    """A stream over the private copy of stdin (EOF of any kind ends it) and the writer of stdout's."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_LIMIT)
    if _polls(rpc_in):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), rpc_in)
    else:
        threading.Thread(target=_pump, args=(rpc_in, loop, reader), name="ollie-acp-stdin", daemon=True).start()
    return reader, await open_writer(rpc_out)


class LineTransport:
    """ACP's newline-delimited JSON-RPC over the streams: a line that is not a JSON-RPC object is answered.

    The SDK's own transport drops such a line unanswered, and a JSON array or number ends its receive loop.
    At the end of the input the requests read are answered before the SDK hears of it: it cancels what still runs.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: PipeWriter | BlockingWriter, *,
                 on_end: Callable[[], Awaitable[None]] | None = None) -> None:
        self._reader = reader
        self._writer = writer
        self._on_end = on_end  # what ends the work a gone client can no longer stop (its running turns)
        self._unanswered: set[Any] = set()  # ids of the client's requests read and not answered yet
        self._all_answered = asyncio.Event()

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message as one line (one write: lines from concurrent senders never interleave); past the
        unsent output's high-water mark, wait for the client to read."""
        _name_fields(message)
        if "method" not in message and isinstance(msg_id := message.get("id"), (int, str)):  # an answer
            self._unanswered.discard(msg_id)
            if not self._unanswered:
                self._all_answered.set()
        self._writer.write((json.dumps(message, separators=(",", ":")) + "\n").encode())
        await self._writer.writable()

    async def receive(self) -> dict[str, Any] | None:
        """The next JSON-RPC object from the client (None at the end of input); anything else is answered."""
        while True:
            line = await self._line()
            if line is None:
                await self._refuse(None, INVALID_REQUEST, f"Invalid Request: a line over {READ_LIMIT >> 20} MiB")
                continue
            if not line:
                await self._answer_the_rest()
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError) as exc:
                await self._refuse(None, PARSE_ERROR, f"Parse error: {exc}"[:300])
                continue
            if isinstance(message, dict):
                if (bad := malformed_entries(message)) and "id" in message:
                    await self._refuse(message["id"], INVALID_PARAMS, "Invalid params", bad)
                    continue
                if "method" in message and isinstance(msg_id := message.get("id"), (int, str)):  # a request
                    self._unanswered.add(msg_id)
                    self._all_answered.clear()
                return message
            # Not an object: a batch's requests are each answered (ACP has no batches), anything else once.
            requests = message if isinstance(message, list) else []
            ids = [m["id"] for m in requests if isinstance(m, dict) and isinstance(m.get("id"), (int, str))]
            for msg_id in ids or [None]:
                await self._refuse(msg_id, INVALID_REQUEST, "Invalid Request: one JSON-RPC object per line")

    async def close(self) -> None:
        """Let what is written reach the client (the streams themselves are the process's stdio)."""
        await self._writer.writable()

    async def _answer_the_rest(self) -> None:
        """The input ended: let the requests read so far be answered (a client may close stdin right after its last
        one and read on), with the turns stopped, while the client keeps reading (see `while_read`): a long session's
        load waits on the client reading its replay, and the SDK would cancel it, its answer never sent."""
        await asyncio.sleep(0)  # the last request's handler starts (the SDK made its task just now)
        if self._on_end is not None:
            await self._on_end()
        if self._unanswered:
            await while_read(self._all_answered.wait(), self._writer.taken)

    async def _line(self) -> bytes | None:
        """The next line (b"" at the end of input); None for one over READ_LIMIT, which is skipped."""
        try:
            return await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial  # the last line, without its newline
        except asyncio.LimitOverrunError as exc:
            skipped = exc.consumed
        with contextlib.suppress(asyncio.IncompleteReadError):  # the input ended inside it
            while True:
                await self._reader.readexactly(skipped)
                try:
                    await self._reader.readuntil(b"\n")
                    break
                except asyncio.LimitOverrunError as exc:
                    skipped = exc.consumed
        return None

    async def _refuse(self, msg_id: Any, code: int, message: str, data: dict[str, str] | None = None) -> None:
        logger.warning("bad message from the client: %s %s", message, data or "")
        error: dict[str, Any] = {"code": code, "message": message}
        if data:
            error["data"] = data
        with contextlib.suppress(ConnectionError):
            await self.send({"jsonrpc": "2.0", "id": msg_id, "error": error})
