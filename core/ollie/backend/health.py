"""Is the backend usable? Reachable, model present, key set: what a client shows before the first turn."""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from typing import Any

from ollie.backend.base import Backend
from ollie.backend.errors import BackendError, BackendUnreachableError
from ollie.backend.settings import missing_model_hint, refused_key_hint
from ollie.backend.urls import shown_url
from ollie.escapes import one_name

# A health check must answer fast: it runs when a client opens its chat.
CHECK_TIMEOUT_S = 3.0


@dataclass(eq=False, repr=False)
class BackendHealth:
    """The outcome of one check. `None` fields were not (or cannot be) checked."""

    ok: bool
    backend: str
    model: str
    url: str = ""  # where the backend was asked, for a user to recognise what they configured
    reachable: bool | None = None
    model_present: bool | None = None
    key_set: bool | None = None
    error: str = ""
    hint: str = ""

    def to_wire(self) -> dict[str, Any]:
        """The `backendStatus` object of `ollie/state` (camelCase keys), with the settings file the daemon reads."""
        from ollie.env import env_file

        renamed = {"model_present": "modelPresent", "key_set": "keySet"}
        return {**{renamed.get(key, key): value for key, value in asdict(self).items()}, "settingsFile": str(env_file())}


def model_listed(model: str, names: list[str]) -> bool:
    """Whether `model` is among `names` (Ollama's `qwen3` matches its `qwen3:latest`)."""
    wanted = {model, f"{model}:latest"} if ":" not in model else {model}
    return any(name in wanted for name in names)


def unbuilt(backend: str, error: str) -> BackendHealth:
    """The health of a backend that could not be built (`error` says what to set)."""
    needs_key = "API key" in error
    return BackendHealth(ok=False, backend=backend, model="", key_set=False if needs_key else None,
                         error=error, hint=error.split(": ", 1)[-1] if ": " in error else error)


async def check_backend(backend: Backend, *, timeout: float = CHECK_TIMEOUT_S) -> BackendHealth:
    """Ask the backend for its models: reachable, model present, key accepted."""
    key_set = True if backend.spec.key_var else None
    health = BackendHealth(ok=False, backend=backend.name, model=backend.model, url=shown_url(backend.base_url),
                           key_set=key_set)
    try:
        async with asyncio.timeout(timeout):
            names = await backend.list_models()
    except BackendUnreachableError as exc:
        health.reachable, health.error, health.hint = False, exc.detail, exc.hint
        return health
    except TimeoutError:
        health.error = f"{backend.said}: no answer within {timeout:g}s"
        health.hint = "the server is slow or unreachable; check its URL and the network"
        return health
    except BackendError as exc:
        health.reachable = True
        health.error = str(exc)
        if exc.status in (401, 403):
            health.hint = refused_key_hint(backend.spec, backend.base_url)
        elif exc.status == 404:
            # An endpoint without a model list (many OpenAI-compatible servers): usable, just not listable.
            health.ok, health.error = True, ""
        return health
    health.reachable = True
    health.model_present = model_listed(backend.model, names) if names else None
    if health.model_present is False:
        health.error = f"{backend.said} has no model {backend.model!r}"
        # Escaped: a terminal (ollie doctor) obeys an escape in a name, and a line break in one forges doctor's lines.
        shown = ", ".join(one_name(n) for n in names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        health.hint = f"{missing_model_hint(backend.spec, backend.model)}; the server has: {shown}"
    health.ok = health.model_present is not False
    return health
