"""Before the first turn: does the agent's config load, can the chosen backend be reached? If not, say what to fix."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from ollie.backend.errors import BackendConfigError
from ollie.backend.registry import configured, environment
from ollie.backend.settings import unreachable_hint
from ollie.backend.urls import shown_url


def agent_problem(name: str) -> str | None:
    """What is wrong with agent `name`'s config (not found, bad JSON, a bad key), by file and key; None when it loads."""
    from ollie.cli.sanitize import printable
    from ollie.config import find_agent, load_agent_config
    from ollie.errors import ConfigError

    try:
        load_agent_config(find_agent(name))
    except ConfigError as exc:
        return printable(str(exc))  # a file's name or key is the workspace's, not ours to print raw
    return None


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


def backend_problem(backend: str | None = None, *, model: str | None = None, timeout: float = 1.5) -> str | None:
    """What is wrong with reaching the backend, phrased as what to do; None when it looks fine."""
    env = environment()
    try:
        spec, url, _ = configured(backend, env)
    except BackendConfigError as exc:
        return str(exc)
    if reachable(url, timeout=timeout):
        return None
    hint = unreachable_hint(spec, url, model or env.get("OLLIE_MODEL") or spec.default_model)
    what = "Ollama" if spec.wire == "ollama" else f"the {spec.name} API"
    return f"cannot reach {what} at {shown_url(url)}: {hint}"
