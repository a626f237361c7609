"""Agent config files' schema, validated with pydantic: the slow path, taken only when no cached form fits.

`ollie.config` keeps what `validate_text` returns for a file's exact text
(`ollie.validcache`), so a start usually builds none of these models. Any change
to this file changes the cache key (its source is hashed into it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from ollie.errors import ConfigError


class Prompt(BaseModel):
    """The system prompt: a string (literal, `!cmd`, file, env-expanded) or an array of shell commands."""

    model_config = ConfigDict(frozen=True)

    text: str = ""
    commands: list[str] = Field(default_factory=list)
    # The directory of the config file it came from (set by load_agent_config);
    # prompt commands see it as $OLLIE_AGENT_DIR to find fragments beside it.
    base_dir: Path | None = None
    # The sandbox policy its commands run under (the agent's `commandSandbox`; "none": unsandboxed).
    sandbox: str = "readonly"

    @property
    def is_exec(self) -> bool:
        """True for the array form: every element is a shell command."""
        return bool(self.commands)


class AgentConfig(BaseModel):
    """One agent: prompt, hooks, tool restrictions, backend/model overrides, sampling params."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    hooks: dict[str, list[str]] = Field(default_factory=dict)
    prompt: Prompt = Field(default_factory=Prompt)
    backend: str = ""
    model: str = ""
    tools: bool = True
    sandbox: str = "default"
    # Prompt commands and hooks: a named sandbox policy (read-only by default) or "none" (the yolo agent).
    command_sandbox: str = Field(default="readonly", alias="commandSandbox")
    # Steps the model marks `elevated` (outside the sandbox): ask the user each time, always allow, or refuse.
    elevation: Literal["ask", "allow", "deny"] = "ask"
    # The approval mode new sessions start in (ollie.agent.approval): which steps ask the user first.
    approval: Literal["ask", "auto-edit", "auto", "read-only"] = "ask"
    allow_executors: list[str] | None = Field(default=None, alias="allowExecutors")
    allow_tools: list[str] | None = Field(default=None, alias="allowTools")
    max_tokens: int | None = Field(default=None, alias="maxTokens", ge=1)
    max_completion_tokens: int | None = Field(default=None, alias="maxCompletionTokens", ge=1)
    max_steps: int | None = Field(default=None, alias="maxSteps", ge=0)
    # The model's context window in tokens, when the endpoint does not report it (else 128k is assumed).
    context_length: int | None = Field(default=None, alias="contextLength", ge=1)
    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, alias="topP", ge=0, le=1)
    top_k: int | None = Field(default=None, alias="topK", ge=0)
    min_p: float | None = Field(default=None, alias="minP", ge=0, le=1)
    top_a: float | None = Field(default=None, alias="topA", ge=0)
    frequency_penalty: float | None = Field(default=None, alias="frequencyPenalty")
    presence_penalty: float | None = Field(default=None, alias="presencePenalty")
    repetition_penalty: float | None = Field(default=None, alias="repetitionPenalty")
    reasoning: int | None = Field(default=None, ge=0)
    reasoning_effort: str | None = Field(default=None, alias="reasoningEffort")
    include_reasoning: bool | None = Field(default=None, alias="includeReasoning")
    response_format: str | None = Field(default=None, alias="responseFormat")
    stop: list[str] | None = None
    verbosity: str | None = None
    description: str = ""

    @field_validator("hooks", mode="before")
    @classmethod
    def _hooks_as_lists(cls, value: object, info: ValidationInfo) -> object:
        if not isinstance(value, dict):
            return value
        # ollie.config.HOOK_NAMES, passed in by validate_text: this module never imports ollie.config.
        hook_names: tuple[str, ...] = info.context["hook_names"] if info.context else ()
        out: dict[str, Any] = {}
        for name, cmds in value.items():
            if name not in hook_names:
                raise ValueError(f"unknown hook {name!r} (known: {', '.join(hook_names)})")
            out[name] = [cmds] if isinstance(cmds, str) else cmds
        return out

    @field_validator("prompt", mode="before")
    @classmethod
    def _prompt_forms(cls, value: object) -> object:
        if isinstance(value, str):
            return Prompt(text=value)
        if isinstance(value, list):
            if not all(isinstance(v, str) for v in value):
                raise ValueError("prompt array must hold only strings (shell commands)")
            return Prompt(commands=value)
        return value

    @field_validator("command_sandbox")
    @classmethod
    def _command_sandbox(cls, value: str) -> str:
        if not value or "/" in value or value.startswith("."):
            raise ValueError('commandSandbox must name a sandbox policy (e.g. "readonly", "default") or be "none"')
        return value

    @model_validator(mode="after")
    def _prompt_sandbox(self) -> AgentConfig:
        # The prompt resolves on its own (it only sees `prompt`): it carries the policy its commands run under.
        if self.prompt.sandbox != self.command_sandbox:
            self.prompt = self.prompt.model_copy(update={"sandbox": self.command_sandbox})
        return self

    @field_validator("reasoning_effort")
    @classmethod
    def _effort(cls, value: str | None) -> str | None:
        if value is not None and value not in ("minimal", "low", "medium", "high"):
            raise ValueError("reasoningEffort must be minimal, low, medium or high")
        return value


def _loc_to_key(loc: tuple[Any, ...]) -> str:
    fields = AgentConfig.model_fields
    parts = []
    for i, part in enumerate(loc):
        if i == 0 and isinstance(part, str) and part in fields and fields[part].alias:
            part = fields[part].alias
        parts.append(f"[{part}]" if isinstance(part, int) else str(part))
    return ".".join(parts).replace(".[", "[")


def validate_text(text: str, source: str, *, hook_names: tuple[str, ...]) -> dict[str, Any]:
    """An agent config's JSON text validated: every field with defaults filled in (`AgentConfig`'s dump);
    errors name `source` and the offending key."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: an agent config must be a JSON object")
    try:
        return AgentConfig.model_validate(data, context={"hook_names": hook_names}).model_dump()
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            key = _loc_to_key(err["loc"]) or "(top level)"
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown key"
            problems.append(f"key '{key}': {msg}")
        raise ConfigError(f"{source}: " + "; ".join(problems)) from exc
