"""The `$XDG_CONFIG_HOME/ollie/env` file: KEY=VALUE lines that never override the environment."""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path

from ollie import paths


def parse_env_file(text: str) -> dict[str, str]:
    """Parse `KEY=VALUE` lines; `#` comments, blank lines, `export ` and quotes are allowed."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key] = value
    return values


def env_file() -> Path:
    """The env file's path."""
    return paths.config_dir() / "env"


def load_env_file(path: Path | None = None, environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Apply the env file to `environ` (default `os.environ`) without overriding; return what was set."""
    target = os.environ if environ is None else environ
    file = path or env_file()
    try:
        text = file.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return {}
    applied = {}
    for key, value in parse_env_file(text).items():
        if key not in target:
            target[key] = value
            applied[key] = value
    return applied
