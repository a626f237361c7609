"""A URL as users and the model are shown it: never the credentials or secrets it may carry."""

from __future__ import annotations

from urllib.parse import urlsplit


def shown_url(url: str) -> str:
    """`url`'s scheme, host, port and path; its user part (user:password) and fragment left out, its query (a key
    can sit there) shown as `?...`; "" when it names no host."""
    parts = urlsplit(url.strip())
    if not parts.hostname:
        return ""
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # not a port: the host alone
        port = ""
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}{port}{parts.path}{'?...' if parts.query else ''}"


def written_url(url: str) -> str:
    """`url` as the user wrote it, for a message saying what is wrong with it, but its user:password part (up to the
    last `@`: a password may hold `/`, `#` or `@` unencoded) left out."""
    url = url.strip()
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    at = rest.rfind("@")
    return url if at < 0 else f"{scheme}{sep}…@{rest[at + 1:]}"
