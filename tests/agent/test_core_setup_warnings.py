"""Setup warnings (a failed prompt command, a tool server that cannot list its tools) reach the user."""

from __future__ import annotations

from pathlib import Path

from agentkit import FAST_LIMITS, ToyServer, drain, roles, write_agent

from ollie.agent.core import Core
from ollie.agent.limits import LoopLimits
from ollie.testing import Reply
from ollie.tools.dispatcher import Dispatcher


class BrokenServer:
    """A tool server whose tool list cannot be read (a crashed MCP server, say)."""

    def list_tools(self):
        raise RuntimeError("connection reset by the tool server")

    async def call(self, tool, args):
        raise AssertionError("never called")


async def test_a_failed_prompt_command_is_shown_on_the_first_turn_and_in_context(scripted_llm, make_core,
                                                                                   agents_dir):
    write_agent(agents_dir, "warned", prompt=["echo 'You are terse.'", "no-such-command-ollie-x"])
    srv = scripted_llm("openai")
    srv.script(Reply.text("one"), Reply.text("two"))
    core = await make_core(srv, toy=ToyServer(), agent="warned")
    sub = core.bus.subscribe()
    await core.submit("hi")
    first = [e.content for e in roles(drain(sub), "info")]
    # Once: shown as the turn started, not again as it ended (with the sandbox's warnings).
    assert sum("no-such-command-ollie-x" in text for text in first) == 1, first
    await core.submit("again")
    assert not any("no-such-command-ollie-x" in e.content for e in roles(drain(sub), "info"))
    context = await core.submit("/context")
    assert "warning:" in context.reply and "no-such-command-ollie-x" in context.reply


async def test_a_tool_server_that_cannot_list_its_tools_is_skipped_with_a_warning(scripted_llm, tmp_path: Path,
                                                                                   agents_dir, workdir):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("slow_read", {"tag": "x"})), Reply.text("done"))

    def dispatchers(cwd, session_id, env):
        dispatcher = Dispatcher()
        dispatcher.add_server("broken", BrokenServer())
        dispatcher.add_server("toy", ToyServer())
        return dispatcher

    core = await Core.create(env=srv.env(), agents_dirs=[agents_dir], dispatcher_factory=dispatchers, cwd=workdir,
                             sessions_dir=tmp_path / "sessions", limits=LoopLimits(**FAST_LIMITS))
    try:
        assert "slow_read" in {t.name for t in core.tools()}
        sub = core.bus.subscribe()
        result = await core.submit("read")
        assert result.reply == "done"
        events = drain(sub)
        assert any("'broken'" in e.content and "connection reset" in e.content for e in roles(events, "info"))
        assert roles(events, "tool")[0].content == "slow_read x done"
        assert "tool server 'broken' could not list its tools" in (await core.submit("/context")).reply
    finally:
        await core.close()
