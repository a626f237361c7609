"""LLM backends: shared types, typed errors, and the OpenAI, Anthropic and Ollama providers."""

from __future__ import annotations

import sys

from ollie.backend.base import Backend
from ollie.backend.errors import (
    BackendConfigError,
    BackendError,
    ContextOverflowError,
    RateLimitError,
    StreamDropError,
    ToolUnsupportedError,
    TransientError,
)
from ollie.backend.types import GenerationParams, Message, StreamEvent, Tool, ToolCall, Usage

# httpx imports its command-line client (click, rich, pygments: ~35 ms, ~6 MiB, where a dev tool installed them)
# unless that import fails, which httpx expects (its `main` then says to install httpx[cli]); the engine never
# runs it. This blocks the import; it calls nothing of httpx's.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

__all__ = [
    "Backend",
    "BackendConfigError",
    "BackendError",
    "ContextOverflowError",
    "GenerationParams",
    "Message",
    "RateLimitError",
    "StreamDropError",
    "StreamEvent",
    "Tool",
    "ToolCall",
    "ToolUnsupportedError",
    "TransientError",
    "Usage",
]
