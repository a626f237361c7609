"""Saved sessions: the log (`session`, `persist`), the registry (kinds, channels, Info) and its SQLite store."""

from __future__ import annotations

from ollie.sessions.errors import (
    ArchivedError,
    ForbiddenError,
    InvalidSessionError,
    NotFoundError,
    RotationOutcomeUnknownError,
    SessionError,
    StaleRotationError,
    TitleTooLongError,
    WrongKindError,
)
from ollie.sessions.output import OutputCollector
from ollie.sessions.registry import Registry
from ollie.sessions.rotation import RotationOutcome, verify_rotation
from ollie.sessions.store import StoreBusyError, default_path
from ollie.sessions.types import (
    INTERNAL_KINDS,
    MAX_SYNCHRONOUS_OUTPUT_BYTES,
    MAX_TITLE_BYTES,
    PRIVATE_CHANNELS,
    Channel,
    ChannelRequest,
    Info,
    Kind,
    ListOptions,
    MainRequest,
    MemoryScope,
    Request,
    ReviewPolicy,
    ReviewRequest,
    Scope,
    SessionRecord,
    TurnResult,
    default_review_policy,
    os_user,
    validate_title,
)

__all__ = [
    "INTERNAL_KINDS", "MAX_SYNCHRONOUS_OUTPUT_BYTES", "MAX_TITLE_BYTES", "PRIVATE_CHANNELS",
    "ArchivedError", "Channel", "ChannelRequest", "ForbiddenError", "Info", "InvalidSessionError", "Kind",
    "ListOptions", "MainRequest", "MemoryScope", "NotFoundError", "OutputCollector", "Registry", "Request",
    "ReviewPolicy", "ReviewRequest", "RotationOutcome", "RotationOutcomeUnknownError", "Scope", "SessionError",
    "SessionRecord", "StaleRotationError", "StoreBusyError", "TitleTooLongError", "TurnResult", "WrongKindError",
    "default_path", "default_review_policy", "os_user", "validate_title", "verify_rotation",
]
