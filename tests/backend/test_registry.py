"""make_backend: selection from OLLIE_* variables, defaults, the errors that say what to set, and the name an
OpenAI-compatible backend is shown by."""

from __future__ import annotations

import pytest

from ollie.backend.anthropic import AnthropicBackend
from ollie.backend.base import Backend
from ollie.backend.errors import BackendConfigError
from ollie.backend.ollama import OllamaBackend
from ollie.backend.openai import OpenAIBackend
from ollie.backend.registry import SPECS, backend_class, make_backend
from ollie.backend.settings import provider_name, said_name


async def test_default_is_ollama_on_localhost():
    backend = make_backend(environ={})
    try:
        assert isinstance(backend, OllamaBackend) and isinstance(backend, Backend)
        assert backend.base_url == "http://localhost:11434"
        assert backend.model == SPECS["ollama"].default_model
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
        assert backend.base_url == url and backend.model == SPECS[name].default_model
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


VENDOR_KEYS = [
    ("openai", "OPENAI_API_KEY", "Authorization", "Bearer sk-vendor"),
    ("openrouter", "OPENROUTER_API_KEY", "Authorization", "Bearer sk-vendor"),
    ("anthropic", "ANTHROPIC_API_KEY", "x-api-key", "sk-vendor"),
]


@pytest.mark.parametrize(("name", "variable", "header", "sent"), VENDOR_KEYS)
async def test_the_vendors_own_key_variable_serves_the_vendors_api(name, variable, header, sent):
    backend = make_backend(name, environ={variable: "sk-vendor"})
    try:
        assert backend.base_url == SPECS[name].default_url
        assert backend._client.headers[header] == sent
    finally:
        await backend.aclose()
    # ollie's own variable, set too, wins.
    own = SPECS[name].key_var
    backend = make_backend(name, environ={variable: "sk-vendor", own: "sk-own"})
    try:
        assert backend._client.headers[header] == sent.replace("sk-vendor", "sk-own")
    finally:
        await backend.aclose()


@pytest.mark.parametrize(("name", "variable", "header", "sent"), VENDOR_KEYS)
def test_the_vendors_key_never_goes_to_another_url(name, variable, header, sent):
    url_var = SPECS[name].url_var
    with pytest.raises(BackendConfigError) as caught:
        make_backend(name, environ={variable: "sk-vendor", url_var: "https://bob:s3cret@llm.example.test/v1"})
    message = str(caught.value)
    assert SPECS[name].key_var in message and "sk-vendor" not in message and "s3cret" not in message
    assert f"{variable} is set, but ollie sends it only to {SPECS[name].default_url}" in message


# The vendor's URL spelled to pass a loose check: another host, port, scheme, user, path, case or trailing dot.
LOOKALIKES = ["https://api.openai.com.evil.test/v1", "https://api.openai.com:444/v1", "http://api.openai.com/v1",
              "https://evil.test@api.openai.com/v1", "https://api.openai.com@evil.test/v1", "https://API.openai.com/v1",
              "https://api.openai.com./v1", "https://api.openai.com/v1/../../evil", "https://api.openai.com/v1?x=/",
              "https://api.openai.com/v1#", "https://xn--pi-openai-7ya.com/v1", "https://api.openai.com/v2"]


@pytest.mark.parametrize("url", LOOKALIKES)
def test_the_vendors_key_goes_to_its_url_exactly_and_no_lookalike(url):
    # Nothing but the URL as ollie knows it gets OPENAI_API_KEY: a look-alike is a server the user named themselves
    # (OLLIE_OPENAI_KEY then), never one the key may follow by a similar spelling.
    with pytest.raises(BackendConfigError, match="OPENAI_API_KEY is set, but ollie sends it only to"):
        make_backend("openai", environ={"OPENAI_API_KEY": "sk-vendor", "OLLIE_OPENAI_URL": url})


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


@pytest.mark.parametrize(("url", "provider"), [
    ("https://api.openai.com/v1", "openai"),
    ("https://api.groq.com/openai/v1", "groq"),
    ("https://api.together.xyz/v1", "together"),
    ("https://openrouter.ai/api/v1", "openrouter"),
    ("https://api.deepseek.com/v1", "deepseek"),
    ("https://generativelanguage.googleapis.com/v1beta/openai", "google"),
    ("https://api.x.ai/v1", "xai"),
    ("https://llm.example.co.uk/v1", "example"),
    ("http://localhost:8080/v1", "local"),
    ("http://127.0.0.1:11434/v1", "local"),
    ("http://[::1]:8000/v1", "local"),
    ("http://192.168.1.20:8000/v1", "local"),
    ("http://gpu-box:8000/v1", "local"),
    ("http://llama.lan:8000/v1", "local"),
    ("http://8.8.8.8/v1", "openai"),  # a public address names no provider: the spec's name
])
async def test_an_openai_compatible_backend_is_named_after_its_provider(url, provider):
    assert provider_name(SPECS["openai"], url) == provider
    backend = make_backend(environ={"OLLIE_BACKEND": "openai", "OLLIE_OPENAI_KEY": "k", "OLLIE_OPENAI_URL": url})
    try:
        assert backend.name == provider and backend.spec is SPECS["openai"]
    finally:
        await backend.aclose()


@pytest.mark.parametrize(("url", "said"), [
    ("http://user:pw@localhost:8080/v1", "localhost:8080"),  # errors name what the user wrote, never a password
    ("http://8.8.8.8/v1", "8.8.8.8"),
    ("https://api.openai.com/v1", "openai"),
    ("https://api.groq.com/openai/v1", "groq"),
])
def test_errors_name_a_server_as_its_url_does_unless_a_provider_is_known(url, said):
    assert said_name(SPECS["openai"], url, provider_name(SPECS["openai"], url)) == said


async def test_a_chosen_backend_keeps_its_name_wherever_it_points():
    env = {"OLLIE_OPENAI_KEY": "k", "OLLIE_OPENAI_URL": "http://127.0.0.1:1/v1", "OLLIE_OLLAMA_URL": "http://10.0.0.2"}
    for name in ("openrouter", "ollama"):
        backend = make_backend(name, environ=env)
        try:
            assert backend.name == backend.said == name
        finally:
            await backend.aclose()


def test_every_spec_is_complete_and_names_its_own_variables():
    for name, spec in SPECS.items():
        assert spec.name == name and spec.default_model and spec.default_url.startswith(("http://", "https://"))
        assert spec.url_var.startswith("OLLIE_") and spec.url_var.endswith("_URL")
        assert spec.key_var == "" or (spec.key_var.startswith("OLLIE_") and spec.key_var.endswith("_KEY"))
        assert backend_class(spec).__name__.lower().startswith(spec.wire)
