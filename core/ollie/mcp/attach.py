"""Wiring MCP into a session: the user's servers at the start, a front end's (ACP session/new) later."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ollie.config import AgentConfig
from ollie.errors import ConfigError
from ollie.mcp.config import ServerSpec, config_file, for_agent, load_user_servers
from ollie.tools.dispatcher import Dispatcher

if TYPE_CHECKING:
    from ollie.mcp.host import McpHost


def host_of(dispatcher: Dispatcher) -> McpHost | None:
    """The session's MCP host, or None when it has no MCP server."""
    from ollie.mcp.host import SERVER_NAME, McpHost

    host = dispatcher.get_server(SERVER_NAME)
    return host if isinstance(host, McpHost) else None


async def attach(dispatcher: Dispatcher, specs: Mapping[str, ServerSpec], *, cwd: Path, sandbox: str,
                 wait: float | None = None) -> McpHost:
    """Start `specs` in the dispatcher's MCP host (made on first use); the host."""
    from ollie.mcp.host import FIRST_LIST_WAIT_S, SERVER_NAME, McpHost

    host = dispatcher.get_server(SERVER_NAME)
    if not isinstance(host, McpHost):
        network_from = sandbox if sandbox and sandbox != "none" else "default"
        host = McpHost(cwd=cwd, environ=dict(os.environ), network_from=network_from)
        dispatcher.add_server(SERVER_NAME, host)
    await host.add(specs, wait=FIRST_LIST_WAIT_S if wait is None else wait)
    return host


async def attach_configured(dispatcher: Dispatcher, cfg: AgentConfig, *, cwd: Path, warnings: list[str]) -> None:
    """Start the servers of the user's mcp.json and the agent's `mcpServers` (none: no MCP import at all)."""
    if not cfg.mcp_servers and not config_file().is_file():
        return
    try:
        user = load_user_servers()
    except ConfigError as exc:
        warnings.append(f"MCP servers of mcp.json not started: {exc}")
        user = {}
    specs = for_agent(user, cfg.mcp_servers, "agent config")
    if specs:
        await attach(dispatcher, specs, cwd=cwd, sandbox=cfg.sandbox)
