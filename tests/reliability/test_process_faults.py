"""Processes that misbehave: a hook that hangs, a tool whose child ignores SIGTERM (timeout and interrupt)."""

from __future__ import annotations

import asyncio
from typing import Any

from ollie.agent.events import Subscription
from ollie.testing import Reply
from tests.procs import new_mark, run_watching, timed_out_once_begun, wait_for_processes, wait_no_processes
from tests.reliability.conftest import write_agent

# Steps and hooks run in PID namespaces of their own (their `$$` is not a host pid): the processes
# that must die carry a mark in their command line (`sleep 600.<mark>`), looked up on the host.


def stubborn(mark: str) -> str:
    """A step whose child ignores SIGTERM and outlives its parent's wait unless the whole group is killed."""
    return f"(trap '' TERM; exec sleep 600.{mark}) & wait"


async def test_a_hook_that_hangs_is_killed_at_its_timeout_and_the_turn_goes_on(
        scripted_llm, make_core, agents_dir, workdir):
    mark = new_mark()
    write_agent(agents_dir, "default", hooks={"preTurn": [f"exec sleep 600.{mark}"]})
    srv = scripted_llm("openai")

    async def turn(timeout: float) -> tuple[Any, Subscription]:
        srv.script(Reply.text("answered despite the hook"))
        core = await make_core(srv, limits={"hook_timeout_s": timeout})
        sub = core.bus.subscribe()
        return await core.submit("hi"), sub

    # The hook's ten minutes: a turn that waited for it runs past run_watching's ceiling.
    (result, sub), seen = await timed_out_once_begun(lambda timeout: run_watching(turn(timeout), mark),
                                                     lambda ran: ran[1], first_s=2)
    assert seen, "the hook never ran before its timeout"
    assert (result.stop, result.reply) == ("end", "answered despite the hook")
    infos = []
    while sub.pending():
        event = sub.get_nowait()
        if event is not None and event.role == "info":
            infos.append(event.content)
    assert any("preTurn" in text and "timed out" in text.lower() for text in infos), infos
    assert await wait_no_processes(mark) == [], "the hook outlived its timeout"


async def test_a_child_ignoring_sigterm_is_gone_after_the_call_times_out(scripted_llm, make_core, workdir):
    mark = new_mark()
    srv = scripted_llm("openai")
    core = await make_core(srv)

    async def turn(timeout: float) -> Any:
        srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": stubborn(mark)}], "timeout": timeout})),
                   Reply.text("ok"))
        return await core.submit("run it")

    # The child's ten minutes: a call that waited for it runs past run_watching's ceiling.
    result, seen = await timed_out_once_begun(lambda timeout: run_watching(turn(timeout), mark),
                                              lambda ran: ran[1], first_s=3)
    assert seen, "the child never ran before the timeout"
    assert result.stop == "end"
    tool = [m for m in core.session.messages if m.role == "tool"][-1]
    assert "timed out" in tool.content.lower() or "timeout" in tool.content.lower(), tool.content
    assert await wait_no_processes(mark) == [], "the SIGTERM-ignoring child outlived its call"


async def test_a_child_ignoring_sigterm_is_gone_after_an_interrupt(scripted_llm, make_core, workdir):
    mark = new_mark()
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": stubborn(mark)}], "timeout": 600})))
    core = await make_core(srv)
    turn = asyncio.ensure_future(core.submit("run it"))
    await wait_for_processes(mark)  # the child, running
    assert core.interrupt("test")
    result = await asyncio.wait_for(turn, 30)  # not the child's ten minutes
    assert result.stop == "interrupted"
    assert await wait_no_processes(mark) == [], "the SIGTERM-ignoring child outlived the interrupt"


async def test_a_child_that_leaves_the_process_group_is_still_ended(scripted_llm, make_core, workdir):
    # setsid puts the child in a session of its own, out of reach of a process-group kill.
    mark = new_mark()
    code = f"setsid sh -c 'trap \"\" TERM; exec sleep 60.{mark}' & while [ ! -e go ]; do sleep 0.01; done; echo started"
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": code}], "timeout": 10})), Reply.text("ok"))
    core = await make_core(srv)
    turn = asyncio.ensure_future(core.submit("run it"))
    await wait_for_processes(mark)  # the setsid child, running
    (workdir / "go").touch()
    assert (await asyncio.wait_for(turn, 30)).stop == "end"
    assert await wait_no_processes(mark) == [], "a setsid child outlived the call"
