"""The Runtime: everything per-agent that an /agent switch replaces as one step."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ollie.agent.hooks import Hooks
from ollie.agent.prompt import DeferredPrompt, box_for, needs_commands, resolve_prompt
from ollie.backend.base import Backend
from ollie.backend.types import GenerationParams
from ollie.config import APPROVAL_MODES, AgentConfig
from ollie.tools.base import (
    KindClassifier,
    ParallelClass,
    ParallelClassifier,
    Tier,
    TierClassifier,
    ToolInfo,
    ToolResult,
)
from ollie.tools.dispatcher import Dispatcher, UnknownToolError
from ollie.tools.execute.args import ExecuteRequest, parse_request
from ollie.tools.execute.server import ExecuteServer
from ollie.tools.execute.tool import ToolScript

DEFAULT_TOOL_RESULT_MAX_BYTES = 128 * 1024

T = TypeVar("T")


@dataclass(eq=False, repr=False)
class Runtime:
    """Per-agent configuration that stays stable across turns."""

    backend: Backend | None
    dispatcher: Dispatcher
    hooks: Hooks | None
    preamble: str = ""
    tools: list[ToolInfo] = field(default_factory=list)
    params: GenerationParams = field(default_factory=GenerationParams)
    max_steps: int = 0
    tool_result_max_bytes: int = DEFAULT_TOOL_RESULT_MAX_BYTES
    warnings: list[str] = field(default_factory=list)
    sandbox_warned: bool = False  # its tool servers' setup warnings are in `warnings` (ollie.agent.setup)
    config: AgentConfig = field(default_factory=AgentConfig)
    # Prompt commands not run yet (see `ready_prompt`): `preamble` is "" until they have.
    deferred_prompt: DeferredPrompt | None = None
    # What the prompt left running in the background (`@environment`'s git status): see `take_late_notes`.
    late_notes: list[asyncio.Task[str | None]] = field(default_factory=list)

    async def execute(self, tool: str, args: dict[str, Any]) -> ToolResult:
        """Route a call to whichever server offers the tool."""
        return await self.dispatcher.dispatch(tool, args)

    async def write_refusal(self, tool: str, args: dict[str, Any]) -> str | None:
        """Why the call's file writes would be refused whatever the user answers (the execute server's writers
        say); None when they would not, or the tool is another server's."""
        server = self._server(tool)
        return await server.write_refusal(tool, args) if isinstance(server, ExecuteServer) else None

    def request(self, tool: str, args: dict[str, Any]) -> ExecuteRequest:
        """An executor call's arguments as its server parsed them (once a call); ArgumentError when they are wrong."""
        server = self._server(tool)
        return server.request(tool, args) if isinstance(server, ExecuteServer) else parse_request(tool, args)

    def resolver(self, tool: str, args: dict[str, Any]) -> Callable[[str], ToolScript] | None:
        """An executor call's script lookup, as its server runs it (None: the tool is another server's)."""
        server = self._server(tool)
        return server.resolver(tool, args) if isinstance(server, ExecuteServer) else None

    def classify_parallel(self, tool: str, args: dict[str, Any]) -> ParallelClass:
        """Whether a call is read-safe, as the server offering the tool says; unknown: global (run it alone)."""
        return self._ask(ParallelClassifier, "classify_parallel", tool, args, "global")

    def classify_tier(self, tool: str, args: dict[str, Any]) -> Tier:
        """The result's retention tier, as the server offering the tool says; unknown: hot (kept verbatim)."""
        return self._ask(TierClassifier, "classify_tier", tool, args, "hot")

    def _server(self, tool: str) -> object | None:
        try:
            return self.dispatcher.server_for(tool)[1]
        except UnknownToolError:
            return None

    def _ask(self, capability: type, method: str, tool: str, args: dict[str, Any], fallback: T) -> T:
        server = self._server(tool)
        if not isinstance(server, capability):
            return fallback
        try:
            answer: T = getattr(server, method)(tool, args)  # the capability Protocol's method: it answers a T
            return answer
        except Exception:  # a classifier bug must not break the turn: the fallback is the safe answer
            return fallback


def take_late_notes(runtime: Runtime) -> list[str]:
    """The notes of the prompt's background work finished by now (each handed over once); the rest wait."""
    done = [t for t in runtime.late_notes if t.done()]
    runtime.late_notes = [t for t in runtime.late_notes if not t.done()]
    return [note for t in done if not t.cancelled() and t.exception() is None and (note := t.result())]


def cancel_prompt(runtime: Runtime) -> None:
    """Stop what the prompt still runs (its deferred commands, `@environment`'s git status): the session closes."""
    if runtime.deferred_prompt is not None:
        runtime.deferred_prompt.cancel()
    for task in runtime.late_notes:
        task.cancel()


async def ready_prompt(runtime: Runtime) -> None:
    """Run the runtime's deferred prompt commands (once) into its preamble, what they warned about into its warnings."""
    deferred = runtime.deferred_prompt
    if deferred is None:
        return
    text, warnings = await deferred.result()
    if runtime.deferred_prompt is not deferred:  # another caller finished first
        return
    runtime.late_notes.extend(deferred.late)
    runtime.preamble, runtime.deferred_prompt = text, None
    runtime.warnings.extend([w for w in warnings if w not in runtime.warnings])


def execute_servers(dispatcher: Dispatcher) -> list[ExecuteServer]:
    """The dispatcher's execute servers: what the session's cwd, env, restrictions, elevation and editor reach."""
    return [server for _, server in dispatcher.servers() if isinstance(server, ExecuteServer)]


def server_kinds(dispatcher: Callable[[], Dispatcher], fallback: Callable[[str], Any]) -> Callable[[str], Any]:
    """A step-kind lookup asking the servers that declare kinds (MCP tools' hints) first, then `fallback`."""

    def lookup(tool: str) -> Any:
        for _, server in dispatcher().servers():
            if isinstance(server, KindClassifier):
                kind = server.kind_of(tool)
                if kind is not None:
                    return kind
        return fallback(tool)

    return lookup


def refresh_tools(runtime: Runtime) -> None:
    """List the tools again, after a server changed what it offers (the editor tools come and go)."""
    runtime.tools = runtime.dispatcher.list_tools([]) if runtime.config.tools else []


async def build_runtime(
    cfg: AgentConfig,
    dispatcher: Dispatcher,
    cwd: Path,
    env: Mapping[str, str],
    *,
    session_id: str = "",
    defer_prompt: bool = False,
) -> Runtime:
    """Wire an agent config to a dispatcher; prompt commands run as `session_id`, with `defer_prompt` on first need."""
    warnings: list[str] = []
    mode = os.environ.get("OLLIE_APPROVAL", "")  # (Core.approval's: one it does not know it passes over, unsaid)
    if mode and mode not in APPROVAL_MODES:
        warnings.append(f"OLLIE_APPROVAL={mode!r} is no approval mode (one of {', '.join(APPROVAL_MODES)}): the "
                        f"agent's, {cfg.approval}, applies")
    restricted = cfg.allow_executors is not None or cfg.allow_tools is not None
    if restricted:
        servers = execute_servers(dispatcher)
        for server in servers:
            server.set_restrictions(cfg.allow_executors, cfg.allow_tools)
        if not servers:
            warnings.append("allowExecutors/allowTools set but no tool server supports restrictions")
    infos = dispatcher.list_tools(warnings) if cfg.tools else []
    box = box_for(cfg.prompt, session_id)
    deferred, preamble = None, ""
    late: list[asyncio.Task[str | None]] = []
    if defer_prompt and needs_commands(cfg.prompt):
        deferred = DeferredPrompt(cfg.prompt, cwd=cwd, env=env, box=box)
    else:
        preamble = await resolve_prompt(cfg.prompt, cwd=cwd, env=dict(env), warnings=warnings, box=box, late=late)
    return Runtime(
        backend=None,  # built by the caller (AgentSetup) from the config and the user's choice
        dispatcher=dispatcher,
        hooks=Hooks(cfg.hooks, box=box),  # in the session's command sandbox, as its prompt commands
        preamble=preamble,
        tools=infos,
        params=cfg.generation_params,
        max_steps=cfg.max_steps or 0,
        warnings=warnings,
        config=cfg,
        deferred_prompt=deferred,
        late_notes=late,
    )
