"""Registry: the sole owner of session lifecycle (create, resume, list, archive, share)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from ollie.sessions import store
from ollie.sessions.errors import ArchivedError, ForbiddenError, InvalidSessionError, NotFoundError, ReadOnlyError
from ollie.sessions.location import is_postgres_url, user_teams
from ollie.sessions.session import new_session_id
from ollie.sessions.store import Conn, DuplicateError, StoreLike
from ollie.sessions.types import (
    Channel,
    Info,
    Kind,
    ListOptions,
    Request,
    Scope,
    SortKey,
    TurnResult,
    sort_key,
    to_micros,
    validate_title,
)

log = logging.getLogger("ollie.sessions.registry")


def open_store(location: Path | str | None = None, *, busy_timeout_s: float = 10.0) -> StoreLike:
    """The store at `location`: a postgresql:// URL, a SQLite file, or (None) OLLIE_STORE, else the default file."""
    if location is None:
        from ollie.sessions.location import store_url

        location = store_url() or None
    if is_postgres_url(location):
        from ollie.sessions.pg.store import PgStore  # psycopg is imported only for a PostgreSQL store

        return PgStore(str(location), busy_timeout_s=busy_timeout_s)
    return store.Store(location, busy_timeout_s=busy_timeout_s)


def _kind(value: Kind | str, enum: type[StrEnum] = Kind) -> str:
    """The kind (or, with `enum`, the channel) `value` names; InvalidSessionError naming it when none."""
    try:
        return enum(value)
    except ValueError:
        raise InvalidSessionError(f"unknown session {'kind' if enum is Kind else 'channel'} {value!r}") from None


def _existing(conn: Conn, session_id: str) -> Info:
    """The session's row; NotFoundError when there is none."""
    found = store.fetch(conn, session_id) if session_id else None
    if found is None:
        raise NotFoundError(f"session {session_id!r} not found")
    return found


MAX_TEAM_CHARS = 100


def _team(name: str) -> str:
    """A valid team channel name ('' = not shared)."""
    if len(name) > MAX_TEAM_CHARS or "," in name or name != name.strip():
        raise InvalidSessionError(f"team {name!r}: at most {MAX_TEAM_CHARS} characters, no commas or edge spaces")
    return name


def _require_user(user_id: str) -> None:
    if not user_id:
        raise InvalidSessionError("user_id is required")


def _in(column: str, values: Sequence[str]) -> str:
    return f"{column} IN ({', '.join('?' for _ in values)})"


class Registry:
    """Creates, resumes, lists and archives sessions in its store. Thread-safe; shareable across processes.

    `path`: see open_store. A scope is a user, across agents. Her teams (OLLIE_TEAMS): sessions shared to one
    of them are its callers' to get, list and resume, not to change.
    """

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        busy_timeout_s: float = 10.0,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._store = open_store(path, busy_timeout_s=busy_timeout_s)
        self.teams = user_teams()
        self._clock = clock

    def close(self) -> None:
        """Close the store connection."""
        self._store.close()

    # --- scope ------------------------------------------------------------

    def _authorize(self, scope: Scope, row: Info, *, write: bool = False, agent: str = "") -> Info:
        """The row if the scope's user owns it, or may read it (shared to one of `teams`); `agent`: its agent."""
        _require_user(scope.user_id)
        if agent and row.agent_id != agent:
            raise ForbiddenError(f"session {row.id} belongs to another agent")
        if row.user_id != scope.user_id:
            if not (row.team and row.team in self.teams):
                raise ForbiddenError(f"session {row.id} belongs to another user")
            if write:
                raise ReadOnlyError(f"session {row.id} is shared with team {row.team!r} to read and resume: "
                                    f"only its owner ({row.user_id}) may rename, archive or share it")
        return row.validate()  # fail closed on a row that breaks the invariant

    def _load(self, conn: Conn, scope: Scope, session_id: str, *, write: bool = False) -> Info:
        return self._authorize(scope, _existing(conn, session_id), write=write)

    def _create(self, conn: Conn, info: Info) -> Info:
        try:
            store.insert(conn, info)
        except DuplicateError as exc:
            if exc.what == "main":
                raise InvalidSessionError("this user already has an active main session") from None
            if exc.what == "id":
                raise InvalidSessionError(f"session {info.id!r} already exists") from None
            raise
        return info

    def ensure(self, req: Request) -> Info:
        """Resume session req.id, or create it (a new id when req.id is empty)."""
        _require_user(req.user_id)
        agent = req.agent_id
        if not agent:
            raise InvalidSessionError("agent_id is required")
        kind = _kind(req.kind or Kind.CHAT)
        channel = _kind(req.channel, Channel) if req.channel else ""
        validate_title(req.title)
        with self._store.transaction() as conn:
            if req.id:
                # Two callers creating one exact id at once: the second finds the first's.
                self._store.lock(conn, f"id\x1f{req.id}")
            found = store.fetch(conn, req.id) if req.id else None
            if found is not None:
                return self._authorize(Scope(user_id=req.user_id), found, agent=agent)
            now = self._clock()
            return self._create(conn, Info(id=req.id or new_session_id(), agent_id=agent, user_id=req.user_id,
                                           channel=channel, kind=kind, title=req.title, created_at=now, last_active=now))

    def get(self, scope: Scope, session_id: str) -> Info:
        """The session's Info; it must belong to the scope (NotFoundError, ForbiddenError)."""
        with self._store.reading() as conn:
            return self._load(conn, scope, session_id)

    # --- listings ---------------------------------------------------------

    def _filters(self, opts: ListOptions) -> tuple[list[str], list[object]]:
        if opts.limit < 0:
            raise InvalidSessionError("limit must be >= 0")
        where: list[str] = []
        params: list[object] = []
        if opts.kinds:
            kinds = [str(_kind(k)) for k in opts.kinds]
            where.append(_in("kind", kinds))
            params += kinds
        if not opts.include_archived:
            where.append("archived = 0")
        if opts.exclude_unused:
            where.append("(last_turn_started_at IS NOT NULL OR title <> '')")
        if opts.after is not None:
            clause, after = store.after(opts.after)
            where.append(clause)
            params += after
        return where, params

    def _select(self, where: list[str], params: list[object], opts: ListOptions) -> tuple[list[Info], SortKey | None]:
        with self._store.reading() as conn:
            rows = store.select(conn, where, params, limit=opts.limit)
        # The last row read, listed or left out: where the next page starts while a full page came back.
        last = sort_key(rows[-1]) if rows and len(rows) == opts.limit else None
        infos = []
        for row in rows:
            try:
                infos.append(row.validate())
            except InvalidSessionError as exc:  # written by no ollie (a teammate's hand): the others still list
                log.warning("session %s left out of the listing: %s", row.id, exc)
        return infos, last

    def page(self, scope: Scope, opts: ListOptions | None = None) -> tuple[list[Info], SortKey | None]:
        """The scope's sessions matching `opts`, most recently active first, and the key the next page starts after
        (ListOptions.after); None when no more rows follow."""
        opts = opts or ListOptions()
        _require_user(scope.user_id)
        teams = sorted(self.teams)
        where = [f"(user_id = ? OR {_in('team', teams)})" if teams else "user_id = ?"]
        more_where, more_params = self._filters(opts)
        return self._select(where + more_where, [scope.user_id, *teams, *more_params], opts)

    def live_elsewhere(self, session_ids: Sequence[str]) -> dict[str, str]:
        """Of these sessions, those another process runs now (a PostgreSQL store's leases): id -> "<host> (pid N)"."""
        if not session_ids or not is_postgres_url(self._store.location):
            return {}  # SQLite and files: one machine, whose live sessions its daemon knows
        from ollie.sessions.pg.lease import live_elsewhere

        with self._store.reading() as conn:
            return live_elsewhere(conn, session_ids)

    # --- writes to one session --------------------------------------------

    def _writable(self, conn: Conn, scope: Scope, session_id: str) -> Info:
        info = self._load(conn, scope, session_id, write=True)
        if info.archived:
            raise ArchivedError(f"session {session_id} is archived")
        return info

    def archive(self, scope: Scope, session_id: str) -> None:
        """Archive the session (idempotent): it stays stored but leaves the active lists."""
        with self._store.transaction() as conn:
            info = self._load(conn, scope, session_id, write=True)
            if not info.archived:
                store.update(conn, session_id, archived=True)

    def unarchive(self, scope: Scope, session_id: str) -> Info:
        """Bring an archived session back to the active lists (idempotent).

        InvalidSessionError when it would be a second active main session of its user and agent.
        """
        with self._store.transaction() as conn:
            info = self._load(conn, scope, session_id, write=True)
            if info.archived:
                try:
                    store.update(conn, session_id, archived=False)
                except DuplicateError:
                    raise InvalidSessionError(f"session {session_id} cannot be unarchived: its user already has "
                                              "an active main session; archive that one first") from None
        return replace(info, archived=False)

    def share(self, scope: Scope, session_id: str, team: str) -> Info:
        """Share the session to a team channel ('' stops sharing): its members may then list and resume it."""
        _team(team)
        with self._store.transaction() as conn:
            info = self._load(conn, scope, session_id, write=True)
            store.update(conn, session_id, team=team)
        return info

    def rename(self, scope: Scope, session_id: str, title: str) -> Info:
        """Set the session's title (TitleTooLongError over 1,000 UTF-8 bytes; ArchivedError)."""
        validate_title(title)
        with self._store.transaction() as conn:
            info = self._writable(conn, scope, session_id)
            store.update(conn, session_id, title=title)
        return replace(info, title=title)

    def set_agent(self, scope: Scope, session_id: str, agent: str) -> Info:
        """Set the agent the session runs (`/agent` switched it), the one its resume starts (ArchivedError)."""
        with self._store.transaction() as conn:
            info = self._writable(conn, scope, session_id)
            store.update(conn, session_id, agent_id=agent)
        return replace(info, agent_id=agent)

    def touch(
        self,
        session_id: str,
        *,
        turn_started: bool = False,
        turn_completed: bool = False,
        result: TurnResult | str | None = None,
    ) -> Info:
        """Record activity: last_active now, and optionally a turn's start, its end and result."""
        if result is not None and result not in TurnResult.__members__.values():
            raise InvalidSessionError(f"unknown turn result {result!r}")
        now = self._clock()
        changes: dict[str, object] = {"last_active": to_micros(now)}
        if turn_started:
            changes["last_turn_started_at"] = to_micros(now)
        if turn_completed:
            changes["last_turn_completed_at"] = to_micros(now)
        if result is not None:
            changes["last_turn_result"] = str(result)
        with self._store.transaction() as conn:
            if _existing(conn, session_id).archived:
                raise ArchivedError(f"session {session_id} is archived")
            if not store.update(conn, session_id, **changes):  # a teammate's turn: the record is its owner's
                self._store.touch_shared(conn, session_id)
            row = store.fetch(conn, session_id)
        assert row is not None
        return row.validate()
