"""The Dispatcher: a name → server router that lists and dispatches tool calls."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ollie.errors import OllieError
from ollie.tools.base import Closer, Server, ToolInfo, ToolResult


class UnknownToolError(OllieError):
    """No server offers the requested tool."""


class Dispatcher:
    """Routes tool calls to the server that offers them."""

    def __init__(self) -> None:
        self._servers: dict[str, Server] = {}

    def add_server(self, name: str, server: Server) -> None:
        """Register `server` under `name` (replacing one of the same name)."""
        self._servers[name] = server

    def get_server(self, name: str) -> Server | None:
        """The server registered as `name`, if any."""
        return self._servers.get(name)

    def servers(self) -> Iterator[tuple[str, Server]]:
        """All (name, server) pairs, in registration order."""
        return iter(list(self._servers.items()))

    def list_tools(self, warnings: list[str] | None = None) -> list[ToolInfo]:
        """Every tool of every server; a server that cannot list its tools is skipped (described in `warnings`)."""
        tools: list[ToolInfo] = []
        for name, server in self._servers.items():
            try:
                listed = server.list_tools()
            except Exception as exc:  # one broken server must not stop the session
                if warnings is not None:
                    warnings.append(f"tool server {name!r} could not list its tools, skipped: {exc}")
                continue
            for info in listed:
                info.server = info.server or name
                tools.append(info)
        return tools

    def server_for(self, tool: str) -> tuple[str, Server]:
        """The (name, server) that offers `tool`."""
        for name, server in self._servers.items():
            try:
                offers = any(t.name == tool for t in server.list_tools())
            except Exception:  # noqa: BLE001  (a server that cannot list offers nothing)
                offers = False
            if offers:
                return name, server
        raise UnknownToolError(f"unknown tool {tool!r}")

    async def dispatch(self, tool: str, args: dict[str, Any]) -> ToolResult:
        """Run `tool` on whichever server offers it."""
        return await self.server_for(tool)[1].call(tool, args)

    async def aclose(self) -> None:
        """Close every server that holds resources."""
        for _, server in self.servers():
            if isinstance(server, Closer):
                await server.aclose()
