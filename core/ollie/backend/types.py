"""The engine's own message and stream types; no vendor type leaks past backend/."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from ollie.config import GenerationParams as GenerationParams  # declared with the agent config: its keys

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(slots=True, repr=False)
class ToolCall:
    """A model's request to invoke a function; `arguments` is the raw JSON text."""

    id: str
    name: str
    arguments: str = "{}"

    def arguments_object(self) -> dict[str, Any]:
        """The arguments as the JSON object a vendor wants sent back (Anthropic's `input`, Ollama's `arguments`)."""
        try:
            value = json.loads(self.arguments or "{}")
        except (ValueError, RecursionError):  # (nested too deep: it failed every later request of the session)
            return {"_raw_arguments": self.arguments}  # keep malformed arguments rather than drop them
        return value if isinstance(value, dict) else {"_value": value}


IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")  # what an Image may be


@dataclass(frozen=True, repr=False)
class Image:
    """An image in a user message or a tool result: its media type and its bytes as base64 (checked by
    ollie.backend.images)."""

    mime: str  # image/png, image/jpeg, image/gif or image/webp
    data: str  # base64, no data: URL prefix
    step: int | None = None  # in a tool result: the step of its call's batch that returned it (0-based)

    @property
    def size(self) -> int:
        """Its size in bytes (from the base64, not decoding it)."""
        return len(self.data) * 3 // 4 - self.data[-2:].count("=")

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form (also the session log's)."""
        return {"mime": self.mime, "data": self.data, **({"step": self.step} if self.step is not None else {})}

    @classmethod
    def from_dict(cls, data: Any) -> Image:
        """The Image `to_dict` made; TypeError when `data` is not one (a session log's records may be hostile)."""
        if not isinstance(data, dict) or data.get("mime") not in IMAGE_TYPES or not isinstance(data.get("data"), str):
            raise TypeError(f"not an image: {str(data)[:80]}")
        step = data.get("step")  # a step that is not one (a hostile log's) is the call's, as before steps were kept
        return cls(data["mime"], data["data"], step if type(step) is int and step >= 0 else None)


# A Message's text fields besides `content`, each left out of its dict when empty.
TEXT_FIELDS = ("tool_call_id", "name", "reasoning", "reasoning_signature", "notes")


@dataclass(slots=True, repr=False)
class Message:
    """One conversation entry. Tool results have role `tool`, `tool_call_id` and `name`."""

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str = ""
    name: str = ""
    reasoning: str = ""
    reasoning_signature: str = ""  # Anthropic: the thinking block's signature, sent back with it
    images: list[Image] = field(default_factory=list)  # a user message's or tool result's pictures, after its text
    # A user message: what ollie added after the user's text (a hook's output, the git status), also in `content`.
    notes: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A compact JSON-ready dict (empty fields left out)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls
            ]
        for key in TEXT_FIELDS:
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.images:
            out["images"] = [image.to_dict() for image in self.images]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        """Inverse of `to_dict`."""
        return cls(
            role=data["role"],
            content=data.get("content") or "",
            tool_calls=[ToolCall(**c) for c in data.get("tool_calls") or []],
            images=[Image.from_dict(i) for i in data.get("images") or []],
            **{key: data.get(key, "") for key in TEXT_FIELDS},
        )


@dataclass(eq=False, repr=False)
class Tool:
    """A function declaration offered to the model; `parameters` is a JSON Schema object."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(eq=False, repr=False)
class Usage:
    """Token counts of one request; `cost` in USD when the vendor reports it.

    `input_tokens` excludes the cached and cache-creation ones (Anthropic's convention; OpenAI's is converted).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_creation_tokens: int = 0
    cost: float | None = None


@dataclass(repr=False)
class StreamEvent:
    """One incremental piece of a model reply: text deltas, or whole tool calls; a clean stream ends `done`."""

    content: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    done: bool = False
    usage: Usage | None = None
    stop_reason: str = ""  # the engine's words where they matter: "refusal", "max_tokens" (cut at the output limit)
    reasoning_signature: str = ""  # Anthropic: set on the done event; copy it into the assistant Message

