"""Turn a vendor's HTTP status and error body into the typed backend errors."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from contextlib import suppress

from ollie.backend.errors import (
    BackendError,
    ContextOverflowError,
    ImagesUnsupportedError,
    RateLimitError,
    ToolUnsupportedError,
    TransientError,
)
from ollie.escapes import one_name

# Lower-case fragments of the vendors' real context-overflow messages.
_CONTEXT_OVERFLOW = (
    "context_length_exceeded",  # OpenAI error code
    "maximum context length",  # OpenAI / OpenRouter / vLLM: "This model's maximum context length is ..."
    "prompt is too long",  # Anthropic: "prompt is too long: 208310 tokens > 200000 maximum"
    "exceed context limit",  # Anthropic: "input length and `max_tokens` exceed context limit"
    "input length exceeds the context length",  # Ollama
    "exceeds the available context size",  # llama.cpp server
    "exceed_context_size_error",  # llama.cpp server error type
)

# Lower-case fragments of "this model/route cannot call tools".
_TOOL_UNSUPPORTED = (
    "does not support tools",  # Ollama: "registry.ollama.ai/library/x does not support tools"
    "no endpoints found that support tool use",  # OpenRouter 404
    "support the provided 'tool_choice'",  # OpenRouter 404
    "tools is not supported",  # OpenAI: "tools is not supported with this model"
    "tool use is not supported",
    "tool calling is not supported",
    "does not support tool",
    "function calling is not supported",
    "enable-auto-tool-choice",  # vLLM: "auto" tool choice requires --enable-auto-tool-choice
)

# Lower-case fragments of "this model cannot read the images sent".
_IMAGES_UNSUPPORTED = (
    "image_url is only supported by certain models",  # OpenAI: "Invalid content type. image_url is only ..."
    "support image input",  # OpenRouter 404: "No endpoints found that support image input"
    "missing data required for image input",  # Ollama, a model without a vision projector
    "does not support image",
    "images are not supported",
)

# Anthropic error types (HTTP body and mid-stream `event: error`) mapped to the status they stand for.
_ANTHROPIC_TYPE_STATUS = {
    "rate_limit_error": 429,
    "overloaded_error": 529,
    "api_error": 500,
    "timeout_error": 504,
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
}


def error_message(body: object) -> str:
    """The human message inside a vendor error body (OpenAI, Anthropic, OpenRouter, Ollama, FastAPI)."""
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except (ValueError, RecursionError):  # garbage, or JSON nested too deep to decode
            return body.strip()
    if not isinstance(body, dict):
        return str(body)
    err = body.get("error")
    if isinstance(err, str):
        return err
    if isinstance(err, dict):
        message = str(err.get("message") or err.get("type") or err)
        raw = (err.get("metadata") or {}).get("raw") if isinstance(err.get("metadata"), dict) else None
        # OpenRouter wraps the upstream provider's own error in metadata.raw.
        return f"{message} ({raw})" if raw else message
    detail = body.get("detail") or body.get("message")
    return str(detail) if detail else json.dumps(body)


def status_of_error_object(body: object) -> int:
    """The HTTP status an error object stands for when it came inside a 200 stream."""
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        if err.get("type") in _ANTHROPIC_TYPE_STATUS:
            return _ANTHROPIC_TYPE_STATUS[err["type"]]
        code = err.get("code")
        if isinstance(code, int) and 400 <= code < 600:
            return code
        if code == "rate_limit_exceeded":
            return 429
        if code == "context_length_exceeded":
            return 400
    return 500


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms` / `retry-after` (delta-seconds or an HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis:
        with suppress(ValueError):
            return max(0.0, float(millis) / 1000)
    value = headers.get("retry-after")
    if not value:
        return None
    with suppress(ValueError):
        return max(0.0, float(value))
    # Lazily: `email` costs the daemon ~1 MiB and ~7 ms of import, for the rare Retry-After that is a date.
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


def classify_error(
    status: int,
    body: object,
    *,
    headers: Mapping[str, str] | None = None,
    backend: str = "backend",
) -> BackendError:
    """The typed error for a failed request: status plus the vendor's message decide the class."""
    message = error_message(body) or "(an empty body)"
    raw = body.decode("utf-8", "replace") if isinstance(body, (bytes, bytearray)) else (
        body if isinstance(body, str) else json.dumps(body)
    )
    # The server's words, shown as ollie's error in the terminal and the editors: on one line, escaped and cut (a line
    # break in them printed a line of ollie's own, a U+202E reversed the rest).
    text = f"{backend}: HTTP {status}: {one_name(message, 1000)}"
    haystack = f"{message} {raw}".lower()
    if status == 429:
        return RateLimitError(text, status=status, body=raw, retry_after=parse_retry_after(headers or {}))
    if any(fragment in haystack for fragment in _CONTEXT_OVERFLOW):
        return ContextOverflowError(text, status=status, body=raw)
    if status in (400, 404, 422, 500) and any(fragment in haystack for fragment in _IMAGES_UNSUPPORTED):
        return ImagesUnsupportedError(text, status=status, body=raw)
    if status in (400, 404, 422) and any(fragment in haystack for fragment in _TOOL_UNSUPPORTED):
        return ToolUnsupportedError(text, status=status, body=raw)
    if status >= 500 or status in (408, 409):
        return TransientError(text, status=status, body=raw)
    return BackendError(text, status=status, body=raw)
