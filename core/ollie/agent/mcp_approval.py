"""A workspace's own MCP servers put to the user as a question, the way a tool step is: nothing starts unasked.

`.mcp.json` / `.vscode/mcp.json` are the workspace's (hostile content). At the session's first turn each server
waiting for approval is asked about once, with the exact command line, cwd and env it would run: "Allow once"
starts it for this session, "Allow always" also remembers it for this workspace (in ollie's state dir, keyed by
the exact entry), anything else leaves it waiting (`/mcp allow <name>` still starts it).
"""

from __future__ import annotations

from pathlib import Path

from ollie.agent.approval import Answer, StepApprover, StepQuestion, within_question_timeout
from ollie.mcp.attach import allow, command_line, host_of
from ollie.tools.dispatcher import Dispatcher


def question(name: str, source: str, command: str) -> StepQuestion:
    """The question for workspace server `name`: the program it would run, whole."""
    return StepQuestion(f"mcp/{name}", "execute", f"start MCP server {name!r} of {source}: {command}")


async def ask_pending(dispatcher: Dispatcher, approver: StepApprover | None, *, cwd: Path) -> list[str]:
    """Ask about each workspace server not asked about yet; what was started, for the user."""
    host = host_of(dispatcher)
    if host is None or approver is None:
        return []
    news: list[str] = []
    for name, spec in list(host.pending.items()):
        if name in host.asked:
            continue
        host.asked.add(name)
        answer, _ = await within_question_timeout(approver(question(name, spec.source, command_line(spec))),
                                                  Answer("reject"))
        if answer.outcome in ("allow_once", "allow_always") and name in host.pending:
            news.append(await allow(dispatcher, name, cwd=cwd, keep=answer.outcome == "allow_always"))
    return news
