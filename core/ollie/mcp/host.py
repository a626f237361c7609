"""The MCP host of one session: every configured server's tools as `mcp__<server>__<tool>`, one tool server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ollie.env import env_seconds
from ollie.mcp.client import McpServer, McpTool, tool_name
from ollie.mcp.config import ServerSpec
from ollie.tools.base import ParallelClass, Tier, ToolInfo, ToolResult

# How long a session's start waits for its servers' first tool lists; a slower one joins when ready.
FIRST_LIST_WAIT_S = env_seconds("OLLIE_MCP_START_WAIT_S", 15.0)  # (shorter: a test of a server that never starts)


class McpHost:
    """A Server (ollie.tools.base) over a session's MCP servers."""

    def __init__(self, *, cwd: Path, environ: Mapping[str, str], network_from: str) -> None:
        self._cwd, self._environ, self._network = cwd, environ, network_from
        self.servers: dict[str, McpServer] = {}
        self.pending: dict[str, ServerSpec] = {}  # the workspace's servers not allowed yet: listed, never started
        self.asked: set[str] = set()  # the pending ones already put to the user this session
        self.waited: set[str] = set()  # those a turn waited for: once a session (a hanging one held each turn 15 s)
        # Set by the session: told of a server that failed or restarted; called when the tool list changed. Until it
        # is, the news is kept in `unsaid` (a server that failed at once, as the session was built).
        self.unsaid: list[str] = []
        self.notify: Callable[[str], None] = self.unsaid.append
        self.on_change: Callable[[], None] = lambda: None

    async def add(self, specs: Mapping[str, ServerSpec], *, wait: float = FIRST_LIST_WAIT_S) -> None:
        """Start `specs` (a name already running is replaced in its place) and wait up to `wait` for their tool
        lists."""
        started: list[McpServer] = []
        for name, spec in specs.items():
            old = self.servers.get(name)
            server = McpServer(spec, cwd=self._cwd, environ=self._environ, network_from=self._network,
                               notify=lambda text: self.notify(text), changed=lambda: self.on_change())
            # Replaced where it was: the order decides which server keeps a name two of them make (`_tools`).
            self.servers[name] = server
            if old is not None:
                await old.aclose()
            server.start()
            started.append(server)
        for server in started:
            await server.wait_ready(wait)

    async def wait_starting(self, tell: Callable[[str], None]) -> None:
        """Wait up to FIRST_LIST_WAIT_S for the servers whose first start has not ended, `tell`ing which first; each
        once a session (the turn goes on without one still starting, and so do later turns)."""
        if starting := [s for n, s in self.servers.items() if s.first_start and n not in self.waited]:
            self.waited.update(s.spec.name for s in starting)
            tell(f"waiting for MCP server {', '.join(repr(s.spec.name) for s in starting)} to start (up to "
                 f"{FIRST_LIST_WAIT_S:g} s: its tools go with this prompt; `/mcp` shows its state)")
            await asyncio.gather(*(s.wait_ready(FIRST_LIST_WAIT_S) for s in starting))

    def _tools(self) -> dict[str, tuple[McpServer, McpTool]]:
        found: dict[str, tuple[McpServer, McpTool]] = {}
        taken: list[str] = []
        for server in self.servers.values():
            # An earlier server keeps its names, listed or not (restarting): `a.b` and `a_b` both make
            # `mcp__a_b__...`, and a later one (a workspace's, allowed after the user's) must not take its calls.
            found.update((t.name, (server, t)) for t in server.tools if not t.name.startswith(tuple(taken)))
            taken.append(tool_name(server.spec.name, ""))
        return found

    def tool(self, name: str) -> McpTool | None:
        """The MCP tool the model calls `name`, if any."""
        found = self._tools().get(name)
        return found[1] if found else None

    def list_tools(self) -> list[ToolInfo]:
        """Every ready server's tools."""
        return [t for _, t in self._tools().values()]

    async def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        """Call the server that offers `tool`."""
        found = self._tools().get(tool)
        owner = next((s for s in self.servers.values() if tool.startswith(tool_name(s.spec.name, ""))), None)
        if found is None and owner is not None and await owner.revive():  # its tools went with its connection
            found = self._tools().get(tool)
        if found is None and owner is not None and owner.state == "failed":
            return ToolResult(f"MCP server {owner.spec.name!r} failed: {owner.error}", is_error=True)
        if found is None:
            return ToolResult(f"unknown MCP tool {tool!r} (its server may have stopped)", is_error=True)
        server, info = found
        return await server.call(info, args)

    def classify_parallel(self, tool: str, args: dict[str, Any]) -> ParallelClass:
        """A read-only tool runs beside other reads; anything else alone."""
        info = self.tool(tool)
        return "read" if info is not None and info.read_only else "global"

    def classify_tier(self, tool: str, args: dict[str, Any]) -> Tier:
        """A server's result is summarised at compaction."""
        return "warm"

    def kind_of(self, tool: str) -> str | None:
        """The step kind of an MCP tool (None: not one)."""
        info = self.tool(tool)
        return info.kind if info is not None else None

    def status(self) -> list[dict[str, Any]]:
        """`ollie/mcp/list`: each server, its state and tools."""
        waiting = [{"name": name, "transport": spec.transport, "source": spec.source, "state": "needs approval",
                    "error": f"the workspace's; /mcp allow {name} starts it", "restarts": 0, "tools": [],
                    "prompts": [], "resources": []} for name, spec in self.pending.items()]
        return [s.status() for s in self.servers.values()] + waiting

    async def probe(self) -> None:
        """Ping the ready HTTP servers at once: a dead one becomes `failed` with why before it is listed."""
        await asyncio.gather(*(s.probe() for s in self.servers.values()))

    async def restart(self, names: list[str]) -> None:
        """Reconnect these servers (each a name in `servers`)."""
        await asyncio.gather(*(self.servers[name].restart() for name in names))

    async def remove(self, name: str) -> None:
        """Stop server `name` and leave it out (its tools go with it)."""
        server = self.servers.pop(name, None)
        if server is not None:
            await server.aclose()
            self.on_change()

    def prompt_owner(self, server: str, prompt: str) -> McpServer | None:
        """The server offering prompt `prompt` as `server`."""
        found = self.servers.get(server)
        return found if found is not None and any(p.name == prompt for p in found.prompts) else None

    async def aclose(self) -> None:
        """Stop every server."""
        servers, self.servers = list(self.servers.values()), {}
        for server in servers:
            await server.aclose()
