"""Requests to the editor that may be given up on: a timeout or an interrupt drops the request cleanly."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

from lsprotocol import types

if TYPE_CHECKING:
    from pygls.protocol import LanguageServerProtocol

logger = logging.getLogger("ollie.lsp.asking")


def request_id() -> str:
    """A new id for a request to the client (one `ask_client` takes, to name it in its params beforehand)."""
    return str(uuid.uuid4())


async def ask_client(protocol: LanguageServerProtocol, method: str, params: Any, timeout_s: float | None = None, *,
                     msg_id: str | None = None) -> Any:
    """Send `method` to the client (as request `msg_id`, default a new one) and await its answer as plain JSON.

    A wait that ends early (timeout, interrupt) forgets the request and sends `$/cancelRequest`: a late answer
    is then ignored, where pygls would fail on the cancelled future and report that to the client.
    """
    msg_id = msg_id or request_id()
    try:
        raw = await asyncio.wait_for(protocol.send_request_async(method, params, msg_id=msg_id), timeout_s)
    except (TimeoutError, asyncio.CancelledError):
        forget_request(protocol, method, msg_id)
        raise
    return plain(raw)


def forget_request(protocol: LanguageServerProtocol, method: str, msg_id: str) -> None:
    """Drop a request nobody waits for (its late answer is then only logged) and tell the client to stop."""
    # pygls has no public way to drop a pending request.
    protocol._request_futures.pop(msg_id, None)
    try:
        # Typed params: pygls serialises $/cancelRequest (an LSP method) through lsprotocol's CancelParams.
        protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    except Exception as exc:  # the client is gone: the caller's error says enough
        logger.info("could not cancel %s: %s", method, exc)


def plain(value: Any) -> Any:
    """A response as plain JSON (pygls may hand back namedtuples)."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value
