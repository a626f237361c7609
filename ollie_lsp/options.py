"""initializationOptions (`ollie.shapes`): unknown keys are ignored; a bad value is reported and falls back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar

import attrs

from ollie.shapes import Check, Invalid, dotted, expected, json_key, parse


def _name(value: object) -> str:
    return parse(str, value).strip()


def _env_value(value: object) -> str:
    # JSON's true/false, as a shell script would test them.
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (str, int, float)):
        return str(value)
    raise expected("a string, number or boolean", value)


Name = Annotated[str, Check(parse=_name, min_length=1)]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class InitOptions:
    """What the client asked for at `initialize` (every field optional)."""

    unknown_keys: ClassVar[str] = "ignore"

    agent: Name | None = None
    backend: Name | None = None
    model: Name | None = None
    session: Name | None = None
    # No `session`: go on with the newest session started in the workspace folder (`ollie -c`), for a client that
    # keeps no id of its own (eglot): its reconnect, a daemon restart, went on in a fresh session.
    continue_session: bool = False
    env: dict[Annotated[str, Check(pattern=r"[A-Za-z_][A-Za-z0-9_]*")],
              Annotated[str, Check(parse=_env_value)]] = attrs.Factory(dict)
    # The requests to the client it says it answers: ollie/editor/* (the model gets the editor tools),
    # ollie/saveDocuments, ollie/prompt (`Ollie: Ask about this...` on any selection), ollie/permission.
    editor_tools: bool = False
    save_documents: bool = False
    prompt_request: bool = False
    permission_request: bool = False
    # The client shows each question's answer on its step: no `info` line ("allowed: Edit app.py") says it again.
    shows_answers: bool = False


def _without(data: dict[str, object], path: tuple[str | int, ...]) -> dict[str, object]:
    """`data` less the bad entry at `path`: one variable of `env`, else the whole option."""
    option, *inner = path
    if option == "env" and inner and isinstance(env := data.get("env"), Mapping):
        return {**data, "env": {k: v for k, v in env.items() if str(k) != inner[0]}}
    return {k: v for k, v in data.items() if json_key(InitOptions, k) != option}


def parse_init_options(raw: object) -> tuple[InitOptions, list[str]]:
    """(options, problems): unknown keys are ignored, a bad value is named in `problems` and dropped."""
    # Neovim sends an empty Lua table as `[]`: no options, like null.
    if raw is None or (isinstance(raw, list) and not raw):
        return InitOptions(), []
    if not isinstance(raw, Mapping):
        return InitOptions(), [f"initializationOptions must be an object, got {type(raw).__name__}; using defaults"]
    data, problems = dict(raw), []
    while True:
        try:
            return parse(InitOptions, data), problems
        except Invalid as bad:
            before = data
            for path, reason in bad.problems:
                problems.append(f"initializationOptions.{dotted(path)}: {reason}; ignored")
                data = _without(data, path) if path else data
            if data == before:  # nothing left to drop
                return InitOptions(), problems
