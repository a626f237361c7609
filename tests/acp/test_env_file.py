"""`ollie acp` started as an editor starts it: an `env` of the editor's own, over the user's env file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import acp
import pytest

from ollie.testing import Reply
from tests.acp.conftest import AGENT_COMMAND
from tests.acp.test_warnings import config_dir
from tests.backend.test_first_run import closed_url


def readme_zed_entry() -> dict:
    """README's Zed `agent_servers` entry for ollie."""
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    found = re.search(r"\*\*Zed\*\* \(`settings\.json`\):\n\s*```json\n(.*?)```", readme, re.S)
    assert found, "README has no Zed settings.json snippet"
    return json.loads("{" + found.group(1) + "}")["agent_servers"]["ollie"]


async def test_readmes_zed_entry_talks_to_the_backend_of_the_users_env_file(start_agent, llm) -> None:
    # Its "env": {"OLLIE_BACKEND": "ollama"} came before the env file: a user whose file named anthropic, as README's
    # Configuration has it, got "ollama: cannot connect" in Zed.
    entry = readme_zed_entry()
    assert [entry["command"], *entry["args"]] == ["ollie", "acp"]
    (config_dir() / "env").write_text("".join(f"{k}={v}\n" for k, v in llm.env(approval="").items()))
    llm.script(Reply.text("hello from your model"))
    agent = await start_agent(env=entry.get("env", {}), command=AGENT_COMMAND)
    sid = await agent.new()
    assert (await agent.prompt(sid, "hi")).stop_reason == "end_turn"
    assert agent.client.text(sid) == "hello from your model"


async def test_an_env_file_setting_the_editors_env_overrides_is_named_in_the_turns_error(start_agent) -> None:
    # "ollama: cannot connect ...; or use a hosted API: OLLIE_BACKEND=openai and OLLIE_OPENAI_KEY": the user, whose
    # env file said just that, was not told that the editor's env set OLLIE_BACKEND over it.
    env_file = config_dir() / "env"
    env_file.write_text("# mine\nOLLIE_BACKEND=openai\nOLLIE_OPENAI_KEY=sk-from-file\n")
    agent = await start_agent(env={"OLLIE_BACKEND": "ollama", "OLLIE_OLLAMA_URL": closed_url(),
                                   "OLLIE_OPENAI_KEY": "sk-from-editor"})
    sid = await agent.new()
    with pytest.raises(acp.RequestError) as caught:  # the failed turn's answer (Zed's error banner) says it
        await agent.prompt(sid, "hi")
    said = str(caught.value)
    assert caught.value.data == {"sessionId": sid, "class": "unreachable"} and agent.client.text(sid) == ""
    assert said.startswith("ollama: cannot connect") and said.endswith(
        f"(line 2 of {env_file}: OLLIE_BACKEND there is not used, the environment sets it and comes first; line 3: "
        "OLLIE_OPENAI_KEY there is not used, the environment sets it and comes first)"), said
    assert "sk-from" not in said  # no key's value, the file's nor the environment's
