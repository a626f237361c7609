"""`Core.create(prompt_now=True)` (a daemon's default session): the agent's prompt commands start before the
backend is built, so the two overlap, and run once; without it they wait for their first need."""

from __future__ import annotations

import asyncio

from agentkit import ToyServer, write_agent

from ollie.agent.factories import env_backend_factory
from ollie.backend.base import Backend
from ollie.testing import Reply


def _prompt_tasks() -> list[asyncio.Task]:
    """The tasks running an agent's prompt commands."""
    return [t for t in asyncio.all_tasks()
            if t.get_coro().__qualname__ == "DeferredPrompt._resolve"]  # type: ignore[union-attr]


def _recording_factory(srv, seen: list[asyncio.Task]):
    """The usual backend factory, keeping the prompt commands' tasks already running when it is called."""
    real = env_backend_factory(srv.env())

    def factory(name: str | None, model: str | None) -> Backend:
        seen.extend(_prompt_tasks())
        return real(name, model)
    return factory


async def test_prompt_now_starts_the_commands_before_the_backend_and_runs_them_once(scripted_llm, make_core,
                                                                                      agents_dir, tmp_path):
    srv = scripted_llm("openai")
    srv.script(Reply.text("hello"))
    marker = tmp_path / "ran.log"
    # Unsandboxed so that the marker can lie outside the sandbox's private TMPDIR.
    write_agent(agents_dir, "marked", commandSandbox="none",
                prompt=[f'echo run >> "{marker}"; echo "You are the marked agent."'])
    seen: list[asyncio.Task] = []
    core = await make_core(srv, toy=ToyServer(), agent="marked", prompt_now=True,
                           backend_factory=_recording_factory(srv, seen))
    (task,) = seen  # started before the backend was built
    # And they run with nobody asking yet: their task ends by itself (waited for, not for a time: a loaded machine).
    await task
    assert marker.read_text() == "run\n"
    result = await core.submit("hi")
    assert result.reply == "hello"
    assert "You are the marked agent." in srv.chat_requests[0].body["messages"][0]["content"]
    assert marker.read_text() == "run\n"  # once: the turn took what they printed


async def test_without_prompt_now_the_commands_wait_for_their_first_need(scripted_llm, make_core, agents_dir,
                                                                          tmp_path):
    srv = scripted_llm("openai")
    marker = tmp_path / "ran.log"
    write_agent(agents_dir, "marked", commandSandbox="none", prompt=[f'echo run >> "{marker}"; echo "hi"'])
    seen: list[asyncio.Task] = []
    await make_core(srv, toy=ToyServer(), agent="marked", backend_factory=_recording_factory(srv, seen))
    assert seen == []
    assert _prompt_tasks() == [] and not marker.exists()  # not started at all (not merely unfinished yet)
