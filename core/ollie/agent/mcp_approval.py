"""A workspace's own MCP servers put to the user as a question, the way a tool step is: nothing starts unasked.

`.mcp.json` / `.vscode/mcp.json` are hostile content: each waiting server is asked about once, with its exact
command line, cwd and env; "Allow always" is kept in ollie's state, keyed by the exact entry.
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
