"""One scripted model reply: text, reasoning, tool calls, usage, an error status, or a dropped stream."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from types import MethodType
from typing import Any, Generic, TypeVar, overload

from ollie.backend.types import Usage

DEFAULT_CHUNK_SIZE = 4

# Keys a JSON script entry may use (the CLI form); anything else is a mistake worth naming.
_SCRIPT_KEYS = {
    "text", "reasoning", "tool_calls", "usage", "cost", "chunk_size", "delay", "error", "body",
    "retry_after", "headers", "drop", "abort", "context_overflow", "tool_unsupported",
    "no_tool_endpoints", "legacy_function_call", "stop_reason", "stream_error", "refused", "truncated", "hold",
}


class FileFlag(threading.Event):
    """An event that is also set once its file exists: set from another process (an editor's scenario), so a reply
    held by it (`hold`; a script's `"hold": PATH`) streams exactly until that scenario has done what it does mid-turn."""

    def __init__(self, flag: Path) -> None:
        super().__init__()
        self.flag = flag

    def is_set(self) -> bool:
        return super().is_set() or self.flag.exists()


V = TypeVar("V")


class _BuilderOrField(Generic[V]):
    """A name that builds a Reply on the class (`Reply.text("hi")`) and is a plain field on an instance."""

    def __init__(self, builder: Callable[..., Reply]) -> None:
        self._builder = builder
        self._slot = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}"

    @overload
    def __get__(self, obj: None, owner: type[Reply]) -> Callable[..., Reply]: ...
    @overload
    def __get__(self, obj: Reply, owner: type[Reply]) -> V: ...
    def __get__(self, obj: Reply | None, owner: type[Reply]) -> Callable[..., Reply] | V:
        if obj is None:
            return MethodType(self._builder, owner)  # bound like a classmethod
        value: V = obj.__dict__[self._slot]
        return value

    def __set__(self, obj: Reply, value: V) -> None:
        obj.__dict__[self._slot] = value


def _text(cls: type[Reply], text: str, **options: Any) -> Reply:
    """A plain text reply."""
    return cls(text=text, **options)


def _tool_calls(cls: type[Reply], *calls: Any, **options: Any) -> Reply:
    """A reply calling tools: each call is `(name, {args})` or `{"name": ..., "arguments": ...}`."""
    return cls(tool_calls=list(calls), **options)


def _stream_error(cls: type[Reply], after: int = 2, status: int = 529, **options: Any) -> Reply:
    """Start a 200 stream, then send the vendor's in-stream error event (e.g. Anthropic "Overloaded")."""
    options.setdefault("text", "this reply fails part way")
    return cls(drop_after=after, abort=False, stream_error=status, **options)


@dataclass(eq=False, repr=False)
class _Fields:
    """Reply's fields (a dataclass's init); Reply puts the builders on three of their names."""

    text: str = ""
    reasoning: str = ""
    tool_calls: list[Any] = field(default_factory=list)  # each `(name, {args})` or `{"name":, "arguments":}`
    usage: Usage | None = None
    cost: float | None = None
    chunk_size: int = DEFAULT_CHUNK_SIZE
    delay: float = 0.0
    _: KW_ONLY
    status: int = 200
    body: Any = None
    error_kind: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    drop_after: int | None = None
    abort: bool = True
    legacy_function_call: bool = False
    stop_reason: str = ""
    stream_error: int | None = None
    # The vendor's refusal stop: Anthropic `refusal`, OpenAI `content_filter` (Ollama has none).
    refused: bool = False
    # Cut at the output token limit: OpenAI and Ollama `length`, Anthropic `max_tokens`.
    truncated: bool = False
    # The stream waits before its end until the test sets this: the turn streams exactly as long as it needs.
    hold: threading.Event | None = None
    # The ids the model gives its calls, in order (a hostile model's: one repeated, an earlier call's); by default
    # fresh ones, as vendors send.
    call_ids: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.chunk_size < 1:
            raise ValueError("Reply: chunk_size must be at least 1")
        self.tool_calls = [_as_call(call) for call in self.tool_calls]


class Reply(_Fields):
    """What the scripted server answers to one chat request.

    `Reply.text(...)`, `Reply.tool_calls(...)`, `Reply.error(...)` and friends
    build one on the class; on an instance the same names are the fields.
    """

    def __repr__(self) -> str:
        if self.status != 200:
            return f"Reply.error({self.status}, kind={self.error_kind or 'status'})"
        parts = [f"text={self.text[:30]!r}"] if self.text else []
        parts += [f"tool_calls={[name for name, _ in self.tool_calls]}"] if self.tool_calls else []
        parts += [f"drop_after={self.drop_after}"] if self.drop_after is not None else []
        return f"Reply({', '.join(parts)})"

    @property
    def is_error(self) -> bool:
        """True when the reply is an HTTP error status instead of a stream."""
        return self.status >= 400

    text: _BuilderOrField[str] = _BuilderOrField(_text)
    tool_calls: _BuilderOrField[list[tuple[str, dict[str, Any] | str]]] = _BuilderOrField(_tool_calls)
    stream_error: _BuilderOrField[int | None] = _BuilderOrField(_stream_error)

    @classmethod
    def error(cls, status: int, body: Any = None, *, retry_after: float | None = None,
              headers: dict[str, str] | None = None) -> Reply:
        """An HTTP error; `body=None` means the vendor's realistic body for that status."""
        extra = dict(headers or {})
        if status == 429:
            extra.setdefault("retry-after", _number(1 if retry_after is None else retry_after))
        elif retry_after is not None:
            extra.setdefault("retry-after", _number(retry_after))
        return cls(status=status, body=body, headers=extra)

    @classmethod
    def file_edit(cls, path: str, old: str, new: str, **options: Any) -> Reply:
        """A reply whose one call edits `path`, `old` replaced by `new` (call_tool's file_edit)."""
        return cls.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": [path, old, new]}]}), **options)

    @classmethod
    def refusal(cls, text: str = "", **options: Any) -> Reply:
        """A reply the model (or the vendor's content filter) declined: each format's own refusal stop."""
        return cls(text=text, refused=True, **options)

    @classmethod
    def cut(cls, text: str = "", **options: Any) -> Reply:
        """A reply cut at the model's output token limit: each format's own length stop."""
        return cls(text=text, truncated=True, **options)

    @classmethod
    def context_overflow(cls) -> Reply:
        """The vendor's real "prompt too long" 400."""
        return cls(status=400, error_kind="context_overflow")

    @classmethod
    def tool_unsupported(cls) -> Reply:
        """The vendor's "this model does not support tools" 400."""
        return cls(status=400, error_kind="tool_unsupported")

    @classmethod
    def no_tool_endpoints(cls) -> Reply:
        """OpenRouter's 404 "No endpoints found that support tool use"."""
        return cls(status=404, error_kind="no_tool_endpoints")

    @classmethod
    def drop(cls, after: int = 3, *, abort: bool = True, **options: Any) -> Reply:
        """Send `after` stream events, then end without the terminator.

        `abort=True` breaks the connection mid-body; `abort=False` ends the HTTP
        body cleanly but still leaves out the vendor's terminator.
        """
        options.setdefault("text", "this reply is cut off before it can finish")
        return cls(drop_after=after, abort=abort, **options)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Reply:
        """Build from a JSON script entry (the CLI form); unknown keys are an error."""
        if not isinstance(data, dict):
            raise ValueError(f"script entry must be an object, got {data!r}")
        unknown = set(data) - _SCRIPT_KEYS
        if unknown:
            raise ValueError(f"script entry has unknown key(s) {sorted(unknown)}; allowed: {sorted(_SCRIPT_KEYS)}")
        if data.get("context_overflow"):
            return cls.context_overflow()
        if data.get("tool_unsupported"):
            return cls.tool_unsupported()
        if data.get("no_tool_endpoints"):
            return cls.no_tool_endpoints()
        if "error" in data:
            return cls.error(int(data["error"]), data.get("body"), retry_after=data.get("retry_after"),
                             headers=data.get("headers"))
        usage = Usage(**data["usage"]) if isinstance(data.get("usage"), dict) else None
        options = {k: data[k] for k in ("text", "reasoning", "tool_calls", "cost", "chunk_size", "delay",
                                        "legacy_function_call", "stop_reason", "refused", "truncated") if k in data}
        if "hold" in data:
            options["hold"] = FileFlag(Path(data["hold"]))
        if "stream_error" in data:
            return cls.stream_error(int(data.get("drop", 2)), int(data["stream_error"]), usage=usage, **options)
        if "drop" in data:
            return cls.drop(int(data["drop"]), abort=bool(data.get("abort", True)), usage=usage, **options)
        return cls(usage=usage, **options)


def as_reply(item: Reply | dict[str, Any] | str) -> Reply:
    """Accept a Reply, a JSON-style dict, or a bare string (plain text)."""
    if isinstance(item, Reply):
        return item
    if isinstance(item, str):
        return Reply(text=item)
    return Reply.from_dict(item)


def _as_call(call: Any) -> tuple[str, dict[str, Any] | str]:
    """(name, arguments): a dict, or a str sent as the raw JSON text (a hostile model's duplicate keys)."""
    if isinstance(call, dict):
        name, args = call["name"], call.get("arguments")
    else:
        name, args = call
    return str(name), args if isinstance(args, str) else dict(args or {})


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
