"""initializationOptions: parsed field by field; a bad one is reported and falls back to its default."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class InitOptions:
    """What the client asked for at `initialize` (every field optional)."""

    agent: str | None = None
    backend: str | None = None
    model: str | None = None
    session: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    # The client answers the ollie/editor/* requests: the model gets the editor tools.
    editor_tools: bool = False


_STRING_KEYS = ("agent", "backend", "model", "session")
_SCALARS = (str, int, float, bool)


def _env_value(value: str | int | float | bool) -> str:
    # JSON's true/false, as a shell script would test them.
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def parse_init_options(raw: object) -> tuple[InitOptions, list[str]]:
    """(options, problems): unknown keys are ignored, a bad value is named in `problems` and dropped."""
    problems: list[str] = []
    # Neovim sends an empty Lua table as `[]`: no options, like null.
    if raw is None or (isinstance(raw, list) and not raw):
        return InitOptions(), problems
    if not isinstance(raw, Mapping):
        return InitOptions(), [f"initializationOptions must be an object, got {type(raw).__name__}; using defaults"]
    values: dict[str, Any] = {}
    for key in _STRING_KEYS:
        value = raw.get(key)
        if value is None:
            continue
        if isinstance(value, str) and value.strip():
            values[key] = value.strip()
        else:
            problems.append(f"initializationOptions.{key} must be a non-empty string, got {value!r}; using the default")
    env = raw.get("env")
    if env is not None:
        if isinstance(env, Mapping):
            good: dict[str, str] = {}
            for key, value in env.items():
                if isinstance(key, str) and key.isidentifier() and isinstance(value, _SCALARS):
                    good[key] = _env_value(value)
                else:
                    problems.append(f"initializationOptions.env.{key} is not a KEY: string pair; ignored")
            values["env"] = good
        else:
            problems.append(f"initializationOptions.env must be an object, got {type(env).__name__}; ignored")
    editor_tools = raw.get("editorTools")
    if editor_tools is not None:
        if isinstance(editor_tools, bool):
            values["editor_tools"] = editor_tools
        else:
            problems.append(f"initializationOptions.editorTools must be true or false, got {editor_tools!r}; ignored")
    return InitOptions(**values), problems
