"""Errors of the session registry, each named for what the caller does about it."""

from __future__ import annotations

from ollie.errors import OllieError


class SessionError(OllieError):
    """Base of the registry errors; `rpc_code` is the daemon's JSON-RPC error code (-32009: the store failed)."""

    rpc_code = -32009


class InvalidSessionError(SessionError, ValueError):
    """A session record or request breaks the session invariant (fail closed)."""

    rpc_code = -32602


class NotFoundError(SessionError, LookupError):
    """The session does not exist."""

    rpc_code = -32001


class ForbiddenError(SessionError, PermissionError):
    """The caller does not own the session (another user or agent)."""

    rpc_code = -32003


class ReadOnlyError(ForbiddenError):
    """A change to a session the caller may read (shared to its team channel) but not change: it is not its owner."""

    rpc_code = -32008


class ArchivedError(SessionError):
    """A write to an archived session."""

    rpc_code = -32002


class TitleTooLongError(InvalidSessionError):
    """A title exceeds MAX_TITLE_BYTES of UTF-8."""


class NotSavedError(SessionError):
    """A session closed with rounds its store did not take; what it had saved before is kept."""


class LiveElsewhereError(SessionError):
    """Another process of this machine runs the session now (ollie.sessions.livelock); the message names it."""

    rpc_code = -32007
