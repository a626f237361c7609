"""Shapes of every ollie/* method's params (`ollie.shapes`): a bad one is -32602 naming every bad field."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, ClassVar, TypeVar

import attrs

from ollie.config import GenerationParams
from ollie.sessions.errors import InvalidSessionError
from ollie.sessions.types import validate_title
from ollie.shapes import Check, Invalid, json_key
from ollie.shapes import parse as check
from ollie_lsp.errors import InvalidParams

if TYPE_CHECKING:
    from ollie.agent.inbox import ContextItem

S = TypeVar("S")
NonEmpty = Annotated[str, Check(min_length=1)]
Natural = Annotated[int, Check(ge=0)]


def _name(raw: object) -> str:
    """A string that names something (a path, a URI, a session, a title): one with a lone surrogate (JSON's "\\ud800",
    a client's broken UTF-16) has no UTF-8, so no file, log or store can hold it; a prompt's text may (sent as "?")."""
    value = check(str, raw)
    try:
        value.encode()
    except UnicodeEncodeError as exc:
        raise Invalid([((), f"has a lone surrogate (\\u{ord(value[exc.start]):04x}), which no UTF-8 holds")]) from None
    return value


def _title(raw: object) -> str:
    """A session's title: a name the store keeps (at most MAX_TITLE_BYTES of UTF-8, no NUL; else -32602 naming
    `title`)."""
    value = _name(raw)
    try:
        validate_title(value)
    except InvalidSessionError as exc:
        raise Invalid([((), str(exc))]) from None
    return value


Name = Annotated[str, Check(min_length=1, parse=_name)]  # NonEmpty, and writable as UTF-8
Title = Annotated[str, Check(parse=_title)]


def parse(model: type[S], raw: object) -> S:
    """Check raw JSON params into `model`, raising InvalidParams (-32602) that names every bad field."""
    if raw is None:
        raw = {}
    try:
        return check(model, raw)
    except Invalid as bad:
        raise InvalidParams("; ".join(bad.messages(top="params"))) from None


# Every shape is read once by its handler, never compared, printed or hashed, so attrs generates only __init__ and
# the frozen __setattr__ (eq, repr and a slotted copy of each class were over half of this module's import, paid by
# every cold start before its first token).
shape = attrs.frozen(kw_only=True, eq=False, repr=False, slots=False)


@shape
class Params:
    """A method that takes nothing (ollie/listCommands); the base of the others: unknown keys are ignored."""

    unknown_keys: ClassVar[str] = "ignore"


NoParams = Params


@shape
class SessionParams(Params):
    """Params of a method aimed at one session (the default one when `session` is left out)."""

    session: str | None = None


@shape
class ContextParams(SessionParams):
    """ollie/context: one page of the messages (`offset` 0-based, `limit` none = to the end)."""

    offset: Natural = 0
    limit: Natural | None = None


@shape
class Position(Params):
    """An LSP position: zero-based line and character."""

    line: Natural
    character: Natural


@shape
class Range(Params):
    """An LSP range: start inclusive, end exclusive."""

    start: Position
    end: Position


@shape
class EditorContext(Params):
    """What the editor shows: the file, and the selection or range the user points at; or (`mcpServer`) the
    resource `uri` of an MCP server, read by the daemon."""

    uri: Name
    range: Range | None = None
    selection: str | None = None
    language_id: str | None = None
    mcp_server: str | None = None

    def wire(self) -> ContextItem:
        """The item as a client sends it (ollie/popQueue hands a queued prompt's back)."""
        return {json_key(EditorContext, k): v for k, v in attrs.asdict(self, filter=lambda _, v: v is not None).items()}


@shape
class _WithContext(SessionParams):
    context: EditorContext | list[EditorContext] | None = None

    @property
    def contexts(self) -> list[EditorContext]:
        """The context items in order (none, one, or the list)."""
        if self.context is None:
            return []
        return list(self.context) if isinstance(self.context, list) else [self.context]


@shape
class ImageItem(Params):
    """An image for the prompt: `path`, a file beneath the session's directory, or `data`, pasted bytes as base64."""

    path: Name | None = None
    data: NonEmpty | None = None
    mime_type: str | None = None  # what the client says `data` is; it must match the bytes
    name: str | None = None  # what the user calls pasted bytes (a file name), for messages only


@shape
class SubmitParams(_WithContext):
    """ollie/submit (`images`: the prompt's pictures, in order)."""

    text: str
    images: list[ImageItem] | None = None


@shape
class InterruptParams(SessionParams):
    """ollie/interrupt."""

    reason: str = ""


@shape
class TextParams(_WithContext):
    """ollie/inject, and ollie/queue's base (`context` as submit's; `images` only to refuse them by name)."""

    text: NonEmpty
    images: list[ImageItem] | None = None


@shape
class QueueParams(TextParams):
    """ollie/queue (`seen`: the `seq` of the last `ollie/event` of the session the client had received; `images` as
    submit's, and then `text` may be blank, as there)."""

    text: str
    seen: Natural | None = None


@shape
class CommandParams(SessionParams):
    """ollie/command: one slash command or `!shell` line."""

    line: NonEmpty


@shape
class SetCwdParams(SessionParams):
    """ollie/setCwd."""

    cwd: Name


@shape
class SetEnvParams(SessionParams):
    """ollie/setEnv."""

    key: Annotated[str, Check(pattern=r"[A-Za-z_][A-Za-z0-9_]*")]
    value: str


@shape
class SetGenerationParamsParams(SessionParams):
    """ollie/setGenerationParams: `params` are an agent config's sampling keys, with its bounds."""

    params: GenerationParams


@shape
class SetApprovalParams(SessionParams):
    """ollie/setApproval: `approval` is one of ask, auto-edit, auto, read-only."""

    approval: NonEmpty


@shape
class TurnParams(SessionParams):
    """A turn of the session (default: the last)."""

    turn: Annotated[int, Check(ge=1)] | None = None


@shape
class ChangesParams(TurnParams):
    """ollie/changes: the changes of turn `turn` (default: the last); `ignored`: build output too; `path`: that file
    alone; `changed`: of the last turn up to `turn` that changed files."""

    ignored: bool = False
    path: Name | None = None
    changed: bool = False


@shape
class ReviewUndoParams(TurnParams):
    """ollie/review/undo: one hunk (None: the whole file) of a turn's change to `path`."""

    path: Name
    hunk: Natural | None = None


@shape
class RewindParams(TurnParams):
    """ollie/rewind: back to before turn `turn` (default: the last), or `undo` the last rewind."""

    undo: bool = False


@shape
class SessionNewParams(Params):
    """ollie/session/new."""

    agent: NonEmpty | None = None
    kind: NonEmpty | None = None
    title: Title | None = None
    cwd: Name | None = None


@shape
class SessionListParams(Params):
    """ollie/session/list."""

    kinds: list[str] | None = None
    include_archived: bool = False
    limit: Natural | None = None
    cursor: str | None = None


@shape
class SessionIdParams(Params):
    """ollie/session/load, /archive, /close: the session is required."""

    session: Name


@shape
class SessionForkParams(SessionIdParams):
    """ollie/session/fork: a copy of the session's conversation up to the end of turn `turn` (default: all of it)."""

    turn: Annotated[int, Check(ge=1)] | None = None


@shape
class SessionRenameParams(SessionIdParams):
    """ollie/session/rename."""

    title: Title


