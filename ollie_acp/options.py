"""A session's modes and config options: the approval mode, the model and the agent config."""

from __future__ import annotations

import asyncio
import warnings
from typing import TYPE_CHECKING

from acp.schema import (
    ConfigOptionUpdate,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
)

from ollie.agent.commands_info import AgentInfo, agent_infos
from ollie.errors import OllieError

if TYPE_CHECKING:
    from ollie.agent.surface import AcpCore

# Session modes are the engine's approval modes (ollie.agent.approval), 1:1: the legacy `modes` and the
# `mode` config option both offer them, and only them (an agent switch is no mode: it may leave the sandbox).
MODES = {
    "ask": ("Ask", "Edits and commands that are not read-only ask first"),
    "auto-edit": ("Auto-edit", "Edits apply without asking; commands ask"),
    "auto": ("Auto", "Nothing asks (the sandbox still applies)"),
    "read-only": ("Read-only", "Steps that write are refused; the agent plans instead"),
}
ConfigOption = SessionConfigOptionSelect | SessionConfigOptionBoolean
# The agent selector's own category (ACP leaves `_` names free), never taken for the mode or the model. The SDK
# (0.12) drops a custom category on validation: it is set afterwards, and pydantic's warning about it silenced.
AGENT_CATEGORY = "_ollie_agent"
warnings.filterwarnings("ignore", message=rf"(?s)Pydantic serializer warnings:.*input_value='{AGENT_CATEGORY}'")


def mode_state(core: AcpCore) -> SessionModeState:
    """The legacy session modes: the approval modes, the current one marked."""
    return SessionModeState(current_mode_id=core.approval, available_modes=[
        SessionMode(id=mode_id, name=name, description=description) for mode_id, (name, description) in MODES.items()
    ])


async def agents(core: AcpCore) -> list[AgentInfo]:
    """The agent configs found (read from disk, in a thread), one that cannot load with why."""
    return await asyncio.to_thread(agent_infos, core.agents_dirs)


async def config_options(core: AcpCore, *, ask_models: bool = True,
                         agent_list: list[AgentInfo] | None = None) -> list[ConfigOption]:
    """The config options: approval mode (category `mode`), model (`model`) and agent (`_ollie_agent`).

    Without `ask_models` the model option offers the current model only (the backend is not asked); `agent_list`:
    the configs `agents` read just before (none: read them now). Without a backend (a key not set) there is no model
    option: a picker of one empty name would offer nothing.
    """
    models = await backend_models(core) if ask_models else []
    if core.model_name and core.model_name not in models:
        models = [core.model_name, *models]
    found = [a for a in (await agents(core) if agent_list is None else agent_list) if not a.error]
    if core.agent_name not in {a.name for a in found}:  # the current one is always offered
        found = [AgentInfo(core.agent_name), *found]
    agent = SessionConfigOptionSelect(type="select", id="agent", name="Agent config",
                                      description="Switching clears the conversation; an unsandboxed one asks first",
                                      current_value=core.agent_name,
                                      options=[SessionConfigSelectOption(
                                          value=a.name, name=f"{a.name} (NO sandbox)" if a.unsandboxed else a.name,
                                          description=a.description or None) for a in found])
    agent.category = AGENT_CATEGORY  # type: ignore[assignment]  # see AGENT_CATEGORY
    mode = SessionConfigOptionSelect(type="select", id="mode", name="Approval mode", category="mode",
                                     description="Which steps ask you first (/approval)", current_value=core.approval,
                                     options=[SessionConfigSelectOption(value=m, name=name, description=description)
                                              for m, (name, description) in MODES.items()])
    model = [SessionConfigOptionSelect(type="select", id="model", name="Model", category="model",
                                       current_value=core.model_name,
                                       options=[SessionConfigSelectOption(value=m, name=m) for m in models])]
    return [mode, *(model if core.model_name else []), agent]


async def options_update(core: AcpCore, agent_list: list[AgentInfo] | None = None) -> ConfigOptionUpdate:
    """The `config_option_update` with every option's current value (`agent_list`: as in `config_options`)."""
    return ConfigOptionUpdate(session_update="config_option_update",
                              config_options=await config_options(core, agent_list=agent_list))


async def backend_models(core: AcpCore) -> list[str]:
    """The backend's models (it keeps the list once asked); none if it does not answer within 5 s."""
    try:
        async with asyncio.timeout(5):
            return await core.list_models()
    except (TimeoutError, OllieError, OSError):
        return []
