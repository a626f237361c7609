"""Saved sessions: the log (`session`, `persist`), the registry (kinds, channels, Info), their stores (SQLite and
files, or PostgreSQL with OLLIE_STORE: `pg`)."""

from __future__ import annotations

from ollie.sessions.errors import (
    ArchivedError,
    ForbiddenError,
    InvalidSessionError,
    NotFoundError,
    ReadOnlyError,
    SessionError,
    TitleTooLongError,
)
from ollie.sessions.registry import Registry
from ollie.sessions.schema import StoreVersionError
from ollie.sessions.store import StoreBusyError, default_path
from ollie.sessions.types import (
    MAX_TITLE_BYTES,
    Channel,
    Info,
    Kind,
    ListOptions,
    Request,
    Scope,
    SessionRecord,
    TurnResult,
    os_user,
    validate_title,
)

__all__ = [
    "MAX_TITLE_BYTES", "ArchivedError", "Channel", "StoreVersionError",
    "ForbiddenError", "Info", "InvalidSessionError", "Kind",
    "ListOptions", "NotFoundError", "ReadOnlyError", "Registry", "Request",
    "Scope", "SessionError", "SessionRecord", "StoreBusyError", "TitleTooLongError", "TurnResult",
    "default_path", "os_user", "validate_title",
]
