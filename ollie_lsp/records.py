"""The daemon's view of the session registry: channel `lsp`, the OS user, registry errors as JSON-RPC errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ollie.sessions import errors as reg_errors
from ollie.sessions.location import StoreConfigError
from ollie.sessions.records import UserRecords
from ollie.sessions.types import Channel, Info, Kind
from ollie_lsp.errors import Forbidden, InvalidParams, LiveElsewhere, SessionArchived, SessionNotFound, StoreUnavailable

if TYPE_CHECKING:
    from ollie.agent.recorder import Recorder
    from ollie.agent.surface import SessionView


def check_kind(kind: str) -> str:
    """A valid session kind, or -32602 naming `kind`."""
    try:
        return str(Kind(kind))
    except ValueError:
        raise InvalidParams(f"kind: unknown session kind {kind!r} (one of {', '.join(k.value for k in Kind)})") from None


@contextmanager
def rpc_errors(session_id: str, field: str = "") -> Iterator[None]:
    """Registry and store errors as the daemon's JSON-RPC errors (an invalid value named as `field` when given)."""
    try:
        yield
    except reg_errors.ReadOnlyError as exc:  # shared to this user's team: they know it exists, say why not
        raise Forbidden(session_id, str(exc)) from None
    # Another user's session (ForbiddenError) is, to this user, a session that does not exist.
    except (reg_errors.NotFoundError, reg_errors.ForbiddenError):
        raise SessionNotFound(session_id) from None
    except reg_errors.ArchivedError:
        raise SessionArchived(session_id) from None
    except reg_errors.InvalidSessionError as exc:
        raise InvalidParams(f"{field}: {exc}" if field else str(exc)) from None
    except reg_errors.LiveElsewhereError as exc:  # another process's live lock, or a database store's lease
        raise LiveElsewhere(session_id, str(exc)) from None
    # StoreConfigError: OLLIE_STORE is not a store URL, and the message says what to set.
    except (reg_errors.SessionError, StoreConfigError) as exc:
        raise StoreUnavailable(session_id, str(exc)) from None


def info_to_wire(info: Info, *, live: bool = False, live_on: str | None = None) -> dict[str, Any]:
    """A session's Info as PROTOCOL.md's `info` object (`live_on`: where another daemon runs it, a shared store)."""
    return {
        "id": info.id,
        "agent": info.agent_id,
        "kind": str(info.kind),
        "channel": str(info.channel),
        "title": info.title,
        "createdAt": info.created_at.isoformat() if info.created_at else None,
        "lastActive": info.last_active.isoformat() if info.last_active else None,
        "lastTurnResult": str(info.last_turn_result),
        "archived": info.archived,
        "owner": info.user_id,
        "team": info.team or None,
        "live": live,
        "liveOn": live_on,
    }


def records() -> UserRecords:
    """The daemon's view of the user's records: registry errors as its JSON-RPC errors."""
    return UserRecords(errors=rpc_errors)


async def record(records: UserRecords, core: SessionView, *, kind: str, title: str = "",
                 fresh: bool = False) -> Recorder:
    """Have the engine record a live session on channel `lsp`, its stamps in order on the registry thread."""
    from ollie.agent.recorder import record as engine_record  # the engine: kept off the start-up path

    with rpc_errors(core.session_id):
        return await engine_record(core, channel=Channel.LSP, kind=kind, title=title, fresh=fresh,
                                   registry=lambda: records.registry, user=records.user, io=records.io)
