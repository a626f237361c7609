"""Registry: the sole owner of session lifecycle (create, resume, list, archive, main and channel rotation)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from ollie.sessions import store
from ollie.sessions.errors import (
    ArchivedError,
    ForbiddenError,
    InvalidSessionError,
    NotFoundError,
    RotationOutcomeUnknownError,
    StaleRotationError,
    WrongKindError,
)
from ollie.sessions.session import new_session_id
from ollie.sessions.types import (
    INTERNAL_KINDS,
    PRIVATE_CHANNELS,
    Channel,
    ChannelRequest,
    Info,
    Kind,
    ListOptions,
    MainRequest,
    MemoryScope,
    Request,
    ReviewRequest,
    Scope,
    SessionRecord,
    TurnResult,
    is_canonical_uuid,
    to_micros,
    utcnow,
    validate_title,
)


def _rotation_unknown(detail: str) -> Exception:
    return RotationOutcomeUnknownError(f"the rotation's commit was not acknowledged ({detail}); verify before retrying")


def _kind(value: Kind | str, *, what: str = "kind") -> Kind:
    try:
        return Kind(value)
    except ValueError:
        raise InvalidSessionError(f"unknown session {what} {value!r}") from None


def _channel(value: Channel | str) -> str:
    if not value:
        return ""
    try:
        return Channel(value)
    except ValueError:
        raise InvalidSessionError(f"unknown session channel {value!r}") from None


def _existing(conn: sqlite3.Connection, session_id: str) -> SessionRecord:
    """The session's row; NotFoundError when there is none."""
    found = store.fetch(conn, session_id) if session_id else None
    if found is None:
        raise NotFoundError(f"session {session_id!r} not found")
    return found[0]


def _require_user(user_id: str) -> None:
    if not user_id:
        raise InvalidSessionError("user_id is required")


def _in(column: str, values: Sequence[str]) -> str:
    return f"{column} IN ({', '.join('?' for _ in values)})"


class Registry:
    """Creates, resumes, lists and archives sessions in the SQLite store. Thread-safe; shareable across processes.

    `agent_id` confines the registry to one agent; empty makes it cross-agent.
    """

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        agent_id: str = "",
        busy_timeout_s: float = 10.0,
        clock: Callable[[], datetime] = utcnow,
        id_factory: Callable[[], str] = new_session_id,
    ) -> None:
        self._store = store.Store(path, busy_timeout_s=busy_timeout_s)
        self.agent_id = agent_id
        self._clock = clock
        self._new_id = id_factory

    @property
    def path(self) -> Path:
        """The database file."""
        return self._store.path

    def close(self) -> None:
        """Close the store connection."""
        self._store.close()

    # --- scope ------------------------------------------------------------

    def _agent(self, agent_id: str) -> str:
        if self.agent_id and agent_id and agent_id != self.agent_id:
            raise ForbiddenError(f"this registry serves agent {self.agent_id!r}, not {agent_id!r}")
        agent = agent_id or self.agent_id
        if not agent:
            raise InvalidSessionError("agent_id is required")
        return agent

    def _scope_agent(self, scope: Scope) -> str:
        """The agent a scope confines to; '' = any agent of the user (a user scope on a cross-agent registry)."""
        if scope.system:
            return self._agent(scope.agent_id)
        if not scope.user_id:
            raise InvalidSessionError("user_id is required outside a system scope")
        return self._agent(scope.agent_id) if scope.agent_id or self.agent_id else ""

    def _authorize(self, scope: Scope, record: SessionRecord) -> Info:
        agent = self._scope_agent(scope)
        if (agent and record.agent_id != agent) or (not scope.system and record.user_id != scope.user_id):
            raise ForbiddenError(f"session {record.id} belongs to another user or agent")
        return Info.from_record(record)

    def _load(self, conn: sqlite3.Connection, scope: Scope, session_id: str) -> Info:
        return self._authorize(scope, _existing(conn, session_id))

    def memory_scope(self, info: Info) -> MemoryScope:
        """The memory scope of a validated Info (the only sanctioned conversion)."""
        return info.memory_scope()

    # --- create / resume --------------------------------------------------

    def _create(self, conn: sqlite3.Connection, info: Info, *, binding: str = "") -> Info:
        try:
            store.insert(conn, info.record(), binding=binding)
        except sqlite3.IntegrityError as exc:
            if info.kind == Kind.MAIN and "user_id" in str(exc):
                raise InvalidSessionError("this user already has an active main session; use resolve_main") from None
            if "sessions.id" in str(exc):
                raise InvalidSessionError(f"session {info.id!r} already exists") from None
            raise
        return info

    def _new_info(self, *, session_id: str = "", user_id: str, agent_id: str, kind: Kind, channel: str = "",
                  project_id: str = "", title: str = "", group_id: str = "", guest_id: str = "") -> Info:
        info = Info.new(session_id or self._new_id(), agent_id, user_id, channel, kind, project_id, now=self._clock())
        info.title, info.group_id, info.guest_id = title, group_id, guest_id
        return info

    def ensure(self, req: Request) -> Info:
        """Find or create a session: resume req.id, create it exactly, create a new one, or NotFoundError."""
        _require_user(req.user_id)
        agent = self._agent(req.agent_id)
        kind = _kind(req.kind or req.require_kind or Kind.CHAT)
        required = _kind(req.require_kind, what="required kind") if req.require_kind else None
        validate_title(req.title)
        with self._store.transaction() as conn:
            found = store.fetch(conn, req.id) if req.id else None
            if found is not None:
                info = self._authorize(Scope(user_id=req.user_id, agent_id=agent), found[0])
                if required is not None and info.kind != required:
                    raise WrongKindError(f"session {req.id} is a {info.kind} session, not {required}")
                return info
            if req.id and not req.allow_exact_id_create:
                raise NotFoundError(f"session {req.id!r} not found")
            if not req.id and not req.create_if_missing:
                raise NotFoundError("no session id given and create_if_missing is off")
            info = self._new_info(session_id=req.id, user_id=req.user_id, agent_id=agent, kind=kind,
                                  channel=_channel(req.channel), project_id=req.project_id, title=req.title,
                                  group_id=req.group_id)
            return self._create(conn, info)

    def get(self, scope: Scope, session_id: str) -> Info:
        """The session's Info; it must belong to the scope (NotFoundError, ForbiddenError).

        A user scope with no agent, on a cross-agent registry, matches any agent of that user.
        """
        with self._store.reading() as conn:
            return self._load(conn, scope, session_id)

    # --- listings ---------------------------------------------------------

    def _filters(self, opts: ListOptions) -> tuple[list[str], list[object]]:
        if opts.limit < 0 or opts.offset < 0:
            raise InvalidSessionError("limit and offset must be >= 0")
        where: list[str] = []
        params: list[object] = []
        if opts.kinds:
            kinds = [str(_kind(k)) for k in opts.kinds]
            where.append(_in("kind", kinds))
            params += kinds
        if not opts.include_archived:
            where.append("archived = 0")
        if opts.exclude_internal:
            internal = sorted(INTERNAL_KINDS)
            where.append(f"NOT {_in('kind', internal)}")
            params += internal
        if opts.project_id:
            where.append("project_id = ?")
            params.append(opts.project_id)
        return where, params

    def _select(self, where: list[str], params: list[object], opts: ListOptions) -> list[Info]:
        with self._store.reading() as conn:
            records = store.select(conn, where, params, limit=opts.limit, offset=opts.offset)
        return [Info.from_record(r) for r in records]

    def list(self, scope: Scope, opts: ListOptions | None = None) -> list[Info]:
        """The scope's sessions matching `opts`, most recently active first."""
        opts = opts or ListOptions()
        agent = self._scope_agent(scope)
        where: list[str] = []
        params: list[object] = []
        if agent:
            where.append("agent_id = ?")
            params.append(agent)
        if not scope.system:
            where.append("user_id = ?")
            params.append(scope.user_id)
        more_where, more_params = self._filters(opts)
        return self._select(where + more_where, params + more_params, opts)

    def list_for_admin(self, user_id: str, agent_id: str, opts: ListOptions | None = None) -> list[Info]:
        """An admin's own sessions plus the agent's guest sessions (the caller enforces admin authority)."""
        opts = opts or ListOptions()
        _require_user(user_id)
        where = ["agent_id = ?", "(user_id = ? OR guest_id <> '')"]
        more_where, more_params = self._filters(opts)
        return self._select(where + more_where, [self._agent(agent_id), user_id, *more_params], opts)

    def list_for_review(self, req: ReviewRequest) -> list[Info]:
        """Active sessions of the agent that reflect review should consider (a zero policy = the default)."""
        policy = req.policy if not req.policy.is_zero() else type(req.policy).default()
        where = ["agent_id = ?", "archived = 0"]
        params: list[object] = [self._agent(req.agent_id)]
        excluded = [str(_kind(k)) for k in policy.exclude_kinds]
        if excluded:
            where.append(f"NOT {_in('kind', excluded)}")
            params += excluded
        if policy.require_private_main:
            private = sorted(PRIVATE_CHANNELS)
            where += ["group_id = ''", _in("channel", private)]
            params += private
        return self._select(where, params, ListOptions())

    # --- writes to one session --------------------------------------------

    def _writable(self, conn: sqlite3.Connection, scope: Scope, session_id: str) -> Info:
        info = self._load(conn, scope, session_id)
        if info.archived:
            raise ArchivedError(f"session {session_id} is archived")
        return info

    def archive(self, scope: Scope, session_id: str) -> None:
        """Archive the session (idempotent): it stays stored but leaves the active lists."""
        with self._store.transaction() as conn:
            info = self._load(conn, scope, session_id)
            if not info.archived:
                store.update(conn, session_id, archived=True)

    def rename(self, scope: Scope, session_id: str, title: str) -> Info:
        """Set the session's title (TitleTooLongError over 1,000 UTF-8 bytes; ArchivedError)."""
        validate_title(title)
        with self._store.transaction() as conn:
            info = self._writable(conn, scope, session_id)
            store.update(conn, session_id, title=title)
        return info.with_changes(title=title)

    def touch(
        self,
        session_id: str,
        *,
        turn_started: bool = False,
        turn_completed: bool = False,
        result: TurnResult | str | None = None,
        latest_seq: int | None = None,
    ) -> Info:
        """Record activity: last_active now, and optionally a turn's start, its end and result, the event seq."""
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
        if latest_seq is not None:
            changes["latest_seq"] = latest_seq
        with self._store.transaction() as conn:
            if _existing(conn, session_id).archived:
                raise ArchivedError(f"session {session_id} is archived")
            store.update(conn, session_id, **changes)
            record = store.fetch(conn, session_id)
        assert record is not None
        return Info.from_record(record[0])

    def mark_viewed(self, scope: Scope, session_id: str) -> None:
        """Record that the owner looked at the session (allowed on archived sessions: it is a read)."""
        with self._store.transaction() as conn:
            self._load(conn, scope, session_id)
            store.update(conn, session_id, last_viewed_at=to_micros(self._clock()))

    # --- main session -----------------------------------------------------

    def _active_main(self, conn: sqlite3.Connection, user_id: str, agent: str) -> Info | None:
        found = store.fetch_where(conn, "user_id = ? AND agent_id = ? AND kind = 'main' AND archived = 0",
                                  (user_id, agent))
        return Info.from_record(found[0]) if found else None

    def resolve_main(self, req: MainRequest) -> Info:
        """The user's main session: the active one, else the most recent private chat promoted, else a new one."""
        _require_user(req.user_id)
        agent = self._agent(req.agent_id)
        with self._store.transaction() as conn:
            current = self._active_main(conn, req.user_id, agent)
            if current is not None:
                return current
            private = sorted(PRIVATE_CHANNELS)
            candidate = store.fetch_where(
                conn,
                "user_id = ? AND agent_id = ? AND kind = 'chat' AND archived = 0 AND group_id = '' "
                f"AND binding = '' AND (channel = '' OR {_in('channel', private)})",
                (req.user_id, agent, *private),
            )
            if candidate is not None:
                store.update(conn, candidate[0].id, kind=str(Kind.MAIN))
                return Info.from_record(candidate[0]).with_changes(kind=Kind.MAIN)
            if not req.create_if_missing:
                raise NotFoundError(f"user {req.user_id!r} has no main session")
            info = self._new_info(user_id=req.user_id, agent_id=agent, kind=Kind.MAIN, channel=_channel(req.channel))
            return self._create(conn, info)

    def rotate_main(self, req: MainRequest) -> Info:
        """Archive the current main and create its successor in one transaction (compare-and-rotate)."""
        _require_user(req.user_id)
        agent = self._agent(req.agent_id)
        with self._store.transaction(on_commit_failure=_rotation_unknown) as conn:
            current = self._active_main(conn, req.user_id, agent)
            self._check_expected(current, req.expected_session_id)
            channel = current.channel if current is not None else _channel(req.channel)
            if current is not None:
                store.update(conn, current.id, archived=True)
            info = self._new_info(user_id=req.user_id, agent_id=agent, kind=Kind.MAIN, channel=channel)
            return self._create(conn, info)

    @staticmethod
    def _check_expected(current: Info | None, expected: str) -> None:
        if expected and (current is None or current.id != expected):
            now = current.id if current is not None else "none"
            raise StaleRotationError(f"expected session {expected} is no longer current (now {now})")

    # --- chat channels ----------------------------------------------------

    def _binding(self, req: ChannelRequest) -> tuple[str, str, str]:
        """(agent, binding key, channel) of a channel request, validated."""
        _require_user(req.user_id)
        agent = self._agent(req.agent_id)
        channel = _channel(req.channel)
        if req.guest_id and req.guest_id != req.user_id:
            raise InvalidSessionError("guest_id must equal user_id")
        if req.group_id:
            if req.group_id != req.user_id:
                raise InvalidSessionError("a group binding is owned by the group: group_id must equal user_id")
            if not is_canonical_uuid(req.group_id):
                raise InvalidSessionError(f"group_id {req.group_id!r} is not a canonical UUID")
            # A group's channel string varies with the reply channel: it binds on the group alone.
            return agent, f"group\x1f{agent}\x1f{req.group_id}", channel
        if not channel:
            raise InvalidSessionError("a private chat binding needs a channel")
        return agent, f"chat\x1f{req.user_id}\x1f{agent}\x1f{channel}", channel

    def _bound(self, conn: sqlite3.Connection, req: ChannelRequest, agent: str, key: str, channel: str) -> Info | None:
        """The binding's active session, adopting the legacy key-as-id session on a miss when it qualifies."""
        found = store.fetch_where(conn, "binding = ? AND archived = 0", (key,))
        if found is not None:
            return Info.from_record(found[0])
        legacy = store.fetch(conn, req.legacy_id) if req.legacy_id else None
        if legacy is None:
            return None
        record, binding = legacy
        eligible = (
            not record.archived and not binding and record.kind == Kind.CHAT and record.agent_id == agent
            and record.user_id == req.user_id and record.group_id in ("", req.group_id)
        )
        if not eligible:
            return None
        changes = {"binding": key, "group_id": req.group_id, "guest_id": req.guest_id, "channel": channel or record.channel}
        store.update(conn, record.id, **changes)
        changes.pop("binding")
        return Info.from_record(record).with_changes(**changes)

    def _new_bound(self, conn: sqlite3.Connection, req: ChannelRequest, agent: str, key: str, channel: str) -> Info:
        info = self._new_info(user_id=req.user_id, agent_id=agent, kind=Kind.CHAT, channel=channel,
                              group_id=req.group_id, guest_id=req.guest_id)
        return self._create(conn, info, binding=key)

    def resolve_chat_channel(self, req: ChannelRequest) -> Info:
        """The chat session a channel chat is bound to, created (or adopted from req.legacy_id) on a miss."""
        agent, key, channel = self._binding(req)
        with self._store.transaction() as conn:
            current = self._bound(conn, req, agent, key, channel)
            return current if current is not None else self._new_bound(conn, req, agent, key, channel)

    def rotate_channel(self, req: ChannelRequest) -> Info:
        """Archive the channel's current session and bind a fresh successor, in one transaction (compare-and-rotate)."""
        agent, key, channel = self._binding(req)
        with self._store.transaction(on_commit_failure=_rotation_unknown) as conn:
            current = self._bound(conn, req, agent, key, channel)
            self._check_expected(current, req.expected_session_id)
            if current is not None:
                store.update(conn, current.id, archived=True)
            return self._new_bound(conn, req, agent, key, channel)
