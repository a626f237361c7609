"""Slash commands and `!shell` lines: parsed here, carried out through the Core's public members.

`run_command` publishes its output (`exec` for `!cmd`, `info`, or `error`) and returns the same text; a stop
that cuts a `!cmd` or `/compact` short raises Stopped with the text it published.
"""

from __future__ import annotations

import logging
import os
import re
import textwrap
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from ollie.agent import commands_info as info
from ollie.agent.agentswitch import AgentSwitchRefused
from ollie.agent.commands_info import CommandUsageError
from ollie.agent.editorcontext import SLASH, is_command
from ollie.agent.editorcontext import summary as prompt_summary
from ollie.agent.rewind import Rewound
from ollie.agent.shell import run_shell
from ollie.agent.stopping import Stopped, stoppable
from ollie.agent.surface import CommandTarget
from ollie.errors import OllieError
from ollie.escapes import escaped, one_name
from ollie.workspace.errors import WorkspaceError

SHELL_TIMEOUT_S = 120.0
RESTORED_NAMED = 10  # files a rewind's line names, the rest counted: a generated tree named 1,000 (170 rows)
HELP_USAGE_COLUMN = 24  # /help's usage column; a longer usage goes on a line of its own

_log = logging.getLogger(__name__)

Handler = Callable[[CommandTarget, str], Awaitable[str]]

@dataclass(frozen=True, eq=False, repr=False)
class Command:
    """One slash command: how it is written and what it does."""

    usage: str
    summary: str
    handler: Handler
    # Loses or stops what the session holds (history, the session itself): clients confirm first.
    destructive: bool = False


def _no_arg(name: str, arg: str) -> None:
    if arg:
        raise CommandUsageError(f"/{name} takes no arguments (got {arg!r})")


async def cmd_backend(core: CommandTarget, arg: str) -> str:
    """Show the backend, or switch to `arg`."""
    if arg:
        await core.switch_backend(arg)
    return f"backend: {core.backend_said} (model: {core.model_name})"  # a local server by its host and port, as /model


async def cmd_model(core: CommandTarget, arg: str) -> str:
    """Show the model, or switch to `arg`."""
    if arg:
        core.switch_model(arg)
    name = one_name(core.model_name)  # picked from the server's list: its text, on one line as /models shows it
    # By `backend_said`: a local server by the host and port the user set ("(backend: local)" named nothing they set).
    said = f"model: {name} (served by {core.backend_said})"
    try:
        listed = await core.list_models() if arg else []
    except OllieError:  # unreachable: the turn will say so
        listed = []
    if listed and core.model_name not in listed:  # taken all the same: a backend may serve a model it does not list
        said += f"\nwarning: {core.backend_said} does not list {name} (/models lists those it does)"
    return said


async def cmd_agent(core: CommandTarget, arg: str) -> str:
    """Show the agent, or switch to `arg` (fresh runtime, a new conversation: the one before is saved to resume)."""
    if not arg:
        return f"agent: {core.agent_name}"
    try:
        switched = await core.switch_agent(arg)
    except AgentSwitchRefused as exc:
        return f"agent: {core.agent_name} ({exc})"
    said = f"agent: {core.agent_name} (session cleared; model {core.model_name} served by {core.backend_said})"
    return "\n".join([said, *switched.lines(core.resume_how)])


async def cmd_maxsteps(core: CommandTarget, arg: str) -> str:
    """Show or set the tool rounds allowed per turn (0 = unlimited)."""
    if arg:
        if not re.fullmatch(r"\d+", arg):
            raise CommandUsageError(f"/maxsteps takes a whole number ≥ 0, 0 = unlimited (got {arg!r})")
        core.set_max_steps(int(arg))
    steps = core.max_steps
    return f"max steps: {steps}" + (" (unlimited)" if steps == 0 else "")


async def cmd_compact(core: CommandTarget, arg: str) -> str:
    """Compact the history now."""
    _no_arg("compact", arg)
    return str(await core.compact())


async def cmd_clear(core: CommandTarget, arg: str) -> str:
    """Drop the history and the task state (a new conversation: the one before is saved to resume)."""
    _no_arg("clear", arg)
    cleared = await core.clear()
    return "\n".join(["session cleared: history and task state dropped", *cleared.lines(core.resume_how)])


async def cmd_rewind(core: CommandTarget, arg: str) -> str:
    """Files back to before turn n (default: the last) and the conversation cut there; `undo` undoes it."""
    if arg == "undo":
        done = await core.rewind_undo()
        back = f"turn {done.turn}" if done.turns <= done.turn else f"turns {done.turn}–{done.turns}"
        return f"rewind undone: {back} back: {_restored(done, undo=True)}"
    if arg and not re.fullmatch(r"\d+", arg):
        raise CommandUsageError(f"/rewind takes a turn number or 'undo' (got {arg!r})")
    done = await core.rewind(int(arg) if arg else None)
    return (f"rewound to before turn {done.turn}: {_restored(done)}; {_turns(done.turns)} kept. "
            "/rewind undo to undo")


def _turns(count: int) -> str:
    return f"{count or 'no'} turn{'s' * (count != 1)}"


def _restored(done: Rewound, *, undo: bool = False) -> str:
    """The files a rewind (or its `undo`) put back, and the build output it put back too, said apart (the change list
    leaves it out): of each, the first few named, then how many more (a test run's bytecode, a generated tree can be
    many files)."""
    built = _first(done.build_output, 3)
    # An open buffer typed in since the turn's edit keeps it: said, or its next save undid the rewind unseen.
    kept = ", ".join(f"{escaped(b.path, keep='')} ({escaped(b.reason or b.status, keep='')})"
                     for b in done.buffers if b.status != "reverted")
    return f"files restored ({_first(done.files, RESTORED_NAMED) or 'none'})" + (
        f" and build output ({built})" if built else "") + (
        f", but not in the editor: {kept}" + ("" if undo else "; saving writes the rewound edits back") if kept else "")


def _first(paths: Sequence[str], most: int) -> str:
    """The first `most` of `paths` (escaped: a name's line break starts no line of its own), then how many more."""
    return ", ".join(escaped(p, keep="") for p in paths[:most]) + (
        f" and {len(paths) - most} more" if len(paths) > most else "")


async def cmd_kill(core: CommandTarget, arg: str) -> str:
    """Stop the session: interrupt, save, close."""
    _no_arg("kill", arg)
    await core.kill()
    return f"session {core.session_id} killed"


async def cmd_rename(core: CommandTarget, arg: str) -> str:
    """Give the session a title."""
    if not arg:
        raise CommandUsageError("/rn needs a name: /rn <name>")
    await core.rename(arg)
    return f"session renamed to {arg!r}"


async def cmd_cwd(core: CommandTarget, arg: str) -> str:
    """Show the working directory, or change it (relative to the current one, `~` expanded)."""
    if arg:
        try:
            await core.set_cwd(arg)
        except ValueError as exc:
            raise CommandUsageError(f"/cwd: {exc}") from None
    return f"cwd: {core.cwd}"


async def cmd_inject(core: CommandTarget, arg: str) -> str:
    """Add text to the next tool result of the running turn."""
    if not arg:
        raise CommandUsageError("/i needs the text to inject: /i <prompt>")
    core.inject(arg)
    if core.is_running:
        return "injected: the model sees it with the next tool result"
    return "injected: no turn is running, so it was queued as the next prompt"


async def cmd_inject_rewrite(core: CommandTarget, arg: str) -> str:
    """Replace whatever injects are pending with this text."""
    if not arg:
        raise CommandUsageError("/irw needs the text that replaces pending injects: /irw <prompt>")
    core.replace_injects(arg)
    return "pending injects replaced"


async def cmd_queued(core: CommandTarget, arg: str) -> str:
    """List the queued prompts, take back the latest one, or clear them."""
    if arg == "pop":
        if (popped := core.pop_queue()) is None:
            return "queue is empty"
        text, pictures, _ = popped  # its images named: they went with it
        return f"popped: {prompt_summary(text)}" + (f"\n(and its {len(pictures)} image{'s' if len(pictures) != 1 else ''})"
                                                    if pictures else "")
    if arg == "clear":
        count = core.clear_queue()
        return f"cleared {count} queued prompt{'s' if count != 1 else ''}"
    if arg:
        raise CommandUsageError(f"/queued takes nothing, 'pop' or 'clear' (got {arg!r})")
    queued = core.queued()
    if not queued:
        return "queue is empty"
    # Each as the user typed it, with what it is about: not the editor-context blocks the model gets with it.
    return f"queued ({len(queued)}):\n" + "\n".join(f"{i}. {prompt_summary(text)}" for i, text in enumerate(queued, 1))


async def cmd_approval(core: CommandTarget, arg: str) -> str:
    """Show the approval mode, or switch to `arg` (ask, auto-edit, auto, read-only)."""
    if arg:
        try:
            core.set_approval(arg.strip())
        except ValueError as exc:
            raise CommandUsageError(f"/approval: {exc}") from None
    return f"approval: {core.approval}"


async def cmd_help(core: CommandTarget, arg: str) -> str:
    """The command list, or one command's line."""
    name = arg.lstrip("/").lower()
    if name and name in COMMANDS:
        command = COMMANDS[name]
        return f"{command.usage}  {summary_of(command, core.resume_how)}"
    return help_text(core)


COMMANDS: dict[str, Command] = {
    "backend": Command("/backend [name]", "show or switch the LLM backend", cmd_backend),
    "model": Command("/model [name]", "show or switch the model", cmd_model),
    "models": Command("/models", "list the backend's models", info.cmd_models),
    "agent": Command("/agent [name]", "show or switch the agent config (a new conversation; this one is saved to resume)",
                     cmd_agent, destructive=True),
    "agents": Command("/agents", "list the agent configs", info.cmd_agents),
    "approval": Command("/approval [mode]", "show or set which steps ask first: ask, auto-edit, auto, read-only",
                        cmd_approval),
    "maxsteps": Command("/maxsteps [n]", "show or set tool rounds per turn (0 = unlimited)", cmd_maxsteps),
    "compact": Command("/compact", "compact the history now", cmd_compact, destructive=True),
    "context": Command("/context", "context size and message breakdown", info.cmd_context),
    "usage": Command("/usage", "token usage and how full the context is", info.cmd_usage),
    "cost": Command("/cost", "last turn's and the session's cost", info.cmd_cost),
    "history": Command("/history [n]", "the last n messages (default 40)", info.cmd_history),
    "sessions": Command("/sessions", "list saved sessions", info.cmd_sessions),
    "resume": Command("/resume [n|id]", "this directory's sessions, and what resumes one here",
                      info.cmd_resume),
    "clear": Command("/clear", "start a new conversation (the one before is kept to resume)", cmd_clear, destructive=True),
    "rewind": Command("/rewind [n|undo]", "files and conversation back to before turn n (default: the last)",
                      cmd_rewind, destructive=True),
    "plan": Command("/plan", "the agent's task plan: each step done [x], in progress [>] or to do [ ]", info.cmd_plan),
    "changes": Command("/changes [n]", "the files turn n (default: the last) changed, with their hunks",
                       info.cmd_changes),
    "network": Command("/network", "every connection this session's steps made, allowed or denied, with bytes, and "
                       "the hosts allowed for the session", info.cmd_network),
    "kill": Command("/kill", "stop this session", cmd_kill, destructive=True),
    "rn": Command("/rn <name>", "rename the session", cmd_rename),
    "cwd": Command("/cwd [path]", "show or change the working directory", cmd_cwd),
    "skills": Command("/skills", "list available skills", info.cmd_skills),
    "tools": Command("/tools", "list the tools the model is offered", info.cmd_tools),
    "mcp": Command("/mcp [allow <server> | restart [<server>] | add <server> <uri>]",
                   "MCP servers: state, tools, prompts, resources; allow a workspace's server, reconnect, add a resource",
                   info.cmd_mcp),
    "sp": Command("/sp", "show the rendered system prompt", info.cmd_sp),
    "i": Command("/i <prompt>", "inject text into the running turn", cmd_inject),
    "irw": Command("/irw <prompt>", "replace pending injects with this text", cmd_inject_rewrite),
    "queued": Command("/queued [pop|clear]", "list queued prompts, take back the latest, or clear them", cmd_queued),
    "help": Command("/help [command]", "this list", cmd_help),
}


def summary_of(command: Command, resume_how: str) -> str:
    """`command`'s summary in a front end where `resume_how` resumes a session: /resume's says so (an editor's chat
    was told of a terminal's `ollie --session`)."""
    return f"this directory's sessions; resume one with {resume_how}" if command is COMMANDS["resume"] else (
        command.summary)


def help_text(core: CommandTarget) -> str:
    """Every command with its one-line summary."""
    rows = [("!<cmd>", "run a shell command in the session's directory")]
    rows += [(c.usage, summary_of(c, core.resume_how)) for c in COMMANDS.values()]
    # The column fits the usual usages: one longer (/mcp's) takes a line of its own rather than pushing every
    # summary past a terminal's width.
    width = max(len(usage) for usage, _ in rows if len(usage) <= HELP_USAGE_COLUMN)
    lines = ["commands:"]
    for usage, summary in rows:
        if len(usage) > width:
            lines.append(f"  {usage}")
        wrapped = (textwrap.wrap(summary, core.help_width - width - 4) if core.help_width else [summary]) or [""]
        lines += [f"  {(usage if len(usage) <= width and not n else '').ljust(width)}  {part}"
                  for n, part in enumerate(wrapped)]
    return "\n".join(lines)


class ShellFailed(Exception):  # noqa: N818 - an outcome, not an error: its output was published as any `!cmd`'s
    """A `!cmd` that exited non-zero or timed out; its text is the output published."""


async def run_shell_line(core: CommandTarget, command: str) -> tuple[str, bool]:
    """Run `!cmd` in the session's directory (own process group, killed on timeout): output and exit status, and
    whether it exited 0."""
    if not command:
        raise CommandUsageError("! needs a shell command: !<cmd>")
    env = {**os.environ, **core.env, "OLLIE_SESSION_ID": core.session_id, "OLLIE_CWD": str(core.cwd)}
    run = await run_shell(command, cwd=core.cwd, env=env, timeout=SHELL_TIMEOUT_S, merge_stderr=True)
    output = run.stdout.rstrip("\n")
    if run.timed_out:
        output += f"\n[timed out after {SHELL_TIMEOUT_S:g}s; killed]"
    elif run.code != 0:
        output += f"\n[exit {run.code}]"
    return output.lstrip("\n"), run.code == 0 and not run.timed_out


# What other tools call a command of ours (a spelling would point /rename at /resume).
MEANT = {"undo": "rewind", "rename": "rn", "new": "clear", "reset": "clear", "todos": "plan", "tasks": "plan"}


def unknown(name: str) -> str:
    """The answer to `/name`, no command: the closest command's name (a typo's), and where the list is."""
    import difflib  # at the first unknown command, not in the start-up path

    close = [MEANT[name]] if name in MEANT else difflib.get_close_matches(name, COMMANDS, n=1)
    return f"unknown command /{name}{f': did you mean /{close[0]}?' if close else ''} (/help lists the commands)"


async def run_command(core: CommandTarget, line: str) -> str | None:
    """Carry out a slash command or `!cmd`; None when `line` is not a command, else its output."""
    if not is_command(line):
        return None
    text = line.strip()
    if text.startswith("!"):
        try:
            output, ok = await stoppable(run_shell_line(core, text[1:].strip()))
        except (CommandUsageError, OSError) as exc:
            return _publish(core, "error", str(exc))
        except Stopped:  # its process group is dead
            raise Stopped(_publish(core, "exec", "[stopped; killed]", name=text[1:].strip())) from None
        _publish(core, "exec", output, name=text[1:].strip())
        if not ok:  # `ollie -p '!false'`: a script must not take it for success
            raise ShellFailed(output)
        return output
    match = SLASH.fullmatch(text)
    assert match is not None  # is_command said so
    name, arg = match["name"].lower(), (match["arg"] or "").strip()
    command = COMMANDS.get(name)
    if command is None:
        return _publish(core, "error", unknown(name))
    try:
        output = await command.handler(core, arg)
    except CommandUsageError as exc:
        return _publish(core, "error", f"{exc}\nusage: {command.usage}")
    except Stopped as exc:  # `/compact`: what it says it left as it was
        _publish(core, "info", str(exc))
        raise
    except (OllieError, WorkspaceError, ValueError, RuntimeError, OSError) as exc:  # no usage: the line was right
        return _publish(core, "error", f"/{name} failed: {exc}")
    except Exception as exc:  # a bug in one command must not take the session down
        _log.exception("slash command /%s crashed", name)
        return _publish(core, "error", f"/{name} failed unexpectedly: {type(exc).__name__}: {exc}")
    return _publish(core, "info", output)


def _publish(core: CommandTarget, role: str, text: str, *, name: str = "") -> str:
    core.bus.emit(role, text, name=name)
    return text
