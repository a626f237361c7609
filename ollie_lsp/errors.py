"""The daemon's JSON-RPC errors: each carries the code PROTOCOL.md gives it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pygls.exceptions import JsonRpcException

SESSION_NOT_FOUND = -32001
SESSION_ARCHIVED = -32002
STALE = -32003
LIVE_ELSEWHERE = -32007
FORBIDDEN = -32008
STORE_UNAVAILABLE = -32009
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class InvalidParams(JsonRpcException):
    """-32602: the message names the bad field."""

    CODE = INVALID_PARAMS
    MESSAGE = "Invalid params"

    def __init__(self, detail: str) -> None:
        super().__init__(message=f"Invalid params: {detail}", code=INVALID_PARAMS)


class SessionNotFound(JsonRpcException):
    """-32001: no session has this id."""

    CODE = SESSION_NOT_FOUND
    MESSAGE = "session not found"

    def __init__(self, session_id: str) -> None:
        super().__init__(message=f"session not found: {session_id}", code=SESSION_NOT_FOUND, data={"session": session_id})


class SessionArchived(JsonRpcException):
    """-32002: the session is archived and cannot be written to."""

    CODE = SESSION_ARCHIVED
    MESSAGE = "session is archived"

    def __init__(self, session_id: str) -> None:
        super().__init__(message=f"session is archived: {session_id}", code=SESSION_ARCHIVED, data={"session": session_id})


class _SessionProblem(JsonRpcException):
    """A session error whose message is `<MESSAGE>: <why>`, with `data: {session}`."""

    def __init__(self, session_id: str, why: str) -> None:
        super().__init__(message=f"{self.MESSAGE}: {why}", code=self.CODE, data={"session": session_id})


class Forbidden(_SessionProblem):
    """-32008: a change to a session this user may read (shared to their team) but not change."""

    CODE = FORBIDDEN
    MESSAGE = "forbidden"


class LiveElsewhere(_SessionProblem):
    """-32007: another process runs (holds the lease of) the session; `why` names where and until when."""

    CODE = LIVE_ELSEWHERE
    MESSAGE = "session is live elsewhere"


class StoreUnavailable(_SessionProblem):
    """-32009: the session store cannot be used now (unreachable, locked, a newer schema); the request did nothing."""

    CODE = STORE_UNAVAILABLE
    MESSAGE = "store unavailable"


class InternalError(JsonRpcException):
    """-32603: an unexpected failure, answered with its text only (pygls would prefix the class name)."""

    CODE = INTERNAL_ERROR
    MESSAGE = "internal error"

    def __init__(self, error: Exception) -> None:
        super().__init__(message=str(error) or "internal error (the daemon's log has the details)",
                         code=INTERNAL_ERROR)


class Stale(JsonRpcException):
    """-32003: an undo refused because the file changed since the agent's change (the user's edit is kept)."""

    CODE = STALE
    MESSAGE = "stale"

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(message=f"stale: {path}: {reason}", code=STALE, data={"path": path})


@contextmanager
def invalid_params(field: str, error: type[Exception] = ValueError) -> Iterator[None]:
    """An `error` raised inside (the engine refusing a value) as -32602 naming `field`."""
    try:
        yield
    except error as exc:
        raise InvalidParams(f"{field}: {exc}") from None
