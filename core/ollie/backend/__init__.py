"""LLM backends: shared types, typed errors, and the OpenAI, Anthropic and Ollama providers."""

from __future__ import annotations

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
