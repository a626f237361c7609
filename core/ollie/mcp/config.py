"""MCP server configuration: the de-facto `{"mcpServers": {NAME: {...}}}` shape, from ollie's config or ACP.

Errors name the file and the key. A workspace's own MCP files are never read here (ollie.mcp.workspace).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from ollie import paths, regularfile
from ollie.config import MCP_TIMEOUT_MS, McpHttp, McpStdio, parse_mcp_servers
from ollie.errors import ConfigError
from ollie.shapes import Invalid, dotted

CONFIG_NAME = "mcp.json"
# The dispatcher name of a session's MCP host (ollie.mcp.host), here so finding it imports no host.
SERVER_NAME = "mcp"
# One JSON-RPC message larger than this ends the server (a stdio line, an HTTP answer or event): results are cut far
# below it anyway, and the daemon never buffers a message without end.
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
# The error of a request that a web page (no MCP server) answered (ollie.mcp.httpcap): a JSON-RPC server error code.
NOT_MCP = -32099


@attrs.frozen(eq=False, repr=False, slots=False)
class ServerSpec:
    """One configured MCP server: stdio (`command`) or HTTP (`url`, SSE when `sse`); `source` says where it came from."""

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = attrs.field(factory=dict)
    cwd: str = ""
    url: str = ""
    headers: Mapping[str, str] = attrs.field(factory=dict)
    sse: bool = False
    source: str = ""
    # Its own dir under `<state dir>/mcp` (its HOME): its name, or for a workspace's server one of that
    # workspace's (a hostile `.mcp.json` naming a user's server must not get that server's HOME).
    home: str = ""
    # How long a request (a tool call) waits for the server's answer, in seconds (mcp.json says milliseconds).
    timeout: float = MCP_TIMEOUT_MS / 1000

    @property
    def from_workspace(self) -> bool:
        """Whether a workspace's own MCP file named it (its home is one of that workspace's: ollie.mcp.workspace)."""
        return self.home.startswith("workspace/")

    @property
    def transport(self) -> str:
        """`stdio`, `http` (streamable HTTP) or `sse`."""
        return "sse" if self.sse else "http" if self.url else "stdio"


def config_file() -> Path:
    """The user's MCP config: `<ollie config dir>/mcp.json`."""
    return paths.config_dir() / CONFIG_NAME


def spec_of(name: str, entry: McpStdio | McpHttp, source: str) -> ServerSpec:
    """The server `entry` (a checked mcpServers entry) as a ServerSpec."""
    timeout = entry.timeout / 1000
    if isinstance(entry, McpHttp):
        return ServerSpec(name, url=entry.url, headers=dict(entry.headers), sse=entry.type == "sse", source=source,
                          timeout=timeout)
    return ServerSpec(name, command=entry.command, args=tuple(entry.args), env=dict(entry.env), cwd=entry.cwd,
                      source=source, timeout=timeout)


def parse_servers(data: object, source: str) -> dict[str, ServerSpec]:
    """The servers of a parsed `{"mcpServers": {...}}` document (disabled ones left out); ConfigError naming `source`
    and each bad key."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a JSON object with \"mcpServers\"")
    try:
        servers = parse_mcp_servers(data.get("mcpServers", {}))
    except Invalid as exc:
        raise ConfigError(f"{source}: " + "; ".join(
            "mcpServers" + (f".{dotted(path)}" if path else "") + f": {reason}" for path, reason in exc.problems)) from None
    return {name: spec_of(name, entry, source) for name, entry in servers.items() if entry is not None and not entry.disabled}


def parse_each(data: object, source: str, problems: list[str]) -> dict[str, ServerSpec]:
    """`parse_servers`, but a bad entry is left out and said in `problems` (file and key): the others still start."""
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return parse_servers(data, source)  # no entries to tell apart: the document's own ConfigError
    found: dict[str, ServerSpec] = {}
    for name, entry in servers.items():
        try:
            found.update(parse_servers({"mcpServers": {name: entry}}, source))
        except ConfigError as exc:
            problems.append(str(exc))
    return found


def for_agent(user: Mapping[str, ServerSpec], agent: Mapping[str, McpStdio | McpHttp | None] | None,
              source: str) -> dict[str, ServerSpec]:
    """The user's servers with an agent's `mcpServers` on top: its own added, `{"disabled": true}` ones removed."""
    merged = dict(user)
    for name, entry in (agent or {}).items():
        merged.pop(name, None)
        if entry is not None and not entry.disabled:
            merged[name] = spec_of(name, entry, source)
    return merged


def load_user_servers(problems: list[str] | None = None) -> dict[str, ServerSpec]:
    """The servers of the user's mcp.json ({} when there is none); ConfigError naming file and key (with `problems`,
    only for the whole file: a bad entry is said there and left out)."""
    file = config_file()
    try:
        text = regularfile.read_config_sync(file)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read: {exc.strerror}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file}: line {exc.lineno}: {exc.msg}") from exc
    return parse_servers(data, str(file)) if problems is None else parse_each(data, str(file), problems)


def from_acp(servers: list[Any]) -> dict[str, ServerSpec]:
    """The servers an ACP client sent in session/new (SDK objects or dicts: stdio, or http / sse with a url)."""
    entries: dict[str, Any] = {}
    for n, server in enumerate(servers or []):
        data = server.model_dump(by_alias=True) if hasattr(server, "model_dump") else server
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            raise ConfigError(f"session/new: mcpServers[{n}]: expected a server with a name")
        pairs = {p["name"]: p["value"] for p in data.get("headers" if data.get("url") else "env") or []
                 if isinstance(p, dict) and "name" in p and "value" in p}
        entries[data["name"]] = ({"url": data["url"], "headers": pairs, "type": "sse" if data.get("type") == "sse" else ""}
                                 if data.get("url") else
                                 {"command": data.get("command"), "args": data.get("args") or [], "env": pairs})
    return parse_servers({"mcpServers": entries}, "session/new")
