"""`ollie acp` started as an editor starts it: an `env` of the editor's own, over the user's env file."""

from __future__ import annotations

from tests.acp.test_warnings import config_dir
from tests.backend.test_first_run import closed_url


async def test_an_env_file_setting_the_editors_env_overrides_is_named_in_the_turns_error(start_agent) -> None:
    # "ollama: cannot connect ...; or use a hosted API: OLLIE_BACKEND=openai and OLLIE_OPENAI_KEY": the user, whose
    # env file said just that, was not told that the editor's env set OLLIE_BACKEND over it.
    env_file = config_dir() / "env"
    env_file.write_text("# mine\nOLLIE_BACKEND=openai\nOLLIE_OPENAI_KEY=sk-from-file\n")
    agent = await start_agent(env={"OLLIE_BACKEND": "ollama", "OLLIE_OLLAMA_URL": closed_url(),
                                   "OLLIE_OPENAI_KEY": "sk-from-editor"})
    sid = await agent.new()
    assert (await agent.prompt(sid, "hi")).stop_reason == "end_turn"
    said = agent.client.text(sid)
    assert said.startswith("⚠ ollama: cannot connect") and said.endswith(
        f"(line 2 of {env_file}: OLLIE_BACKEND there is not used, the environment sets it and comes first; line 3: "
        "OLLIE_OPENAI_KEY there is not used, the environment sets it and comes first)\n\n"), said
    assert "sk-from" not in said  # no key's value, the file's nor the environment's
