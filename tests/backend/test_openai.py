"""OpenAI-compatible specifics: request shape, OpenRouter extras and cost, cached tokens, legacy calls."""

from __future__ import annotations

import asyncio
import json

import pytest

from ollie.agent.cost import compute_cost
from ollie.backend.registry import make_backend
from ollie.backend.types import GenerationParams, Message, ToolCall, Usage
from ollie.testing import Reply

from .conftest import READ_TOOL, collect, joined

HISTORY = [
    Message("system", "You are a coding agent."),
    Message("user", "read a.txt"),
    Message("assistant", "", tool_calls=[ToolCall("call_1", "file_read", '{"path": "a.txt"}')]),
    Message("tool", "file contents", tool_call_id="call_1", name="file_read"),
]

PARAMS = GenerationParams(max_tokens=512, max_completion_tokens=600, temperature=0.2, top_p=0.9, top_k=40,
                          min_p=0.05, top_a=0.1, repetition_penalty=1.1, reasoning_effort="low",
                          include_reasoning=True, response_format="json_object", stop=["END"])


async def test_request_body_and_headers(connect):
    srv, backend = connect("openai")
    srv.script(Reply.text("ok"))
    await collect(backend, HISTORY, [READ_TOOL], PARAMS)
    request = srv.chat_requests[0]
    body = request.body
    assert request.headers["authorization"] == "Bearer sk-scripted-0000"
    assert body["model"] == "scripted-model" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"][0] == {"role": "system", "content": "You are a coding agent."}
    assert body["messages"][2]["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "file_read", "arguments": '{"path": "a.txt"}'}}
    ]
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "file contents"}
    assert body["tools"] == [{"type": "function", "function": {
        "name": "file_read", "description": "Read a file", "parameters": READ_TOOL.parameters}}]
    assert (body["max_tokens"], body["max_completion_tokens"], body["temperature"], body["top_p"]) == (512, 600, 0.2, 0.9)
    assert body["reasoning_effort"] == "low" and body["stop"] == ["END"]
    assert body["response_format"] == {"type": "json_object"}
    for openrouter_only in ("top_k", "min_p", "top_a", "repetition_penalty", "include_reasoning", "usage"):
        assert openrouter_only not in body, f"{openrouter_only} must not go to a plain OpenAI endpoint"


async def test_openrouter_gets_its_extras_and_headers(connect):
    srv, backend = connect("openai", backend="openrouter")
    srv.script(Reply.text("ok"))
    await collect(backend, HISTORY, [READ_TOOL], GenerationParams(top_k=40, min_p=0.05, top_a=0.1,
                                                                   repetition_penalty=1.1, include_reasoning=True,
                                                                   reasoning=2000))
    request = srv.chat_requests[0]
    body = request.body
    assert (body["top_k"], body["min_p"], body["top_a"], body["repetition_penalty"]) == (40, 0.05, 0.1, 1.1)
    assert body["include_reasoning"] is True
    assert body["reasoning"] == {"max_tokens": 2000}
    assert body["usage"] == {"include": True}
    assert request.headers["x-title"] == "ollie"
    assert backend.name == "openrouter"


async def test_openrouter_reported_cost_wins(connect):
    srv, backend = connect("openai", backend="openrouter")
    srv.script(Reply.text("ok", usage=Usage(input_tokens=1000, output_tokens=10), cost=0.00123))
    usage = (await collect(backend))[-1].usage
    assert usage.cost == pytest.approx(0.00123)
    assert compute_cost("anthropic/claude-sonnet-4.5", usage) == pytest.approx(0.00123)


async def test_cached_tokens_are_split_out_of_prompt_tokens(connect):
    srv, backend = connect("openai")
    srv.script(Reply.text("ok", usage=Usage(input_tokens=300, cached_input_tokens=700, output_tokens=5)))
    usage = (await collect(backend))[-1].usage
    # The wire carried prompt_tokens=1000 with cached_tokens=700 inside it.
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens) == (300, 700, 5)


async def test_legacy_function_call_is_assembled(connect):
    srv, backend = connect("openai")
    srv.script(Reply.tool_calls(("file_read", {"path": "legacy.txt"}), legacy_function_call=True, chunk_size=3))
    events = await collect(backend, tools=[READ_TOOL])
    (call,) = events[-1].tool_calls
    assert call.name == "file_read" and json.loads(call.arguments) == {"path": "legacy.txt"}
    assert events[-1].stop_reason == "function_call"


async def test_reasoning_content_field_is_read_too(connect):
    srv, backend = connect("openai", reasoning_field="reasoning_content")
    srv.script(Reply(text="done", reasoning="deepseek style thoughts"))
    events = await collect(backend)
    assert joined(events, "reasoning") == "deepseek style thoughts"


async def test_context_length_falls_back_when_model_is_not_listed(connect):
    srv, backend = connect("openai", models={"someone-else": 4096})
    assert await backend.context_length() == 128_000


async def test_callers_asking_the_models_at_once_share_one_request(connect):
    srv, backend = connect("openai", models={"scripted-model": 4096, "other": 8192})
    other, later = make_backend(environ=srv.env()), make_backend(environ=srv.env())  # sessions on the same endpoint
    srv.models_gate.clear()  # all ask before the list comes
    try:
        names = asyncio.gather(backend.list_models(), backend.context_length(), other.list_models())
        for _ in range(500):
            if any(r.path == "/v1/models" for r in list(srv.requests)):
                break
            await asyncio.sleep(0.01)
        srv.models_gate.set()
        listed = ["scripted-model", "other"]
        assert await names == [listed, 4096, listed]
        assert await backend.list_models() == listed
        assert [r.path for r in srv.requests if r.method == "GET"] == ["/v1/models"]
        assert await later.list_models() == listed  # once answered, nothing is kept across sessions: asked again
        assert [r.path for r in srv.requests if r.method == "GET"] == ["/v1/models"] * 2
    finally:
        srv.models_gate.set()
        await other.aclose()
        await later.aclose()


async def test_claude_through_openrouter_marks_the_system_prompt_and_last_tool_for_caching(connect):
    srv, backend = connect("openai", backend="openrouter")
    backend.set_model("anthropic/claude-sonnet-4.5")
    other_tool = type(READ_TOOL)("file_write", "Write a file", READ_TOOL.parameters)
    srv.script(Reply.text("ok"), Reply.text("ok"))
    await collect(backend, HISTORY, [READ_TOOL, other_tool])
    body = srv.chat_requests[0].body
    system = body["messages"][0]
    assert system["role"] == "system"
    assert system["content"] == [{"type": "text", "text": "You are a coding agent.",
                                  "cache_control": {"type": "ephemeral"}}]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    backend.set_model("openai/gpt-4.1")  # other models through OpenRouter: plain strings, no markers
    await collect(backend, HISTORY, [READ_TOOL])
    body = srv.chat_requests[1].body
    assert body["messages"][0]["content"] == "You are a coding agent."
    assert "cache_control" not in json.dumps(body)
