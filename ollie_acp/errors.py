"""The ACP agent's JSON-RPC errors: a refused value as -32602 naming its field, session-store failures with the
daemon's codes (docs/PROTOCOL.md)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from acp import RequestError

from ollie.sessions import errors as session_errors
from ollie.sessions.location import StoreConfigError


@contextmanager
def invalid_params(field: str, *errors: type[Exception]) -> Iterator[None]:
    """One of `errors` raised inside (a value refused) as -32602 naming `field`, its text the why."""
    try:
        yield
    except errors as exc:
        raise RequestError.invalid_params({field: str(exc)}) from None


@contextmanager
def store_errors(session_id: str | None) -> Iterator[None]:
    """A store failure inside as the daemon's error (ollie.sessions.errors.rpc_answer), except that a session not
    found is ACP's "resource not found" and an invalid record `-32602` naming `sessionId`.

    The SDK would answer any other exception with -32603 "Internal error": nothing a user can act on.
    """
    try:
        yield
    except (session_errors.SessionError, StoreConfigError) as exc:
        code, message = session_errors.rpc_answer(exc, session_id or "")
        # ACP's "resource not found" is -32002 (the daemon's archived): a client that knows neither still sees that
        # it cannot open the session.
        if code == session_errors.NotFoundError.rpc_code:
            raise RequestError.resource_not_found(session_id) from None
        if code == session_errors.InvalidSessionError.rpc_code:  # a record no ollie wrote (fails closed)
            raise RequestError.invalid_params({"sessionId": message}) from None
        raise RequestError(code, message, {"sessionId": session_id} if session_id else None) from None
