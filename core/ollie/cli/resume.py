"""The terminal's `/resume`: which saved session of this directory to switch to, and its history shown."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ollie import paths
from ollie.cli.render import Renderer, fitted, image_lines
from ollie.cli.sanitize import printable

# How many of a resumed session's turns are shown again.
SHOWN_TURNS = 10
# tiers.summarize_result's stand-in for a result collapsed: the line count it keeps.
_COLLAPSED = re.compile(r"\[\w+ result of [^\]]*? collapsed: (\d+ lines)")

if TYPE_CHECKING:
    from ollie.agent.steps import ToolStep
    from ollie.agent.surface import TerminalCore
    from ollie.backend.types import Message
    from ollie.cli.lines import InputLines


def resume_arg(line: str) -> str | None:
    """What follows `/resume` on the line ("" for none), or None when the line is not /resume."""
    from ollie.agent.editorcontext import SLASH

    match = SLASH.fullmatch(line.strip())
    if match is None or match["name"].lower() != "resume":
        return None
    return (match["arg"] or "").strip()


async def pick(core: TerminalCore, lines: InputLines, arg: str, drained: Callable[[], Awaitable[None]]) -> str | None:
    """The id of the session to resume: `arg` (a number of the listing or an id) or asked; None (said) for none."""
    from ollie.agent.commands_info import sessions_in
    from ollie.sessions import persist

    if core.is_running:  # a postTurn continuation or a command still going: it would be cut off unsaved
        return _no("a turn is running; /resume once it ended (Ctrl-C stops it)")
    if not arg:
        await core.submit("/resume")  # the engine's listing, numbered, rendered as any command's output
        await drained()
        since = lines.before_question()
        print("resume which? (number or id; Enter to stay): ", end="", file=sys.stderr, flush=True)
        arg = (await lines.answer(since) or "").strip()
        if not arg:
            return None
    if arg.isdigit():
        ids = await asyncio.to_thread(sessions_in, paths.sessions_dir(), core.cwd)
        if not 1 <= int(arg) <= len(ids):
            return _no(f"no session {arg} in /resume's list ({len(ids)} here)")
        arg = ids[int(arg) - 1]
    if arg == core.session_id:
        return _no(f"session {arg} is the one open here")
    if not await asyncio.to_thread(persist.exists, paths.sessions_dir(), arg):
        return _no(f"no saved session has the id {arg}; /resume lists this directory's")
    return arg


def recorded(session_id: str) -> tuple[str, str] | None:
    """The agent session `session_id` ran and its owner ("": this user), from its record; None when it has none, or the
    registry cannot be read (said as it opens); a record this user may not resume, or a malformed one, raises
    (nothing of the session runs: as his own, his agent's hooks would run unsandboxed on it) (sync: a thread)."""
    from ollie.agent.recorder import unavailable
    from ollie.errors import OllieError
    from ollie.sessions.errors import NotFoundError
    from ollie.sessions.registry import Registry
    from ollie.sessions.types import Scope, os_user

    try:
        registry = Registry()
    except (OllieError, OSError):  # no registry (its dir cannot be made): the turn says so
        return None
    try:
        info = registry.get(Scope(user_id=os_user()), session_id)
        return info.agent_id, "" if info.user_id == os_user() else info.user_id
    except (NotFoundError, *unavailable()):
        return None
    finally:
        registry.close()


def _no(why: str) -> None:
    print(fitted(printable(f"ollie: /resume: {why}"), sys.stderr), file=sys.stderr)


def show_history(core: TerminalCore, renderer: Renderer) -> None:
    """The resumed conversation's last SHOWN_TURNS turns as they were shown live (prompts as typed after the prompt
    sign, answers, steps and results), after a line saying how much is above and how to see it; then its plan."""
    from ollie.agent.history import typed_text
    from ollie.agent.steps import describe

    messages = core.session.messages
    starts = [i for i, message in enumerate(messages) if message.role == "user"]
    if len(starts) > SHOWN_TURNS:  # a long session scrolled for minutes, its last turns far above the prompt
        first = starts[-SHOWN_TURNS]
        print(printable(f"ollie: {len(starts) - SHOWN_TURNS} earlier turns ({first} messages) not shown; the last "
                        f"{SHOWN_TURNS} follow. /history <n> lists the last n messages"), file=sys.stderr)
        messages = messages[first:]
    steps: dict[str, list[ToolStep]] = {}  # each call's steps, by its id: its result is shown as live (below)
    for message in messages:
        if message.role == "user":
            renderer.render("turn", "end")  # the answer before it ends (its held markdown shown)
            print(printable("\n".join([f"{core.agent_name}> {typed_text(message)}", *image_lines(message.images)])),
                  file=sys.stderr, flush=True)
        elif message.role == "assistant":
            renderer.render("assistant", message.content)
            for call in message.tool_calls:  # titled as live (`▸ Read calc.py`), not as the call's JSON
                steps[call.id] = describe(call.name, call.arguments, core.cwd, kind_of=core.step_kinds)
                renderer.render("call", call.arguments, call.name, steps=steps[call.id])
        elif message.role == "tool":  # a plan step's own result left for the checklist, as live
            renderer.render("tool", _result_shown(core, message), message.name,
                            steps=steps.get(message.tool_call_id, []))
    renderer.end_line()
    if core.plan:  # where its task stood
        renderer.plan(core.plan)


def _result_shown(core: TerminalCore, message: Message) -> str:
    """A tool result as the history shows it: one collapsed since (its stand-in kept for the model) said as Neovim
    says it, not as the model's `[cold result of call_tool collapsed: …]`."""
    from ollie.agent.tiers import COLLAPSED

    collapsed = _COLLAPSED.match(message.content)
    if collapsed and core.session.result_tiers.get(message.tool_call_id) == COLLAPSED:
        return f"(output seen by the model, then collapsed: {collapsed[1]})"
    return message.content
