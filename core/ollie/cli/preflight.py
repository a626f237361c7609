"""Before the first turn: can the chosen backend be reached? If not, say what to set."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from urllib.parse import urlsplit

from ollie.backend.errors import BackendConfigError
from ollie.backend.registry import DEFAULT_MODELS, DEFAULT_URLS, KEY_VARS, URL_VARS, environment
from ollie.backend.settings import checked_url, unreachable_hint


def reachable(url: str, *, timeout: float = 1.5) -> bool:
    """Whether a TCP connection to the URL's host and port succeeds."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def backend_problem(backend: str | None = None, *, model: str | None = None,
                    environ: Mapping[str, str] | None = None, timeout: float = 1.5) -> str | None:
    """What is wrong with reaching the backend, phrased as what to do; None when it looks fine."""
    env = environment() if environ is None else environ
    name = (backend or env.get("OLLIE_BACKEND") or "ollama").strip().lower()
    if name not in DEFAULT_URLS:
        return f"unknown backend {name!r}: set OLLIE_BACKEND to one of {', '.join(DEFAULT_URLS)}"
    key_var = KEY_VARS.get(name)
    if key_var and not env.get(key_var):
        return f"the {name} backend needs an API key: set {key_var}"
    try:
        url = checked_url(env.get(URL_VARS[name]) or DEFAULT_URLS[name], URL_VARS[name])
    except BackendConfigError as exc:
        return str(exc)
    if reachable(url, timeout=timeout):
        return None
    hint = unreachable_hint(name, url, model or env.get("OLLIE_MODEL") or DEFAULT_MODELS[name])
    if name == "ollama":
        return f"cannot reach Ollama at {url}: {hint}"
    return f"cannot reach the {name} API at {url}: {hint}"
