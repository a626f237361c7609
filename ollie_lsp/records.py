"""The daemon's view of the session registry: channel `lsp`, the OS user, registry errors as JSON-RPC errors."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from ollie.sessions import errors as reg_errors
from ollie.sessions.location import StoreConfigError
from ollie.sessions.registry import Registry
from ollie.sessions.types import Channel, Info, Kind, ListOptions, Scope, os_user
from ollie_lsp.errors import (
    LIVE_ELSEWHERE,
    Forbidden,
    InvalidParams,
    LiveElsewhere,
    SessionArchived,
    SessionNotFound,
    StoreUnavailable,
)

if TYPE_CHECKING:
    from ollie.agent.recorder import Recorder
    from ollie.agent.surface import SessionView

logger = logging.getLogger("ollie.lsp.records")
T = TypeVar("T")


def check_kind(kind: str) -> str:
    """A valid session kind, or -32602 naming `kind`."""
    try:
        return str(Kind(kind))
    except ValueError:
        raise InvalidParams(f"kind: unknown session kind {kind!r} (one of {', '.join(k.value for k in Kind)})") from None


@contextmanager
def rpc_errors(session_id: str, *, field: str = "") -> Iterator[None]:
    """Registry and store errors as the daemon's JSON-RPC errors (an invalid value named as `field` when given)."""
    try:
        yield
    except reg_errors.NotFoundError:
        raise SessionNotFound(session_id) from None
    except reg_errors.ReadOnlyError as exc:  # shared to this user's team: they know it exists, say why not
        raise Forbidden(session_id, str(exc)) from None
    except reg_errors.ForbiddenError:
        # Another user's session is, to this user, a session that does not exist.
        raise SessionNotFound(session_id) from None
    except reg_errors.ArchivedError:
        raise SessionArchived(session_id) from None
    except reg_errors.InvalidSessionError as exc:
        raise InvalidParams(f"{field}: {exc}" if field else str(exc)) from None
    except reg_errors.SessionError as exc:
        if exc.rpc_code == LIVE_ELSEWHERE:  # the lease errors (ollie.sessions.pg.lease: not imported for this)
            raise LiveElsewhere(session_id, str(exc)) from None
        raise StoreUnavailable(session_id, str(exc)) from None
    except StoreConfigError as exc:  # OLLIE_STORE is not a store URL: the message says what to set
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


class Records:
    """Session records of one user, across agents, in the registry's store.

    The methods block (sqlite3's busy-retry may sleep): `run` calls them in order on one worker thread.
    """

    def __init__(self, registry: Registry | None = None, *, user: str | None = None) -> None:
        self._registry = registry
        self.user = user or os_user()
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ollie-registry")

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run one of these methods on the registry thread and wait for it."""
        return await asyncio.get_running_loop().run_in_executor(self._io, partial(fn, *args, **kwargs))

    @property
    def _scope(self) -> Scope:
        return Scope(user_id=self.user)  # no agent: every agent of the user

    @property
    def registry(self) -> Registry:
        """The registry (opened on first use)."""
        if self._registry is None:
            self._registry = Registry()
        return self._registry

    async def record(self, core: SessionView, *, kind: str, title: str = "") -> Recorder:
        """Have the engine record a live session on channel `lsp`, its stamps in order on the registry thread."""
        from ollie.agent.recorder import record  # the engine: kept off the start-up path

        with rpc_errors(core.session_id):
            return await record(core, channel=Channel.LSP, kind=kind, title=title, registry=lambda: self.registry,
                                user=self.user, io=self._io)

    def get(self, session_id: str) -> Info:
        """The user's session by id, whatever its agent; -32001 when there is none."""
        with rpc_errors(session_id, field="session"):
            return self.registry.get(self._scope, session_id)

    def rename(self, session_id: str, title: str) -> None:
        """Set a session's title."""
        with rpc_errors(session_id):
            self.registry.rename(self._scope, session_id, title)

    def archive(self, session_id: str) -> None:
        """Archive a session (idempotent)."""
        with rpc_errors(session_id):
            self.registry.archive(self._scope, session_id)

    def unarchive(self, session_id: str) -> None:
        """Bring an archived session back (idempotent)."""
        with rpc_errors(session_id):
            self.registry.unarchive(self._scope, session_id)

    def live_elsewhere(self, session_ids: list[str]) -> dict[str, str]:
        """Of these sessions, those another daemon runs now (OLLIE_STORE's leases): id -> "<host> (pid N)"."""
        with rpc_errors(""):
            return self.registry.live_elsewhere(session_ids)

    def list(
        self, *, kinds: list[str] | None = None, include_archived: bool = False, limit: int | None = None,
        offset: int = 0,
    ) -> list[Info]:
        """The user's sessions of every agent, most recently active first."""
        options = ListOptions(kinds=[check_kind(k) for k in kinds or []], include_archived=include_archived,
                              exclude_unused=True, limit=limit or 0, offset=offset)
        with rpc_errors(""):
            return self.registry.list(self._scope, options)
