"""The Core's MCP members: the session's MCP servers, their state, workspace approval and resources."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ollie.agent.approval import ApprovalGate
from ollie.agent.events import Bus
from ollie.agent.inbox import Inbox
from ollie.agent.questions import Answer, StepQuestion, within_question_timeout
from ollie.agent.runtime import Runtime, refresh_tools
from ollie.errors import ConfigError
from ollie.mcp.attach import (
    allow,
    attach,
    awaiting_note,
    command_line,
    follow_config,
    host_of,
    read_resource,
    resource_note,
)
from ollie.mcp.config import ServerSpec

if TYPE_CHECKING:
    from ollie.agent.turnhost import TurnHost


class McpMembers:
    """Mixed into the Core: what a session does with its MCP servers."""

    _inbox: Inbox
    _approval: ApprovalGate
    _host: TurnHost
    runtime: Runtime
    bus: Bus
    tell_answers: bool
    cwd: Path

    def _wire_mcp(self) -> None:
        host = host_of(self.runtime.dispatcher)
        if host is not None:  # a server that fails or restarts is news; a changed tool list is offered at once
            host.notify = lambda text: self.bus.emit("info", text)
            host.on_change = lambda: refresh_tools(self.runtime)
            unsaid, host.unsaid = host.unsaid, []
            for text in unsaid:  # news from before (at a session's start the bus keeps it for its first listener)
                host.notify(text)
            refresh_tools(self.runtime)  # those that listed their tools since the runtime was built (not waited for)

    async def add_mcp_servers(self, specs: Mapping[str, ServerSpec]) -> None:
        """Start these MCP servers in the session (a front end's, e.g. ACP session/new's); their tools join it as they
        list them (not waited for: Zed's new thread spun 15 s for a slow one; the first turn waits, saying which)."""
        await attach(self.runtime.dispatcher, specs, cwd=self.cwd, sandbox=self.runtime.config.sandbox)
        self._wire_mcp()  # one that failed at once is news now, not at its first retry; its tools join

    async def _mcp_before_turn(self) -> None:
        """Before a turn: its servers still starting waited for, the user told which (their tools go with the turn);
        then the workspace's servers not asked about yet put to the user."""
        if (host := host_of(self.runtime.dispatcher)) is not None:
            await host.wait_starting(lambda text: self.bus.emit("info", text))
        await self._ask_workspace_servers()

    async def _ask_workspace_servers(self) -> None:
        """Put the workspace's MCP servers not asked about yet to the user (each once a session); start those allowed."""
        # `.mcp.json` / `.vscode/mcp.json` are hostile content: nothing starts unasked, and the question shows the
        # exact command line; "Allow always" is kept in ollie's state, keyed by the exact entry.
        host, approver = host_of(self.runtime.dispatcher), self._approval.approver
        if host is None or approver is None:
            return
        started = False
        for name, spec in list(host.pending.items()):
            if name in host.asked:
                continue
            host.asked.add(name)
            question = StepQuestion(f"mcp/{name}", "execute",
                                    f"start MCP server {name!r} of {spec.source}: {command_line(spec)}")
            answer, _ = await within_question_timeout(approver(question), Answer("reject"))
            if answer.outcome in ("allow_once", "allow_always") and name in host.pending:
                said = await self._allow(name, keep=answer.outcome == "allow_always")
                if self.tell_answers:  # else the question's card says it
                    self.bus.emit("info", said)
                started = True
        if started:
            refresh_tools(self.runtime)

    async def mcp_check(self) -> list[dict[str, Any]]:
        """`mcp_status` after pinging the HTTP servers (a dead one is listed failed, with why)."""
        host = host_of(self.runtime.dispatcher)
        if host is not None:
            await host.probe()
        return self.mcp_status()

    async def mcp_restart(self, name: str) -> str:
        """Reconnect MCP server `name` (every one when empty), those of mcp.json as it says now (one it no longer lists
        stops, one it adds starts); what happened to each."""
        try:
            followed, lines = await follow_config(self.runtime.dispatcher, self.runtime.config, cwd=self.cwd, name=name)
        except ConfigError as exc:
            followed, lines = set(), [f"mcp.json not followed: {exc}"]
        self._wire_mcp()
        host = host_of(self.runtime.dispatcher)
        names = [n for n in (host.servers if host is not None else {}) if name in ("", n) and n not in followed]
        if name and not names and name not in followed:
            raise ValueError(f"no MCP server {name!r} (see /mcp)")
        if host is not None:
            await host.restart(names)
        refresh_tools(self.runtime)
        states = {s["name"]: s for s in self.mcp_status()}
        lines += [f"restarted {n}: {states[n]['state']}" + (f" ({states[n]['error']})" if states[n]["error"] else "")
                  for n in names]
        return "\n".join(lines) or "no MCP servers to restart"

    async def mcp_allow(self, name: str) -> str:
        """Start the workspace's MCP server `name` (the user allows it; remembered for this workspace)."""
        text = await self._allow(name)
        refresh_tools(self.runtime)
        return text

    async def _allow(self, name: str, *, keep: bool = True) -> str:
        host = host_of(self.runtime.dispatcher)
        spec = host.pending.get(name) if host is not None else None
        said = await allow(self.runtime.dispatcher, name, cwd=self.cwd, keep=keep)
        if spec is not None:  # its "waits for your approval" is no longer true
            self._host.withdraw_warning(awaiting_note(name, spec))
        return said

    async def mcp_add_resource(self, server: str, uri: str) -> str:
        """Add MCP resource `uri` of `server` as context for the next prompt; what was added."""
        note = await resource_note(self.runtime.dispatcher, server, uri)
        self._inbox.add_note(note)
        return f"added {uri} of {server} ({len(note)} characters) as context for the next prompt"

    async def mcp_read_resource(self, server: str, uri: str) -> str:
        """The text of MCP resource `uri` of `server` (an editor's context pick); ValueError saying why not."""
        return await read_resource(self.runtime.dispatcher, server, uri)

    def mcp_status(self) -> list[dict[str, Any]]:
        """The session's MCP servers: name, state (starting, ready, failed with why), tools, prompts."""
        host = host_of(self.runtime.dispatcher)
        return host.status() if host is not None else []
