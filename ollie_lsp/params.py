"""Pydantic shapes of every ollie/* method's params, validated at the edge into plain models."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    Tag,
    TypeAdapter,
    ValidationError,
)

from ollie_lsp.asking import plain
from ollie_lsp.errors import InvalidParams

M = TypeVar("M", bound=BaseModel)


class _Params(BaseModel):
    # Unknown keys are tolerated (clients may send more than they need to);
    # strict types so `"text": 3` is an error instead of a silent "3".
    model_config = ConfigDict(extra="ignore", strict=True, populate_by_name=True, frozen=True)


class ContextParams(_Params):
    """ollie/context: one page of the messages (`offset` 0-based, `limit` none = to the end)."""

    session: StrictStr | None = None
    offset: StrictInt = Field(default=0, ge=0)
    limit: StrictInt | None = Field(default=None, ge=0)


class NoParams(_Params):
    """A method that takes nothing (ollie/listCommands)."""


class SessionParams(_Params):
    """Params of a method aimed at one session (the default one when `session` is left out)."""

    session: StrictStr | None = None


class Position(_Params):
    """An LSP position: zero-based line and character."""

    line: StrictInt = Field(ge=0)
    character: StrictInt = Field(ge=0)


class Range(_Params):
    """An LSP range: start inclusive, end exclusive."""

    start: Position
    end: Position


class EditorContext(_Params):
    """What the editor shows: the file, and the selection or range the user points at."""

    uri: StrictStr = Field(min_length=1)
    range: Range | None = None
    selection: StrictStr | None = None
    language_id: StrictStr | None = Field(default=None, alias="languageId")


def _one_or_many(value: object) -> str:
    return _MANY if isinstance(value, list) else _ONE


# `context` is one EditorContext or a list of them; the tags (left out of error names) tell which.
_ONE, _MANY = "~one", "~many"
EditorContexts = Annotated[
    Annotated[EditorContext, Tag(_ONE)] | Annotated[list[EditorContext], Tag(_MANY)], Discriminator(_one_or_many)
]


class _WithContext(SessionParams):
    context: EditorContexts | None = None

    @property
    def contexts(self) -> list[EditorContext]:
        """The context items in order (none, one, or the list)."""
        if self.context is None:
            return []
        return list(self.context) if isinstance(self.context, list) else [self.context]


class SubmitParams(_WithContext):
    """ollie/submit."""

    text: StrictStr


class InterruptParams(SessionParams):
    """ollie/interrupt."""

    reason: StrictStr = ""


class TextParams(_WithContext):
    """ollie/inject and ollie/queue (`context` as submit's)."""

    text: StrictStr = Field(min_length=1)


class CommandParams(SessionParams):
    """ollie/command: one slash command or `!shell` line."""

    line: StrictStr = Field(min_length=1)


class SetCwdParams(SessionParams):
    """ollie/setCwd."""

    cwd: StrictStr = Field(min_length=1)


class SetEnvParams(SessionParams):
    """ollie/setEnv."""

    key: StrictStr = Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    value: StrictStr


class SetGenerationParamsParams(SessionParams):
    """ollie/setGenerationParams: `params` uses the agent config's camelCase names (snake_case works too)."""

    params: dict[str, Any]


class SetApprovalParams(SessionParams):
    """ollie/setApproval: `approval` is one of ask, auto-edit, auto, read-only."""

    approval: StrictStr = Field(min_length=1)


class ChangesParams(SessionParams):
    """ollie/changes: the changes of turn `turn` (default: the last)."""

    turn: StrictInt | None = Field(default=None, ge=1)


class ReviewUndoParams(ChangesParams):
    """ollie/review/undo: one hunk (None: the whole file) of a turn's change to `path`."""

    path: StrictStr = Field(min_length=1)
    hunk: StrictInt | None = Field(default=None, ge=0)


class RewindParams(ChangesParams):
    """ollie/rewind: back to before turn `turn` (default: the last), or `undo` the last rewind."""

    undo: StrictBool = False


class SessionNewParams(_Params):
    """ollie/session/new."""

    agent: StrictStr | None = Field(default=None, min_length=1)
    kind: StrictStr | None = Field(default=None, min_length=1)
    title: StrictStr | None = None
    cwd: StrictStr | None = Field(default=None, min_length=1)


class SessionListParams(_Params):
    """ollie/session/list."""

    kinds: list[StrictStr] | None = None
    include_archived: StrictBool = Field(default=False, alias="includeArchived")
    limit: StrictInt | None = Field(default=None, ge=0)
    offset: StrictInt = Field(default=0, ge=0)


class SessionIdParams(_Params):
    """ollie/session/load, /archive, /close: the session is required."""

    session: StrictStr = Field(min_length=1)


class SessionRenameParams(SessionIdParams):
    """ollie/session/rename."""

    title: StrictStr


def _field_name(loc: tuple[Any, ...]) -> str:
    """`("context", "range", "start", "line")` -> `context.range.start.line`; list indexes as `[i]`."""
    out = ""
    for part in loc:
        if isinstance(part, str) and part.startswith("~"):
            continue  # a union's tag (EditorContexts), not a field
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "params"


def format_validation_error(exc: ValidationError, *, prefix: str = "") -> str:
    """One line naming every bad field: `text: Field required; session: Input should be a valid string`."""
    problems = []
    for err in exc.errors():
        problems.append(f"{prefix}{_field_name(err['loc'])}: {err['msg']}")
    return "; ".join(problems)


def parse(model: type[M], raw: Any) -> M:
    """Validate raw JSON params into `model`, raising InvalidParams (-32602) that names the field."""
    if raw is None:
        raw = {}
    if isinstance(raw, Mapping):
        data = dict(raw)
    elif hasattr(raw, "_asdict"):
        # pygls' default converter turns dict params into namedtuples; accept them too.
        data = plain(raw)
    else:
        raise InvalidParams(f"params: expected an object, got {type(raw).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidParams(format_validation_error(exc)) from None


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def generation_params(raw: dict[str, Any]) -> Any:
    """GenerationParams from camelCase (or snake_case) keys; -32602 naming `params.<key>`."""
    from ollie.backend.types import GenerationParams

    known = set(GenerationParams.__dataclass_fields__)
    data: dict[str, Any] = {}
    for key, value in raw.items():
        name = _snake(key)
        if name not in known:
            raise InvalidParams(f"params.{key}: unknown generation parameter")
        data[name] = value
    try:
        return TypeAdapter(GenerationParams).validate_python(data)
    except ValidationError as exc:
        raise InvalidParams(format_validation_error(exc, prefix="params.")) from None
