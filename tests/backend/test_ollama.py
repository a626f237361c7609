"""Ollama specifics: NDJSON request shape, options mapping, thinking, no key."""

from __future__ import annotations

from ollie.backend.types import GenerationParams, Message, ToolCall
from ollie.testing import Reply

from .conftest import READ_TOOL, collect

HISTORY = [
    Message("system", "You are a coding agent."),
    Message("user", "read a.txt"),
    Message("assistant", "", tool_calls=[ToolCall("call_0", "file_read", '{"path": "a.txt"}')]),
    Message("tool", "file contents", tool_call_id="call_0", name="file_read"),
]


async def test_request_shape_and_options(connect):
    srv, backend = connect("ollama")
    srv.script(Reply.text("ok"))
    params = GenerationParams(max_tokens=256, temperature=0.1, top_p=0.8, top_k=20, min_p=0.02,
                              repetition_penalty=1.2, stop=["\n\n"], reasoning_effort="medium",
                              response_format="json_object")
    await collect(backend, HISTORY, [READ_TOOL], params)
    request = srv.chat_requests[0]
    body = request.body
    assert "authorization" not in request.headers
    assert body["stream"] is True and body["model"] == "scripted-model"
    assert body["messages"][0] == {"role": "system", "content": "You are a coding agent."}
    assert body["messages"][2]["tool_calls"] == [{"function": {"name": "file_read", "arguments": {"path": "a.txt"}}}]
    assert body["messages"][3] == {"role": "tool", "content": "file contents", "tool_name": "file_read"}
    assert body["tools"][0]["function"]["name"] == "file_read"
    assert body["options"] == {"num_predict": 256, "temperature": 0.1, "top_p": 0.8, "top_k": 20, "min_p": 0.02,
                               "repeat_penalty": 1.2, "stop": ["\n\n"]}
    assert body["think"] == "medium"
    assert body["format"] == "json"


async def test_no_params_means_no_options(connect):
    srv, backend = connect("ollama")
    srv.script(Reply.text("ok"))
    await collect(backend)
    body = srv.chat_requests[0].body
    assert "options" not in body and "think" not in body and "format" not in body


async def test_context_length_comes_from_api_show(connect):
    srv, backend = connect("ollama", models={"scripted-model": 131_072})
    assert await backend.context_length() == 131_072
    show = [r for r in srv.requests if r.path == "/api/show"]
    assert len(show) == 1 and show[0].body == {"model": "scripted-model"}
    backend.set_model("scripted-model")
    await backend.context_length()
    assert len([r for r in srv.requests if r.path == "/api/show"]) == 1


async def test_api_show_is_asked_once_per_model_for_both_vision_and_the_window(connect):
    srv, backend = connect("ollama", models={"scripted-model": 131_072, "other": 8192})
    assert await backend.takes_images() is True
    assert await backend.context_length() == 131_072
    assert await backend.takes_images() is True
    assert len([r for r in srv.requests if r.path == "/api/show"]) == 1
    backend.set_model("other")
    assert await backend.context_length() == 8192
    assert await backend.takes_images() is True
    show = [r.body for r in srv.requests if r.path == "/api/show"]
    assert show == [{"model": "scripted-model"}, {"model": "other"}]


async def test_a_model_the_server_does_not_have_is_asked_again(connect):
    srv, backend = connect("ollama", models={"scripted-model": 4096}, check=False)
    backend.set_model("not-pulled")
    assert await backend.takes_images() is None  # a 404: the server does not say
    assert await backend.takes_images() is None
    assert len([r for r in srv.requests if r.path == "/api/show"]) == 2  # not kept: it may be pulled meanwhile
