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

# httpx (imported only for a proxy from the environment: proxy.py) imports its command-line client (click, rich,
# pygments: ~35 ms, ~6 MiB) unless that import fails; the engine never runs it.
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
