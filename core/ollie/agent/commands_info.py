"""The read-only slash commands: what the session, backend, agents, tools and skills look like."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ollie import paths
from ollie.agent.review import TurnChanges
from ollie.agent.surface import CommandTarget
from ollie.agent.taskstate import plan_lines
from ollie.backend.types import Message
from ollie.config import find_agent, list_agents, load_agent_config
from ollie.errors import OllieError
from ollie.escapes import escaped, one_name
from ollie.sandbox import netsaved
from ollie.sessions import location, logindex
from ollie.sessions.types import Info, one_line
from ollie.tools.execute.results import network_line
from ollie.workspace.bounds import LISTED

HISTORY_DEFAULT = 40
HISTORY_LINE_CHARS = 200
SESSIONS_SHOWN = 20
# Hunk lines `/changes` shows in all: a screenful or two; each hunk past it says how many it leaves out.
CHANGES_LINES_MAX = 120
CHANGES_LINE_CHARS = 200  # a minified file's one line would fill the screen


class CommandUsageError(ValueError):
    """A slash command got arguments it cannot use; the message says what it takes."""


def format_context(info: dict[str, int]) -> str:
    """`1234 tokens of 32768 (3.8%)`, or without the limit when it is unknown."""
    tokens, limit = info.get("tokens", 0), info.get("limit", 0)
    if limit:
        return f"{tokens} tokens of {limit} ({100 * tokens / limit:.1f}%)"
    return f"{tokens} tokens (context length unknown)"


def describe_message(message: Message) -> str:
    """One line for a history entry: role, text, tool calls."""
    label = f"tool {message.name}" if message.role == "tool" and message.name else message.role
    parts = [one_line(message.content, HISTORY_LINE_CHARS)] if message.content.strip() else []
    parts += [f"→ {call.name}({one_line(call.arguments, 80)})" for call in message.tool_calls]
    return f"{label}: {' '.join(parts) or '(empty)'}"


async def cmd_models(core: CommandTarget, arg: str) -> str:
    """List the backend's models, the current one marked."""
    models = await core.list_models()
    if not models:
        return f"{core.backend_said} reported no models"
    current = core.model_name
    lines = [f"{'*' if m == current else ' '} {one_name(m)}" for m in models]  # the server's text: one line each
    return f"models served by {core.backend_said}:\n" + "\n".join(lines)


@dataclass(eq=False, repr=False)
class AgentInfo:
    """One agent config found: its name, its description, and why it cannot load (when it cannot)."""

    name: str
    description: str = ""
    error: str = ""
    # Its tool code or commands run outside the sandbox, or its elevated steps run without asking.
    unsandboxed: bool = False


def agent_infos(dirs: list[Path]) -> list[AgentInfo]:
    """Every agent config in `dirs` (a session's `agents_dirs`), by name."""
    infos = []
    for name in list_agents(dirs):
        try:
            config = load_agent_config(find_agent(name, dirs))
            infos.append(AgentInfo(name, config.description, unsandboxed=config.unsandboxed))
        except OllieError as exc:
            infos.append(AgentInfo(name, error=str(exc)))
    return infos


async def cmd_agents(core: CommandTarget, arg: str) -> str:
    """List the agent configs found, the current one marked, with their descriptions."""
    infos = agent_infos(core.agents_dirs)
    if not infos:
        return "no agent configs found in " + ", ".join(str(d) for d in core.agents_dirs)
    lines = []
    for agent in infos:
        description = f"(cannot load: {agent.error})" if agent.error else agent.description
        mark = "*" if agent.name == core.agent_name else " "
        lines.append(f"{mark} {agent.name}" + (f" — {description}" if description else ""))
    return "agents:\n" + "\n".join(lines)


async def cmd_changes(core: CommandTarget, arg: str) -> str:
    """The files turn n (default: the last) changed, with their hunks numbered as undo takes them."""
    if arg and not arg.isdigit():
        raise CommandUsageError(f"/changes takes a turn number (got {arg!r})")
    return _changes_text(await core.review.changes(int(arg) if arg else None, bound=LISTED))


async def cmd_network(core: CommandTarget, arg: str) -> str:
    """Every connection this session's steps made through the egress proxy: host, verdict, bytes, step."""
    if arg:
        raise CommandUsageError(f"/network takes nothing (got {arg!r})")
    log = core.network_log
    if not log:
        text = "no network use in this session (steps under network: proxy go out only through ollie's proxy)"
    else:
        count = sum(c.get("more") or 1 for c in log)
        text = f"network ({count} connection{'s' if count != 1 else ''}):\n" + "\n".join(
            f"{network_line(c)} — {one_line(c.get('step', ''), 80)}" for c in log)
    allowed = core.network_allowed()
    if allowed:
        text += "\nallowed for the rest of this session, unasked:\n" + "\n".join(
            f"{key} — {one_line(why, 120)}" for key, why in allowed.items())
    # Earlier sessions' "Always allow" answers hold here too, unasked: where they are kept is the one way to undo one.
    saved = await netsaved.saved()
    if saved:
        text += (f"\nallowed in every session, unasked (\"Always allow\" answers kept in {netsaved.saved_file()}: "
                 "delete a line to be asked again):\n" + "\n".join(one_line(p, 120) for p in saved))
    return text


async def cmd_context(core: CommandTarget, arg: str) -> str:
    """Context size and the history's breakdown by role."""
    # Counted in a thread over a copy (a slice: no walk on the loop): ~17 ms of the loop at 100k messages.
    messages = core.session.messages[:]
    roles, calls = await asyncio.to_thread(_counts, messages)
    breakdown = ", ".join(f"{role} {n}" for role, n in sorted(roles.items()))
    lines = [
        f"context: {format_context(core.context_info())}",
        f"messages: {len(messages)}" + (f" ({breakdown})" if breakdown else ""),
        f"tool calls this session: {calls}",
        f"system prompt: {len(core.system_prompt())} chars",
    ]
    task_state = core.session.task_state
    if task_state is not None:
        lines.append(f"task state: goal {one_line(task_state.goal, 80)!r}, step {one_line(task_state.plan_step, 80)!r}")
    lines += [f"warning: {w}" for w in core.setup_warnings]
    return "\n".join(lines)


def _counts(messages: list[Message]) -> tuple[Counter[str], int]:
    """The messages of each role, and the tool calls."""
    return Counter(m.role for m in messages), sum(len(m.tool_calls) for m in messages)


async def cmd_usage(core: CommandTarget, arg: str) -> str:
    """Token totals and how full the context is."""
    info = core.usage_info()
    return (f"tokens: input {info['input']}, output {info['output']}, cached input {info['cachedInput']}, "
            f"cache writes {info['cacheCreation']}, requests {info['requests']}\n"
            f"context: {format_context(core.context_info())}")


async def cmd_plan(core: CommandTarget, arg: str) -> str:
    """The agent's task plan whole, a line a step."""
    if not core.plan:
        return "no plan: the agent keeps one with its task_* tools when a task has several steps"
    return "\n".join(["plan:", *(f"  {line}" for line in plan_lines(core.plan))])


async def cmd_cost(core: CommandTarget, arg: str) -> str:
    """The last turn's and the session's cost."""
    info = core.cost_info()
    return f"cost: last turn {dollars(info['lastTurn'])}, session {dollars(info['session'])}"


def dollars(cost: float) -> str:
    """A cost as every client says it: cents, or 4 places under a cent (`$0.00`, `$0.0012`, `$1.50`)."""
    return f"${cost:.4f}" if 0 < cost < 0.01 else f"${cost:.2f}"


async def cmd_history(core: CommandTarget, arg: str) -> str:
    """The last N messages (default 40), one line each."""
    count = HISTORY_DEFAULT
    if arg:
        if not arg.isdigit() or int(arg) == 0:
            raise CommandUsageError(f"/history takes a positive number of messages (got {arg!r})")
        count = int(arg)
    messages = core.session.messages
    if not messages:
        return "history is empty"
    start = max(0, len(messages) - count)
    lines = [f"#{i} {describe_message(m)}" for i, m in enumerate(messages[start:], start)]
    header = f"history: last {len(lines)} of {len(messages)} messages" if start else f"history: {len(lines)} messages"
    return header + "\n" + "\n".join(lines)


def _created(session_id: str) -> float | None:
    """The creation time (seconds since the epoch) a session id encodes (its nanosecond prefix)."""
    try:
        return int(session_id.split("-", 1)[0]) / 1e9
    except ValueError:
        return None


def _ago(seconds: float | None) -> str:
    """How long ago: `just now`, `5 min ago`, `2 h ago`, `yesterday`, `3 days ago`, else the date (as in Neovim)."""
    if seconds is None:
        return "?"
    age = max(0.0, time.time() - seconds)
    for limit, say in ((60, "just now"), (3600, f"{age // 60:.0f} min ago"), (86400, f"{age // 3600:.0f} h ago"),
                       (2 * 86400, "yesterday"), (30 * 86400, f"{age // 86400:.0f} days ago")):
        if age < limit:
            return say
    return time.strftime("%Y-%m-%d", time.localtime(seconds))


async def cmd_sessions(core: CommandTarget, arg: str) -> str:
    """The saved sessions, newest first, the current one marked: title; when last active, turns, id (to resume)."""
    directory = Path(core.sessions_dir)
    # A directory listing, or a query of OLLIE_STORE's database: off the loop, which other sessions share.
    ids = list(reversed(await asyncio.to_thread(logindex.list_saved, directory)))
    if not ids:
        url = location.store_url()
        return f"no saved sessions in {location.redact(url) if url else directory}"
    more = f"\n  … and {len(ids) - SESSIONS_SHOWN} older" if len(ids) > SESSIONS_SHOWN else ""
    listed = "\n".join(f"{head}\n    {detail}" for head, detail in await _session_lines(core, ids[:SESSIONS_SHOWN]))
    return (f"sessions ({len(ids)}):\n" + listed + more
            + f"\nresume one with {core.resume_how}")


async def cmd_resume(core: CommandTarget, arg: str) -> str:
    """This directory's recent sessions, numbered, and how to resume one."""
    ids = await asyncio.to_thread(sessions_in, Path(core.sessions_dir), core.cwd)
    if not ids:
        return f"no saved session was started in {core.cwd}"
    lines = [f"{n:>2}. {head}\n      {detail}" for n, (head, detail) in enumerate(await _session_lines(core, ids), 1)]
    return f"sessions started in {core.cwd} ({len(ids)}):\n" + "\n".join(lines) + f"\nresume one with {core.resume_how}"


def sessions_in(directory: Path, cwd: Path, limit: int = SESSIONS_SHOWN) -> list[str]:
    """The ids of the newest saved sessions (at most `limit`) started in `cwd`, newest first."""
    return list(itertools.islice(_started_in(directory, cwd), limit))


def _started_in(directory: Path, cwd: Path) -> Iterator[str]:
    """The ids of the saved sessions started in `cwd`, newest first."""
    wanted = str(cwd.resolve())
    # Ids sort by creation time; unprompted starts are not saved, so not listed.
    for session_id, meta in reversed(logindex.saved_metas(directory)):
        if meta.get("cwd") == wanted:
            yield session_id


def latest_session(cwd: Path) -> str | None:
    """The id of the newest session this user saved in `cwd` (`ollie -c`, the daemon's `continueSession`), or None.

    Never a teammate's shared session: theirs to list and pick, not to go on with unasked (one saved as started in
    the user's directory was resumed as theirs, its history the model's context)."""
    found = _started_in(paths.sessions_dir(), cwd)
    if not location.store_url():
        return next(found, None)  # session files: the user's own
    from ollie.sessions.errors import NotFoundError
    from ollie.sessions.registry import Registry
    from ollie.sessions.types import Scope, os_user

    user = os_user()
    registry = Registry()
    try:
        for session_id in found:
            try:
                if registry.get(Scope(user_id=user), session_id).user_id == user:
                    return session_id
            except NotFoundError:
                return session_id  # no record: a log the store shows only to its one writer (`pg.log._VISIBLE`)
            except OllieError:
                continue  # whose it is cannot be told: not gone on with unasked
    finally:
        registry.close()
    return None


async def _session_lines(core: CommandTarget, ids: list[str]) -> list[tuple[str, str]]:
    """Two lines per session, each within 80 columns: its title, the current one marked; then what tells sessions of
    one title apart (when last active, how many turns; a shared one's team) and its id."""
    directory = Path(core.sessions_dir)
    # Each log's last meta (the title of one titled without a registry) and turns (a teammate's too): its end, read.
    records, ends = await asyncio.to_thread(lambda: (
        _records(ids), {sid: logindex.meta_and_turns(directory, sid) for sid in ids}))
    lines = []
    for sid in ids:
        info, (meta, turns) = records.get(sid), ends[sid]
        moment = info and (info.last_active or info.created_at)
        saved = meta.get("title")
        title = info.title if info else saved if isinstance(saved, str) else ""
        detail = [_ago(moment.timestamp() if moment else _created(sid)), f"{turns} turn{'s' * (turns != 1)}"]
        if info and info.team:
            detail.append(f"team {info.team}, {info.user_id}'s")
        lines.append((f"{'*' if sid == core.session_id else ' '} {one_line(title or '(untitled)', 70)}",
                      " · ".join([*detail, sid])))
    return lines


def _records(session_ids: list[str]) -> dict[str, Info]:
    """The records (title, last activity, team) of these sessions that the registry has for this user."""
    from ollie.sessions.registry import Registry
    from ollie.sessions.types import Scope, os_user

    try:
        registry = Registry()
    except OllieError:
        return {}  # no registry to read: the listing goes on with what the logs say
    found: dict[str, Info] = {}
    try:
        for session_id in session_ids:
            with contextlib.suppress(OllieError):  # none (a registry call failed when it was made), or not ours
                found[session_id] = registry.get(Scope(user_id=os_user()), session_id)
    finally:
        registry.close()
    return found


async def cmd_skills(core: CommandTarget, arg: str) -> str:
    """The skills found (directories with a SKILL.md)."""
    from ollie.agent.skills import find_skills  # YAML (their front matter): only when someone asks

    skills = find_skills()
    if not skills:
        return f"no skills found (add directories with a SKILL.md under {paths.config_dir() / 'skills'})"
    lines = [f"  {s.name}" + (f" — {s.description}" if s.description else "") + f"  ({s.path})" for s in skills]
    return "skills:\n" + "\n".join(lines)


async def cmd_tools(core: CommandTarget, arg: str) -> str:
    """The tools the model is offered, with the first line of each description."""
    tools = core.tools()
    if not tools:
        return f"no tools: agent {core.agent_name} has tools disabled or no tool server offers any"
    lines = []
    for tool in tools:
        first = tool.description.strip().splitlines()[0] if tool.description.strip() else ""
        lines.append(f"  {tool.name}" + (f" — {first}" if first else ""))
    return f"tools ({len(tools)}):\n" + "\n".join(lines)


async def cmd_mcp(core: CommandTarget, arg: str) -> str:
    """The session's MCP servers: state (starting, ready, failed with why), tools and prompts; `allow`, `restart`."""
    words = arg.split()
    if words[:1] == ["restart"] and len(words) <= 2:
        return await core.mcp_restart(words[1] if len(words) == 2 else "")
    if words[:1] == ["allow"] and len(words) == 2:
        return await core.mcp_allow(words[1])
    if words[:1] == ["add"] and len(words) == 3:
        return await core.mcp_add_resource(words[1], words[2])
    if arg:
        raise CommandUsageError(f"/mcp takes nothing, `allow <server>`, `restart [<server>]` or `add <server> <uri>` "
                                f"(got {arg!r})")
    servers = await core.mcp_check()
    problems = [f"warning: {w}" for w in core.setup_warnings if w.startswith("MCP")]
    if not servers:
        return "\n".join([*problems, "no MCP servers: add them to mcp.json in ollie's config dir (see the README)"])
    lines = []
    for s in servers:  # what the server lists is its own text: each name on one line (it forged a server, a tool)
        state = s["state"] + (f": {s['error']}" if s["error"] and s["state"] != "ready" else "")
        restarts = f", restarted {s['restarts']}x" if s["restarts"] else ""
        lines.append(f"  {s['name']} ({s['transport']}{restarts}): {state}")
        for tool in s["tools"]:
            lines.append(f"    {tool['name']} [{tool['kind']}]" + (f" — {one_name(tool['description'].splitlines()[0])}"
                                                                  if tool["description"].strip() else ""))
        for prompt in s["prompts"]:
            args = "".join(f" {one_name(a)}=..." for a in prompt["arguments"])
            lines.append(f"    /mcp:{s['name']}:{one_name(prompt['name'])}{args}")
        for resource in s["resources"]:
            name = f" — {one_name(resource['name'])}" if resource["name"] else ""
            lines.append(f"    /mcp add {s['name']} {one_name(resource['uri'])}{name}")
    return "\n".join([*problems, f"MCP servers ({len(servers)}):", *lines])


async def cmd_sp(core: CommandTarget, arg: str) -> str:
    """The rendered system prompt."""
    return core.system_prompt() or "(the system prompt is empty)"


def _changes_text(turn_changes: TurnChanges) -> str:
    """The `/changes` text: each file with its status and hunks (their lines, up to a bound), numbered as undo
    takes them."""
    if not turn_changes.changes:
        return f"turn {turn_changes.turn}: no files changed"
    lines = [f"turn {turn_changes.turn}: {len(turn_changes.changes) + turn_changes.more} file(s) changed"]
    budget = CHANGES_LINES_MAX
    from ollie.workspace.diff import line_counts

    for change in turn_changes.changes:
        added, removed = line_counts(change)
        what = "binary" if change.binary else f"+{added} -{removed}"
        lines.append(f"{change.status} {escaped(change.path, keep='')} ({what})")  # a name's lines are no hunk's
        for i, hunk in enumerate(change.hunks):
            lines.append(f"  [{i}] @@ -{hunk.old_start},{hunk.old_lines} +{hunk.new_start},{hunk.new_lines} @@")
            shown = hunk.lines[:budget]
            budget -= len(shown)
            lines += [f"      {_cut(line.rstrip(chr(13) + chr(10)))}" for line in shown]
            if len(hunk.lines) > len(shown):  # the rest: the editor's review, or `ollie/changes {turn, path}`
                lines.append(f"      … {len(hunk.lines) - len(shown)} more line(s)")
    if turn_changes.more:
        lines.append(f"... and {turn_changes.more} more file(s), not listed")
    return "\n".join(lines)


def _cut(line: str) -> str:
    return line if len(line) <= CHANGES_LINE_CHARS else f"{line[:CHANGES_LINE_CHARS]}… ({len(line)} characters)"
