"""Slash commands against a small stand-in core: parsing, every command's output, bad arguments."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import pytest

from ollie.agent import commands
from ollie.agent.commands import COMMANDS, ShellFailed, is_command, run_command
from ollie.agent.commands_info import dollars
from ollie.agent.core import TERMINAL_RESUME
from ollie.agent.editorcontext import context_block
from ollie.agent.events import Bus
from ollie.agent.surface import Switched
from ollie.backend.types import Image, Message, ToolCall
from ollie.errors import ConfigError
from ollie.escapes import one_name
from ollie.sessions import persist
from ollie.sessions.session import Session, TaskState
from ollie.tools.base import ToolInfo
from tests.procs import timed_out_once_begun


class FakeCore:
    """The Core members the commands use, recording what they were asked to do."""

    def __init__(self, tmp_path: Path) -> None:
        self.bus = Bus()
        self.session = Session()
        self.session_id = self.session.id
        self.agent_name = "default"
        self.backend_said = "openai"
        self.model_name = "gpt-test"
        self.cwd = tmp_path
        self.sessions_dir = tmp_path / "sessions"
        self.agents_dirs = [tmp_path / "agents"]
        self.setup_warnings: list[str] = []
        self.max_steps = 30
        self.resume_how, self.help_width = TERMINAL_RESUME, 80
        self.is_running = False
        self.injects: list[str] = []
        self.queue_items: list[str] = []
        self.calls: list[tuple] = []
        self.prompt = "SYSTEM PROMPT"
        self.tool_infos = [ToolInfo("call_tool", "Run named tool scripts.\nMore detail.", server="execute"),
                           ToolInfo("pipe", "", server="execute")]
        self.env = {"FROM_CORE": "yes"}

    async def switch_agent(self, name: str) -> Switched:
        if name == "missing":
            raise ConfigError("agent 'missing' not found")
        self.calls.append(("switch_agent", name))
        self.agent_name = name
        self.session.clear()
        return Switched(["tool server lacks restrictions"], "1700000000000000000-0a0b0c", "say hi")

    async def switch_backend(self, name: str) -> None:
        self.calls.append(("switch_backend", name))
        self.backend_said = name

    def switch_model(self, name: str) -> None:
        self.model_name = name

    def set_max_steps(self, n: int) -> None:
        if n < 0:
            raise ValueError("negative")
        self.max_steps = n

    async def compact(self) -> str:
        return "compacted: 12 messages -> 4"

    async def clear(self) -> Switched:
        if self.is_running:
            raise RuntimeError("cannot clear while a turn runs")
        self.session.clear()
        return Switched([])

    def tools(self) -> list[ToolInfo]:
        return self.tool_infos

    async def rename(self, title: str) -> None:
        self.calls.append(("rename", title))

    async def kill(self) -> None:
        self.calls.append(("kill",))

    def inject(self, text: str) -> None:
        self.injects.append(text)

    def replace_injects(self, text: str) -> None:
        self.injects = [text]

    def queued(self) -> list[str]:
        return list(self.queue_items)

    def pop_queue(self) -> tuple[str, tuple[Image, ...], tuple[dict[str, Any], ...]] | None:
        return (self.queue_items.pop(), (), ()) if self.queue_items else None

    def clear_queue(self) -> int:
        count = len(self.queue_items)
        self.queue_items.clear()
        return count

    async def set_cwd(self, path: Path | str) -> None:
        target = self.cwd / os.path.expanduser(path)  # as the Core's: relative from the cwd
        if not target.is_dir():
            raise ValueError(f"no such directory: {target}")
        self.cwd = target

    def system_prompt(self) -> str:
        return self.prompt

    def context_info(self) -> dict[str, int]:
        return {"tokens": 1234, "limit": 32768}

    def usage_info(self) -> dict[str, int]:
        return {"input": 1000, "output": 200, "cachedInput": 50, "cacheCreation": 7, "requests": 3}

    def cost_info(self) -> dict[str, float]:
        return {"lastTurn": 0.0012, "session": 0.0456}

    async def list_models(self) -> list[str]:
        return ["gpt-small", "gpt-test"]


@pytest.fixture
def core(tmp_path):
    return FakeCore(tmp_path)


@pytest.fixture
def events(core):
    return core.bus.subscribe()


def _drain(sub):
    out = []
    while sub.pending():
        out.append(sub.get_nowait())
    return out


# --- parsing ---------------------------------------------------------------


@pytest.mark.parametrize("line", ["/help", "  /model gpt-4  ", "!ls", "/i fix the\nsecond thing", "/Unknown"])
def test_is_command(line):
    assert is_command(line)


@pytest.mark.parametrize("line", ["hello", "/usr/bin/python crashes, why?", "/", " ", "what does /help do?"])
def test_is_not_command(line):
    assert not is_command(line)


async def test_not_a_command_returns_none_and_publishes_nothing(core, events):
    assert await run_command(core, "please fix the bug") is None
    assert _drain(events) == []


async def test_an_unknown_command_says_so_and_suggests_the_closest_not_the_whole_list(core, events):
    # It printed the whole /help list (40 lines) after one typo.
    assert await run_command(core, "/rewnd 2") == "unknown command /rewnd: did you mean /rewind? (/help lists the commands)"
    assert [e.role for e in _drain(events)] == ["error"]
    assert await run_command(core, "/frobnicate now") == "unknown command /frobnicate (/help lists the commands)"


async def test_help_lists_every_command(core, events):
    out = await run_command(core, "/help")
    for command in COMMANDS.values():
        assert command.usage in out
    assert "!<cmd>" in out
    assert _drain(events)[0].role == "info"
    assert await run_command(core, "/help maxsteps") == f"{COMMANDS['maxsteps'].usage}  {COMMANDS['maxsteps'].summary}"


async def test_command_names_are_case_insensitive(core):
    assert await run_command(core, "/MODEL") == "model: gpt-test (served by openai)"


# --- !cmd ------------------------------------------------------------------


async def test_shell_runs_in_cwd_publishes_exec_and_returns_output(core, events, tmp_path):
    (tmp_path / "marker.txt").write_text("")
    out = await run_command(core, "!ls; echo err >&2; echo $FROM_CORE $OLLIE_SESSION_ID")
    assert out == f"marker.txt\nerr\nyes {core.session_id}"
    [event] = _drain(events)
    assert (event.role, event.name, event.content) == ("exec", "ls; echo err >&2; echo $FROM_CORE $OLLIE_SESSION_ID", out)


async def test_shell_nonzero_exit_is_reported(core, events):
    with pytest.raises(ShellFailed) as failed:  # what `ollie -p` exits 1 on
        await run_command(core, "!echo partial; exit 3")
    assert str(failed.value) == "partial\n[exit 3]" == _drain(events)[0].content


async def test_shell_timeout_kills_the_command(core, monkeypatch: pytest.MonkeyPatch):
    def run(timeout: float) -> Awaitable[str | None]:
        monkeypatch.setattr(commands, "SHELL_TIMEOUT_S", timeout)  # 120 s: a test would wait that long
        # The sleep's 10 minutes: a command not killed at its timeout runs past the ceiling.
        return asyncio.wait_for(shell_output("!echo begun; sleep 600"), 60)

    async def shell_output(line: str) -> str | None:
        try:
            return await run_command(core, line)
        except ShellFailed as exc:  # as a command that timed out ends
            return str(exc)

    out = await timed_out_once_begun(run, lambda out: out is not None and out.startswith("begun"), first_s=0.5)
    assert out is not None and out.startswith("begun") and "[timed out after " in out


async def test_empty_shell_command_is_an_error(core, events):
    assert (await run_command(core, "!  ")).startswith("! needs a shell command")
    assert _drain(events)[0].role == "error"


# --- backend / model / agent -----------------------------------------------


async def test_backend_show_and_switch(core):
    assert await run_command(core, "/backend") == "backend: openai (model: gpt-test)"
    assert await run_command(core, "/backend anthropic") == "backend: anthropic (model: gpt-test)"
    assert core.calls == [("switch_backend", "anthropic")]


async def test_model_show_and_switch(core):
    assert await run_command(core, "/model") == "model: gpt-test (served by openai)"
    assert await run_command(core, "/model gpt-small") == "model: gpt-small (served by openai)"
    assert core.model_name == "gpt-small"
    # A name the backend does not list (a typo) is taken, and said at once (Bug: said nothing until the next prompt
    # failed; a backend may serve a model it does not list).
    assert await run_command(core, "/model gpt-smal") == (
        "model: gpt-smal (served by openai)\nwarning: openai does not list gpt-smal (/models lists those it does)")
    assert core.model_name == "gpt-smal"
    # An id picked from a hostile server's list (the editors' pickers send it back as it is) is said as /models says
    # it: it printed as it came, its OSC 52 obeyed by the terminal, its U+202E reversing the answer's line.
    hostile = "m\x1b]52;c;eA==\x07\u202eid"
    said = await run_command(core, f"/model {hostile}")
    assert core.model_name == hostile
    shown = one_name(hostile)
    assert said == f"model: {shown} (served by openai)\nwarning: openai does not list {shown} (/models lists those it does)"
    assert said and "\x1b" not in said and "\u202e" not in said


async def test_models_marks_the_current_one(core):
    assert await run_command(core, "/models") == "models served by openai:\n  gpt-small\n* gpt-test"


async def test_agent_show_switch_and_failure(core, events):
    assert await run_command(core, "/agent") == "agent: default"
    core.session.messages.append(Message("user", "hi"))
    out = await run_command(core, "/agent coding")
    assert out.splitlines() == [
        "agent: coding (session cleared; model gpt-test served by openai)",
        'the previous conversation is saved as "say hi" (1700000000000000000-0a0b0c): resume it with '
        "`/resume <n|id>` (or a new run: `ollie --session <id>`)",
        "warning: tool server lacks restrictions",
    ]
    assert core.session.messages == []
    _drain(events)
    out = await run_command(core, "/agent missing")
    assert out == "/agent failed: agent 'missing' not found"
    assert core.agent_name == "coding"
    assert _drain(events)[0].role == "error"


async def test_agents_lists_configs_with_descriptions(core):
    agents = core.agents_dirs[0]
    agents.mkdir()
    (agents / "coding.json").write_text('{"description": "writes code"}')
    (agents / "default.json").write_text('{"prompt": "x"}')
    (agents / "broken.json").write_text('{"maxSteps": "many"}')
    out = await run_command(core, "/agents")
    lines = out.splitlines()
    assert lines[0] == "agents:"
    assert lines[1].startswith("  broken — (cannot load:") and "maxSteps" in lines[1]
    assert lines[2:] == ["  coding — writes code", "* default"]


# --- maxsteps / compact / clear / kill / rn ----------------------------------


async def test_maxsteps_show_set_and_reject_bad_values(core, events):
    assert await run_command(core, "/maxsteps") == "max steps: 30"
    assert await run_command(core, "/maxsteps 0") == "max steps: 0 (unlimited)"
    assert core.max_steps == 0
    for bad in ("abc", "-1", "2.5"):
        out = await run_command(core, f"/maxsteps {bad}")
        assert out == f"/maxsteps takes a whole number ≥ 0, 0 = unlimited (got {bad!r})\nusage: /maxsteps [n]"
    assert core.max_steps == 0
    assert [e.role for e in _drain(events)] == ["info", "info", "error", "error", "error"]


async def test_compact_returns_what_core_did(core):
    assert await run_command(core, "/compact") == "compacted: 12 messages -> 4"
    assert (await run_command(core, "/compact now")).startswith("/compact takes no arguments")


async def test_clear_drops_history_and_refuses_while_running(core):
    core.session.messages.append(Message("user", "hi"))
    core.session.task_state = TaskState(goal="g")
    assert await run_command(core, "/clear") == "session cleared: history and task state dropped"
    assert core.session.messages == [] and core.session.task_state is None
    core.is_running = True
    assert await run_command(core, "/clear") == "/clear failed: cannot clear while a turn runs"


async def test_kill_and_rename(core):
    assert await run_command(core, "/kill") == f"session {core.session_id} killed"
    assert await run_command(core, "/rn  fix the parser ") == "session renamed to 'fix the parser'"
    assert core.calls == [("kill",), ("rename", "fix the parser")]
    assert await run_command(core, "/rn") == "/rn needs a name: /rn <name>\nusage: /rn <name>"


# --- cwd -------------------------------------------------------------------


async def test_cwd_show_relative_home_and_missing(core, tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    assert await run_command(core, "/cwd") == f"cwd: {tmp_path}"
    assert await run_command(core, "/cwd sub") == f"cwd: {tmp_path / 'sub'}"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert await run_command(core, "/cwd ~") == f"cwd: {tmp_path}"
    out = await run_command(core, "/cwd /nonexistent/dir")
    assert out == "/cwd: no such directory: /nonexistent/dir\nusage: /cwd [path]"
    assert core.cwd == tmp_path


# --- inject / queue --------------------------------------------------------


async def test_inject_and_inject_rewrite(core):
    core.is_running = True
    assert await run_command(core, "/i also run the tests") == "injected: the model sees it with the next tool result"
    assert await run_command(core, "/i and lint") == "injected: the model sees it with the next tool result"
    assert core.injects == ["also run the tests", "and lint"]
    assert await run_command(core, "/irw only lint") == "pending injects replaced"
    assert core.injects == ["only lint"]
    assert (await run_command(core, "/i")).startswith("/i needs the text to inject")
    assert (await run_command(core, "/irw")).startswith("/irw needs the text")


async def test_queued_list_pop_clear(core):
    assert await run_command(core, "/queued") == "queue is empty"
    core.queue_items = ["first", "second", "third"]
    assert await run_command(core, "/queued") == "queued (3):\n1. first\n2. second\n3. third"
    assert await run_command(core, "/queued pop") == "popped: third"
    assert await run_command(core, "/queued clear") == "cleared 2 queued prompts"
    assert await run_command(core, "/queued pop") == "queue is empty"
    assert (await run_command(core, "/queued shuffle")).startswith("/queued takes nothing, 'pop' or 'clear'")


async def test_queued_prompts_show_their_context_blocks_as_labels_where_they_stand(core):
    # Bug: `/queued` printed each prompt as the model gets it: `<editor-context>` blocks, file headers and all.
    notes = context_block("File: notes.txt (plaintext)", body="tabs\n")
    style = context_block("File: style.txt (plaintext)\nShowing lines 2-3:", body="x\n")
    core.queue_items = ["plain", f"{notes}\n\nUse tabs.\n\n{style}\n\nAnd wide ones."]
    listed = await run_command(core, "/queued")
    assert listed == "queued (2):\n1. plain\n2. [notes.txt] Use tabs.\n[style.txt:2-3] And wide ones."
    assert await run_command(core, "/queued pop") == "popped: [notes.txt] Use tabs.\n[style.txt:2-3] And wide ones."


# --- information -------------------------------------------------------------


async def test_context_usage_cost(core):
    core.session.messages += [
        Message("user", "hi"),
        Message("assistant", "", tool_calls=[ToolCall("1", "pipe")]),
        Message("tool", "ok", tool_call_id="1", name="pipe"),
    ]
    core.session.task_state = TaskState(goal="ship it", plan_step="write tests")
    out = await run_command(core, "/context")
    assert out.splitlines() == [
        "context: 1234 tokens of 32768 (3.8%)",
        "messages: 3 (assistant 1, tool 1, user 1)",
        "tool calls this session: 1",
        "system prompt: 13 chars",
        "task state: goal 'ship it', step 'write tests'",
    ]
    assert await run_command(core, "/usage") == (
        "tokens: input 1000, output 200, cached input 50, cache writes 7, requests 3\n"
        "context: 1234 tokens of 32768 (3.8%)"
    )
    # Dollars as VS Code's status bar and Neovim's statusline say them: cents, 4 places under a cent.
    assert await run_command(core, "/cost") == "cost: last turn $0.0012, session $0.05"
    assert [dollars(c) for c in (0, 0.00004, 0.01, 1.5)] == ["$0.00", "$0.0000", "$0.01", "$1.50"]


async def test_history_is_bounded_and_one_line_per_message(core):
    assert await run_command(core, "/history") == "history is empty"
    core.session.messages += [Message("user", f"message {i}\nwith a second line") for i in range(50)]
    core.session.messages.append(Message("assistant", "x" * 500, tool_calls=[ToolCall("c", "call_tool", '{"a":1}')]))
    out = (await run_command(core, "/history")).splitlines()
    assert out[0] == "history: last 40 of 51 messages"
    assert len(out) == 41
    assert out[1] == "#11 user: message 11 with a second line"
    assert out[-1].startswith("#50 assistant: xxx") and out[-1].endswith('→ call_tool({"a":1})')
    assert len(out[-1]) < 300
    assert (await run_command(core, "/history 2")).splitlines()[0] == "history: last 2 of 51 messages"
    assert (await run_command(core, "/history zero")).startswith("/history takes a positive number")


async def test_sessions_lists_saved_newest_first(core):
    assert await run_command(core, "/sessions") == f"no saved sessions in {core.sessions_dir}"
    older = Session(id="1700000000000000000-0a0b0c")  # new_session_id's form, made in 2023
    older.messages.append(Message("user", "old"))
    persist.SessionFile(core.sessions_dir, older.id).save(older)
    core.session.messages.append(Message("user", "now"))
    persist.SessionFile(core.sessions_dir, core.session_id).save(core.session)
    core.session.title = "fix the calculator"
    persist.SessionFile(core.sessions_dir, core.session_id).save(core.session)
    lines = (await run_command(core, "/sessions")).splitlines()
    assert lines[0] == "sessions (2):"
    # What (its title), the current one marked; when, how many turns, and the id to resume it with.
    assert lines[1] == "* fix the calculator", lines
    assert re.fullmatch(rf"    (just now|\d+ min ago) · 0 turns · {core.session_id}", lines[2]), lines
    assert lines[3] == "  (untitled)" and re.fullmatch(rf"    2023-11-\d\d · 0 turns · {older.id}", lines[4]), lines
    assert lines[5] == f"resume one with {TERMINAL_RESUME}", lines  # how to come back to one


async def test_tools_and_sp(core):
    assert await run_command(core, "/tools") == "tools (2):\n  call_tool — Run named tool scripts.\n  pipe"
    core.tool_infos = []
    assert (await run_command(core, "/tools")).startswith("no tools: agent default")
    assert await run_command(core, "/sp") == "SYSTEM PROMPT"
    core.prompt = ""
    assert await run_command(core, "/sp") == "(the system prompt is empty)"


async def test_skills_lists_skill_directories(core, tmp_path, monkeypatch):
    monkeypatch.setenv("OLLIE_CONFIG_DIR", str(tmp_path / "cfg"))
    assert (await run_command(core, "/skills")).startswith("no skills found")
    skills = tmp_path / "cfg" / "skills"
    (skills / "pdf").mkdir(parents=True)
    (skills / "pdf" / "SKILL.md").write_text("---\nname: pdf-tools\ndescription: Read and fill PDF forms.\n---\n# PDF\n")
    (skills / "review").mkdir()
    (skills / "review" / "SKILL.md").write_text("# Code review\n\nReview a diff for bugs\nand style.\n")
    (skills / "lint").mkdir()
    (skills / "lint" / "SKILL.md").write_text("#\n# Lint the tree\n")  # no text: its first heading says it
    (skills / "empty-dir").mkdir()
    out = (await run_command(core, "/skills")).splitlines()
    assert out[0] == "skills:"
    assert out[1] == f"  lint — Lint the tree  ({skills / 'lint'})"
    assert out[2] == f"  pdf-tools — Read and fill PDF forms.  ({skills / 'pdf'})"
    assert out[3] == f"  review — Review a diff for bugs  ({skills / 'review'})"
    assert len(out) == 4


async def test_every_command_is_covered_by_these_tests():
    tested = {
        "backend", "model", "models", "agent", "agents", "maxsteps", "compact", "context", "usage", "cost",
        "history", "sessions", "clear", "kill", "rn", "cwd", "skills", "tools", "sp", "i", "irw", "queued", "help",
        "changes", "rewind",  # through a real Core in tests/agent/test_review.py
        "resume",  # at a real terminal in tests/lsp/test_cli_pty.py
        "plan",  # at a real terminal in tests/lsp/test_cli_plan.py
        "approval",  # through the daemon in tests/lsp/test_approval.py
        "mcp",  # through the daemon in tests/lsp/test_mcp.py
        "network",  # through a real Core and a real step in tests/agent/test_core_network.py
    }
    assert set(COMMANDS) == tested
