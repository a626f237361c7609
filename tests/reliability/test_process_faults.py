"""Processes that misbehave: a hook that hangs, a tool whose child ignores SIGTERM (timeout and interrupt)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from conftest import wait_gone, write_agent

from ollie.testing import Reply

# The child ignores SIGTERM, leaves its pid behind and outlives its parent's wait unless the whole group is killed.
STUBBORN = "(trap '' TERM; exec sleep 60) & echo $! > stubborn.pid; wait"


def stubborn_pid(workdir: Path) -> int:
    """The pid the tool wrote."""
    return int((workdir / "stubborn.pid").read_text().strip())


async def test_a_hook_that_hangs_is_killed_at_its_timeout_and_the_turn_goes_on(
        scripted_llm, make_core, agents_dir, workdir):
    # The hook leaves its pid in the project: a writable command sandbox (the default one is read-only).
    write_agent(agents_dir, "default", hooks={"preTurn": [f"echo $$ > {workdir}/hook.pid; exec sleep 60"]},
                commandSandbox="default")
    srv = scripted_llm("openai")
    srv.script(Reply.text("answered despite the hook"))
    core = await make_core(srv, limits={"hook_timeout_s": 0.5})
    sub = core.bus.subscribe()
    result = await asyncio.wait_for(core.submit("hi"), 20)
    assert (result.stop, result.reply) == ("end", "answered despite the hook")
    infos = []
    while sub.pending():
        event = sub.get_nowait()
        if event is not None and event.role == "info":
            infos.append(event.content)
    assert any("preTurn" in text and "timed out" in text.lower() for text in infos), infos
    assert await wait_gone(int((workdir / "hook.pid").read_text().strip()))


async def test_a_child_ignoring_sigterm_is_gone_after_the_call_times_out(scripted_llm, make_core, workdir):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": STUBBORN}], "timeout": 1})), Reply.text("ok"))
    core = await make_core(srv)
    result = await asyncio.wait_for(core.submit("run it"), 30)
    assert result.stop == "end"
    tool = next(m for m in core.session.messages if m.role == "tool")
    assert "timed out" in tool.content.lower() or "timeout" in tool.content.lower(), tool.content
    assert await wait_gone(stubborn_pid(workdir)), "the SIGTERM-ignoring child outlived its call"


async def test_a_child_ignoring_sigterm_is_gone_after_an_interrupt(scripted_llm, make_core, workdir):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": STUBBORN}], "timeout": 60})))
    core = await make_core(srv)
    turn = asyncio.ensure_future(core.submit("run it"))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    while not (workdir / "stubborn.pid").exists() or not (workdir / "stubborn.pid").read_text().strip():
        assert loop.time() < deadline, "the tool never started"
        await asyncio.sleep(0.02)
    assert core.interrupt("test")
    result = await asyncio.wait_for(turn, 10)
    assert result.stop == "interrupted"
    assert await wait_gone(stubborn_pid(workdir)), "the SIGTERM-ignoring child outlived the interrupt"


async def test_a_child_that_leaves_the_process_group_is_still_ended(scripted_llm, make_core, workdir):
    # setsid puts the child in a session of its own, out of reach of a process-group kill.
    code = "setsid sh -c 'echo $$ > stubborn.pid; trap \"\" TERM; exec sleep 60' & sleep 0.3; echo started"
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": code}], "timeout": 5})), Reply.text("ok"))
    core = await make_core(srv)
    assert (await asyncio.wait_for(core.submit("run it"), 30)).stop == "end"
    assert await wait_gone(stubborn_pid(workdir), timeout=5), "a setsid child outlived the call"
