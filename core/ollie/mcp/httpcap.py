"""An HTTP MCP server's answers read with a bound, as a stdio server's lines are: a JSON answer whole, an event
stream event by event (a server sending without end filled the daemon's memory: +550 MB for 400 MB sent)."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx

from ollie.mcp.config import MAX_MESSAGE_BYTES, NOT_MCP

_EVENT_ENDS = (b"\n\n", b"\n\r\n", b"\r\r")  # a blank line ends a server-sent event (LF, CRLF or CR lines)


class MessageTooLarge(httpx.ReadError):
    """A server's answer or event past MAX_MESSAGE_BYTES: the connection ends (ollie.mcp.transport's `Inbox`)."""


def client(headers: dict[str, str] | None = None, timeout: httpx.Timeout | None = None,
           auth: httpx.Auth | None = None, *, pinned: bool = False, answers: bool = False,
           deliver: Callable[[dict], Awaitable[None]] | None = None) -> httpx.AsyncClient:
    """An HTTP client for the MCP SDK (its `httpx_client_factory`'s signature) whose answers are bounded; `pinned`
    (a workspace's server): it reaches a host name only at a public address (`_pin`); `answers` (streamable HTTP, where
    a request's response is its answer): one that is no MCP server's is an error answer saying what came (`_foreign`);
    `deliver` (legacy SSE, where answers come on the event stream): a message refused gets that answer through it."""
    foreign = [functools.partial(_foreign, deliver=deliver)] if answers or deliver else []
    hooks: dict[str, list[Any]] = {"response": [*foreign, _bound], "request": [_pin] if pinned else []}
    return httpx.AsyncClient(headers=headers, timeout=timeout, auth=auth, event_hooks=hooks)


async def _pin(request: httpx.Request) -> None:
    """Send `request` to a public address of its host name, as the egress proxy checks a step's: the user allowed a
    workspace's `https://mcp.example/`, which may resolve to this machine or its network (a literal is as shown)."""
    from ollie.sandbox.egress import system_resolve
    from ollie.sandbox.proxyrequest import is_ip

    host = request.url.host
    if is_ip(host) or host == "localhost":
        return
    try:
        addresses = await system_resolve(host, request.url.port or (443 if request.url.scheme == "https" else 80))
    except OSError as exc:
        raise httpx.ConnectError(str(exc), request=request) from None
    request.extensions = {**request.extensions, "sni_hostname": host}  # the certificate is still the name's
    request.url = request.url.copy_with(host=addresses[0])


async def _bound(response: httpx.Response) -> None:
    response.stream = _Bounded(response.stream, response.headers.get("content-type", "").startswith("text/event-stream"),
                               _request_id(response.request))


async def _foreign(response: httpx.Response, deliver: Callable[[dict], Awaitable[None]] | None = None) -> None:
    """A request's answer that no MCP server gives (a web page; a 404 to a request of no session, where an MCP
    server's 404 says a session ended) made an error answer saying what came: the SDK dropped a page (the request
    waited out the start's 30 s) and called a 404 "Session terminated". With `deliver` (legacy SSE): a message its
    endpoint refused (an HTTP error; the SDK only logged it, the request waiting out its time) answered so through it."""
    kind, request_id = response.headers.get("content-type", "").split(";")[0].lower(), _request_id(response.request)
    said = f"HTTP {response.status_code} {response.reason_phrase}"
    if deliver is not None and request_id is not None and response.status_code >= 400:
        why = f"the server's message endpoint answered {said} ({kind or 'no content type'})"
        await deliver(_answer(request_id, NOT_MCP, why))
    if deliver is not None or request_id is None or response.status_code not in (200, 404) or (
            "mcp-session-id" in response.request.headers) or (
            response.status_code == 200 and kind.startswith(("application/json", "text/event-stream"))):  # as the SDK
        return
    why = f"not an MCP server's answer ({said}, {kind or 'no content type'})"
    page, response.stream = response.stream, httpx.ByteStream(_error(request_id, NOT_MCP, why))
    if isinstance(page, httpx.AsyncByteStream):
        await page.aclose()  # never read: its connection goes back
    response.status_code, response.headers["content-type"] = 200, "application/json"


def _answer(request_id: Any, code: int, why: str) -> dict:
    """The JSON-RPC error answer to request `request_id`."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": why}}


def _error(request_id: Any, code: int, why: str) -> bytes:
    """`_answer` as the bytes of a response body."""
    return json.dumps(_answer(request_id, code, why)).encode()


def _request_id(request: httpx.Request) -> Any:
    """The JSON-RPC id of the request `request` posts (None: a notification, or no JSON-RPC request)."""
    try:
        message = json.loads(request.content)
    except (httpx.RequestNotRead, ValueError):
        return None
    return message.get("id") if isinstance(message, dict) and "method" in message else None


class _Bounded(httpx.AsyncByteStream):
    """A response body that fails once one message (the whole body, or an event) passes MAX_MESSAGE_BYTES: a request's
    answer is then that error, at once (the SDK dropped an event stream's failure: the request waited out its
    timeout); the SDK gets whole messages only (the one cut is never parsed)."""

    def __init__(self, stream: Any, events: bool, request_id: Any) -> None:
        self._stream, self._events, self._id = stream, events, request_id

    async def __aiter__(self) -> AsyncIterator[bytes]:
        run, tail, held = 0, b"", bytearray()
        async for chunk in self._stream:
            seen = tail + chunk  # with the last bytes before it: a blank line may straddle two chunks
            # How many bytes follow the last blank line (-1: none).
            ends = [i + len(end) for end in _EVENT_ENDS if (i := seen.rfind(end)) >= 0] if self._events else []
            left = len(seen) - max(ends) if ends else -1
            run = left if left >= 0 else run + len(chunk)
            if run > MAX_MESSAGE_BYTES:
                why = f"the server sent a message over {MAX_MESSAGE_BYTES} bytes"
                if self._id is None:
                    raise MessageTooLarge(why)
                error = _error(self._id, -32603, why)
                yield b"event: message\ndata: " + error + b"\n\n" if self._events else error
                return
            tail = seen[-2:]
            held += chunk
            if left >= 0:  # the events before it are whole
                yield bytes(held[:len(held) - left])
                del held[:len(held) - left]
        if held and not self._events and self._id is not None and not _json(held):
            # Not JSON, said to be (a page served as application/json): the SDK dropped it, and the request waited out
            # the start's 30 s as a server that never answered.
            held = bytearray(_error(self._id, NOT_MCP, "not an MCP server's answer (its JSON answer is no JSON)"))
        if held:
            yield bytes(held)

    async def aclose(self) -> None:
        """Close the body it reads."""
        await self._stream.aclose()


def _json(body: bytes | bytearray) -> bool:
    """Whether `body` is a JSON object or array (a JSON-RPC message or batch)."""
    try:
        return isinstance(json.loads(body), (dict, list))
    except (ValueError, RecursionError):
        return False
