"""Where sessions are kept: OLLIE_STORE (the environment, then the env file) names a PostgreSQL store, else files."""

from __future__ import annotations

import os
import re

from ollie.errors import OllieError

STORE_VAR = "OLLIE_STORE"
USER_VAR = "OLLIE_USER"
TEAMS_VAR = "OLLIE_TEAMS"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class StoreConfigError(OllieError):
    """OLLIE_STORE is set to something that is not a PostgreSQL URL."""


def setting(name: str) -> str:
    """A setting from the environment, else from the env file (which never overrides the environment)."""
    if name in os.environ:
        return os.environ[name].strip()
    from ollie.env import env_values

    return env_values().get(name, "").strip()


def store_url() -> str:
    """The PostgreSQL URL sessions are kept at, or "" for the embedded default (SQLite and files)."""
    url = setting(STORE_VAR)
    if url and not is_postgres_url(url):
        raise StoreConfigError(f"{STORE_VAR}={url!r}: expected a postgresql:// URL (unset it to keep sessions in files)")
    return url


def is_postgres_url(location: object) -> bool:
    """Whether a store location is a PostgreSQL URL rather than a file."""
    return isinstance(location, str) and location.startswith(POSTGRES_SCHEMES)


def redact(url: str) -> str:
    """A store URL fit for a message or a log: the password left out (of the user part and of the query)."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if at and ":" in credentials:
        rest = f"{credentials.split(':', 1)[0]}:***@{host}"
    return scheme + sep + re.sub(r"([?&]password=)[^&]*", r"\1***", rest, flags=re.IGNORECASE)


def user_teams() -> tuple[str, ...]:
    """The team channels this user reads (OLLIE_TEAMS, comma separated)."""
    return tuple(sorted({t.strip() for t in setting(TEAMS_VAR).split(",") if t.strip()}))
