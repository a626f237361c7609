"""Session-store failures as the ACP agent's JSON-RPC errors, with the codes the daemon uses (docs/PROTOCOL.md)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from acp import RequestError

from ollie.sessions import errors as session_errors
from ollie.sessions.location import StoreConfigError


@contextmanager
def store_errors(session_id: str | None) -> Iterator[None]:
    """A store failure inside as its error (the code ollie.sessions.errors declares): -32002 archived, -32007 live
    elsewhere, -32008 forbidden, -32009 store unavailable, -32602 a record that fails its checks.

    The SDK would answer any other exception with -32603 "Internal error": nothing a user can act on.
    """
    data = {"sessionId": session_id} if session_id else None
    try:
        yield
    except session_errors.ReadOnlyError as exc:
        raise RequestError(exc.rpc_code, f"forbidden: {exc}", data) from None
    # Another user's session (ForbiddenError) is, to this user, one that does not exist (as in the daemon).
    except (session_errors.ForbiddenError, session_errors.NotFoundError):
        raise RequestError.resource_not_found(session_id) from None
    except session_errors.InvalidSessionError as exc:  # a record no ollie wrote (fails closed)
        raise RequestError.invalid_params({"sessionId": str(exc)}) from None
    # ACP's "resource not found" is -32002 too: a client that knows neither still sees it cannot open the session.
    except session_errors.ArchivedError as exc:
        raise RequestError(exc.rpc_code, f"session is archived: {session_id}", data) from None
    except session_errors.LiveElsewhereError as exc:  # another process, or (OLLIE_STORE) machine, runs it now
        raise RequestError(exc.rpc_code, f"session is live elsewhere: {exc}", data) from None
    except (session_errors.SessionError, StoreConfigError) as exc:
        raise RequestError(session_errors.SessionError.rpc_code, f"store unavailable: {exc}", data) from None
