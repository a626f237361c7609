"""Anthropic specifics: system placement, tool_result merging, caching, thinking, cache usage."""

from __future__ import annotations

import pytest

from ollie.agent.cost import compute_cost
from ollie.backend.types import GenerationParams, Message, ToolCall, Usage
from ollie.testing import Reply

from .conftest import READ_TOOL, collect

EPHEMERAL = {"type": "ephemeral"}

HISTORY = [
    Message("system", "You are a coding agent."),
    Message("user", "read a.txt and b.txt"),
    Message("assistant", "Reading both.", tool_calls=[
        ToolCall("toolu_1", "file_read", '{"path": "a.txt"}'),
        ToolCall("toolu_2", "file_read", '{"path": "b.txt"}'),
    ]),
    Message("tool", "A", tool_call_id="toolu_1", name="file_read"),
    Message("tool", "B", tool_call_id="toolu_2", name="file_read"),
]


async def test_request_shape(connect):
    srv, backend = connect("anthropic")
    srv.script(Reply.text("ok"))
    await collect(backend, HISTORY, [READ_TOOL], GenerationParams(max_tokens=1000, temperature=0.3, top_k=5,
                                                                   stop=["STOP"]))
    request = srv.chat_requests[0]
    body = request.body
    assert request.headers["x-api-key"] == "sk-ant-scripted-0000"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert body["system"] == [{"type": "text", "text": "You are a coding agent.", "cache_control": EPHEMERAL}]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "Reading both."},
        {"type": "tool_use", "id": "toolu_1", "name": "file_read", "input": {"path": "a.txt"}},
        {"type": "tool_use", "id": "toolu_2", "name": "file_read", "input": {"path": "b.txt"}},
    ]
    results = body["messages"][2]["content"]
    assert [(b["type"], b["tool_use_id"], b["content"]) for b in results] == [
        ("tool_result", "toolu_1", "A"), ("tool_result", "toolu_2", "B")]
    assert "cache_control" not in results[0] and results[-1]["cache_control"] == EPHEMERAL
    assert body["tools"] == [{"name": "file_read", "description": "Read a file",
                              "input_schema": READ_TOOL.parameters, "cache_control": EPHEMERAL}]
    assert (body["max_tokens"], body["temperature"], body["top_k"], body["stop_sequences"]) == (1000, 0.3, 5, ["STOP"])
    assert "thinking" not in body


async def test_extended_thinking_request_and_signature_round_trip(connect):
    srv, backend = connect("anthropic")
    srv.script(Reply(reasoning="Let me look.", tool_calls=[("file_read", {"path": "x"})]), Reply.text("done"))
    params = GenerationParams(reasoning=4000, max_tokens=2000, temperature=0.7)
    events = await collect(backend, [Message("user", "go")], [READ_TOOL], params)
    body = srv.chat_requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4000}
    assert body["max_tokens"] > 4000, "max_tokens must exceed the thinking budget"
    assert "temperature" not in body, "thinking rejects a custom temperature"
    done = events[-1]
    assert done.reasoning_signature.startswith("sig-")
    history = [
        Message("user", "go"),
        Message("assistant", "", tool_calls=done.tool_calls, reasoning="Let me look.",
                reasoning_signature=done.reasoning_signature),
        Message("tool", "x contents", tool_call_id=done.tool_calls[0].id, name="file_read"),
    ]
    await collect(backend, history, [READ_TOOL], params)
    assistant = srv.chat_requests[1].body["messages"][1]
    assert assistant["content"][0] == {"type": "thinking", "thinking": "Let me look.",
                                       "signature": done.reasoning_signature}
    assert assistant["content"][1]["type"] == "tool_use"


async def test_cache_usage_and_cost(connect):
    srv, backend = connect("anthropic")
    usage_in = Usage(input_tokens=100, output_tokens=50, cached_input_tokens=10_000, cache_creation_tokens=2_000)
    srv.script(Reply.text("ok", usage=usage_in))
    usage = (await collect(backend))[-1].usage
    assert (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens, usage.cache_creation_tokens) == (
        100, 50, 10_000, 2_000)
    # claude-sonnet-4: $3 in, $15 out per million; cache read 10%, cache write 125%.
    expected = (100 * 3 + 10_000 * 0.3 + 2_000 * 3.75 + 50 * 15) / 1_000_000
    assert compute_cost("claude-sonnet-4-5", usage) == pytest.approx(expected)


async def test_user_text_after_tool_results_joins_the_same_user_message(connect):
    srv, backend = connect("anthropic")
    srv.script(Reply.text("ok"))
    await collect(backend, HISTORY + [Message("user", "also check c.txt")], [READ_TOOL])
    last = srv.chat_requests[0].body["messages"][-1]
    assert last["role"] == "user"
    assert [b["type"] for b in last["content"]] == ["tool_result", "tool_result", "text"]
