"""The floor of any agent on the official ACP SDK: initialize, new_session, and a prompt answered with one chunk.

Run by bench_acp as `python -m bench.acp_minimal` (stdio): it imports `acp` as
`ollie acp` does and nothing else, so `ollie acp`'s spawn -> first chunk over
this one's is what ollie itself costs.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import acp
from acp.schema import AgentCapabilities, InitializeResponse, NewSessionResponse, PromptResponse


class MinimalAgent:
    """Answers every prompt with the chunk `hello`."""

    def __init__(self) -> None:
        self._client: Any = None

    def on_connect(self, conn: Any) -> None:
        """The SDK hands over the connection to the client."""
        self._client = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        """Protocol version 1, nothing optional."""
        return InitializeResponse(protocol_version=acp.PROTOCOL_VERSION, agent_capabilities=AgentCapabilities())

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        """A session id."""
        return NewSessionResponse(session_id=uuid.uuid4().hex)

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        """One agent message chunk, then end_turn."""
        await self._client.session_update(session_id=session_id, update=acp.update_agent_message_text("hello"))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(MinimalAgent()))  # type: ignore[arg-type]
