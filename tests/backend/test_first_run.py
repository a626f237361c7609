"""First run: unreachable backends fail at once with what to do, bad URLs are refused, health says why."""

from __future__ import annotations

import re
import socket
from contextlib import aclosing

import pytest

from ollie.backend.errors import BackendConfigError, BackendUnreachableError, TransientError
from ollie.backend.health import check_backend, model_listed
from ollie.backend.registry import make_backend
from ollie.backend.types import GenerationParams, Message
from ollie.env import env_file


def closed_url() -> str:
    """An http URL on 127.0.0.1 where nothing listens (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


async def first_event(backend):
    async for event in backend.stream([Message("user", "hi")], [], GenerationParams()):
        return event
    return None


@pytest.mark.parametrize("variable,value", [
    ("OLLIE_OLLAMA_URL", "localhost:11434"),
    ("OLLIE_OLLAMA_URL", "127.0.0.1:11434"),
    ("OLLIE_OLLAMA_URL", "ftp://localhost:11434"),
    ("OLLIE_OPENAI_URL", "api.openai.com/v1"),
])
def test_a_url_without_an_http_scheme_is_refused_naming_the_variable(variable, value):
    backend = "ollama" if "OLLAMA" in variable else "openai"
    env = {"OLLIE_BACKEND": backend, variable: value, "OLLIE_OPENAI_KEY": "k"}
    with pytest.raises(BackendConfigError) as caught:
        make_backend(environ=env)
    assert variable in str(caught.value) and value in str(caught.value)
    assert "http://" in str(caught.value)


async def test_connection_refused_is_an_unreachable_error_with_the_ollama_hint():
    async with aclosing(make_backend(environ={"OLLIE_BACKEND": "ollama", "OLLIE_OLLAMA_URL": closed_url(),
                                              "OLLIE_MODEL": "llama3.2"})) as backend:
        with pytest.raises(BackendUnreachableError) as caught:
            await first_event(backend)
    assert not isinstance(caught.value, TransientError)
    message = str(caught.value)
    assert "ollama serve" in message and "ollama pull llama3.2" in message
    assert "OLLIE_BACKEND=openai" in message and "OLLIE_OPENAI_KEY" in message


async def test_an_unknown_host_is_an_unreachable_error_naming_the_url_variable():
    async with aclosing(make_backend(environ={"OLLIE_BACKEND": "openai", "OLLIE_OPENAI_KEY": "k",
                                              "OLLIE_OPENAI_URL": "http://ollie-test.invalid/v1"})) as backend:
        with pytest.raises(BackendUnreachableError) as caught:
            await first_event(backend)
        with pytest.raises(BackendUnreachableError):
            await backend.list_models()
    assert "OLLIE_OPENAI_URL" in caught.value.hint


async def test_an_unreachable_backend_leaves_the_context_length_unknown_not_defaulted():
    async with aclosing(make_backend(environ={"OLLIE_BACKEND": "ollama", "OLLIE_OLLAMA_URL": closed_url()})) as backend:
        with pytest.raises(BackendUnreachableError):
            await backend.context_length()


async def test_health_of_a_usable_backend(scripted_llm):
    srv = scripted_llm("ollama", model="qwen3:latest")
    async with aclosing(make_backend(environ={**srv.env(), "OLLIE_MODEL": "qwen3"})) as backend:
        health = (await check_backend(backend)).to_wire()
    assert health == {"ok": True, "backend": "ollama", "model": "qwen3", "url": srv.url, "reachable": True,
                      "modelPresent": True, "keySet": None, "error": "", "hint": "", "settingsFile": str(env_file())}


async def test_health_says_the_model_is_missing_and_how_to_pull_it(scripted_llm):
    srv = scripted_llm("ollama", model="llama3.2")
    async with aclosing(make_backend(environ={**srv.env(), "OLLIE_MODEL": "qwen3"})) as backend:
        health = (await check_backend(backend)).to_wire()
    assert (health["ok"], health["reachable"], health["modelPresent"]) == (False, True, False)
    assert "ollama pull qwen3" in health["hint"]
    # The models there, named: a new user's OLLIE_MODEL left unset asked for gpt-4.1 of a server that had one other.
    assert health["hint"].endswith("; the server has: llama3.2"), health


async def test_health_of_a_missing_model_names_the_first_ones_the_server_has(scripted_llm):
    srv = scripted_llm("openai", model="m0", text_models=[f"m{n}" for n in range(1, 12)])
    async with aclosing(make_backend(environ={**srv.env(), "OLLIE_MODEL": "gpt-4.1"})) as backend:
        health = (await check_backend(backend)).to_wire()
    assert "(`/models` lists them)" in health["hint"], "/model shows the current one alone"
    listed = health["hint"].split("; the server has: ")[1]
    assert re.fullmatch(r"(m\d+, ){7}m\d+ and 4 more", listed), health  # in the server's order


async def test_health_of_an_unreachable_backend_is_quick_and_says_what_to_do():
    url = closed_url()
    async with aclosing(make_backend(environ={"OLLIE_BACKEND": "ollama", "OLLIE_OLLAMA_URL": url})) as backend:
        health = (await check_backend(backend)).to_wire()
    # "cannot connect" (refused at once), not the check's 3 s timeout.
    assert (health["ok"], health["reachable"], health["url"]) == (False, False, url)
    assert "ollama serve" in health["hint"] and "cannot connect" in health["error"]


async def test_health_names_the_url_without_its_credentials():
    url = closed_url()
    environ = {"OLLIE_BACKEND": "openai", "OLLIE_OPENAI_KEY": "k",
               "OLLIE_OPENAI_URL": url.replace("http://", "http://user:secret@") + "/v1?api_key=secret"}
    async with aclosing(make_backend(environ=environ)) as backend:
        health = (await check_backend(backend)).to_wire()
    # Shown as the MCP client shows a server's URL (one function): the query marked, never its key.
    assert (health["backend"], health["url"]) == ("local", f"{url}/v1?...")
    assert f"now {url}/v1?...)" in health["hint"] and "secret" not in str(health), health


async def test_an_endpoint_without_a_model_list_gets_128k(scripted_llm):
    srv = scripted_llm("ollama", check=False)  # speaks no OpenAI: GET /models is a 404
    environ = {"OLLIE_BACKEND": "openai", "OLLIE_OPENAI_KEY": "k", "OLLIE_OPENAI_URL": srv.url}
    async with aclosing(make_backend(environ=environ)) as backend:
        assert await backend.context_length() == 128_000


async def test_an_openai_url_without_its_v1_is_said_with_the_url_that_answers(scripted_llm):
    """OLLIE_OPENAI_URL written without its /v1: `ollie doctor` said the backend answers (a 404 on /models passed for
    a server without a model list) while every turn failed on a 404; now both say the URL to set."""
    srv = scripted_llm("openai", check=False)  # GET /models at the bare URL is a 404 it counts as unexpected
    environ = {"OLLIE_BACKEND": "openai", "OLLIE_OPENAI_KEY": "none", "OLLIE_OPENAI_URL": srv.url.removesuffix("/v1")}
    async with aclosing(make_backend(environ=environ)) as backend:
        health = (await check_backend(backend)).to_wire()
        for asked in (backend.context_length(), first_event(backend)):  # the first turn's request too
            with pytest.raises(BackendUnreachableError, match=f"set OLLIE_OPENAI_URL={srv.url}"):
                await asked
    assert not health["ok"] and health["hint"].startswith(f"set OLLIE_OPENAI_URL={srv.url} "), health


async def test_a_model_the_server_does_not_know_gets_128k(scripted_llm):
    srv = scripted_llm("ollama", model="llama3.2")
    async with aclosing(make_backend(environ={**srv.env(), "OLLIE_MODEL": "unknown-model"})) as backend:
        assert await backend.context_length() == 128_000
        backend.set_model("llama3.2")
        assert await backend.context_length() == 32_768


def test_model_listed_matches_ollama_latest_tags():
    assert model_listed("qwen3", ["qwen3:latest"])
    assert not model_listed("qwen3:8b", ["qwen3:latest"])
    assert model_listed("gpt-4.1", ["gpt-4.1"])


async def test_a_model_that_is_not_pulled_says_how_to_pull_it(scripted_llm):
    from ollie.backend.errors import BackendError
    from ollie.testing import Reply

    srv = scripted_llm("ollama", model="llama3.2")
    srv.script(Reply.error(404, body={"error": "model 'qwen3' not found"}))
    async with aclosing(make_backend(environ={**srv.env(), "OLLIE_MODEL": "qwen3"})) as backend:
        with pytest.raises(BackendError) as caught:
            await first_event(backend)
    assert caught.value.status == 404
    assert "model 'qwen3' not found" in str(caught.value) and "ollama pull qwen3" in str(caught.value)
