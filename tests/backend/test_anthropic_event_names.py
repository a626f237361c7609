"""Anthropic streams whose event type is only in the SSE `event:` line still give the reply."""

from __future__ import annotations

import json

from ollie.backend.anthropic import AnthropicBackend
from ollie.backend.types import GenerationParams, Message

from .rawhttp import fixed_reply


def sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


# The real event sequence with each `type` field removed from the data.
BODY = b"".join([
    sse("message_start", {"message": {"id": "m", "role": "assistant", "usage": {"input_tokens": 12}}}),
    sse("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
    sse("ping", {}),
    sse("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "Hello "}}),
    sse("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "there"}}),
    sse("content_block_stop", {"index": 0}),
    sse("content_block_start", {"index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}}}),
    sse("content_block_delta", {"index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"a\": 1}"}}),
    sse("content_block_stop", {"index": 1}),
    sse("message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}}),
    sse("message_stop", {}),
])


async def test_event_names_alone_carry_the_reply():
    async with fixed_reply(BODY) as (url, _):
        backend = AnthropicBackend(model="claude-x", api_key="k", base_url=url)
        try:
            events = [e async for e in backend.stream([Message("user", "hi")], [], GenerationParams())]
        finally:
            await backend.aclose()
    assert "".join(e.content for e in events) == "Hello there"
    done = events[-1]
    assert done.done and done.stop_reason == "tool_use"
    assert [(c.id, c.name, c.arguments) for c in done.tool_calls] == [("t1", "f", "{\"a\": 1}")]
    assert (done.usage.input_tokens, done.usage.output_tokens) == (12, 5)
