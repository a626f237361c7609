"""Session-domain types: kinds, channels, Info and its fail-closed boundaries, requests."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

import attrs

from ollie.sessions.errors import InvalidSessionError, TitleTooLongError

MAX_TITLE_BYTES = 1_000


class Kind(StrEnum):
    """The session kind."""

    MAIN = "main"
    CHAT = "chat"
    DELEGATE = "delegate"
    TASK = "task"
    SCHEDULER = "scheduler"


class Channel(StrEnum):
    """The front end a session was made by; `lsp` is an editor session."""

    CLI = "cli"
    LSP = "lsp"
    ACP = "acp"  # `ollie acp`: an Agent Client Protocol editor (Zed, JetBrains, ...)


class TurnResult(StrEnum):
    """How a session's last turn ended (the engine's stop reasons); NONE before any turn."""

    NONE = ""
    END = "end"
    INTERRUPTED = "interrupted"
    MAX_STEPS = "max_steps"
    ERROR = "error"
    REFUSAL = "refusal"  # the model (or the vendor's content filter) declined to answer
    MAX_TOKENS = "max_tokens"  # the reply was cut at the model's output token limit


def validate_title(title: str) -> None:
    """Raise TitleTooLongError when `title` exceeds MAX_TITLE_BYTES of UTF-8, InvalidSessionError for a NUL in it
    (PostgreSQL keeps none in text: one store's title would be the other's internal error)."""
    if "\x00" in title:
        raise InvalidSessionError("a session's title may hold no NUL (a session store keeps none)")
    size = len(title.encode("utf-8"))
    if size > MAX_TITLE_BYTES:
        raise TitleTooLongError(f"a session's title may have at most {MAX_TITLE_BYTES:,} bytes of UTF-8 (this one has "
                                f"{size:,})")


# The block front ends put before a prompt (ollie_lsp.editor, ollie_acp.prompt): not what the user wrote.
_EDITOR_CONTEXT = re.compile(r"\A(?:\s*<editor-context>.*?</editor-context>)+\s*", re.DOTALL)


def prompt_title(prompt: str) -> str:
    """The title a session takes from its first prompt: the user's first words, editor context left out."""
    return first_words(_EDITOR_CONTEXT.sub("", prompt).replace("\x00", " "))


def first_words(text: str) -> str:
    """The start of a prompt, for a session or progress title: a few words, cut with an ellipsis."""
    words = text.split()
    picked = " ".join(words[:8])
    if len(picked) > 60:
        return one_line(picked, 60)
    return picked + " …" if len(words) > 8 else picked


def one_line(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


# The database role a PostgreSQL store authenticates this process as (ollie.sessions.pg.store): "" until one does.
_role = ""


def act_as(role: str) -> None:
    """Sessions are `role`'s from now on: the store writes rows for that role only (OLLIE_USER unset, or the same)."""
    global _role
    _role = role


def store_role() -> str:
    """The role a PostgreSQL store authenticates this process as ("" when none does, or none is open yet)."""
    return _role


def os_user() -> str:
    """The user sessions belong to: the role the store authenticates (a role per person, docs/TEAM.md), else
    OLLIE_USER (environment or env file), else the OS login name ("user" if none)."""
    from ollie.sessions.location import USER_VAR, setting

    if _role:
        return _role  # OLLIE_USER is unset or names it (ollie.sessions.pg.store refuses any other)
    if named := setting(USER_VAR):
        return named
    import getpass  # (and termios) only when OLLIE_USER does not say

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "user"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def to_micros(moment: datetime | None) -> int | None:
    """A datetime as integer unix microseconds (the store's time format); None stays None."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        raise InvalidSessionError(f"naive datetime {moment!r}: session times must be timezone-aware")
    return (moment - _EPOCH) // _MICROSECOND


def from_micros(micros: int | None) -> datetime | None:
    """Inverse of to_micros."""
    if micros is None:
        return None
    return _EPOCH + micros * _MICROSECOND


# Where a row sorts in a listing: its last_active as stored (unix micros) and its id.
SortKey = tuple[int | None, str]


@dataclass(repr=False)
class Info:
    """Metadata of one agent session; crosses the store boundary via row()/from_row()."""

    id: str
    agent_id: str
    user_id: str
    channel: str = ""
    kind: str = Kind.CHAT
    title: str = ""
    created_at: datetime | None = None
    last_active: datetime | None = None
    last_turn_started_at: datetime | None = None
    last_turn_completed_at: datetime | None = None
    last_turn_result: str = TurnResult.NONE
    archived: bool = False
    # The team channel the session is shared to ('' = none: Registry.share); a column beside the record.
    team: str = ""

    def validate(self) -> Info:
        """This Info, once it holds the session invariant; InvalidSessionError (fail closed) when it does not."""
        for name in ("id", "agent_id", "user_id"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise InvalidSessionError(f"session {name} is required")
        if self.kind not in Kind.__members__.values():
            raise InvalidSessionError(f"unknown session kind {self.kind!r}")
        if self.channel and self.channel not in Channel.__members__.values():
            raise InvalidSessionError(f"unknown session channel {self.channel!r}")
        if self.last_turn_result not in TurnResult.__members__.values():
            raise InvalidSessionError(f"unknown turn result {self.last_turn_result!r}")
        for name in _TIME_FIELDS:
            if not isinstance(getattr(self, name), datetime | None):
                raise InvalidSessionError(f"session {name} {getattr(self, name)!r} is no time")
        validate_title(self.title)
        return self

    def row(self) -> dict[str, object]:
        """The store's columns of this Info (times as unix microseconds, the team aside); fails closed on an invalid Info."""
        self.validate()
        values = {name: getattr(self, name) for name in COLUMNS}
        for name in _TIME_FIELDS:
            values[name] = to_micros(values[name])
        for name in _ENUM_FIELDS:
            values[name] = str(values[name])
        return values

    @classmethod
    def from_row(cls, values: dict[str, Any], *, team: str = "") -> Info:
        """The Info of a store row's columns (`team`: its team column), unvalidated: `validate` fails closed on it."""
        values = dict(values)
        for name in _TIME_FIELDS:
            values[name] = _time_or_raw(values[name])
        for name, enum in _ENUM_FIELDS.items():
            values[name] = _enum_or_raw(enum, values[name])
        values["archived"] = bool(values["archived"])
        return cls(**values, team=team)


# The store's columns of an Info (the team is a column beside them: Registry.share); these differ in type there (unix
# microseconds, plain strings).
COLUMNS = tuple(f.name for f in fields(Info) if f.name != "team")


def sort_key(info: Info) -> SortKey:
    """Where a row sorts in a listing: its last_active as stored (micros, None, or what a hand wrote) and its id."""
    active = info.last_active
    return (to_micros(active) if isinstance(active, datetime) else active, info.id)


_TIME_FIELDS = ("created_at", "last_active", "last_turn_started_at", "last_turn_completed_at")
_ENUM_FIELDS: dict[str, type[StrEnum]] = {"channel": Channel, "kind": Kind, "last_turn_result": TurnResult}


def _time_or_raw(micros: int | None) -> datetime | int | None:
    """The time of `micros`, or `micros` itself (past year 9999, another process's row) so validate() rejects it."""
    try:
        return from_micros(micros)
    except (ValueError, OverflowError, OSError):
        return micros


def _enum_or_raw(enum: type[StrEnum], value: str) -> str:
    """The enum member for `value`, or `value` itself so validate() can reject it by name."""
    try:
        return enum(value)
    except ValueError:
        return value


@attrs.frozen(eq=False, repr=False, slots=False)
class Scope:
    """Who asks: a user, across agents (the registry's team channels add what is shared with them)."""

    user_id: str = ""


@dataclass(eq=False, repr=False)
class Request:
    """What session ensure() finds or creates."""

    id: str = ""
    user_id: str = ""
    agent_id: str = ""
    kind: Kind | str = ""
    channel: Channel | str = ""
    title: str = ""


@dataclass(eq=False, repr=False)
class ListOptions:
    """Filters of a session listing; limit 0 = no limit."""

    kinds: list[Kind | str] = field(default_factory=list)
    include_archived: bool = False
    # Leave out sessions never prompted and never named (a front end's start makes one each time).
    exclude_unused: bool = False
    limit: int = 0
    # Only the sessions listed after this sort key (store.sort_key): the next page of a listing.
    after: SortKey | None = None
