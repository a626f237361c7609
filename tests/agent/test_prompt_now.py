"""`Core.create(prompt_now=True)` (a daemon's default session): the agent's prompt commands start before the
backend is built, so the two overlap, and run once; without it they wait for their first need."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from agentkit import ToyServer, write_agent

from ollie.agent.factories import env_backend_factory
from ollie.backend.base import Backend
from ollie.testing import Reply


def _recording_factory(srv, seen: list[bool]):
    """The usual backend factory, noting whether the prompt commands' task was already running when called."""
    real = env_backend_factory(srv.env())

    def factory(name: str | None, model: str | None) -> Backend:
        seen.append(any(t.get_coro().__qualname__ == "DeferredPrompt._resolve"  # type: ignore[union-attr]
                        for t in asyncio.all_tasks()))
        return real(name, model)
    return factory


async def _wait_for(path: Path, timeout: float = 10) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return path.read_text() if path.exists() else ""


async def test_prompt_now_starts_the_commands_before_the_backend_and_runs_them_once(scripted_llm, make_core,
                                                                                      agents_dir, tmp_path):
    srv = scripted_llm("openai")
    srv.script(Reply.text("hello"))
    marker = tmp_path / "ran.log"
    # Unsandboxed so that the marker can lie outside the sandbox's private TMPDIR.
    write_agent(agents_dir, "marked", commandSandbox="none",
                prompt=[f'echo run >> "{marker}"; echo "You are the marked agent."'])
    seen: list[bool] = []
    core = await make_core(srv, toy=ToyServer(), agent="marked", prompt_now=True,
                           backend_factory=_recording_factory(srv, seen))
    assert seen == [True]  # started before the backend was built
    assert await _wait_for(marker) == "run\n"  # and they run with nobody asking yet
    result = await core.submit("hi")
    assert result.reply == "hello"
    assert "You are the marked agent." in srv.chat_requests[0].body["messages"][0]["content"]
    assert marker.read_text() == "run\n"  # once: the turn took what they printed


async def test_without_prompt_now_the_commands_wait_for_their_first_need(scripted_llm, make_core, agents_dir,
                                                                          tmp_path):
    srv = scripted_llm("openai")
    marker = tmp_path / "ran.log"
    write_agent(agents_dir, "marked", commandSandbox="none", prompt=[f'echo run >> "{marker}"; echo "hi"'])
    seen: list[bool] = []
    await make_core(srv, toy=ToyServer(), agent="marked", backend_factory=_recording_factory(srv, seen))
    assert seen == [False]
    assert await _wait_for(marker, timeout=0.5) == ""
