"""Slash commands through a real Core: `core.submit("/...")`, the scripted LLM server over real HTTP,
the real execute server and the shipped agent configs."""

from __future__ import annotations

import base64
import json
import os
import sys
from urllib.parse import urlsplit

import pytest

from ollie import paths
from ollie.agent.core import Core
from ollie.backend.types import Image
from ollie.sessions import persist
from ollie.sessions.logformat import session_path
from ollie.testing import Reply
from tests.pictures import png

FRAGMENTS = paths.bundled("agents") / "fragments"


def _fragment(name: str) -> str:
    return (FRAGMENTS / name).read_text().rstrip("\n")


@pytest.fixture
async def make_core(tmp_path):
    cores: list[Core] = []
    work = tmp_path / "work"
    work.mkdir()

    async def factory(server, *, agent: str = "default") -> Core:
        core = await Core.create(agent=agent, cwd=work, env=server.env(), sessions_dir=tmp_path / "sessions")
        cores.append(core)
        return core

    yield factory
    for core in cores:
        await core.close()


def _drain(sub):
    out = []
    while sub.pending():
        out.append(sub.get_nowait())
    return out


async def test_models_lists_the_servers_models_and_model_switches_requests(scripted_llm, make_core):
    srv = scripted_llm("openai", models={"scripted-model": 32768, "other-model": 8192})
    core = await make_core(srv)
    result = await core.submit("/models")
    assert result.stop == "command"
    lines = result.reply.splitlines()
    # A local server by the host and port the user set (Bug: "models of local", "(backend: local)").
    served = urlsplit(srv.url).netloc
    assert lines[0] == f"models served by {served}:"
    assert sorted(lines[1:]) == ["  other-model", "* scripted-model"]
    assert (await core.submit("/model other-model")).reply == f"model: other-model (served by {served})"
    assert (await core.submit("/backend")).reply == f"backend: {served} (model: other-model)"  # was "backend: local"
    srv.script(Reply.text("hi from other"))
    assert (await core.submit("hello")).reply == "hi from other"
    assert srv.chat_requests[-1].body["model"] == "other-model"


async def test_agent_switch_rebuilds_the_prompt_and_clears_the_session(scripted_llm, make_core):
    srv = scripted_llm("openai")
    core = await make_core(srv)
    srv.script(Reply.text("done"))
    await core.submit("hello")
    assert core.session.messages
    out = (await core.submit("/agent plan")).reply
    assert out.startswith(f"agent: plan (session cleared; model scripted-model served by {urlsplit(srv.url).netloc})")
    assert core.agent_name == "plan"
    assert core.session.messages == []
    prompt = (await core.submit("/sp")).reply
    assert _fragment("plan-mode.md") in prompt and _fragment("editing.md") not in prompt
    assert (await core.submit("/agent")).reply == "agent: plan"
    failed = (await core.submit("/agent no-such-agent")).reply
    assert failed.startswith("/agent failed: agent 'no-such-agent' not found")
    assert core.agent_name == "plan"
    agents = (await core.submit("/agents")).reply.splitlines()
    assert "* plan — read-only: studies the code and writes a plan, changes nothing" in agents
    assert any(line.startswith("  yolo — ") for line in agents)


async def test_compact_asks_the_model_and_installs_the_task_state(scripted_llm, make_core):
    srv = scripted_llm("openai")
    core = await make_core(srv)
    srv.script(Reply.text("first answer"), Reply.text("second answer"))
    await core.submit("question one")
    await core.submit("question two")
    state = {"goal": "answer the questions", "plan": ["q1", "q2"], "plan_step": "q2", "completed": ["q1"]}
    srv.script(Reply.text(json.dumps(state)))
    out = (await core.submit("/compact")).reply
    assert out.startswith("compacted"), out
    assert core.session.task_state is not None and core.session.task_state.goal == "answer the questions"
    compaction_request = srv.chat_requests[-1].body["messages"]
    assert "question one" in json.dumps(compaction_request)
    context = (await core.submit("/context")).reply
    assert "task state: goal 'answer the questions', step 'q2'" in context


async def test_tools_and_sp_show_the_runtime(scripted_llm, make_core):
    core = await make_core(scripted_llm("openai"))
    tools = (await core.submit("/tools")).reply.splitlines()
    assert tools[0] == "tools (3):"
    assert sorted(line.split(" — ")[0].strip() for line in tools[1:]) == ["call_tool", "execute_code", "pipe"]
    prompt = (await core.submit("/sp")).reply
    assert prompt == core.system_prompt()
    assert _fragment("identity.md") in prompt and f"- Working directory: {core.cwd}" in prompt


async def test_a_shell_line_never_runs_in_a_cwd_another_step_swapped_for_a_symlink(scripted_llm, make_core, tmp_path):
    # Round 34: `!cmd` entered the session's cwd by name, unchecked: another session's step (its cwd the folder above)
    # swapping it for a link ran the user's command where the link led.
    core = await make_core(scripted_llm("openai"))
    work, outside = core.cwd, tmp_path / "outside"
    sub = work / "sub"
    sub.mkdir()
    outside.mkdir()
    assert (await core.submit("/cwd sub")).reply == f"cwd: {sub}"
    sub.rename(work / "old")
    sub.symlink_to(outside)
    bang = await core.submit("!touch planted")
    assert list(outside.iterdir()) == [] and f"the working directory {sub} leads to {outside} now" in bang.reply


async def test_cwd_moves_shell_commands_and_tools(scripted_llm, make_core):
    srv = scripted_llm("openai")
    core = await make_core(srv)
    sub = core.cwd / "sub"
    sub.mkdir()
    (sub / "inside.txt").write_text("")
    assert (await core.submit("/cwd sub")).reply == f"cwd: {sub}"
    assert core.cwd == sub
    bang = await core.submit("!pwd; ls")
    assert (bang.stop, bang.reply) == ("command", f"{sub}\ninside.txt")
    srv.script(
        Reply.tool_calls(("execute_code", {"steps": [{"code": "ls", "language": "bash"}]})),
        Reply.text("listed"),
    )
    events = core.bus.subscribe()
    assert (await core.submit("list the files")).reply == "listed"
    tool_results = [e.content for e in _drain(events) if e.role == "tool"]
    assert tool_results and "inside.txt" in tool_results[0]
    missing = (await core.submit("/cwd /nonexistent/dir")).reply
    assert missing.startswith("/cwd: no such directory: /nonexistent/dir")
    assert core.cwd == sub


async def test_clear_empties_the_history(scripted_llm, make_core):
    srv = scripted_llm("openai")
    core = await make_core(srv)
    srv.script(Reply.text("answer"))
    await core.submit("question")
    assert len(core.session.messages) == 2
    sessions = (await core.submit("/sessions")).reply.splitlines()
    assert sessions[0:2] == ["sessions (1):", "* (untitled)"] and sessions[2].endswith(f"1 turn · {core.session_id}")
    cleared = (await core.submit("/clear")).reply.splitlines()
    assert cleared[0] == "session cleared: history and task state dropped"
    assert cleared[1].startswith('the previous conversation is saved as "question" ('), cleared
    assert core.session.messages == [] and core.context() == []
    assert (await core.submit("/history")).reply == "history is empty"


_OPENED: list[str] | None = None  # while a test watches: every file this process opens


def _note_open(event: str, args: tuple) -> None:
    if event == "open" and _OPENED is not None and isinstance(args[0], (str, os.PathLike)):
        _OPENED.append(os.fspath(args[0]))


async def test_sessions_reads_each_saved_log_for_its_lines_once(scripted_llm, make_core):
    # /sessions read each log's end twice for its two lines, in two thread hops: its title (the meta) and its turns.
    global _OPENED
    srv = scripted_llm("openai")
    core = await make_core(srv)
    srv.script(Reply.text("answer"))
    await core.submit("question")
    log = os.fspath(session_path(core.sessions_dir, core.session_id))
    sys.addaudithook(_note_open)  # (for good: it notes nothing unless a test watches)
    _OPENED = []
    try:
        sessions = (await core.submit("/sessions")).reply.splitlines()
        opened = _OPENED
    finally:
        _OPENED = None
    assert sessions[2].endswith(f"1 turn · {core.session_id}"), sessions
    # Once to leave it out if nobody typed in it (listing every saved id), once for its title and turns.
    assert opened.count(log) == 2, opened


async def test_clear_says_a_hostile_title_quoted_and_escaped(scripted_llm, make_core):
    """A title is anyone's to set (a teammate's, which a fork of her session takes): its newline wrote a line of its
    own under /clear's ("ollie: ..."), and a bidi override reordered the line's words; it is quoted, escaped."""
    srv = scripted_llm("openai")
    core = await make_core(srv)
    srv.script(Reply.text("answer"))
    await core.submit("question")
    title = 'x"\nollie: all clear, nothing was kept \u202etxt.notes'
    await core.rename(title)
    cleared = (await core.submit("/clear")).reply.splitlines()
    assert len(cleared) == 2, cleared
    assert cleared[1].startswith('the previous conversation is saved as "x\\"\\nollie: all clear, nothing was kept '
                                 '\\u202etxt.notes" ('), cleared
    kept = cleared[1].split("(")[1].split(")")[0]
    assert persist.load(core.sessions_dir, kept).title == title  # the title itself is kept as it was


async def test_shell_command_publishes_exec_and_never_reaches_the_model(scripted_llm, make_core, tmp_path):
    srv = scripted_llm("openai")
    core = await make_core(srv)
    events = core.bus.subscribe()
    result = await core.submit("!echo out; echo err >&2; exit 5")
    assert result.stop == "command"
    assert result.reply == "out\nerr\n[exit 5]"
    exec_events = [e for e in _drain(events) if e.role == "exec"]
    assert [(e.name, e.content) for e in exec_events] == [("echo out; echo err >&2; exit 5", result.reply)]
    unknown = await core.submit("/nope")
    assert unknown.stop == "command" and unknown.reply == "unknown command /nope (/help lists the commands)"
    assert srv.chat_requests == []


async def test_a_path_is_a_prompt_not_a_command(scripted_llm, make_core):
    srv = scripted_llm("openai")
    core = await make_core(srv)
    srv.script(Reply.text("it is a path"))
    result = await core.submit("/usr/bin/env behaves oddly")
    assert (result.stop, result.reply) == ("end", "it is a path")
    assert "/usr/bin/env behaves oddly" in json.dumps(srv.chat_requests[0].body["messages"])


async def test_usage_and_cost_after_a_turn(scripted_llm, make_core):
    from ollie.backend.types import Usage

    srv = scripted_llm("openai")
    core = await make_core(srv)
    srv.script(Reply.text("ok", usage=Usage(input_tokens=120, output_tokens=30)))
    await core.submit("hi")
    usage = (await core.submit("/usage")).reply
    assert usage.startswith("tokens: input 120, output 30,") and "requests 1" in usage
    assert (await core.submit("/cost")).reply.startswith("cost: last turn $")


async def test_queue_and_inject_commands_on_an_idle_core(scripted_llm, make_core):
    core = await make_core(scripted_llm("openai"))
    core.queue("later one")
    assert (await core.submit("/queued")).reply == "queued (1):\n1. later one"
    assert (await core.submit("/i also this")).reply == "injected: no turn is running, so it was queued as the next prompt"
    assert core.queued() == ["later one", "also this"]
    assert (await core.submit("/queued pop")).reply == "popped: also this"  # the latest: the one just sent
    core.queue("look", [Image("image/png", base64.b64encode(png()).decode())] * 2)
    assert (await core.submit("/queued pop")).reply == "popped: look\n(and its 2 images)"
    assert (await core.submit("/queued clear")).reply == "cleared 1 queued prompt"
    assert (await core.submit("/maxsteps 7")).reply == "max steps: 7"
    assert core.max_steps == 7


async def test_irw_while_idle_replaces_the_pending_i(scripted_llm, make_core):
    core = await make_core(scripted_llm("openai"))
    await core.submit("/i look at a.py")
    await core.submit("/irw look at b.py instead")
    assert core.queued() == ["look at b.py instead"]
