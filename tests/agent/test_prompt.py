"""Prompt resolution: the array form runs shell commands, the string form is literal, !cmd, file or env."""

from __future__ import annotations

import asyncio

import pytest

from ollie.agent.prompt import expand_vars, resolve_prompt
from ollie.config import Prompt, load_agent_config, parse_agent_config
from ollie.errors import ConfigError
from tests.procs import timed_out_once_begun


async def test_array_joins_stdouts_in_order_and_skips_failures(tmp_path):
    prompt = Prompt(commands=["echo one", "echo bad; exit 1", "printf 'two\\n'", "true", "echo three"])
    warnings: list[str] = []
    text = await resolve_prompt(prompt, cwd=tmp_path, env={}, warnings=warnings)
    assert text == "one\ntwo\nthree"
    assert len(warnings) == 1 and "exited 1" in warnings[0]


async def test_array_command_timeout_is_skipped_quickly(tmp_path):
    prompt = Prompt(commands=["echo kept", "sleep 600; echo never"])
    warnings: list[str] = []
    # The sleep's 10 minutes: a command not skipped at its timeout runs past the ceiling.
    text = await timed_out_once_begun(
        lambda timeout: asyncio.wait_for(resolve_prompt(prompt, cwd=tmp_path, env={}, timeout=timeout,
                                                        warnings=warnings), 60),
        lambda text: text == "kept", first_s=0.5)
    assert text == "kept"
    assert "timed out" in warnings[-1]


async def test_array_runs_in_cwd_with_extra_env(tmp_path):
    prompt = Prompt(commands=['echo "$(pwd) $OLLIE_SESSION_ID $OLLIE_CWD"'])
    text = await resolve_prompt(prompt, cwd=tmp_path, env={"OLLIE_SESSION_ID": "123-abc"})
    assert text == f"{tmp_path} 123-abc {tmp_path}"


async def test_fragments_beside_the_config_are_found_through_ollie_agent_dir(tmp_path):
    agent_dir = tmp_path / "agents"
    (agent_dir / "fragments").mkdir(parents=True)
    (agent_dir / "fragments" / "id.md").write_text("I am the fragment.\n")
    (agent_dir / "mine.json").write_text('{"prompt": ["cat \\"$OLLIE_AGENT_DIR/fragments/id.md\\""]}')
    work = tmp_path / "work"
    work.mkdir()
    config = load_agent_config(agent_dir / "mine.json")
    assert await resolve_prompt(config.prompt, cwd=work, env={}) == "I am the fragment."


async def test_string_literal(tmp_path):
    assert await resolve_prompt(Prompt(text="You are terse."), cwd=tmp_path, env={}) == "You are terse."
    assert await resolve_prompt(Prompt(), cwd=tmp_path, env={}) == ""


async def test_string_multiline_is_literal_even_with_bang(tmp_path):
    text = "!echo no\nsecond line"
    assert await resolve_prompt(Prompt(text=text), cwd=tmp_path, env={}) == text


async def test_string_bang_runs_a_command_in_cwd(tmp_path):
    (tmp_path / "marker").write_text("")
    assert await resolve_prompt(Prompt(text="!ls; echo done"), cwd=tmp_path, env={}) == "marker\ndone"


async def test_string_bang_failure_gives_empty_prompt(tmp_path):
    warnings: list[str] = []
    assert await resolve_prompt(Prompt(text="!exit 4"), cwd=tmp_path, env={}, warnings=warnings) == ""
    assert "exited 4" in warnings[0]


async def test_string_file_relative_absolute_and_home(tmp_path, monkeypatch):
    (tmp_path / "p.md").write_text("from file\n")
    assert await resolve_prompt(Prompt(text="p.md"), cwd=tmp_path, env={}) == "from file\n"
    assert await resolve_prompt(Prompt(text=str(tmp_path / "p.md")), cwd=tmp_path / "..", env={}) == "from file\n"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert await resolve_prompt(Prompt(text="~/p.md"), cwd=tmp_path.parent, env={}) == "from file\n"


async def test_string_file_beside_the_agent_config(tmp_path):
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "sys.md").write_text("beside the config")
    (tmp_path / "agents" / "a.json").write_text('{"prompt": "sys.md"}')
    config = load_agent_config(tmp_path / "agents" / "a.json")
    assert await resolve_prompt(config.prompt, cwd=tmp_path, env={}) == "beside the config"


async def test_string_env_expansion_then_file_or_literal(tmp_path, monkeypatch):
    (tmp_path / "x.md").write_text("expanded path")
    monkeypatch.setenv("FROM_OS", "os-value")
    env = {"PROMPT_DIR": str(tmp_path)}
    assert await resolve_prompt(Prompt(text="${PROMPT_DIR}/x.md"), cwd=tmp_path, env=env) == "expanded path"
    literal = await resolve_prompt(Prompt(text="Use $FROM_OS and $UNSET_VAR_X, costs $5"), cwd=tmp_path, env=env)
    assert literal == "Use os-value and $UNSET_VAR_X, costs $5"


async def test_a_long_sentence_or_missing_file_is_literal(tmp_path):
    sentence = "You are a careful agent. " * 30
    warnings: list[str] = []
    assert await resolve_prompt(Prompt(text=sentence), cwd=tmp_path, env={}, warnings=warnings) == sentence
    assert await resolve_prompt(Prompt(text="missing.md"), cwd=tmp_path, env={}) == "missing.md"
    assert warnings == []


def test_expand_vars_forms():
    assert expand_vars("$A-${B}-$C", {"A": "1", "B": "2"}) == "1-2-$C"


async def test_config_string_and_array_parse_to_the_right_form(tmp_path):
    array = parse_agent_config('{"prompt": ["echo a", "echo b"]}', "t")
    string = parse_agent_config('{"prompt": "!echo c"}', "t")
    assert await resolve_prompt(array.prompt, cwd=tmp_path, env={}) == "a\nb"
    assert await resolve_prompt(string.prompt, cwd=tmp_path, env={}) == "c"


async def test_commands_run_read_only_without_the_daemons_env(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-daemon-secret")
    command = 'echo "key=[$OPENAI_API_KEY]"; echo x > made.txt && echo wrote; echo tmp > "$TMPDIR/t" && echo tmp-ok'
    warnings: list[str] = []
    text = await resolve_prompt(Prompt(commands=[command]), cwd=tmp_path, env={}, warnings=warnings)
    assert text == "key=[]\ntmp-ok"
    assert not (tmp_path / "made.txt").exists()


async def test_command_sandbox_comes_from_the_agent_config(tmp_path):
    (tmp_path / "agents").mkdir()
    config_text = '{"prompt": ["echo x > made.txt && echo wrote"], "commandSandbox": "default"}'
    (tmp_path / "agents" / "w.json").write_text(config_text)
    (tmp_path / "agents" / "bad.json").write_text('{"commandSandbox": "../x"}')
    config = load_agent_config(tmp_path / "agents" / "w.json")
    assert config.prompt.sandbox == "default"
    assert await resolve_prompt(config.prompt, cwd=tmp_path, env={}) == "wrote"
    assert (tmp_path / "made.txt").exists()
    with pytest.raises(ConfigError, match="commandSandbox"):
        load_agent_config(tmp_path / "agents" / "bad.json")
