"""Tool server interfaces: what the dispatcher routes to, and the optional capabilities."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ollie.backend.types import Image, Tool

ParallelClass = Literal["read", "write", "global"]
Tier = Literal["hot", "warm", "cold"]


@dataclass(eq=False, repr=False)
class ToolInfo(Tool):
    """A tool a server offers, as the model sees it; `server` names the server (the dispatcher's route)."""

    server: str = field(kw_only=True)


@dataclass(eq=False, repr=False)
class ToolResult:
    """A tool's outcome: text content plus an error flag, and the images it returned (checked: ollie.backend.images)."""

    text: str
    is_error: bool = False
    images: list[Image] = field(default_factory=list)


@runtime_checkable
class Server(Protocol):
    """A tool server. Cancelling `call` must stop its work (kill its process group)."""

    def list_tools(self) -> list[ToolInfo]:
        """The tools this server offers."""
        ...

    async def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        """Run one tool call."""
        ...


# Optional server capabilities: the core checks for each with isinstance and uses it when present.


@runtime_checkable
class ParallelClassifier(Protocol):
    """A server that says which calls may run side by side."""

    def classify_parallel(self, tool: str, args: dict[str, Any]) -> ParallelClass:
        """`read` (runs with other reads), `write` or `global` (runs alone)."""
        ...


@runtime_checkable
class TierClassifier(Protocol):
    """A server that says how long a call's result stays verbatim in the history."""

    def classify_tier(self, tool: str, args: dict[str, Any]) -> Tier:
        """`hot` (kept), `warm` (summarised at compaction) or `cold` (summarised once the model saw it)."""
        ...


@runtime_checkable
class KindClassifier(Protocol):
    """A server that says what kind of step a call of its tool is (ollie.agent.steps' kinds)."""

    def kind_of(self, tool: str) -> str | None:
        """The step kind of `tool` (None: not this server's, or unknown)."""
        ...


# Asked before an elevated step runs (what it runs outside the sandbox): None allows it, else why it is refused.
Approver = Callable[[str], Awaitable[str | None]]


@runtime_checkable
class Closer(Protocol):
    """A server that holds resources to release."""

    async def aclose(self) -> None:
        """Release them."""
        ...
