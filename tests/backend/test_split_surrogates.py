"""A character a server escapes as its UTF-16 halves, cut between two deltas, arrives whole (every wire format)."""

from __future__ import annotations

import json
from contextlib import aclosing

import pytest

from ollie.backend.anthropic import AnthropicBackend
from ollie.backend.ollama import OllamaBackend
from ollie.backend.openai import OpenAIBackend
from ollie.backend.types import StreamEvent

from .conftest import collect, joined
from .rawhttp import fixed_reply

# Each delta's JSON escapes its surrogates (json.dumps does): "\ud83d" ends a delta, "\ude00" starts the next.
REASONING = ["\ud83e", "\udd14!"]  # U+1F914 cut in two
CONTENT = ["a\ud83d", "\ude00b", "\udc00x", "y\ud83d", "z\ud83d"]  # a pair cut; a low half, two high halves alone
EXPECTED = "a\U0001f600b" + "\ufffdx" + "y" + "\ufffdz" + "\ufffd"  # the last: its stream ended
ARGUMENTS = ['{"s": "\ud83d', '\ude00"}']  # OpenAI sends a call's arguments in pieces too


def _sse(data: dict, event: str = "") -> bytes:
    return (f"event: {event}\n" if event else "").encode() + b"data: " + json.dumps(data).encode() + b"\n\n"


def _openai() -> bytes:
    deltas = [{"reasoning_content": r} for r in REASONING] + [{"content": c} for c in CONTENT]
    deltas += [{"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": a}}]} for a in ARGUMENTS]
    return b"".join(_sse({"choices": [{"delta": d}]}) for d in deltas) + _sse(
        {"choices": [{"delta": {}, "finish_reason": "stop"}]}) + b"data: [DONE]\n\n"


def _anthropic() -> bytes:
    def delta(index: int, kind: str, text: str) -> bytes:
        return _sse({"type": "content_block_delta", "index": index, "delta": {"type": f"{kind}_delta", kind: text}})

    return b"".join([
        _sse({"type": "message_start", "message": {"id": "m", "role": "assistant", "usage": {"input_tokens": 1}}}),
        _sse({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        *(delta(0, "thinking", r) for r in REASONING),
        _sse({"type": "content_block_stop", "index": 0}),
        _sse({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        *(delta(1, "text", c) for c in CONTENT),
        _sse({"type": "content_block_stop", "index": 1}),
        _sse({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}),
        _sse({"type": "message_stop"}),
    ])


def _ollama() -> bytes:
    messages = [{"thinking": r} for r in REASONING] + [{"content": c} for c in CONTENT]
    lines = [{"message": {"role": "assistant", **m}, "done": False} for m in messages]
    lines.append({"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"})
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


async def _reply(wire: str, body: bytes) -> list[StreamEvent]:
    """The events of a reply whose body a server of `wire`'s format sends."""
    async with fixed_reply(body, "application/x-ndjson" if wire == "ollama" else "text/event-stream") as (url, _):
        backend = {"openai": lambda: OpenAIBackend(model="m", api_key="k", base_url=url),
                   "anthropic": lambda: AnthropicBackend(model="m", api_key="k", base_url=url),
                   "ollama": lambda: OllamaBackend(model="m", base_url=url)}[wire]()
        async with aclosing(backend):
            return await collect(backend)


@pytest.mark.parametrize("wire", ["openai", "anthropic", "ollama"])
async def test_a_pair_cut_between_two_deltas_is_one_character_and_a_lone_half_is_the_replacement(wire):
    """Each frame decoded alone made each half U+FFFD: an emoji a server escaped and cut showed as two."""
    body = {"openai": _openai, "anthropic": _anthropic, "ollama": _ollama}[wire]()
    assert b"\\ud83d" in body and b"\\ude00" in body  # the halves as the server escapes them
    events = await _reply(wire, body)
    assert joined(events, "reasoning") == "\U0001f914!"
    assert joined(events, "content") == EXPECTED
    assert events[-1].done
    if wire == "openai":
        assert [c.arguments for c in events[-1].tool_calls] == ['{"s": "\U0001f600"}']


@pytest.mark.parametrize("wire", ["openai", "anthropic", "ollama"])
async def test_a_lone_half_in_arguments_sent_as_an_object_is_the_replacement(wire):
    """A half ending a string is kept where frames are decoded (it may pair with the next delta's): arguments that
    come as an object were written back as JSON escapes, and the tool got the lone surrogate."""
    args = {"s": "x\ud83d", "t": "\ude00y"}
    if wire == "openai":  # a server that sends the arguments as an object, not their JSON text
        body = _sse({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {
            "name": "f", "arguments": args}}]}, "finish_reason": "tool_calls"}]}) + b"data: [DONE]\n\n"
    elif wire == "anthropic":
        body = b"".join([
            _sse({"type": "message_start", "message": {"id": "m", "role": "assistant", "usage": {}}}),
            _sse({"type": "content_block_start", "index": 0,
                  "content_block": {"type": "tool_use", "id": "c1", "name": "f", "input": args}}),
            _sse({"type": "content_block_stop", "index": 0}),
            _sse({"type": "message_stop"}),
        ])
    else:
        body = json.dumps({"message": {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "f", "arguments": args}}]}, "done": True}).encode() + b"\n"
    events = await _reply(wire, body)
    [call] = events[-1].tool_calls
    assert call.arguments_object() == {"s": "x\ufffd", "t": "\ufffdy"}
