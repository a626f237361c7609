"""Backend tests: a scripted server of each format plus the backend pointed at it through make_backend."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from ollie.backend.registry import make_backend
from ollie.backend.types import GenerationParams, Message, StreamEvent, Tool

FORMATS = ("openai", "anthropic", "ollama")

READ_TOOL = Tool("file_read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})


async def collect(backend: Any, messages: list[Message] | None = None, tools: list[Tool] | None = None,
                  params: GenerationParams | None = None) -> list[StreamEvent]:
    """Every event of one streamed reply."""
    messages = messages or [Message("system", "You are terse."), Message("user", "hi")]
    return [e async for e in backend.stream(messages, tools or [], params or GenerationParams())]


async def cancel_mid_reply(backend: Any, timeout: float = 30) -> None:
    """Stream a reply, and cancel its consumer once its first text arrived (the cancel must reach it)."""
    streaming = asyncio.Event()

    async def consume() -> None:
        async for event in backend.stream([Message("user", "hi")], [], GenerationParams()):
            if event.content:
                streaming.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(streaming.wait(), timeout)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def joined(events: list[StreamEvent], field: str) -> str:
    """Concatenate the `content` or `reasoning` deltas."""
    return "".join(getattr(e, field) for e in events)


@pytest.fixture
async def connect(scripted_llm) -> AsyncIterator[Callable[..., tuple[Any, Any]]]:
    """`connect(fmt, backend=None, **server_options)` -> (server, backend built by make_backend from server.env())."""
    backends = []

    def factory(fmt: str, *, backend: str | None = None, check: bool = True, **options: Any) -> tuple[Any, Any]:
        server = scripted_llm(fmt, check=check, **options)
        made = make_backend(environ=server.env(backend=backend))
        backends.append(made)
        return server, made

    yield factory
    for made in backends:
        await made.aclose()
