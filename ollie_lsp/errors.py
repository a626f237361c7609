"""The daemon's JSON-RPC errors: each carries the code PROTOCOL.md gives it (a store error's is declared with it, in
ollie.sessions.errors, for `ollie acp` to answer the same)."""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from contextlib import contextmanager

from pygls.exceptions import JsonRpcException

from ollie.agent import inbox
from ollie.sessions import errors as store

STALE = -32003
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class RpcError(JsonRpcException):
    """An error of PROTOCOL.md's table: `<MESSAGE>: <why>`, with `data` naming its session or path."""

    CODE = INTERNAL_ERROR
    MESSAGE = "internal error"

    def __init__(self, why: str, data: dict[str, str] | None = None) -> None:
        super().__init__(message=f"{self.MESSAGE}: {why}", code=self.CODE, data=data)


class NoFolder(ValueError):
    """Each workspace folder named was refused: sessions start in the next one added."""


class InvalidParams(RpcError):
    """-32602: the message names the bad field."""

    CODE, MESSAGE = INVALID_PARAMS, "Invalid params"


class _SessionProblem(JsonRpcException):
    """A session error as every front end answers it (the store's one table: `rpc_answer`), `data: {session}`."""

    ERROR: type[store.SessionError]

    def __init__(self, session_id: str) -> None:
        code, message = store.rpc_answer(self.ERROR(session_id), session_id)
        super().__init__(message=message, code=code, data={"session": session_id})


class SessionNotFound(_SessionProblem):
    """-32001: no session has this id."""

    ERROR = store.NotFoundError


class SessionArchived(_SessionProblem):
    """-32002: the session is archived and cannot be written to."""

    ERROR = store.ArchivedError


class InternalError(JsonRpcException):
    """-32603: an unexpected failure, answered with its text only (pygls would prefix the class name)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(message=str(error) or "internal error (the daemon's log has the details)",
                         code=INTERNAL_ERROR)


class StartProblem(JsonRpcException):
    """-32603: the daemon cannot keep sessions (its state dir cannot be written); the message says what to do."""

    def __init__(self, problem: str) -> None:
        super().__init__(message=problem, code=INTERNAL_ERROR)


class Stale(RpcError):
    """-32003: an undo refused because the file changed since the agent's change (the user's edit is kept)."""

    CODE, MESSAGE = STALE, "stale"

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}", {"path": path})


class QueueFull(RpcError):
    """-32010: a queued or injected prompt the session has no room for (what waits is kept)."""

    CODE, MESSAGE = inbox.QueueFull.rpc_code, "queue full"


@contextmanager
def refused(rpc: type[RpcError], error: type[Exception], data: dict[str, str] | None = None) -> Iterator[None]:
    """An `error` raised inside (the engine refusing) as the `rpc` error, its text the why; the frames it came
    through let go of their values (a refused prompt's 40 MiB of images stayed until a garbage collection)."""
    try:
        yield
    except error as exc:
        traceback.clear_frames(exc.__traceback__)
        raise rpc(str(exc), data) from None


@contextmanager
def invalid_params(field: str, error: type[Exception] = ValueError) -> Iterator[None]:
    """An `error` raised inside (the engine refusing a value) as -32602 naming `field`."""
    try:
        yield
    except error as exc:
        raise InvalidParams(f"{field}: {exc}") from None
