"""Agent config files (JSON): the loaded form, the loader, and errors that name the file and key (the schema:
`ollie.config_schema`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from ollie import paths
from ollie import validcache as vc
from ollie.errors import ConfigError

HOOK_NAMES = ("agentSpawn", "preTurn", "postTurn", "preTool", "postTool", "preCompact", "postCompact", "turnError")
KIND = "agents"
# Whatever decides what a text validates to: the schema, and how entries are read back.
_CODE = (Path(__file__).resolve().parent / "config_schema.py", Path(__file__).resolve())


@dataclass(frozen=True)
class Prompt:
    """The system prompt: a string (literal, `!cmd`, file, env-expanded) or an array of shell commands."""

    text: str = ""
    commands: list[str] = field(default_factory=list)
    # The directory of the config file it came from (set by load_agent_config);
    # prompt commands see it as $OLLIE_AGENT_DIR to find fragments beside it.
    base_dir: Path | None = None
    # The sandbox policy its commands run under (the agent's `commandSandbox`; "none": unsandboxed).
    sandbox: str = "readonly"

    @property
    def is_exec(self) -> bool:
        """True for the array form: every element is a shell command."""
        return bool(self.commands)


@dataclass
class AgentConfig:
    """One agent: prompt, hooks, tool restrictions, backend/model overrides, sampling params.

    The file's schema (keys, aliases, checks, error messages) is `ollie.config_schema`'s; this is its result.
    """

    hooks: dict[str, list[str]] = field(default_factory=dict)
    prompt: Prompt = field(default_factory=Prompt)
    backend: str = ""
    model: str = ""
    tools: bool = True
    sandbox: str = "default"
    # Prompt commands and hooks: a named sandbox policy (read-only by default) or "none" (the yolo agent).
    command_sandbox: str = "readonly"
    # Steps the model marks `elevated` (outside the sandbox): ask the user each time, always allow, or refuse.
    elevation: Literal["ask", "allow", "deny"] = "ask"
    # The approval mode new sessions start in (ollie.agent.approval): which steps ask the user first.
    approval: Literal["ask", "auto-edit", "auto", "read-only"] = "ask"
    allow_executors: list[str] | None = None
    allow_tools: list[str] | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    max_steps: int | None = None
    # The model's context window in tokens, when the endpoint does not report it (else 128k is assumed).
    context_length: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    top_a: float | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    repetition_penalty: float | None = None
    reasoning: int | None = None
    reasoning_effort: str | None = None
    include_reasoning: bool | None = None
    response_format: str | None = None
    stop: list[str] | None = None
    verbosity: str | None = None
    description: str = ""


def _optional(check: Callable[[object], object]) -> Callable[[object], object]:
    return lambda value: None if value is None else check(value)


def _one_of(*options: str) -> Callable[[object], object]:
    def check(value: object) -> object:
        if value not in options:
            raise vc.Malformed(f"expected one of {options}")
        return value
    return check


def _integer(low: int | None = None) -> Callable[[object], object]:
    return _optional(lambda value: int(vc.number(value, low)))


def _real(low: float | None = None, high: float | None = None) -> Callable[[object], object]:
    return _optional(lambda value: float(vc.number(value, low, high, integer=False)))


def _strings(value: object) -> list[str]:
    return list(vc.texts(value))


# How a cached entry's fields are checked again (the schema's types and ranges): see _from_dump.
_FIELDS: dict[str, Callable[[object], object]] = {
    "backend": vc.text, "model": vc.text, "tools": vc.flag, "sandbox": vc.text, "command_sandbox": vc.text,
    "elevation": _one_of("ask", "allow", "deny"), "approval": _one_of("ask", "auto-edit", "auto", "read-only"),
    "allow_executors": _optional(_strings), "allow_tools": _optional(_strings), "max_tokens": _integer(1),
    "max_completion_tokens": _integer(1), "max_steps": _integer(0), "context_length": _integer(1),
    "temperature": _real(0), "top_p": _real(0, 1), "top_k": _integer(0), "min_p": _real(0, 1), "top_a": _real(0),
    "frequency_penalty": _real(), "presence_penalty": _real(), "repetition_penalty": _real(),
    "reasoning": _integer(0), "reasoning_effort": _optional(_one_of("minimal", "low", "medium", "high")),
    "include_reasoning": _optional(vc.flag), "response_format": _optional(vc.text), "stop": _optional(_strings),
    "verbosity": _optional(vc.text), "description": vc.text,
}


def _from_dump(data: object) -> AgentConfig:
    """The config of a validated file's dump (`config_schema.validate_text`); vc.Malformed if it is not one exactly."""
    top = vc.section(data, {*_FIELDS, "hooks", "prompt"})
    prompt = vc.section(top["prompt"], {"text", "commands", "base_dir", "sandbox"})
    if prompt["base_dir"] is not None:  # set by load_agent_config, never by a file
        raise vc.Malformed("a prompt's base_dir in a file's dump")
    hooks = top["hooks"]
    if not isinstance(hooks, dict) or not set(hooks) <= set(HOOK_NAMES):
        raise vc.Malformed("expected hooks by their names")
    return AgentConfig(
        hooks={name: _strings(cmds) for name, cmds in hooks.items()},
        prompt=Prompt(text=vc.text(prompt["text"]), commands=_strings(prompt["commands"]),
                      sandbox=vc.text(prompt["sandbox"])),
        **{name: check(top[name]) for name, check in _FIELDS.items()},  # type: ignore[arg-type]
    )


def parse_agent_config(text: str, source: str) -> AgentConfig:
    """Parse an agent config's JSON text; errors name `source` and the offending key.

    A text seen before is read back from the validated-config cache (`ollie.validcache`); a new one is
    validated with pydantic (`ollie.config_schema`), which is where every error comes from.
    """
    def validate() -> object:
        from ollie.config_schema import validate_text  # pydantic: only for a file not seen before

        return validate_text(text, source, hook_names=HOOK_NAMES)

    return vc.validated(KIND, text, _CODE, build=_from_dump, validate=validate)


def load_agent_config(path: Path) -> AgentConfig:
    """Load one agent config file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    config = parse_agent_config(text, str(path))
    config.prompt = replace(config.prompt, base_dir=path.resolve().parent)
    return config


def find_agent(name: str, dirs: list[Path] | None = None) -> Path:
    """The config file of agent `name` (`<dir>/<name>.json`), first match in lookup order."""
    if not name or "/" in name or name.startswith("."):
        raise ConfigError(f"invalid agent name {name!r}")
    for directory in dirs or paths.agents_dirs():
        candidate = directory / f"{name}.json"
        if candidate.is_file():
            return candidate
    raise ConfigError(f"agent {name!r} not found (looked in {', '.join(str(d) for d in dirs or paths.agents_dirs())})")


def list_agents(dirs: list[Path] | None = None) -> list[str]:
    """Names of every agent config found, first occurrence wins."""
    seen: dict[str, None] = {}
    for directory in dirs or paths.agents_dirs():
        if directory.is_dir():
            for file in sorted(directory.glob("*.json")):
                seen.setdefault(file.stem, None)
    return list(seen)
