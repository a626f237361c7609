"""Errors of the session registry, each named for what the caller does about it, with the JSON-RPC code that both
front ends answer it with (`rpc_code`, docs/PROTOCOL.md's table)."""

from __future__ import annotations

from ollie.errors import OllieError


class SessionError(OllieError):
    """Base of the registry errors (a front end answers one it has no other code for as "store unavailable")."""

    rpc_code = -32009


class InvalidSessionError(SessionError, ValueError):
    """A session record or request breaks the session invariant (fail closed)."""

    rpc_code = -32602  # invalid params


class NotFoundError(SessionError, LookupError):
    """The session does not exist."""

    rpc_code = -32001


class ForbiddenError(SessionError, PermissionError):
    """The caller does not own the session (another user or agent)."""

    rpc_code = -32001  # to the caller, a session that does not exist


class ReadOnlyError(ForbiddenError):
    """A change to a session the caller may read (shared to its team channel) but not change: it is not its owner."""

    rpc_code = -32008


def owners_only(session_id: str, owner: str, what: str) -> ReadOnlyError:
    """The refusal of `what` to a teammate in `owner`'s session, shared with their team to read and resume."""
    return ReadOnlyError(f"session {session_id} is {owner}'s, shared with your team to read and resume: only its "
                         f"owner may {what}")


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
