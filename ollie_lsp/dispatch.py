"""The ollie/* method table: each handler registered under its name, run with its params checked."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pygls.exceptions import JsonRpcException

from ollie_lsp.errors import InternalError
from ollie_lsp.params import SessionIdParams, SessionParams, parse
from ollie_lsp.records import rpc_errors
from ollie_lsp.server import OllieServer

logger = logging.getLogger("ollie.lsp.methods")
P = TypeVar("P")
Handler = Callable[[OllieServer, Any], Awaitable[dict[str, Any]]]
METHODS: dict[str, Handler] = {}


def method(name: str, shape: type[P]) -> Callable[[Callable[[OllieServer, P], Awaitable[dict[str, Any]]]], Handler]:
    """Register a handler as the ollie/* method `name`; it gets the params checked into `shape` (-32602).

    A method aimed at one session is answered after the events that session published so far went out (PROTOCOL.md):
    those it caused (a command's output, a state change) come before its answer, whichever handler it was.
    """

    def register(handler: Callable[[OllieServer, P], Awaitable[dict[str, Any]]]) -> Handler:
        async def run(ls: OllieServer, raw: Any) -> dict[str, Any]:
            p = parse(shape, raw)
            if not isinstance(p, (SessionParams, SessionIdParams)):
                return await handler(ls, p)
            try:
                result = await handler(ls, p)
            except Exception:  # an error answer too (not a cancelled request: it goes at once)
                await _events_sent(ls, p.session)
                raise
            await _events_sent(ls, p.session)
            return result

        METHODS[name] = run
        return run

    return register


async def _events_sent(ls: OllieServer, session: str | None) -> None:
    # Not initialized: the handler failed for that, and there is no table to build.
    if ls.initialized:
        await ls.table.events_sent(session)



async def call(name: str, ls: OllieServer, raw: Any) -> dict[str, Any]:
    """Run the handler of method `name` (the server's lazy stubs land here), its failures as PROTOCOL.md's errors.

    A store failure gets its code (-32007 live elsewhere, -32009 store unavailable, ...); anything else
    unexpected is -32603 with its text, never the exception's class name or a traceback.
    """
    session = raw.get("session") if isinstance(raw, dict) else None
    try:
        with rpc_errors(session if isinstance(session, str) else ""):
            return await METHODS[name](ls, raw)
    except JsonRpcException:
        raise
    except Exception as exc:
        logger.exception("%s failed", name)
        raise InternalError(exc) from None
