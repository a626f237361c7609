"""Fill-in-the-middle (inline completions): each backend's own API, or a chat prompt where it has none."""

from __future__ import annotations

from ollie.testing import Reply


async def test_ollama_generate_with_suffix(connect):
    server, backend = connect("ollama")
    server.script(Reply.text("r * r"))
    assert await backend.fill_in_middle("return 3.14 * ", "\n", max_tokens=16) == "r * r"
    [request] = server.fim_requests
    assert request.body["prompt"] == "return 3.14 * " and request.body["suffix"] == "\n"
    assert request.body["stream"] is False and request.body["options"]["num_predict"] == 16


async def test_openai_completions_with_suffix(connect):
    server, backend = connect("openai")
    server.script(Reply.text("r * r"))
    assert await backend.fill_in_middle("a = ", "\nb = 2\n") == "r * r"
    [request] = server.fim_requests
    assert (request.body["prompt"], request.body["suffix"]) == ("a = ", "\nb = 2\n")


async def test_a_server_without_completions_gets_the_chat_prompt_from_then_on(connect):
    server, backend = connect("openai")
    server.script(Reply.error(404), Reply.text("```python\n1\n```"), Reply.text("2"))
    assert await backend.fill_in_middle("a = ", "\n") == "1"  # the fence a chat model adds is taken off
    assert await backend.fill_in_middle("b = ", "\n") == "2"
    assert len(server.fim_requests) == 1 and len(server.chat_requests) == 2
    assert server.chat_requests[-1].body["messages"][-1]["content"] == "b = <CURSOR>\n"


async def test_anthropic_has_no_fim_api_and_uses_the_chat_prompt(connect):
    server, backend = connect("anthropic")
    server.script(Reply.text("x + 1"))
    assert await backend.fill_in_middle("y = ", "\n") == "x + 1"
    [request] = server.chat_requests
    assert request.body["messages"][-1]["content"][0]["text"] == "y = <CURSOR>\n"
