"""Pick and build a backend from OLLIE_BACKEND and the variables of PROTOCOL.md (the table: settings.SPECS)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ollie.backend.errors import BackendConfigError
from ollie.backend.settings import (
    SPECS,
    BackendSpec,
    Wire,
    checked_url,
    env_file_note,
    others_url_note,
    provider_name,
    spec_for,
)
from ollie.env import environment

if TYPE_CHECKING:
    from ollie.backend.base import Backend

__all__ = ["SPECS", "BackendSpec", "backend_class", "chosen_spec", "configured", "configured_url", "env_file_note",
           "environment", "make_backend"]

# The class that speaks each wire format, imported only when a backend of that format is built.
_CLASSES: dict[Wire, tuple[str, str]] = {
    "openai": ("ollie.backend.openai", "OpenAIBackend"),
    "anthropic": ("ollie.backend.anthropic", "AnthropicBackend"),
    "ollama": ("ollie.backend.ollama", "OllamaBackend"),
}


def backend_class(spec: BackendSpec) -> Callable[..., Backend]:
    """The class that speaks `spec`'s wire format (keywords: spec, name, model, base_url; api_key when it takes one)."""
    module, name = _CLASSES[spec.wire]
    return getattr(importlib.import_module(module), name)


def chosen_spec(name: str | None, env: Mapping[str, str]) -> BackendSpec:
    """The spec of backend `name`, else OLLIE_BACKEND's, else ollama's (BackendConfigError for an unknown one)."""
    try:
        return spec_for(name or env.get("OLLIE_BACKEND") or "ollama", variable="" if name else "OLLIE_BACKEND")
    except BackendConfigError as exc:
        raise _said_where(exc, "" if name else "OLLIE_BACKEND", env) from None


def configured_url(spec: BackendSpec, env: Mapping[str, str]) -> str:
    """The URL `spec`'s backend talks to: its variable's (checked), else its default; BackendConfigError: a bad one."""
    try:
        return checked_url(env.get(spec.url_var) or spec.default_url, spec.url_var)
    except BackendConfigError as exc:
        raise _said_where(exc, spec.url_var, env) from None


def configured(name: str | None, env: Mapping[str, str]) -> tuple[BackendSpec, str, dict[str, str]]:
    """Backend `name`'s spec, checked URL and key (`api_key`, when it takes one); BackendConfigError: what to set."""
    spec = chosen_spec(name, env)
    url = configured_url(spec, env)
    keyed: dict[str, str] = {}
    if spec.key_var:
        keyed["api_key"] = spec.api_key(url, env)
        if not keyed["api_key"]:
            # The user may have set it in the env file, on a line not read or under a misspelt name; or meant the
            # server OPENAI_BASE_URL names, whose key (if any) is not the vendor's.
            note = others_url_note(spec, url, env)
            raise BackendConfigError(f"the {spec.name} backend needs an API key: set {spec.key_hint(url, env)}"
                                     + (f"; {note}" if note else "") + env_file_note())
    return spec, url, keyed


def _said_where(exc: BackendConfigError, variable: str, env: Mapping[str, str]) -> BackendConfigError:
    """`exc`, naming the env file's line when `variable`'s bad value came from there (the environment sets none)."""
    from ollie.env import where_set

    where = where_set(variable, env.get(variable)) if variable else ""
    return BackendConfigError(f"{exc} ({where})") if where else exc


def url_note(name: str | None) -> str:
    """`others_url_note` for backend `name` (else OLLIE_BACKEND's) as the environment and env file set it up."""
    env = environment()
    try:
        spec = chosen_spec(name, env)
        return others_url_note(spec, configured_url(spec, env), env)
    except BackendConfigError:
        return ""  # said by what builds the backend


def make_backend(name: str | None = None, model: str | None = None, environ: Mapping[str, str] | None = None) -> Backend:
    """Build the backend `name` (else OLLIE_BACKEND, else ollama) for `model` (else OLLIE_MODEL, else its default).

    `environ=None`: the process environment over the env file. BackendConfigError says what to set.
    """
    env = environment() if environ is None else environ
    spec, url, keyed = configured(name, env)
    # Only the chosen backend's module is imported: the others cost start-up for nothing.
    return backend_class(spec)(spec=spec, name=provider_name(spec, url), model=model or env.get("OLLIE_MODEL")
                               or spec.default_model, base_url=url, **keyed)
