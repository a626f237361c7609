"""Asking before a switch to an agent that runs without a sandbox: the one check every front end's switch passes."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ollie.agent.commands_info import AgentInfo, agent_infos
from ollie.errors import OllieError
from ollie.tools.base import Approver


class AgentSwitchRefused(OllieError):
    """The user did not allow a switch to an unsandboxed agent (or nobody could be asked): the agent stays."""


def unsandboxed(name: str, dirs: list[Path]) -> AgentInfo | None:
    """Agent `name` of `dirs` when it runs without a sandbox (`sandbox`/`commandSandbox` none, or `elevation: allow`:
    see AgentInfo), else None; reads the configs: in a thread."""
    info = next((a for a in agent_infos(dirs) if a.name == name), None)
    return info if info is not None and info.unsandboxed else None


async def check(name: str, dirs: list[Path], ask: Approver | None) -> None:
    """Return when agent `name` is sandboxed or the user allows it now; AgentSwitchRefused otherwise."""
    info = await asyncio.to_thread(unsandboxed, name, dirs)
    if info is None:
        return
    question = (f"switch to agent {info.name}: it runs WITHOUT a sandbox: the model's programs and commands run with "
                f"your full rights (or its elevated steps run without asking). {info.description}").strip()
    if ask is None or not await ask(question):
        raise AgentSwitchRefused(f"agent not switched: {name} runs without a sandbox and was not allowed")
