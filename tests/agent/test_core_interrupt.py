"""Interrupts: during a stream, during a long tool (its process group dies), and by cancelling submit."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

from agentkit import ToyServer, drain, roles, tool_messages, wait_state

from ollie.testing import Reply


def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def _group_alive(pgid: int) -> bool:
    """Whether any live (non-zombie) process is in process group `pgid`."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


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
    code = "sleep 30 & echo $! > pids; sleep 30 & echo $! >> pids; wait"
    srv.script(
        Reply.tool_calls(("execute_code", {"steps": [{"code": code, "language": "bash"}], "timeout": 60})),
        Reply.text("after the interrupt"),
    )
    core = await make_core(srv)  # the real execute server
    turn = asyncio.create_task(core.submit("sleep"))
    pids_file = workdir / "pids"
    await _wait_for(lambda: pids_file.exists() and len(pids_file.read_text().split()) == 2)
    pids = [int(p) for p in pids_file.read_text().split()]
    assert all(_alive(p) for p in pids)
    assert core.state == "calling: execute_code"
    started = time.monotonic()
    assert core.interrupt()
    result = await turn
    assert time.monotonic() - started < 1.0
    assert result.stop == "interrupted" and core.state == "idle"
    await _wait_for(lambda: not any(_alive(p) for p in pids), timeout=2.0)
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
    from ollie.agent import persist

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

    pid_file = tmp_path / "hook.pid"
    write_agent(agents_dir, "h", hooks={"preTool": f"echo $$ > {pid_file}; sleep 30"})
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("slow_read", {"tag": "x"})))
    toy = ToyServer()
    core = await make_core(srv, toy=toy, agent="h")
    turn = asyncio.create_task(core.submit("go"))
    await _wait_for(lambda: pid_file.exists() and pid_file.read_text().strip())
    started = time.monotonic()
    core.interrupt()
    assert (await turn).stop == "interrupted"
    assert time.monotonic() - started < 1.0
    assert toy.executions == []
    # The hook's whole group is gone, its `sleep` child included.
    await _wait_for(lambda: not _group_alive(int(pid_file.read_text())), timeout=2.0)
