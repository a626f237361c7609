"""The daemon's JSON-RPC errors: each carries the code PROTOCOL.md gives it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pygls.exceptions import JsonRpcException

SESSION_NOT_FOUND = -32001
SESSION_ARCHIVED = -32002
STALE = -32003
FORBIDDEN = -32008
INVALID_PARAMS = -32602


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


class Forbidden(JsonRpcException):
    """-32008: a change to a session this user may read (shared to their team) but not change."""

    CODE = FORBIDDEN
    MESSAGE = "forbidden"

    def __init__(self, session_id: str, why: str) -> None:
        super().__init__(message=f"forbidden: {why}", code=FORBIDDEN, data={"session": session_id})


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
