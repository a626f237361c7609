"""make_backend: selection from OLLIE_* variables, defaults, and the errors that say what to set."""

from __future__ import annotations

import pytest

from ollie.backend.anthropic import AnthropicBackend
from ollie.backend.base import Backend
from ollie.backend.errors import BackendConfigError
from ollie.backend.ollama import OllamaBackend
from ollie.backend.openai import OpenAIBackend
from ollie.backend.registry import DEFAULT_MODELS, make_backend


async def test_default_is_ollama_on_localhost():
    backend = make_backend(environ={})
    try:
        assert isinstance(backend, OllamaBackend) and isinstance(backend, Backend)
        assert backend.base_url == "http://localhost:11434"
        assert backend.model == DEFAULT_MODELS["ollama"]
    finally:
        await backend.aclose()


@pytest.mark.parametrize(("name", "cls", "url"), [
    ("openai", OpenAIBackend, "https://api.openai.com/v1"),
    ("openrouter", OpenAIBackend, "https://openrouter.ai/api/v1"),
    ("anthropic", AnthropicBackend, "https://api.anthropic.com"),
])
async def test_each_backend_with_its_key(name, cls, url):
    env = {"OLLIE_BACKEND": name, "OLLIE_OPENAI_KEY": "k1", "OLLIE_ANTHROPIC_KEY": "k2"}
    backend = make_backend(environ=env)
    try:
        assert type(backend) is cls and backend.name == name
        assert backend.base_url == url and backend.model == DEFAULT_MODELS[name]
    finally:
        await backend.aclose()


async def test_urls_model_and_arguments_override():
    env = {"OLLIE_BACKEND": "openai", "OLLIE_OPENAI_KEY": "k", "OLLIE_OPENAI_URL": "http://127.0.0.1:1/v1",
           "OLLIE_MODEL": "gpt-4o-mini", "OLLIE_OLLAMA_URL": "http://127.0.0.1:2"}
    backend = make_backend(environ=env)
    assert (backend.base_url, backend.model) == ("http://127.0.0.1:1/v1", "gpt-4o-mini")
    await backend.aclose()
    backend = make_backend("ollama", "llama3.2", environ=env)
    assert (backend.name, backend.base_url, backend.model) == ("ollama", "http://127.0.0.1:2", "llama3.2")
    await backend.aclose()


@pytest.mark.parametrize(("name", "variable"), [
    ("openai", "OLLIE_OPENAI_KEY"), ("openrouter", "OLLIE_OPENAI_KEY"), ("anthropic", "OLLIE_ANTHROPIC_KEY"),
])
def test_missing_key_names_the_variable(name, variable):
    with pytest.raises(BackendConfigError, match=variable):
        make_backend(name, environ={})


def test_unknown_backend_lists_the_valid_ones():
    with pytest.raises(BackendConfigError) as caught:
        make_backend(environ={"OLLIE_BACKEND": "gemini"})
    message = str(caught.value)
    assert "gemini" in message and "OLLIE_BACKEND" in message
    for valid in ("ollama", "openai", "openrouter", "anthropic"):
        assert valid in message


async def test_env_file_is_used_but_never_overrides_the_environment(monkeypatch, _private_dirs):
    env_file = _private_dirs / "config" / "ollie" / "env"
    env_file.parent.mkdir(parents=True)
    env_file.write_text("OLLIE_BACKEND=anthropic\nOLLIE_ANTHROPIC_KEY=from-file\nOLLIE_MODEL=claude-from-file\n")
    monkeypatch.setenv("OLLIE_MODEL", "claude-from-env")
    backend = make_backend()
    try:
        assert isinstance(backend, AnthropicBackend)
        assert backend.model == "claude-from-env"
    finally:
        await backend.aclose()
