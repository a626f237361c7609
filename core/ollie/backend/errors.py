"""Typed backend errors, each named for what the caller does about it."""

from __future__ import annotations

from ollie.errors import OllieError


class BackendError(OllieError):
    """A backend request failed; `status` is the HTTP status when there was one."""

    def __init__(self, message: str, *, status: int | None = None, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class RateLimitError(BackendError):
    """HTTP 429: retry after a backoff (`retry_after` seconds when the vendor said)."""

    def __init__(self, message: str, *, status: int | None = 429, body: str = "", retry_after: float | None = None) -> None:
        super().__init__(message, status=status, body=body)
        self.retry_after = retry_after


class TransientError(BackendError):
    """A 5xx or a network failure: retry after a backoff."""


class StreamDropError(BackendError):
    """The stream ended without its terminator: retry (the reply so far is discarded)."""


class ContextOverflowError(BackendError):
    """The request exceeds the model's context window: compact and retry."""


class ToolUnsupportedError(BackendError):
    """The model or route does not support tool calls: hand to the turnError hook."""


class ImagesUnsupportedError(BackendError):
    """The model does not take images: the prompt goes again without them only if the user says so."""


class BackendConfigError(BackendError):
    """The backend cannot be built (missing API key, unknown backend); says what to set."""


class BackendUnreachableError(BackendError):
    """The backend cannot be reached (connection refused, unknown host, malformed URL): a configuration
    error, never retried; `hint` says what to do."""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(f"{message}: {hint}" if hint else message)
        self.detail = message
        self.hint = hint
