"""Shapes of every ollie/* method's params, checked by hand at the edge (`ollie_lsp.shapes`: -32602 naming the field)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ollie_lsp.asking import plain
from ollie_lsp.shapes import (
    Bad,
    Check,
    FieldPath,
    S,
    Shape,
    array,
    build,
    expected,
    flag,
    integer,
    invalid,
    mapping,
    number,
    one_or_many,
    optional,
    rule,
    shape,
    string,
)

if TYPE_CHECKING:
    from ollie.backend.types import GenerationParams


def parse(model: type[S], raw: object) -> S:
    """Check raw JSON params into `model`, raising InvalidParams (-32602) that names every bad field."""
    if raw is None:
        raw = {}
    if hasattr(raw, "_asdict"):
        raw = plain(raw)  # pygls' default converter turns dict params into namedtuples
    if not isinstance(raw, Mapping):
        raise invalid(expected("an object", raw))
    try:
        return build(model, raw)
    except Bad as bad:
        raise invalid(bad) from None


_KEY = r"[A-Za-z_][A-Za-z0-9_]*"
_NAME = string(min_length=1)
_SESSION = optional(string())


class NoParams(Shape):
    """A method that takes nothing (ollie/listCommands)."""


class SessionParams(Shape):
    """Params of a method aimed at one session (the default one when `session` is left out)."""

    session: str | None = rule(_SESSION, None)


class ContextParams(SessionParams):
    """ollie/context: one page of the messages (`offset` 0-based, `limit` none = to the end)."""

    offset: int = rule(integer(ge=0), 0)
    limit: int | None = rule(optional(integer(ge=0)), None)


class Position(Shape):
    """An LSP position: zero-based line and character."""

    line: int = rule(integer(ge=0))
    character: int = rule(integer(ge=0))


class Range(Shape):
    """An LSP range: start inclusive, end exclusive."""

    start: Position = rule(shape(Position))
    end: Position = rule(shape(Position))


class EditorContext(Shape):
    """What the editor shows: the file, and the selection or range the user points at."""

    uri: str = rule(_NAME)
    range: Range | None = rule(optional(shape(Range)), None)
    selection: str | None = rule(optional(string()), None)
    language_id: str | None = rule(optional(string()), None, alias="languageId")


class _WithContext(SessionParams):
    # One EditorContext or a list of them.
    context: EditorContext | list[EditorContext] | None = rule(optional(one_or_many(shape(EditorContext))), None)

    @property
    def contexts(self) -> list[EditorContext]:
        """The context items in order (none, one, or the list)."""
        if self.context is None:
            return []
        return list(self.context) if isinstance(self.context, list) else [self.context]


class SubmitParams(_WithContext):
    """ollie/submit."""

    text: str = rule(string())


class InterruptParams(SessionParams):
    """ollie/interrupt."""

    reason: str = rule(string(), "")


class TextParams(_WithContext):
    """ollie/inject and ollie/queue (`context` as submit's)."""

    text: str = rule(_NAME)


class CommandParams(SessionParams):
    """ollie/command: one slash command or `!shell` line."""

    line: str = rule(_NAME)


class SetCwdParams(SessionParams):
    """ollie/setCwd."""

    cwd: str = rule(_NAME)


class SetEnvParams(SessionParams):
    """ollie/setEnv."""

    key: str = rule(string(min_length=1, pattern=_KEY))
    value: str = rule(string())


class SetGenerationParamsParams(SessionParams):
    """ollie/setGenerationParams: `params` uses the agent config's camelCase names (snake_case works too)."""

    params: dict[str, Any] = rule(mapping)


class SetApprovalParams(SessionParams):
    """ollie/setApproval: `approval` is one of ask, auto-edit, auto, read-only."""

    approval: str = rule(_NAME)


class ChangesParams(SessionParams):
    """ollie/changes: the changes of turn `turn` (default: the last)."""

    turn: int | None = rule(optional(integer(ge=1)), None)


class ReviewUndoParams(ChangesParams):
    """ollie/review/undo: one hunk (None: the whole file) of a turn's change to `path`."""

    path: str = rule(_NAME)
    hunk: int | None = rule(optional(integer(ge=0)), None)


class RewindParams(ChangesParams):
    """ollie/rewind: back to before turn `turn` (default: the last), or `undo` the last rewind."""

    undo: bool = rule(flag, False)


class SessionNewParams(Shape):
    """ollie/session/new."""

    agent: str | None = rule(optional(_NAME), None)
    kind: str | None = rule(optional(_NAME), None)
    title: str | None = rule(optional(string()), None)
    cwd: str | None = rule(optional(_NAME), None)


class SessionListParams(Shape):
    """ollie/session/list."""

    kinds: list[str] | None = rule(optional(array(string())), None)
    include_archived: bool = rule(flag, False, alias="includeArchived")
    limit: int | None = rule(optional(integer(ge=0)), None)
    offset: int = rule(integer(ge=0), 0)


class SessionIdParams(Shape):
    """ollie/session/load, /archive, /close: the session is required."""

    session: str = rule(_NAME)


class SessionRenameParams(SessionIdParams):
    """ollie/session/rename."""

    title: str = rule(string())


# GenerationParams' field types (as its annotations spell them) -> their rule; a new type must be added here.
GENERATION_TYPES: dict[str, Check] = {
    "int | None": optional(integer()), "float | None": optional(number), "str | None": optional(string()),
    "bool | None": optional(flag), "list[str] | None": optional(array(string())),
}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def generation_params(raw: Mapping[str, Any]) -> GenerationParams:
    """GenerationParams from camelCase (or snake_case) keys; -32602 naming every bad `params.<key>`."""
    from ollie.backend.types import GenerationParams

    fields = {f.name: f for f in dataclasses.fields(GenerationParams)}
    values: dict[str, Any] = {}
    problems: list[tuple[FieldPath, str]] = []
    for key, value in raw.items():
        name = _snake(key)
        if name not in fields:
            problems.append(((key,), "unknown generation parameter"))
            continue
        try:
            values[name] = GENERATION_TYPES[str(fields[name].type)](value)
        except Bad as bad:
            problems += bad.under(key)
    if problems:
        raise invalid(Bad(problems), prefix="params.")
    return GenerationParams(**values)
