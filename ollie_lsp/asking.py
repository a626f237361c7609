"""Requests to the editor that may be given up on: a timeout or an interrupt drops the request cleanly."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from lsprotocol import types

if TYPE_CHECKING:
    from pygls.protocol import LanguageServerProtocol

logger = logging.getLogger("ollie.lsp.asking")

# Where the client's reading cannot be seen (TCP), the gap left between a held request's answer and a question.
ANSWER_APART = 0.2
# The requests answered before the daemon asks the user anything (see `held_until_asking`), each with its
# client's protocol and the event that answers it now.
_held: dict[asyncio.Task[Any], tuple[LanguageServerProtocol, asyncio.Event]] = {}


def request_id() -> str:
    """A new id for a request to the client (one `ask_client` takes, to name it in its params beforehand)."""
    return str(uuid.uuid4())


@contextlib.contextmanager
def held_until_asking(protocol: LanguageServerProtocol) -> Iterator[asyncio.Event]:
    """Within it, the running request is answered before its client is asked anything: the event is set then,
    and the request answers as soon as it sees it (a code action's `workspace/executeCommand`)."""
    request = asyncio.current_task()
    answer_now = asyncio.Event()
    if request is not None:
        _held[request] = (protocol, answer_now)
    try:
        yield answer_now
    finally:
        if request is not None:
            _held.pop(request, None)


async def answer_held(protocol: LanguageServerProtocol) -> None:
    """Have the requests held for this client answered, and wait until the client has read their answers.

    eglot asks inside its wait for a request, and that wait's end (the answer, or its 10 s timeout) throws the
    user out of the question unanswered: the turn then waited for an answer that never came. And Emacs' jsonrpc
    leaves what it read together with the answer it waited for unread until more output comes: a question in
    the same read as the answer sat there.
    """
    me = asyncio.current_task()
    held = [(request, event) for request, (client, event) in _held.items() if client is protocol and request is not me]
    if not held:
        return
    for _, answer_now in held:
        answer_now.set()
    # pygls writes a request's answer in the first callback of its task: written when the tasks are done.
    await asyncio.wait([request for request, _ in held])
    read = getattr(protocol.writer, "read_by_client", None)
    if read is not None:
        await read()
    else:  # a TCP client: what its side of the socket holds unread cannot be seen from here
        await asyncio.sleep(ANSWER_APART)


async def ask_client(protocol: LanguageServerProtocol, method: str, params: Any, timeout_s: float | None = None, *,
                     msg_id: str | None = None, answer_first: bool = True) -> Any:
    """Send `method` to the client (as request `msg_id`, default a new one) and await its answer as plain JSON.

    A question to the user first has the held requests answered (`answer_held`); `answer_first=False` is for a
    request the client answers by itself, which a held request may wait through. A wait that ends early (timeout,
    interrupt) forgets the request and sends `$/cancelRequest`: a late answer is then ignored, where pygls would
    fail on the cancelled future and report that to the client.
    """
    if answer_first:
        await answer_held(protocol)
    msg_id = msg_id or request_id()
    try:
        async with asyncio.timeout(timeout_s):
            return await protocol.send_request_async(method, params, msg_id=msg_id)
    except (TimeoutError, asyncio.CancelledError):
        forget_request(protocol, method, msg_id)
        raise


def forget_request(protocol: LanguageServerProtocol, method: str, msg_id: str) -> None:
    """Drop a request nobody waits for (its late answer is then only logged) and tell the client to stop."""
    # pygls has no public way to drop a pending request.
    protocol._request_futures.pop(msg_id, None)
    try:
        # Typed params: pygls serialises $/cancelRequest (an LSP method) through lsprotocol's CancelParams.
        protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    except Exception as exc:  # the client is gone: the caller's error says enough
        logger.info("could not cancel %s: %s", method, exc)
