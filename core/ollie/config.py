"""Agent config files (JSON): their shape (declared once: `ollie.shapes`), the loader, and errors that name the
file and key."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import attrs

from ollie import paths, regularfile
from ollie.errors import ConfigError
from ollie.shapes import Check, FieldPath, Invalid, expected, parse, parse_config

# The approval modes: which steps ask the user first (ollie.agent.approval).
ApprovalMode = Literal["ask", "auto-edit", "auto", "read-only"]
APPROVAL_MODES: tuple[str, ...] = get_args(ApprovalMode)

HOOK_NAMES = ("agentSpawn", "preTurn", "postTurn", "preTool", "postTool", "preCompact", "postCompact", "turnError")
# The longest file name (Linux NAME_MAX, in bytes): an agent is `<name>.json`.
NAME_MAX = 255


@attrs.frozen(eq=False, repr=False)
class Prompt:
    """The system prompt: a string (literal, `!cmd`, file, env-expanded) or an array of entries (ollie.agent.prompt)."""

    text: str = ""
    commands: list[str] = attrs.Factory(list)
    # The directory of the config file it came from (set by load_agent_config);
    # prompt commands see it as $OLLIE_AGENT_DIR to find fragments beside it.
    base_dir: Path | None = None
    # The sandbox policy its commands run under (the agent's `commandSandbox`; "none": unsandboxed).
    sandbox: str = "readonly"

    @property
    def is_exec(self) -> bool:
        """True for the array form: each element a shell command, an `@<file>` or `@environment`."""
        return bool(self.commands)


def _prompt(value: object) -> Prompt:
    if isinstance(value, str):
        return Prompt(text=value)
    if isinstance(value, list):
        return Prompt(commands=parse(list[str], value))
    raise expected("a string or an array of shell commands", value)


def _hooks(value: object) -> dict[str, list[str]]:
    hooks = parse(dict[str, str | list[str]], value)
    unknown = [((name,), f"unknown hook {name!r} (known: {', '.join(HOOK_NAMES)})") for name in hooks
               if name not in HOOK_NAMES]
    if unknown:
        raise Invalid(unknown)
    return {name: [cmds] if isinstance(cmds, str) else cmds for name, cmds in hooks.items()}


def _policy_name(value: object) -> str:
    name = parse(str, value)
    if not name or "/" in name or name.startswith("."):
        raise Invalid([((), 'must name a sandbox policy (e.g. "readonly", "default") or be "none"')])
    return name


@attrs.define(eq=False, repr=False)
class GenerationParams:
    """Unified sampling parameters (None: the backend's default); the one declaration of their bounds."""

    max_tokens: Annotated[int, Check(ge=1)] | None = None
    max_completion_tokens: Annotated[int, Check(ge=1)] | None = None
    temperature: Annotated[float, Check(ge=0)] | None = None
    top_p: Annotated[float, Check(ge=0, le=1)] | None = None
    top_k: Annotated[int, Check(ge=0)] | None = None
    min_p: Annotated[float, Check(ge=0, le=1)] | None = None
    top_a: Annotated[float, Check(ge=0)] | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    repetition_penalty: float | None = None
    reasoning: Annotated[int, Check(ge=0)] | None = None  # Anthropic thinking budget (tokens)
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None  # OpenAI
    include_reasoning: bool | None = None  # OpenRouter
    response_format: str | None = None  # json_object / text
    stop: list[str] | None = None
    verbosity: str | None = None

    def merged(self, override: GenerationParams) -> GenerationParams:
        """A copy with every field that `override` sets taking precedence."""
        return GenerationParams(**{a.name: value for params in (self, override) for a in attrs.fields(GenerationParams)
                                   if (value := getattr(params, a.name)) is not None})


# An MCP server's name becomes part of tool names (`mcp__<server>__<tool>`) and a directory name.
MCP_SERVER_NAME = r"^(?!.*__)[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$"
# How long a request to an MCP server (a tool call) waits for its answer by default, in milliseconds: the unit
# other clients' `mcpServers` use for `timeout`, so a copied entry means the same here.
MCP_TIMEOUT_MS = 120_000
_MCP_TIMEOUT = Check(gt=0, le=86_400_000, doc="milliseconds a request (a tool call) waits for the server's answer")


@attrs.frozen(eq=False, repr=False)
class McpStdio:
    """An MCP server run as a program speaking JSON-RPC on stdio (mcp.json's `{"command", "args", "env", "cwd"}`)."""

    command: Annotated[str, Check(min_length=1)]
    args: list[str] = attrs.Factory(list)
    env: dict[str, str] = attrs.Factory(dict)
    cwd: str = ""
    type: Literal["stdio", ""] = ""
    disabled: bool = False
    timeout: Annotated[float, _MCP_TIMEOUT] = MCP_TIMEOUT_MS


@attrs.frozen(eq=False, repr=False)
class McpHttp:
    """An MCP server over HTTP (`{"url", "headers"}`): streamable HTTP, or legacy SSE with `"type": "sse"`."""

    url: Annotated[str, Check(pattern=r"https?://\S+")]
    headers: dict[str, str] = attrs.Factory(dict)
    type: Literal["http", "streamable-http", "sse", ""] = ""
    disabled: bool = False
    timeout: Annotated[float, _MCP_TIMEOUT] = MCP_TIMEOUT_MS


def parse_mcp_servers(value: object) -> dict[str, McpStdio | McpHttp | None]:
    """`mcpServers` by name: each a stdio or HTTP server; `{"disabled": true}` alone (None) turns one off."""
    servers = parse(dict[str, dict[str, Any]], value)
    out: dict[str, McpStdio | McpHttp | None] = {}
    problems: list[tuple[FieldPath, str]] = []
    for name, entry in servers.items():
        if not re.fullmatch(MCP_SERVER_NAME, name):
            problems.append(((name,), "a server name is letters, digits, '.', '-', '_' (no '__'), at most 48"))
            continue
        if entry == {"disabled": True}:
            out[name] = None
            continue
        try:
            out[name] = parse(McpHttp if "url" in entry else McpStdio, entry)
        except Invalid as exc:
            problems += [((name, *path), reason) for path, reason in exc.problems]
    if problems:
        raise Invalid(problems)
    return out


@attrs.define(eq=False, repr=False)
class AgentConfig(GenerationParams):
    """One agent: its sampling parameters (GenerationParams' keys), prompt, hooks, tool restrictions, backend."""

    hooks: Annotated[dict[str, list[str]], Check(parse=_hooks)] = attrs.Factory(dict)
    prompt: Annotated[Prompt, Check(parse=_prompt)] = attrs.Factory(Prompt)
    backend: str = ""
    model: str = ""
    tools: bool = True
    sandbox: str = "default"
    # Prompt commands and hooks: a named sandbox policy (read-only by default) or "none" (the yolo agent).
    command_sandbox: Annotated[str, Check(parse=_policy_name)] = "readonly"
    # Steps the model marks `elevated` (outside the sandbox): ask the user each time, always allow, or refuse.
    elevation: Literal["ask", "allow", "deny"] = "ask"
    # The approval mode new sessions start in (ollie.agent.approval): which steps ask the user first.
    approval: ApprovalMode = "ask"
    allow_executors: list[str] | None = None
    allow_tools: list[str] | None = None
    max_steps: Annotated[int, Check(ge=0)] | None = None
    # The model's context window in tokens, when the endpoint does not report it (else 128k is assumed).
    context_length: Annotated[int, Check(ge=1)] | None = None
    description: str = ""
    # MCP servers this agent adds to (or, `{"disabled": true}`, turns off of) the user's mcp.json.
    mcp_servers: Annotated[dict[str, McpStdio | McpHttp | None], Check(parse=parse_mcp_servers)] | None = None

    def __attrs_post_init__(self) -> None:
        # The prompt resolves on its own (it only sees `prompt`): it carries the policy its commands run under.
        self.prompt = attrs.evolve(self.prompt, sandbox=self.command_sandbox)

    @property
    def generation_params(self) -> GenerationParams:
        """The sampling parameters this agent sets."""
        return GenerationParams(**{a.name: getattr(self, a.name) for a in attrs.fields(GenerationParams)})

    @property
    def unsandboxed(self) -> bool:
        """Whether its tool code or commands run outside the sandbox, or its elevated steps run without asking."""
        return "none" in (self.sandbox, self.command_sandbox) or self.elevation == "allow"


def parse_agent_config(text: str, source: str) -> AgentConfig:
    """Parse an agent config's JSON text; errors name `source` and the offending key."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: an agent config must be a JSON object")
    return parse_config(AgentConfig, data, source)


def load_agent_config(path: Path) -> AgentConfig:
    """Load one agent config file."""
    try:
        text = regularfile.read_config_sync(path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    config = parse_agent_config(text, str(path))
    config.prompt = attrs.evolve(config.prompt, base_dir=path.resolve().parent)
    return config


def find_agent(name: str, dirs: list[Path] | None = None) -> Path:
    """The config file of agent `name` (`<dir>/<name>.json`), first match in lookup order."""
    # A name no file can have (a session record names the agent, and a teammate may write records): said as such.
    if not name or "/" in name or name.startswith(".") or len(f"{name}.json".encode(errors="replace")) > NAME_MAX:
        raise ConfigError(f"invalid agent name {name[:80]!r}")
    for directory in dirs or paths.agents_dirs():
        candidate = directory / f"{name}.json"
        if candidate.is_file():
            return candidate
    known = ", ".join(list_agents(dirs)) or "none"
    raise ConfigError(f"agent {name!r} not found (looked in {', '.join(str(d) for d in dirs or paths.agents_dirs())}); "
                      f"name one of the agents there ({known}), or add {name}.json to one of those directories")


def list_agents(dirs: list[Path] | None = None) -> list[str]:
    """Names of every agent config found, first occurrence wins."""
    seen: dict[str, None] = {}
    for directory in dirs or paths.agents_dirs():
        if directory.is_dir():
            for file in sorted(directory.glob("*.json")):
                seen.setdefault(file.stem, None)
    return list(seen)
