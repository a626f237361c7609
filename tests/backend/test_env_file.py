"""The env file: comments after values, quotes that keep `#`, and the file never overriding the environment."""

from __future__ import annotations

import pytest

from ollie.backend.errors import BackendConfigError
from ollie.backend.registry import env_file_note, make_backend
from ollie.env import parse_env_file

TEXT = """
# a whole-line comment
OLLIE_BACKEND=openai   # the hosted one
OLLIE_OPENAI_KEY="sk-abc#def"   # quoted: the # is part of the key
OLLIE_MODEL='gpt-4.1#mini'
export OLLIE_OPENAI_URL=http://127.0.0.1:9/v1#frag
EMPTY=  # nothing
TABBED=x\t# tab before the comment
"""


def test_a_comment_after_a_value_is_not_part_of_it():
    values = parse_env_file(TEXT)
    assert values["OLLIE_BACKEND"] == "openai"
    assert values["OLLIE_OPENAI_KEY"] == "sk-abc#def"
    assert values["OLLIE_MODEL"] == "gpt-4.1#mini"
    assert values["OLLIE_OPENAI_URL"] == "http://127.0.0.1:9/v1#frag"  # no space before '#': a value
    assert values["EMPTY"] == ""
    assert values["TABBED"] == "x"


def test_a_misspelt_name_is_named_but_another_providers_key_or_setting_is_not(tmp_path, monkeypatch):
    # XAI_API_KEY, right for the other tools that read it, was called a typo of OPENAI_API_KEY.
    others = ["XAI_API_KEY=xai-1", "AZURE_OPENAI_API_KEY=az-2", "OPENAI_API_BASE=https://example.org/v1"]
    (tmp_path / "env").write_text("\n".join([*others, "OPENIA_API_KEY=sk-3", "OLLIE_BAKEND=openai"]) + "\n")
    monkeypatch.setenv("OLLIE_CONFIG_DIR", str(tmp_path))
    assert env_file_note() == (f" (line 4 of {tmp_path / 'env'}: OPENIA_API_KEY is not a setting, did you mean "
                               "OPENAI_API_KEY?; line 5: OLLIE_BAKEND is not a setting, did you mean OLLIE_BACKEND?)")


def test_the_backend_built_from_the_file_gets_clean_values(tmp_path, monkeypatch):
    (tmp_path / "env").write_text(TEXT)
    monkeypatch.setenv("OLLIE_CONFIG_DIR", str(tmp_path))
    monkeypatch.setenv("OLLIE_MODEL", "from-environment")
    backend = make_backend()  # the process environment over the env file, which never overrides it
    assert (backend.spec.name, backend.name, backend.model) == ("openai", "local", "from-environment")
    assert backend._client.headers["Authorization"] == "Bearer sk-abc#def"


def test_a_file_saved_with_a_byte_order_mark_and_crlf_reads_its_first_line(tmp_path, monkeypatch):
    # Saved by a Windows editor: its first line was "not KEY=VALUE: not read", the mark before OLLIE_BACKEND unseen.
    (tmp_path / "env").write_bytes(b"\xef\xbb\xbfOLLIE_BACKEND=openai\r\nOLLIE_OPENAI_KEY=none\r\n")
    monkeypatch.setenv("OLLIE_CONFIG_DIR", str(tmp_path))
    monkeypatch.delenv("OLLIE_BACKEND", raising=False)
    assert make_backend().spec.name == "openai" and env_file_note() == ""


def test_a_bad_value_from_the_file_names_the_file(tmp_path, monkeypatch):
    # Bug: "unknown backend 'opnai': set OLLIE_BACKEND to ...": the user, whose environment sets no OLLIE_BACKEND,
    # was not told the value came from ~/.config/ollie/env.
    env_file = tmp_path / "env"
    env_file.write_text("OLLIE_BACKEND=opnai\n")
    monkeypatch.setenv("OLLIE_CONFIG_DIR", str(tmp_path))
    monkeypatch.delenv("OLLIE_BACKEND", raising=False)
    with pytest.raises(BackendConfigError) as raised:
        make_backend()
    assert str(raised.value) == (f"unknown backend 'opnai': set OLLIE_BACKEND to one of ollama, openai, openrouter, "
                                 f"anthropic (OLLIE_BACKEND is set on line 1 of {env_file})")

    env_file.write_text("# my settings\nOLLIE_BACKEND=openai\nOLLIE_OPENAI_KEY=sk-x\nOLLIE_OPENAI_URL=127.0.0.1:9/v1\n")
    with pytest.raises(BackendConfigError, match=f"OLLIE_OPENAI_URL is set on line 4 of {env_file}"):
        make_backend()
    # The environment's own value is the environment's: the file is not named.
    monkeypatch.setenv("OLLIE_OPENAI_URL", "localhost:9")
    with pytest.raises(BackendConfigError) as raised:
        make_backend()
    assert "localhost:9" in str(raised.value) and str(env_file) not in str(raised.value)


async def test_an_unreachable_url_from_the_file_names_its_line(tmp_path, monkeypatch):
    # Bug: "cannot connect ...: check the network, or set OLLIE_OPENAI_URL to the API's URL": the user, whose
    # environment sets no OLLIE_OPENAI_URL, was not told it came from line 3 of ~/.config/ollie/env.
    from contextlib import aclosing

    from ollie.backend.errors import BackendUnreachableError
    from ollie.backend.health import check_backend
    from tests.backend.test_first_run import closed_url, first_event

    env_file = tmp_path / "env"
    monkeypatch.setenv("OLLIE_CONFIG_DIR", str(tmp_path))
    for name in ("OLLIE_BACKEND", "OLLIE_OPENAI_KEY", "OLLIE_OPENAI_URL", "OLLIE_OLLAMA_URL", "OLLIE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    url = f"{closed_url()}/v1/"  # its trailing slash is not the backend's: still the same URL
    env_file.write_text(f"OLLIE_BACKEND=openai\nOLLIE_OPENAI_KEY=sk-x\nOLLIE_OPENAI_URL={url}  # my proxy\n")
    async with aclosing(make_backend()) as backend:
        with pytest.raises(BackendUnreachableError) as caught:
            await first_event(backend)
        health = await check_backend(backend)
    where = f"OLLIE_OPENAI_URL is set on line 3 of {env_file}"
    # A server on this machine is to be started: "check the network" sent the user looking elsewhere.
    assert caught.value.hint == (f"start the server there, or set OLLIE_OPENAI_URL to the API's URL (now {url[:-1]}; "
                                 f"{where})")
    assert health.hint == caught.value.hint

    env_file.write_text(f"# local\nOLLIE_OLLAMA_URL={closed_url()}\n")
    async with aclosing(make_backend()) as backend:
        health = await check_backend(backend)
    assert f"or set OLLIE_OLLAMA_URL to where Ollama runs (OLLIE_OLLAMA_URL is set on line 2 of {env_file});" in health.hint
    # The environment's own URL is the environment's: the file's line is named as not used, not as where it is set.
    monkeypatch.setenv("OLLIE_OLLAMA_URL", closed_url())
    async with aclosing(make_backend()) as backend:
        health = await check_backend(backend)
    assert "OLLIE_OLLAMA_URL to where Ollama runs;" in health.hint and "is set on line" not in health.hint
    assert health.hint.endswith(f"(line 2 of {env_file}: OLLIE_OLLAMA_URL there is not used, the environment sets it "
                                "and comes first)")
    # A hosted API's address that does not answer is the network's (or the URL's) problem, not a server to start.
    from ollie.backend.settings import SPECS, unreachable_hint
    assert unreachable_hint(SPECS["openai"], "https://api.example.com/v1", "m").startswith("check the network, or")
