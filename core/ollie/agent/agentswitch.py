"""An agent switch's engine side, which every front end's switch goes through: the question before an agent that runs
without a sandbox, and the conversation before kept as a session of its own."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ollie.agent.commands_info import AgentInfo, agent_infos
from ollie.errors import OllieError

if TYPE_CHECKING:  # ACP imports this module at start; the approval module loads with the first question
    from ollie.agent.questions import StepQuestion
    from ollie.sessions.persist import SessionFile

# Each question's own number in its id: a client shows each as a card of its own (ACP: a tool call per id).
_asked = itertools.count(1)


class AgentSwitchRefused(OllieError):
    """The user did not allow a switch to an unsandboxed agent (or nobody could be asked): the agent stays."""


class NotKept(OllieError):
    """The conversation could not be kept as a session of its own (the disk full...): nothing was switched or cleared."""


def unsandboxed(name: str, dirs: list[Path]) -> AgentInfo | None:
    """Agent `name` of `dirs` when it runs without a sandbox (`sandbox`/`commandSandbox` none, or `elevation: allow`:
    see AgentInfo), else None; reads the configs: in a thread."""
    info = next((a for a in agent_infos(dirs) if a.name == name), None)
    return info if info is not None and info.unsandboxed else None


async def check(name: str, dirs: list[Path], confirm: Callable[[StepQuestion], Awaitable[bool]]) -> None:
    """Return when agent `name` is sandboxed or the user allows it now (asked as a step is, with no "always");
    AgentSwitchRefused otherwise."""
    from ollie.agent.questions import StepQuestion

    info = await asyncio.to_thread(unsandboxed, name, dirs)
    if info is None:
        return
    outside = (f"everything agent {info.name} runs: the model's programs and commands run with your full rights (or "
               f"its elevated steps run without asking). {info.description}").strip()
    title = f"switch to agent {info.name}: it runs WITHOUT a sandbox"
    if not await confirm(StepQuestion(f"agent/{info.name}/{next(_asked)}", "other", title, outside=(outside,))):
        raise AgentSwitchRefused(f"agent not switched: {name} runs without a sandbox and was not allowed")


def keep(log: SessionFile, title: str, kept_id: str, reviewed: set[int]) -> str:
    """Save the conversation `log` holds as session `kept_id` titled `title`, in the agent it ran: what an agent
    switch would have cleared, kept for the user to resume (never lose the user's work); `kept_id`. Its turns'
    checkpoints were copied to it first (`reviewed`: those that have them): a turn with none shows no files changed.
    Blocks: in a thread."""
    from ollie.sessions import persist

    log.flush()  # a database log's rounds are written by its own thread: all of them, before they are read back
    saved = persist.load(log.sessions_dir, log.session_id)
    saved.id, saved.title = kept_id, title
    saved.turn_changed = [count if turn in reviewed else 0 for turn, count in enumerate(saved.turn_changed, 1)]
    saved.copied_turns = len(saved.turn_starts)
    copy = persist.session_log(log.sessions_dir, saved.id)
    try:
        copy.save(saved)
    except BaseException:
        copy.close()
        # The failure is the caller's to say (NotKept): no note of it is left for a close of a copy that never was.
        with contextlib.suppress(persist.NotSavedError):
            persist.release(saved.id)
        raise
    copy.close()
    persist.release(saved.id)
    return saved.id
