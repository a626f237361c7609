"""Tool server interfaces: what the dispatcher routes to, and the optional capabilities."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

ParallelClass = Literal["read", "write", "global"]
Tier = Literal["hot", "warm", "cold"]


@dataclass
class ToolInfo:
    """A tool a server offers: `name` as the model sees it, JSON Schema `parameters`."""

    server: str
    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass
class ToolResult:
    """A tool's outcome, MCP-style: text content plus an error flag."""

    text: str
    is_error: bool = False

    def to_mcp(self) -> dict[str, Any]:
        """The MCP wire shape `{"content": [{"type": "text", "text": ...}], "isError": bool}`."""
        return {"content": [{"type": "text", "text": self.text}], "isError": self.is_error}

    def to_json(self) -> str:
        """The MCP shape as JSON text."""
        return json.dumps(self.to_mcp(), ensure_ascii=False)


@runtime_checkable
class Server(Protocol):
    """A tool server. Cancelling `call` must stop its work (kill its process group)."""

    def list_tools(self) -> list[ToolInfo]:
        """The tools this server offers."""
        ...

    async def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        """Run one tool call."""
        ...


@runtime_checkable
class CWDSetter(Protocol):
    def set_cwd(self, cwd: Path) -> None: ...


@runtime_checkable
class EnvSetter(Protocol):
    def set_env(self, key: str, value: str) -> None: ...


@runtime_checkable
class LockDirSetter(Protocol):
    def set_lock_dir(self, path: Path) -> None: ...


@runtime_checkable
class ToolRestrictionSetter(Protocol):
    def set_restrictions(self, executors: list[str] | None, tools: list[str] | None) -> None: ...


@runtime_checkable
class ParallelClassifier(Protocol):
    def classify_parallel(self, tool: str, args: dict[str, Any]) -> ParallelClass: ...


@runtime_checkable
class TierClassifier(Protocol):
    def classify_tier(self, tool: str, args: dict[str, Any]) -> Tier: ...


@runtime_checkable
class Closer(Protocol):
    async def aclose(self) -> None: ...
