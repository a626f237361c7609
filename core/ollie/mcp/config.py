"""MCP server configuration: the de-facto `{"mcpServers": {NAME: {...}}}` shape, from ollie's config or ACP.

A stdio server is `{"command", "args", "env", "cwd"}`, an HTTP one `{"url", "headers"}`
(streamable HTTP). Errors name the file and the key. A workspace's own MCP files
(`.mcp.json`, `.vscode/mcp.json`) are never read here: they are the workspace's, not the user's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ollie import paths
from ollie.errors import ConfigError

CONFIG_NAME = "mcp.json"
# A server name becomes part of tool names (`mcp__<server>__<tool>`) and a directory name.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$")
_STDIO_KEYS = {"command", "args", "env", "cwd", "type", "disabled"}
_HTTP_KEYS = {"url", "headers", "type", "disabled"}


@dataclass(frozen=True)
class ServerSpec:
    """One configured MCP server: stdio (`command`) or streamable HTTP (`url`); `source` says where it came from."""

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str = ""
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    source: str = ""

    @property
    def transport(self) -> str:
        """`stdio` or `http`."""
        return "http" if self.url else "stdio"


def config_file() -> Path:
    """The user's MCP config: `<ollie config dir>/mcp.json`."""
    return paths.config_dir() / CONFIG_NAME


def _strings(value: object, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ConfigError(f"{where}: expected an object of strings")
    return dict(value)


def parse_server(name: object, entry: object, source: str) -> ServerSpec:
    """One `mcpServers` entry; ConfigError naming `source` and the key when it is malformed."""
    where = f"{source}: mcpServers.{name}"
    if not isinstance(name, str) or not _NAME.match(name) or "__" in name:
        raise ConfigError(f"{where}: a server name is letters, digits, '.', '-', '_' (no '__'), at most 48")
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected an object with \"command\" or \"url\"")
    if "url" in entry:
        unknown = sorted(set(entry) - _HTTP_KEYS)
        if unknown:
            raise ConfigError(f"{where}.{unknown[0]}: unknown key for an HTTP server")
        url = entry["url"]
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"{where}.url: expected an http:// or https:// URL")
        headers = _strings(entry.get("headers", {}), f"{where}.headers")
        return ServerSpec(name, url=url, headers=headers, source=source)
    unknown = sorted(set(entry) - _STDIO_KEYS)
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown key for a stdio server")
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(f"{where}.command: expected the program to run (or \"url\" for an HTTP server)")
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{where}.args: expected an array of strings")
    cwd = entry.get("cwd", "")
    if not isinstance(cwd, str):
        raise ConfigError(f"{where}.cwd: expected a directory path")
    env = _strings(entry.get("env", {}), f"{where}.env")
    return ServerSpec(name, command=command, args=tuple(args), env=env, cwd=cwd, source=source)


def parse_servers(data: object, source: str) -> dict[str, ServerSpec]:
    """The servers of a parsed `{"mcpServers": {...}}` document (disabled ones left out)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a JSON object with \"mcpServers\"")
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{source}: mcpServers: expected an object of servers by name")
    out: dict[str, ServerSpec] = {}
    for name, entry in servers.items():
        spec = parse_server(name, entry, source)
        if not (isinstance(entry, dict) and entry.get("disabled") is True):
            out[name] = spec
    return out


def load_user_servers(path: Path | None = None) -> dict[str, ServerSpec]:
    """The servers of the user's mcp.json ({} when there is none); ConfigError naming file and key."""
    file = path or config_file()
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read: {exc.strerror}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file}: line {exc.lineno}: {exc.msg}") from exc
    return parse_servers(data, str(file))


def from_acp(servers: list[Any]) -> dict[str, ServerSpec]:
    """The servers an ACP client sent in session/new (SDK objects or dicts: stdio, or http/sse with a url)."""
    out: dict[str, ServerSpec] = {}
    for n, server in enumerate(servers or []):
        data = server.model_dump(by_alias=True) if hasattr(server, "model_dump") else server
        if not isinstance(data, dict):
            raise ConfigError(f"session/new: mcpServers[{n}]: expected an object")
        name = data.get("name")
        source = "session/new"
        if data.get("url"):
            headers = {h["name"]: h["value"] for h in data.get("headers") or [] if isinstance(h, dict)}
            spec = parse_server(name, {"url": data["url"], "headers": headers}, source)
        else:
            env = {e["name"]: e["value"] for e in data.get("env") or [] if isinstance(e, dict)}
            spec = parse_server(name, {"command": data.get("command"), "args": data.get("args") or [], "env": env},
                                source)
        out[spec.name] = spec
    return out
