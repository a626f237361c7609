"""An MCP server's transport streams as ollie wraps them: the ids of calls going out, the end of what comes in."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator
from typing import Any, Self

from ollie.escapes import one_name
from ollie.mcp.config import ServerSpec

# How long a server has to answer its start (initialize, each list).
START_TIMEOUT_S = 30.0
# How long an HTTP server's streams may stay silent (its calls end sooner: their own `timeout`).
HTTP_READ_TIMEOUT_S = 600.0


class Wrapped:
    """A transport stream of the SDK's, wrapped; the SDK closes it through `async with`."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def aclose(self) -> None:
        """Close the transport's stream."""
        await self._stream.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class Outbox(Wrapped):
    """The session's write stream, noting the JSON-RPC id each tools/call request went out with, by progress token."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.ids: dict[str, Any] = {}

    async def send(self, message: Any) -> None:
        """Note a call's id, then pass the message on."""
        root = message.message.root
        if getattr(root, "method", None) == "tools/call":
            token = ((root.params or {}).get("_meta") or {}).get("progressToken")
            if isinstance(token, str):
                self.ids[token] = root.id
        await self._stream.send(message)


class Inbox(Wrapped):
    """A transport's read stream, telling (`ended`) when it ends: how an HTTP server's going away is seen."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.ended = asyncio.Event()
        self.why = ""  # the transport's last error (the SDK passes them in the stream): why it ended

    async def wait(self) -> None:
        """Return once the stream ended."""
        await self.ended.wait()
        self.why = self.why or "the connection to the server ended"

    def __aiter__(self) -> Inbox:
        return self

    async def __anext__(self) -> Any:
        try:
            item = await self._stream.__anext__()
        except BaseException:
            self.ended.set()
            raise
        if isinstance(item, Exception):
            self.why = why(item)
            from ollie.mcp.httpcap import MessageTooLarge

            if isinstance(item, MessageTooLarge):  # the rest of that answer is unread: the connection is over
                self.ended.set()
                raise StopAsyncIteration
        return item

    async def aclose(self) -> None:
        """Close the transport's stream."""
        self.ended.set()
        await super().aclose()


class Known(Wrapped):
    """A server's messages less those the SDK would log (a notification or request of a method it has not, the whole
    message; an answer to an id that is no number): a server sending them without end filled ollie's log as fast."""

    def __aiter__(self) -> Known:
        return self

    async def __anext__(self) -> Any:
        while _logged(item := await self._stream.__anext__()):
            pass
        return item


def _logged(item: Any) -> bool:
    from mcp import types

    root = getattr(getattr(item, "message", None), "root", None)
    if isinstance(root, types.JSONRPCResponse | types.JSONRPCError):
        return isinstance(root.id, str) and not (root.id.isascii() and root.id.isdigit())
    if not isinstance(root, types.JSONRPCRequest | types.JSONRPCNotification):
        return False
    kind = types.ServerRequest if isinstance(root, types.JSONRPCRequest) else types.ServerNotification
    try:  # as the SDK checks it
        kind.model_validate(root.model_dump(by_alias=True, mode="json", exclude_none=True))
    except ValueError:
        return True
    return False


@contextlib.asynccontextmanager
async def http_streams(spec: ServerSpec) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's (read, write) streams to an HTTP server: streamable HTTP, or legacy SSE."""
    import httpx

    from ollie.mcp.httpcap import client

    bounded = functools.partial(client, pinned=spec.from_workspace)
    if spec.sse:
        import anyio
        from mcp.client.sse import sse_client
        from mcp.shared.message import SessionMessage
        from mcp.types import JSONRPCMessage

        # What the server sends, and the answers `_foreign` makes for the messages its endpoint refused.
        into, out = anyio.create_memory_object_stream[Any]()

        async def refused(error: dict) -> None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await into.send(SessionMessage(JSONRPCMessage.model_validate(error)))

        async with (sse_client(spec.url, headers=dict(spec.headers), timeout=START_TIMEOUT_S,
                               httpx_client_factory=functools.partial(bounded, deliver=refused),
                               sse_read_timeout=max(HTTP_READ_TIMEOUT_S, spec.timeout)) as (read, write),
                    anyio.create_task_group() as tasks):
            tasks.start_soon(_forward, read, into)
            yield out, write
            tasks.cancel_scope.cancel()
        return
    from mcp.client.streamable_http import streamable_http_client

    timeout = httpx.Timeout(START_TIMEOUT_S, read=max(HTTP_READ_TIMEOUT_S, spec.timeout))
    async with (bounded(dict(spec.headers), timeout, answers=True) as http,
                streamable_http_client(spec.url, http_client=http) as (read, write, _)):
        yield read, write


async def _forward(read: Any, into: Any) -> None:
    """Pass what `read` brings on to `into`, and its end."""
    async with into:
        async for item in read:
            await into.send(item)


class CannotStart(OSError):
    """A server that no retry starts (its program does not exist): the user fixes the config, or asks (`/mcp`)."""


def leaf(exc: BaseException) -> BaseException:
    """The first exception inside an exception group (anyio's task groups raise them), or `exc`."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def why(exc: BaseException) -> str:
    """A one-line reason, reaching into an exception group; escaped: a server's words (its error, a page's content
    type) are quoted by /mcp, the chat's notices and both editors, where a U+202E or an escape sequence went as it came."""
    exc = leaf(exc)
    text = str(exc) or type(exc).__name__
    return one_name(text.splitlines()[0], 300) if text else type(exc).__name__
