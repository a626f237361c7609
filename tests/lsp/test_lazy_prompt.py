"""An agent's prompt commands wait for the first need: `session/new` spawns nothing, the first turn sees their output."""

from __future__ import annotations

import json
from pathlib import Path

from ollie.testing import Reply


def _lazy_agent(tmp_path: Path) -> tuple[Path, Path]:
    """An agents dir with `lazy`, whose two prompt commands log each run to the marker file it returns."""
    agents, marker = tmp_path / "agents", tmp_path / "ran.log"
    agents.mkdir()
    prompt = [f'echo one >> "{marker}"; echo "You are lazy."',
              f'echo two >> "{marker}"; echo "session $OLLIE_SESSION_ID in $OLLIE_CWD"']
    # Unsandboxed on purpose: the marker file lies outside the private TMPDIR a sandboxed command may write.
    (agents / "lazy.json").write_text(json.dumps({"prompt": prompt, "commandSandbox": "none"}))
    return agents, marker


def _runs(marker: Path) -> list[str]:
    return marker.read_text().split() if marker.exists() else []


async def test_session_new_spawns_no_prompt_command_and_the_first_turn_sees_their_output(start_daemon, llm,
                                                                                          tmp_path):
    agents, marker = _lazy_agent(tmp_path)
    llm.script(Reply.text("first"), Reply.text("second"))
    daemon = await start_daemon(env={**llm.env(), "OLLIE_AGENTS_DIR": str(agents)})
    session = (await daemon.request("ollie/session/new", {"agent": "lazy"}))["session"]
    await daemon.request("ollie/state", {"session": session})
    assert _runs(marker) == [], "session/new and ollie/state ran the prompt commands"

    assert (await daemon.request("ollie/submit", {"session": session, "text": "hi"}))["reply"] == "first"
    assert sorted(_runs(marker)) == ["one", "two"]
    system = llm.chat_requests[-1].body["messages"][0]
    assert system == {"role": "system",
                      "content": f"You are lazy.\nsession {session} in {daemon.workspace.resolve()}"}

    # They ran once: the next turn sends the same prompt without running them again.
    assert (await daemon.request("ollie/submit", {"session": session, "text": "again"}))["reply"] == "second"
    assert sorted(_runs(marker)) == ["one", "two"]
    assert llm.chat_requests[-1].body["messages"][0] == system


async def test_asking_for_the_context_before_any_turn_runs_them(start_daemon, llm, tmp_path):
    agents, marker = _lazy_agent(tmp_path)
    daemon = await start_daemon(env={**llm.env(), "OLLIE_AGENTS_DIR": str(agents)})
    session = (await daemon.request("ollie/session/new", {"agent": "lazy"}))["session"]
    assert _runs(marker) == []
    context = await daemon.request("ollie/context", {"session": session})
    assert context["systemPrompt"].startswith("You are lazy.\nsession ")
    assert sorted(_runs(marker)) == ["one", "two"]
    # A slash command shows the prompt the model will see, too (it ran already: nothing runs again).
    shown = (await daemon.request("ollie/command", {"session": session, "line": "/sp"}))["output"]
    assert shown == context["systemPrompt"] and sorted(_runs(marker)) == ["one", "two"]
