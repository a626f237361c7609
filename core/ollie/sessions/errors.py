"""Errors of the session registry, each named for what the caller does about it, with the JSON-RPC code that both
front ends answer it with (`rpc_code`, docs/PROTOCOL.md's table)."""

from __future__ import annotations

from ollie.errors import OllieError


class SessionError(OllieError):
    """Base of the registry errors (a front end answers one it has no other code for as "store unavailable")."""

    rpc_code = -32009
    again = False  # a save's failure in a run of them the user was told of (the store still down)


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


_ANSWERS = {  # code: how its message starts, and whether it goes on with the error's text (else the session's id)
    NotFoundError.rpc_code: ("session not found", False),  # a ForbiddenError's too: its text would name the owner
    ArchivedError.rpc_code: ("session is archived", False),
    ReadOnlyError.rpc_code: ("forbidden", True),  # shared to this user's team: they know it exists, say why not
    LiveElsewhereError.rpc_code: ("session is live elsewhere", True),  # the text names where and until when
}


def rpc_answer(exc: Exception, session_id: str) -> tuple[int, str]:
    """The JSON-RPC code and message every front end answers a store failure with (docs/PROTOCOL.md's table); an
    invalid record's message is its reason alone, for the front end to name its field.

    Any failure without its own code (OLLIE_STORE no store URL, an unreachable store) is -32009 "store unavailable".
    """
    code = exc.rpc_code if isinstance(exc, SessionError) else SessionError.rpc_code
    if code == InvalidSessionError.rpc_code:
        return code, str(exc)
    start, own_text = _ANSWERS.get(code, ("store unavailable", True))
    return code, f"{start}: {exc if own_text else session_id}"
