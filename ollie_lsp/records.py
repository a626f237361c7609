"""The daemon's view of the session registry: channel `lsp`, the OS user, registry errors as JSON-RPC errors."""

from __future__ import annotations

import getpass
import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ollie.sessions import errors as reg_errors
from ollie.sessions.registry import Registry
from ollie.sessions.types import Channel, Info, Kind, ListOptions, Request, Scope

from ollie_lsp.errors import InvalidParams, SessionArchived, SessionNotFound

logger = logging.getLogger("ollie.lsp.records")


def os_user() -> str:
    """The user sessions belong to: the OS login name."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "user"


def check_kind(kind: str) -> str:
    """A valid session kind, or -32602 naming `kind`."""
    try:
        return str(Kind(kind))
    except ValueError:
        raise InvalidParams(f"kind: unknown session kind {kind!r} (one of {', '.join(k.value for k in Kind)})") from None


@contextmanager
def rpc_errors(session_id: str) -> Iterator[None]:
    """Registry errors as the daemon's JSON-RPC errors."""
    try:
        yield
    except reg_errors.NotFoundError:
        raise SessionNotFound(session_id) from None
    except reg_errors.ForbiddenError:
        # Another user's session is, to this user, a session that does not exist.
        raise SessionNotFound(session_id) from None
    except reg_errors.ArchivedError:
        raise SessionArchived(session_id) from None
    except reg_errors.InvalidSessionError as exc:
        raise InvalidParams(str(exc)) from None


def info_to_wire(info: Info, *, live: bool = False) -> dict[str, Any]:
    """A session's Info as PROTOCOL.md's `info` object."""
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
        "live": live,
    }


class Records:
    """Session records of one user, across agents, in the registry's SQLite store."""

    def __init__(self, registry: Registry | None = None, *, user: str | None = None) -> None:
        self._registry = registry
        self.user = user or os_user()

    @property
    def registry(self) -> Registry:
        """The registry (opened on first use)."""
        if self._registry is None:
            self._registry = Registry()
        return self._registry

    def _agents(self, extra: list[str] | None = None) -> list[str]:
        from ollie.config import list_agents

        names = dict.fromkeys([*(extra or []), *list_agents()])
        return list(names)

    def created(self, session_id: str, *, agent: str, kind: str, title: str = "") -> Info | None:
        """Record a new session on channel `lsp` (or find it, when it exists); None when the store is unusable."""
        try:
            with rpc_errors(session_id):
                return self.registry.ensure(
                    Request(id=session_id, user_id=self.user, agent_id=agent, kind=kind, channel=Channel.LSP,
                            title=title, allow_exact_id_create=True)
                )
        except (OSError, sqlite3.Error) as exc:
            # An unwritable data dir must not stop the session: it runs, and says so when it cannot save.
            logger.warning("session registry unavailable: %s", exc, extra={"session": session_id})
            return None

    def get(self, session_id: str, *, agents: list[str] | None = None) -> Info:
        """The user's session by id, whatever its agent; -32001 when there is none."""
        for agent in self._agents(agents):
            try:
                return self.registry.get(Scope(user_id=self.user, agent_id=agent), session_id)
            except reg_errors.ForbiddenError:
                continue
            except reg_errors.NotFoundError:
                break
            except reg_errors.InvalidSessionError as exc:
                raise InvalidParams(f"session: {exc}") from None
        raise SessionNotFound(session_id)

    def touched(self, session_id: str, **changes: Any) -> None:
        """Record activity (turn start/end and result); never fails the caller."""
        try:
            self.registry.touch(session_id, **changes)
        except (reg_errors.SessionError, OSError, sqlite3.Error) as exc:
            logger.info("registry touch skipped: %s", exc, extra={"session": session_id})

    def rename(self, session_id: str, title: str, *, agent: str | None = None) -> None:
        """Set a session's title."""
        info = self.get(session_id, agents=[agent] if agent else None)
        with rpc_errors(session_id):
            self.registry.rename(Scope(user_id=self.user, agent_id=info.agent_id), session_id, title)

    def archive(self, session_id: str, *, agent: str | None = None) -> None:
        """Archive a session (idempotent)."""
        info = self.get(session_id, agents=[agent] if agent else None)
        with rpc_errors(session_id):
            self.registry.archive(Scope(user_id=self.user, agent_id=info.agent_id), session_id)

    def list(
        self, *, kinds: list[str] | None = None, include_archived: bool = False, limit: int | None = None,
        offset: int = 0, agents: list[str] | None = None,
    ) -> list[Info]:
        """The user's sessions of every agent, most recently active first."""
        kinds = [check_kind(k) for k in kinds or []]
        found: list[Info] = []
        for agent in self._agents(agents):
            with rpc_errors(""):
                found += self.registry.list(
                    Scope(user_id=self.user, agent_id=agent), ListOptions(kinds=kinds, include_archived=include_archived)
                )
        found.sort(key=lambda info: info.last_active.timestamp() if info.last_active else 0.0, reverse=True)
        end = offset + limit if limit else None
        return found[offset:end]
