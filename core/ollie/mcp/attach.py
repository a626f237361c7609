"""Wiring MCP into a session: the user's servers at the start, a front end's (ACP session/new) later."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ollie.config import AgentConfig
from ollie.errors import ConfigError
from ollie.escapes import one_name
from ollie.mcp.config import SERVER_NAME, ServerSpec, config_file, for_agent, load_user_servers
from ollie.mcp.workspace import allowed_keys, approval_key, read_workspace_servers, remember
from ollie.tools.dispatcher import Dispatcher

if TYPE_CHECKING:
    from ollie.mcp.host import McpHost


def host_of(dispatcher: Dispatcher) -> McpHost | None:
    """The session's MCP host, or None when it has no MCP server."""
    host = dispatcher.get_server(SERVER_NAME)  # a session without MCP servers never imports the host
    if host is None:
        return None
    from ollie.mcp.host import McpHost

    return host if isinstance(host, McpHost) else None


async def attach(dispatcher: Dispatcher, specs: Mapping[str, ServerSpec], *, cwd: Path, sandbox: str,
                 wait: float = 0) -> McpHost:
    """Start `specs` in the dispatcher's MCP host (made on first use), waiting `wait` for their tool lists; the host.
    A session's start does not wait (a slow server held it 15 s, unsaid): its first turn waits, saying which."""
    from ollie.mcp.host import McpHost

    host = dispatcher.get_server(SERVER_NAME)
    if not isinstance(host, McpHost):
        network_from = sandbox if sandbox and sandbox != "none" else "default"
        host = McpHost(cwd=cwd, environ=dict(os.environ), network_from=network_from)
        dispatcher.add_server(SERVER_NAME, host)
    await host.add(specs, wait=wait)
    return host


async def attach_configured(dispatcher: Dispatcher, cfg: AgentConfig, *, cwd: Path, warnings: list[str]) -> None:
    """Start the servers of mcp.json and the agent's `mcpServers`; the workspace's own only where the user allowed."""
    user: dict[str, ServerSpec] = {}
    if config_file().is_file():
        bad: list[str] = []
        try:
            user = load_user_servers(bad)
        except ConfigError as exc:
            warnings.append(f"MCP servers of mcp.json not started: {exc}")
        warnings.extend(f"MCP server of mcp.json not started: {why}" for why in bad)
    specs = for_agent(user, cfg.mcp_servers, "agent config")
    found, allowed = await asyncio.to_thread(_workspace, cwd, warnings)
    theirs = {name: spec for name, spec in found.items() if name not in specs}
    if not specs and not theirs:
        return
    start = {**specs, **{n: s for n, s in theirs.items() if approval_key(cwd, s) in allowed}}
    host = await attach(dispatcher, start, cwd=cwd, sandbox=cfg.sandbox)
    for name, spec in theirs.items():
        if name not in start:
            host.pending[name] = spec
            warnings.append(awaiting_note(name, spec))


def awaiting_note(name: str, spec: ServerSpec) -> str:
    """The build warning that workspace server `name` waits for the user's approval (withdrawn once allowed)."""
    return (f"MCP server {name!r} of {spec.source} ({command_line(spec)}) is the workspace's: it starts only once you "
            f"allow it, when asked or by `/mcp allow {name}` (remembered for this workspace)")


async def follow_config(dispatcher: Dispatcher, cfg: AgentConfig, *, cwd: Path,
                        name: str = "") -> tuple[set[str], list[str]]:
    """The session's servers of mcp.json (`name`'s, or all) as the file says now, for `/mcp restart`: one it no longer
    lists stops, one it adds or changes starts; (their names, a line for each). ConfigError: the file is bad."""
    source = str(config_file())
    wanted = {n: spec for n, spec in for_agent(await asyncio.to_thread(load_user_servers), cfg.mcp_servers,
                                                "agent config").items() if spec.source == source}
    host = host_of(dispatcher)
    running = {n: server.spec for n, server in (host.servers if host is not None else {}).items()
               if server.spec.source == source}
    gone = [n for n in running if n not in wanted and name in ("", n)]
    lines = [f"stopped {n}: mcp.json no longer lists it" for n in gone]
    for n in gone:
        assert host is not None
        await host.remove(n)
    new = {n: spec for n, spec in wanted.items() if name in ("", n)
           and (n not in running or approval_key(cwd, spec) != approval_key(cwd, running[n]))}
    if new:
        from ollie.mcp.host import FIRST_LIST_WAIT_S

        host = await attach(dispatcher, new, cwd=cwd, sandbox=cfg.sandbox, wait=FIRST_LIST_WAIT_S)
        lines.extend(f"started {n}: {host.servers[n].state}" + (f" ({host.servers[n].error})" if host.servers[n].error
                                                                 else "") for n in new)
    return {*gone, *new}, lines


def _workspace(cwd: Path, warnings: list[str]) -> tuple[dict[str, ServerSpec], set[str]]:
    found = read_workspace_servers(cwd, warnings)
    return found, allowed_keys() if found else set()


def command_line(spec: ServerSpec) -> str:
    """What the user approves: the whole command line, and the `cwd` and `env` that widen what the server reads
    (a hostile entry's `cwd: /` or 200 characters of padding before an argument must not go unseen); an HTTP
    server's URL and the headers sent with every request (a planted token, a `Host` naming another site)."""
    if spec.url:
        text = _shown(spec.url)
        if spec.headers:
            text += ", with headers " + ", ".join(f"{_shown(k)}: {json.dumps(v)}" for k, v in spec.headers.items())
    else:
        text = " ".join(_shown(a) for a in [spec.command, *spec.args])
    if spec.cwd:
        text += f", in {_shown(spec.cwd)}"
    if spec.env:
        text += ", with " + " ".join(f"{_shown(k)}={json.dumps(v)}" for k, v in spec.env.items())
    return text if len(text) <= 2000 else text[:2000] + f"… ({len(text) - 2000} more characters: read {spec.source})"


def _shown(text: str) -> str:
    """`text` as is, or quoted with its escapes when it is empty, has spaces, quotes, backslashes or anything
    unprintable (an ESC sequence, a bidi override: what the user approves must read as what runs, word for word)."""
    return text if text and text.isprintable() and not any(c in text for c in ' "\\') else json.dumps(text)


async def allow(dispatcher: Dispatcher, name: str, *, cwd: Path, keep: bool = True) -> str:
    """Start workspace server `name` (the user's explicit approval), remembered when `keep`; what happened."""
    host = host_of(dispatcher)
    spec = host.pending.get(name) if host is not None else None
    if host is None or spec is None:
        raise ValueError(f"no workspace MCP server {name!r} waits for approval (see /mcp)")
    if keep:
        await asyncio.to_thread(remember, approval_key(cwd, spec))
    del host.pending[name]
    await host.add({name: spec})
    return (f"allowed MCP server {name!r} of {spec.source} ({command_line(spec)}) "
            + ("for this workspace" if keep else "for this session"))


async def read_resource(dispatcher: Dispatcher, server: str, uri: str) -> str:
    """The text of resource `uri` of `server`; ValueError saying why when it cannot be read."""
    host = host_of(dispatcher)
    found = host.servers.get(server) if host is not None else None
    if found is None:
        raise ValueError(f"no MCP server {server!r} (see /mcp)")
    from ollie.mcp.transport import START_TIMEOUT_S

    await found.wait_ready(START_TIMEOUT_S)  # picked as a new session's servers still start
    try:
        return await found.read_resource(uri)
    except Exception as exc:  # noqa: BLE001 - the server's refusal (McpError), or it is not ready: the user's news
        raise ValueError(f"MCP server {server!r} could not read {uri}: {one_name(str(exc), 1000)}") from None


async def resource_note(dispatcher: Dispatcher, server: str, uri: str) -> str:
    """Resource `uri` of `server` as a context note for the next prompt; ValueError when there is none."""
    text = await read_resource(dispatcher, server, uri)
    return f"[MCP resource {uri} of server {server}]\n{text}"
