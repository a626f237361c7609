"""The daemon's view of the session registry: channel `lsp`, the OS user, registry errors as JSON-RPC errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException

from ollie.sessions import errors as reg_errors
from ollie.sessions.location import StoreConfigError
from ollie.sessions.records import UserRecords
from ollie.sessions.types import Channel, Info, Kind
from ollie_lsp.errors import INVALID_PARAMS, InvalidParams

if TYPE_CHECKING:
    from ollie.agent.recorder import Recorder
    from ollie.agent.surface import SessionView


def check_kind(kind: str, field: str = "kind") -> str:
    """A valid session kind, or -32602 naming `field`."""
    try:
        return str(Kind(kind))
    except ValueError:
        raise InvalidParams(f"{field}: unknown session kind {kind!r} (one of {', '.join(k.value for k in Kind)})") from None


@contextmanager
def rpc_errors(session_id: str, field: str = "") -> Iterator[None]:
    """Registry and store errors as the daemon's JSON-RPC errors (an invalid value named as `field` when given)."""
    try:
        yield
    except (reg_errors.SessionError, StoreConfigError) as exc:
        code, message = reg_errors.rpc_answer(exc, session_id)
        if code == INVALID_PARAMS:
            raise InvalidParams(f"{field}: {message}" if field else message) from None
        raise JsonRpcException(code=code, message=message, data={"session": session_id}) from None


def info_to_wire(info: Info, *, live: bool = False, live_on: str | None = None,
                 turns: int | None = None, rewind_undo: bool = False) -> dict[str, Any]:
    """A session's Info as PROTOCOL.md's `info` object (`live_on`: where another daemon runs it, a shared store;
    `rewind_undo`: its last rewind can still be undone)."""
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
        "turns": turns,
        "rewindUndo": rewind_undo,
    }


def records() -> UserRecords:
    """The daemon's view of the user's records: registry errors as its JSON-RPC errors."""
    return UserRecords(errors=rpc_errors)


async def record(records: UserRecords, core: SessionView, *, kind: str, title: str = "",
                 fresh: bool = False) -> Recorder:
    """Have the engine record a live session on channel `lsp`, its stamps in order on the registry thread."""
    from ollie.agent.recorder import record as engine_record  # the engine: kept off the start-up path

    # A new session's record refused is its `kind`'s doing (a second active `main`: its title is checked with the params).
    with rpc_errors(core.session_id, "kind" if fresh else ""):
        return await engine_record(core, channel=Channel.LSP, kind=kind, title=title, fresh=fresh,
                                   registry=lambda: records.registry, user=records.user, io=records.io)
