"""The backends' names, default models and URLs, and the variables that configure them."""

from __future__ import annotations

from urllib.parse import urlsplit

from ollie.backend.errors import BackendConfigError

BACKENDS = ("ollama", "openai", "openrouter", "anthropic")

DEFAULT_MODELS = {
    "ollama": "qwen3",
    "openai": "gpt-4.1",
    "openrouter": "anthropic/claude-sonnet-4.5",
    "anthropic": "claude-sonnet-4-5",
}

DEFAULT_URLS = {
    "ollama": "http://localhost:11434",
    "openai": "https://api.openai.com/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "anthropic": "https://api.anthropic.com",
}

URL_VARS = {"ollama": "OLLIE_OLLAMA_URL", "openai": "OLLIE_OPENAI_URL", "openrouter": "OLLIE_OPENAI_URL",
            "anthropic": "OLLIE_ANTHROPIC_URL"}
KEY_VARS = {"openai": "OLLIE_OPENAI_KEY", "openrouter": "OLLIE_OPENAI_KEY", "anthropic": "OLLIE_ANTHROPIC_KEY"}


def checked_url(url: str, variable: str) -> str:
    """`url` when it is an http(s) URL with a host; else BackendConfigError naming `variable`."""
    parts = urlsplit(url.strip())
    if parts.scheme in ("http", "https") and parts.hostname:
        return url.strip()
    example = f"http://{url.strip()}" if url.strip() and "://" not in url else "http://localhost:11434"
    raise BackendConfigError(
        f"{variable}={url!r} is not an http(s) URL: write it with its scheme and host, e.g. {example}"
    )


def unreachable_hint(backend: str, url: str, model: str) -> str:
    """What to do when `backend` at `url` cannot be reached (connection refused, unknown host, bad URL)."""
    if backend == "ollama":
        return (f"start Ollama (`ollama serve`) and pull the model (`ollama pull {model}`); "
                f"or set {URL_VARS['ollama']} to where Ollama runs; or use a hosted API: "
                "OLLIE_BACKEND=openai and OLLIE_OPENAI_KEY (or OLLIE_BACKEND=anthropic and OLLIE_ANTHROPIC_KEY)")
    variable = URL_VARS.get(backend, "the backend's URL variable")
    return f"check the network, or set {variable} to the API's URL (now {url})"


def missing_model_hint(backend: str, model: str) -> str:
    """What to do when the backend does not have `model`."""
    if backend == "ollama":
        return f"pull it (`ollama pull {model}`), or set OLLIE_MODEL to a model `ollama list` shows"
    return "set OLLIE_MODEL (or `/model NAME`) to a model the backend offers (`/model` lists them)"
