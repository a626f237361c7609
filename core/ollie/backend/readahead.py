"""Read a reply stream ahead of its consumer, joining the text deltas that piled up meanwhile.

Under a flood (a fast local model, a buffered reply) each delta would cost an event, a publish and a queue put;
nothing waits for more to arrive: a delta is handed on as soon as the reading task pauses for the network.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator

from ollie.backend.surrogates import SplitPairs
from ollie.backend.types import StreamEvent


def _kind(event: StreamEvent) -> str:
    """"content" or "reasoning" for a plain text delta, "" for anything else (never joined)."""
    if event.tool_calls or event.done or event.usage is not None or event.stop_reason or event.reasoning_signature:
        return ""
    if event.content and not event.reasoning:
        return "content"
    if event.reasoning and not event.content:
        return "reasoning"
    return ""


def _take(buffer: deque[StreamEvent]) -> StreamEvent:
    """The next event of `buffer`, joined with the text deltas of its kind that follow it."""
    first = buffer.popleft()
    kind = _kind(first)
    if not kind or not buffer or _kind(buffer[0]) != kind:
        return first
    parts = [first.content or first.reasoning]
    while buffer and _kind(buffer[0]) == kind:
        nxt = buffer.popleft()
        parts.append(nxt.content or nxt.reasoning)
    text = "".join(parts)
    return StreamEvent(content=text) if kind == "content" else StreamEvent(reasoning=text)


async def read_ahead(events: AsyncGenerator[StreamEvent, None]) -> AsyncGenerator[StreamEvent, None]:
    """`events` in order, runs of text deltas that were waiting joined; its error is raised after what came before.

    A surrogate pair split between two deltas is joined first (each delta as it came: ollie.backend.surrogates).

    Closing (or cancelling) the consumer cancels the reading task and closes `events`: the HTTP stream ends at once.
    """
    buffer: deque[StreamEvent] = deque()
    ready = asyncio.Event()
    outcome: list[BaseException | None] = []  # set once the stream ended: None, or what it raised

    pairs = SplitPairs()

    async def pump() -> None:
        try:
            async for event in events:
                buffer.append(pairs.join(event))
                ready.set()
        except BaseException as exc:  # handed to the consumer, cancellation included
            outcome.append(exc)
        else:
            outcome.append(None)
        ready.set()

    task = asyncio.create_task(pump())
    try:
        while True:
            if buffer:
                yield _take(buffer)
                continue
            if outcome:
                if outcome[0] is not None:
                    raise outcome[0]
                return
            ready.clear()
            await ready.wait()
    finally:
        if not task.done():
            task.cancel()
            await asyncio.wait({task})  # unlike `await task`, never mistakes its cancellation for ours
        await events.aclose()
