"""`Core.create(prompt_now=True)` (a daemon's default session): the agent's prompt commands start before the
backend is built, so the two overlap, and run once; without it they wait for their first need. The HTTP client's
modules, imported in a thread meanwhile (by every front end), are all of them."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from agentkit import ToyServer, write_agent

from ollie.agent.factories import env_backend_factory
from ollie.backend.base import Backend
from ollie.testing import Reply


def _prompt_tasks() -> list[asyncio.Task]:
    """The tasks running an agent's prompt commands."""
    return [t for t in asyncio.all_tasks()
            if t.get_coro().__qualname__ == "DeferredPrompt._resolve"]  # type: ignore[union-attr]


def _recording_factory(srv, seen: list[asyncio.Task], marker=None):
    """The usual backend factory, keeping the prompt commands' tasks already running when it is called (and, with
    `marker`, whether the commands wrote it already: they may end before the backend's modules have loaded)."""
    real = env_backend_factory(srv.env())

    def factory(name: str | None, model: str | None) -> Backend:
        seen.extend(_prompt_tasks())
        if marker is not None and marker.exists():
            seen.append(None)
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
                           backend_factory=_recording_factory(srv, seen, marker))
    (task,) = seen  # started before the backend was built: running then, or ended already (None)
    # And they run with nobody asking yet: their task ends by itself (waited for, not for a time: a loaded machine).
    if task is not None:
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


def test_the_http_client_modules_load_with_the_backend_module():
    """httpx imports httpcore and h11 at its first client, which a backend makes on the event loop (~40-50 ms of
    CPU): they load with `ollie.backend.stream`, the module every Core's set-up imports in a thread."""
    code = "import sys, ollie.backend.stream; print(sorted({'httpcore', 'h11'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['h11', 'httpcore']"


# A fresh interpreter builds a Core as `ollie acp` and the terminal do (no prompt_now) and says on which thread
# httpx was imported.
_WHERE_HTTPX_LOADS = """
import asyncio, sys, threading

from ollie.agent.core import Core
from ollie.tools.dispatcher import Dispatcher

main_thread = []


class Spy:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "httpx":
            main_thread.append(threading.current_thread() is threading.main_thread())


async def build() -> None:
    assert "httpx" not in sys.modules
    sys.meta_path.insert(0, Spy)
    core = await Core.create(cwd=sys.argv[1], dispatcher_factory=lambda cwd, session_id, env: Dispatcher())
    await core.close()

asyncio.run(build())
print(main_thread)
"""


def test_every_front_end_imports_the_http_client_off_the_event_loop(tmp_path):
    """`ollie acp` and the terminal build their Core without prompt_now: the loop (which serves the ACP client)
    is not held by the HTTP client's first import either."""
    out = subprocess.run([sys.executable, "-c", _WHERE_HTTPX_LOADS, str(tmp_path)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[False]"
