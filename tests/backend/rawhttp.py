"""A one-route HTTP server on 127.0.0.1 that answers every request with a fixed body (for wire shapes the
scripted server does not speak)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


@asynccontextmanager
async def fixed_reply(body: bytes, content_type: str = "text/event-stream") -> AsyncIterator[tuple[str, list[bytes]]]:
    """Serve `body` to every request; yields (base URL, the raw requests received)."""
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        seen.append(head + (await reader.readexactly(length) if length else b""))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: " + content_type.encode()
                     + b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        server.close()
        await server.wait_closed()
