"""Pick and build a backend from OLLIE_BACKEND and the variables of PROTOCOL.md."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ollie.backend.errors import BackendConfigError
from ollie.backend.settings import BACKENDS, DEFAULT_MODELS, DEFAULT_URLS, KEY_VARS, URL_VARS, checked_url

if TYPE_CHECKING:
    from ollie.backend.base import Backend

__all__ = ["BACKENDS", "DEFAULT_MODELS", "DEFAULT_URLS", "KEY_VARS", "URL_VARS", "environment", "make_backend"]

# OpenRouter shows these on its leaderboards and in its logs.
_OPENROUTER_HEADERS = {"HTTP-Referer": "https://github.com/ollie-agent/ollie", "X-Title": "ollie"}


def environment() -> dict[str, str]:
    """os.environ over the env file (which never overrides a variable already set)."""
    from ollie.env import env_file, parse_env_file

    try:
        file_values = parse_env_file(env_file().read_text(encoding="utf-8"))
    except OSError:
        file_values = {}
    return {**file_values, **os.environ}


def make_backend(name: str | None = None, model: str | None = None, environ: Mapping[str, str] | None = None) -> Backend:
    """Build the backend `name` (else OLLIE_BACKEND, else ollama) for `model` (else OLLIE_MODEL, else its default).

    `environ=None` reads the process environment over the env file. A missing
    key, a URL that is not http(s) or an unknown name raises BackendConfigError
    saying what to set.
    """
    env = environment() if environ is None else environ
    chosen = (name or env.get("OLLIE_BACKEND") or "ollama").strip().lower()
    if chosen not in BACKENDS:
        raise BackendConfigError(f"unknown backend {chosen!r}: set OLLIE_BACKEND to one of {', '.join(BACKENDS)}")
    model_name = model or env.get("OLLIE_MODEL") or DEFAULT_MODELS[chosen]
    url = checked_url(env.get(URL_VARS[chosen]) or DEFAULT_URLS[chosen], URL_VARS[chosen])
    # Only the chosen backend's module (and the HTTP client) is imported: the others cost start-up for nothing.
    if chosen == "ollama":
        from ollie.backend.ollama import OllamaBackend

        return OllamaBackend(model=model_name, base_url=url)
    key = env.get(KEY_VARS[chosen])
    if not key:
        raise BackendConfigError(f"the {chosen} backend needs an API key: set {KEY_VARS[chosen]}")
    if chosen == "anthropic":
        from ollie.backend.anthropic import AnthropicBackend

        return AnthropicBackend(model=model_name, api_key=key, base_url=url)
    from ollie.backend.openai import OpenAIBackend

    return OpenAIBackend(
        model=model_name,
        api_key=key,
        name=chosen,
        base_url=url,
        extra_headers=_OPENROUTER_HEADERS if chosen == "openrouter" else None,
        openrouter=True if chosen == "openrouter" else None,
    )
