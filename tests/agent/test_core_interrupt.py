"""Interrupts: during a stream, during a long tool (its process group dies), and by cancelling submit."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

from agentkit import ToyServer, drain, roles, tool_messages, wait_state

from ollie.testing import Reply
from tests.procs import new_mark, wait_for_processes, wait_no_processes


def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


async def _wait_for(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition never came true"
        await asyncio.sleep(0.02)


async def test_interrupt_during_a_stream(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(Reply(text="word " * 200, chunk_size=5, delay=0.05), Reply.text("next turn works"))
    core = await make_core(srv, toy=ToyServer())
    sub = core.bus.subscribe()
    assert core.interrupt() is False
    turn = asyncio.create_task(core.submit("talk a lot"))
    await _wait_for(lambda: any(e.role == "assistant" for e in list(sub._queue._queue)))
    started = time.monotonic()
    assert core.interrupt("user pressed stop") is True
    result = await turn
    assert time.monotonic() - started < 1.0
    assert result.stop == "interrupted" and core.state == "idle" and not core.is_running
    events = drain(sub)
    assert [e.content for e in roles(events, "turn")] == ["start", "interrupted"]
    streamed = "".join(e.content for e in roles(events, "assistant"))
    assert 0 < len(streamed) < len("word " * 200)
    assert (await core.submit("again")).reply == "next turn works"


async def test_interrupt_a_long_tool_kills_its_process_group(scripted_llm, make_core, workdir):
    srv = scripted_llm("openai")
    # The step has its own PID namespace (its `$!` is no host pid): the sleeps' argument marks them for the host.
    mark = new_mark()
    code = f"sleep 30.{mark} & sleep 30.{mark} & wait"
    srv.script(
        Reply.tool_calls(("execute_code", {"steps": [{"code": code, "language": "bash"}], "timeout": 60})),
        Reply.text("after the interrupt"),
    )
    core = await make_core(srv)  # the real execute server
    turn = asyncio.create_task(core.submit("sleep"))
    await wait_for_processes(mark, 2)  # both sleeps, running
    assert core.state == "calling: execute_code"
    started = time.monotonic()
    assert core.interrupt()
    result = await turn
    assert time.monotonic() - started < 1.0
    assert result.stop == "interrupted" and core.state == "idle"
    assert await wait_no_processes(mark) == []
    # The history stays well-formed: the next request answers the interrupted call.
    assert (await core.submit("go on")).reply == "after the interrupt"
    assert "interrupted" in tool_messages(srv, 1)[0]["content"]


async def test_interrupt_a_parallel_batch(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("slow_read", {"delay": 30, "tag": "a"}), ("slow_read", {"delay": 30, "tag": "b"})))
    core = await make_core(srv, toy=ToyServer())
    turn = asyncio.create_task(core.submit("read"))
    await wait_state(core, "calling: slow_read")
    core.interrupt()
    result = await asyncio.wait_for(turn, 1.0)
    assert result.stop == "interrupted"
    assert [m.role for m in core.session.messages] == ["user", "assistant", "tool", "tool"]


async def test_cancelling_submit_interrupts_the_turn(scripted_llm, make_core):
    srv = scripted_llm("openai")
    toy = ToyServer()
    srv.script(Reply.tool_calls(("spawn_sleep", {})))
    core = await make_core(srv, toy=toy)
    turn = asyncio.create_task(core.submit("sleep"))
    await _wait_for(lambda: toy.pids)
    turn.cancel()
    # The daemon cancels the submit of a $/cancelRequest: the turn stops and submit resolves "interrupted".
    assert (await asyncio.wait_for(turn, 1.0)).stop == "interrupted"
    assert core.state == "idle"
    assert not core.is_running
    await _wait_for(lambda: not _alive(toy.pids[0]), timeout=2.0)


async def test_close_interrupts_and_saves(scripted_llm, make_core, tmp_path):
    from ollie.sessions import persist

    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("slow_write", {"delay": 30})))
    core = await make_core(srv, toy=ToyServer())
    turn = asyncio.create_task(core.submit("wait"))
    await wait_state(core, "calling: slow_write")
    await asyncio.wait_for(core.close(), 2.0)
    with contextlib.suppress(asyncio.CancelledError):
        assert (await turn).stop == "interrupted"
    saved = persist.load(core.sessions_dir, core.session_id)
    assert [m.role for m in saved.messages] == ["user", "assistant", "tool"]


async def test_interrupt_during_a_long_hook(scripted_llm, make_core, agents_dir, tmp_path):
    from agentkit import write_agent

    mark = new_mark()  # the hook's `$$` would be its PID namespace's: its sleep child is found by this mark
    write_agent(agents_dir, "h", hooks={"preTool": f"sleep 30.{mark}"})
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("slow_read", {"tag": "x"})))
    toy = ToyServer()
    core = await make_core(srv, toy=toy, agent="h")
    turn = asyncio.create_task(core.submit("go"))
    await wait_for_processes(mark)
    started = time.monotonic()
    core.interrupt()
    assert (await turn).stop == "interrupted"
    assert time.monotonic() - started < 1.0
    assert toy.executions == []
    # The hook's whole group is gone, its `sleep` child included.
    assert await wait_no_processes(mark) == []
