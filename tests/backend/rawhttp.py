"""HTTP servers on 127.0.0.1 for wire shapes the scripted server does not speak: a fixed body for every
request, or exact bytes (hostile, broken or odd answers) per request."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from ollie.backend.openai import OpenAIBackend


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


Step = bytes | float | None  # bytes: written; a float: seconds to wait; None: close the connection


@dataclass
class WireServer:
    """What a `wire_server` saw: its URL, each raw request, the connections accepted and those the client ended."""

    url: str
    requests: list[bytes] = field(default_factory=list)
    connections: int = 0
    client_closed: int = 0
    open: int = 0  # connections open now
    peak: int = 0  # the most open at once
    ended: asyncio.Event = field(default_factory=asyncio.Event)  # set whenever a client ends a connection


@asynccontextmanager
async def wire_server(answer: Callable[[bytes], Iterable[Step]], *, tls: ssl.SSLContext | None = None,
                      host: str = "127.0.0.1", read_body: bool = True) -> AsyncIterator[WireServer]:
    """Answer each request with the raw steps `answer(request)` returns (exact bytes, pauses, a close);
    a connection stays open for the next request until a step closes it or the client does. With
    `read_body=False` the answer follows the request's head at once, its body left unread."""
    state = WireServer("")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state.connections += 1
        state.open += 1
        state.peak = max(state.peak, state.open)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    state.client_closed += 1
                    state.ended.set()
                    return
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                if not read_body:
                    body = b""
                elif b"\r\ntransfer-encoding: chunked" in head.lower():
                    body = b""
                    while size := int((await reader.readline()).strip(), 16):
                        body += (await reader.readexactly(size + 2))[:-2]
                    await reader.readexactly(2)
                else:
                    body = await reader.readexactly(length) if length else b""
                request = head + body
                state.requests.append(request)
                for step in answer(request):
                    if step is None:
                        return
                    if isinstance(step, float) and not read_body:
                        await asyncio.sleep(step)  # the body is still unread: reading would end the pause early
                        continue
                    if isinstance(step, float):
                        try:  # a pause that notices the client ending the connection
                            if not await asyncio.wait_for(reader.read(1), step):
                                state.client_closed += 1
                                state.ended.set()
                                return
                        except TimeoutError:
                            pass
                        continue
                    writer.write(step)
                    await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            state.client_closed += 1
            state.ended.set()
        finally:
            state.open -= 1
            writer.close()

    server = await asyncio.start_server(handle, host, 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    state.url = f"{'https' if tls else 'http'}://{f'[{host}]' if ':' in host else host}:{port}"
    try:
        yield state
    finally:
        server.close()
        await server.wait_closed()


def chunked(*pieces: bytes) -> bytes:
    """`pieces` as a chunked body, each a chunk of its own, with the closing chunk."""
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


WORDS = (b"one ", b"two ", b"three")
SSE = b"".join(b'data: {"choices":[{"delta":{"content":"%s"}}]}\n\n' % w for w in WORDS) + b"data: [DONE]\n\n"
CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def sized(body: bytes, *extra: bytes) -> bytes:
    """A 200 answer with a Content-Length body (and `extra` header lines)."""
    return b"HTTP/1.1 200 OK\r\n%sContent-Length: %d\r\n\r\n%s" % (b"".join(e + b"\r\n" for e in extra), len(body),
                                                                      body)


def backend_for(url: str, **options: Any) -> OpenAIBackend:
    """An OpenAI backend pointed at `url` (its /v1), with `options` (timeout, limits) over the defaults."""
    return OpenAIBackend(model="m", api_key="sk-test", base_url=f"{url}/v1", **options)
