"""Interrupts: during a stream, during a long tool (its process group dies), and by cancelling submit."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os

import pytest
from agentkit import ToyServer, drain, roles, sent_messages, tool_messages, wait_state

from ollie.agent.toolround import CLOSED_RESULT
from ollie.testing import Reply
from tests.procs import eventually, new_mark, outliving, wait_for_processes, wait_no_processes

# What a test interrupts runs for 10 minutes (or until a gate it never opens): ending within this ceiling, the turn
# was interrupted; the ceiling bounds a hang, not the machine's speed.
HANG_S = 60.0


# A stop ends what it stops in milliseconds; the bound leaves a loaded machine room and still fails one that waits
# for a 30 s summary or a 60 s command.
PROMPTLY_S = 10.0


async def test_interrupt_during_a_stream(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(Reply(text="word " * 200, chunk_size=5, delay=0.05), Reply.text("next turn works"))
    core = await make_core(srv, toy=ToyServer())
    sub = core.bus.subscribe()
    assert core.interrupt() is False
    turn = asyncio.create_task(core.submit("talk a lot"))
    await eventually(lambda: any(e.role == "assistant" for e in list(sub._queue._queue)), "the first delta")
    assert core.interrupt("user pressed stop") is True
    result = await turn
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
    code = f"sleep 600.{mark} & sleep 600.{mark} & wait"
    srv.script(
        Reply.tool_calls(("execute_code", {"steps": [{"code": code, "language": "bash"}], "timeout": 600})),
        Reply.text("after the interrupt"),
    )
    core = await make_core(srv)  # the real execute server
    turn = asyncio.create_task(core.submit("sleep"))
    await wait_for_processes(mark, 2)  # both sleeps, running
    assert core.state == "calling: execute_code"
    assert core.interrupt()
    result = await asyncio.wait_for(turn, HANG_S)
    assert result.stop == "interrupted" and core.state == "idle"
    assert await wait_no_processes(mark) == []
    # The history stays well-formed: the next request answers the interrupted call.
    assert (await core.submit("go on")).reply == "after the interrupt"
    assert "interrupted" in tool_messages(srv, 1)[0]["content"]


async def test_interrupt_a_parallel_batch(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("slow_read", {"gated": True, "tag": "a"}), ("slow_read", {"gated": True, "tag": "b"})))
    core = await make_core(srv, toy=ToyServer())
    turn = asyncio.create_task(core.submit("read"))
    await wait_state(core, "calling: slow_read")
    core.interrupt()
    result = await asyncio.wait_for(turn, HANG_S)
    assert result.stop == "interrupted"
    assert [m.role for m in core.session.messages] == ["user", "assistant", "tool", "tool"]


async def test_cancelling_submit_interrupts_the_turn(scripted_llm, make_core):
    srv = scripted_llm("openai")
    toy = ToyServer()
    srv.script(Reply.tool_calls(("spawn_sleep", {})))
    core = await make_core(srv, toy=toy)
    turn = asyncio.create_task(core.submit("sleep"))
    await eventually(lambda: toy.pids, "the tool's process")
    turn.cancel()
    # The daemon cancels the submit of a $/cancelRequest: the turn stops and submit resolves "interrupted".
    assert (await asyncio.wait_for(turn, HANG_S)).stop == "interrupted"
    assert core.state == "idle"
    assert not core.is_running
    assert not await outliving([toy.pids[0]], 15), "the tool's process gone"


async def test_close_interrupts_and_saves(scripted_llm, make_core, tmp_path):
    from ollie.sessions import persist

    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("slow_write", {"gated": True})))
    core = await make_core(srv, toy=ToyServer())
    turn = asyncio.create_task(core.submit("wait"))
    await wait_state(core, "calling: slow_write")
    await asyncio.wait_for(core.close(), HANG_S)
    with contextlib.suppress(asyncio.CancelledError):
        assert (await turn).stop == "interrupted"
    saved = persist.load(core.sessions_dir, core.session_id)
    assert [m.role for m in saved.messages] == ["user", "assistant", "tool"]
    # Nobody asked for it: the model (and a resumed chat) is not told the user stopped the call.
    assert saved.messages[-1].content == CLOSED_RESULT


async def test_interrupt_during_a_long_hook(scripted_llm, make_core, agents_dir, tmp_path):
    from agentkit import write_agent

    mark = new_mark()  # the hook's `$$` would be its PID namespace's: its sleep child is found by this mark
    write_agent(agents_dir, "h", hooks={"preTool": f"sleep 600.{mark}"})
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("slow_read", {"tag": "x"})))
    toy = ToyServer()
    core = await make_core(srv, toy=toy, agent="h", limits={"hook_timeout_s": 600.0})
    turn = asyncio.create_task(core.submit("go"))
    await wait_for_processes(mark)
    core.interrupt()
    assert (await asyncio.wait_for(turn, HANG_S)).stop == "interrupted"
    assert toy.executions == []
    # The hook's whole group is gone, its `sleep` child included.
    assert await wait_no_processes(mark) == []


async def _streaming(sub) -> None:
    """Return once the running turn has streamed its first text."""
    async for event in sub:
        if event.role == "assistant":
            return


async def test_stop_interrupts_the_turn_and_the_submit_waiting_for_it_never_begins(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(Reply(text="word " * 200, chunk_size=5, delay=0.05), Reply.text("never asked for"))
    core = await make_core(srv, toy=ToyServer())
    assert await core.stop() is False  # nothing runs: done at once
    sub = core.bus.subscribe()
    first = asyncio.create_task(core.submit("talk a lot"))
    await _streaming(sub)
    second = asyncio.create_task(core.submit("and then this"))
    await asyncio.sleep(0)  # one loop pass: the second submit waits for the first's turn
    core.queue("queued")
    assert await core.stop("user pressed stop") is True
    assert first.done() and second.done()  # done only once both submits returned
    assert (first.result().stop, second.result().stop) == ("interrupted", "interrupted")
    assert len(srv.chat_requests) == 1
    assert core.queued() == ["queued"] and core.queue_held()  # what is queued waits for the user's word
    assert [e.content for e in roles(drain(sub), "turn")] == ["interrupted"]  # the second turn never started
    assert (await core.submit("again")).reply == "never asked for"  # the next submit runs as usual


@pytest.mark.parametrize("hook_exit", [0, 2])
async def test_stop_while_post_turn_runs_starts_nothing_after_it(scripted_llm, make_core, agents_dir, tmp_path,
                                                                 hook_exit):
    """The stop comes while the postTurn hook runs (the turn can no longer be interrupted): neither the
    continuation it asks for (exit 2) nor a queued prompt runs; the queued prompt is kept, held."""
    from agentkit import write_agent

    go = tmp_path / "go"
    os.mkfifo(go)
    # After the first turn the hook blocks until the test writes a line.
    hook = (f'if grep -q \'"reply": "first answer"\'; then read line < "{go}"; echo "go on" >&2; '
            f'exit {hook_exit}; fi')
    write_agent(agents_dir, "cont", hooks={"postTurn": hook}, commandSandbox="none")
    srv = scripted_llm("openai")
    srv.script(Reply.text("first answer"), Reply.text("answered next"))
    core = await make_core(srv, toy=ToyServer(), agent="cont")
    turn = asyncio.create_task(core.submit("hi"))
    writer = await asyncio.to_thread(os.open, go, os.O_WRONLY)  # returns once the hook opened it
    core.queue("queued")
    stopped = core.stop("user pressed stop")
    os.write(writer, b"\n")
    os.close(writer)
    assert await stopped is True
    assert (await turn).reply == "first answer"
    assert len(srv.chat_requests) == 1
    assert core.queued() == ["queued"] and core.queue_held()
    assert (await core.submit("next")).reply == "answered next"  # the continuation was dropped, not kept for later
    assert sent_messages(srv)[-1] == {"role": "user", "content": "next"} and len(srv.chat_requests) == 2


async def test_a_stop_kills_a_running_shell_command_and_a_prompt_sent_after_it_runs(scripted_llm, make_core):
    """A `!command` (which runs beside the turns) is stopped with the turn, its process group killed, and the
    stop is done at once; a prompt sent after the stop runs as usual. The stop waited out the command."""
    mark = new_mark()
    srv = scripted_llm("openai")
    srv.script(Reply(text="word " * 200, chunk_size=5, delay=0.05), Reply.text("fresh"))
    core = await make_core(srv, toy=ToyServer())
    sub = core.bus.subscribe()
    command = asyncio.create_task(core.submit(f"!sleep 60.{mark}; echo never"))
    await wait_for_processes(mark)
    first = asyncio.create_task(core.submit("talk a lot"))
    await _streaming(sub)
    assert await asyncio.wait_for(core.stop("user pressed stop"), PROMPTLY_S) is True
    assert first.result().stop == "interrupted"
    assert (command.result().reply, command.result().stop) == ("[stopped; killed]", "interrupted")
    assert await wait_no_processes(mark) == []
    assert [e.content for e in roles(drain(sub), "exec")] == ["[stopped; killed]"]
    assert (await core.submit("again")).reply == "fresh"


async def test_a_stop_leaves_a_compaction_under_way_undone_in_memory_and_on_disk(scripted_llm, make_core):
    """/compact waits for the model's summary (slow here): a stop ends it now, the history as it was, in the
    session and its saved log; the next /compact works. The stop waited for the summary and compacted."""
    from ollie.sessions import persist

    srv = scripted_llm("openai")
    srv.script(Reply.text("first answer"), Reply.text("second answer"))
    core = await make_core(srv, toy=ToyServer())
    await core.submit("one")
    await core.submit("two")
    before = [m.to_dict() for m in core.session.messages]
    summary = "```json\n" + json.dumps({"goal": "g", "plan": [], "plan_step": "", "decisions": [], "files": []})
    srv.script(Reply(text=summary + "\n```" + " " * 600, chunk_size=2, delay=0.1),  # ~30 s unless stopped
               Reply.text(summary + "\n```"))
    sub = core.bus.subscribe()
    compact = asyncio.create_task(core.submit("/compact"))
    await eventually(lambda: len(srv.chat_requests) == 3, "the summary's request")  # the summary is being streamed
    assert await asyncio.wait_for(core.stop("user pressed stop"), PROMPTLY_S) is True
    assert (compact.result().reply, compact.result().stop) == ("compaction stopped: history unchanged", "interrupted")
    assert [e.content for e in roles(drain(sub), "info")] == ["compaction stopped: history unchanged"]
    assert [m.to_dict() for m in core.session.messages] == before and core.session.task_state is None
    saved = persist.load(core.sessions_dir, core.session_id)
    assert [m.to_dict() for m in saved.messages] == before and saved.task_state is None
    assert (await core.submit("/compact")).reply.startswith("compacted: 4 messages")


async def test_a_stop_just_after_a_prompt_queued_as_turns_ended_holds_it(scripted_llm, make_core):
    """A prompt queued for turns that have just ended (its sender had not seen their end) runs at once, in a task of
    its own: a stop in the same loop pass (before that task's first) holds it, as for any queued prompt. That stop
    found nothing and the prompt ran."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("first answer"), Reply.text("queued answer"))
    core = await make_core(srv, toy=ToyServer())
    assert (await core.submit("hi")).reply == "first answer"
    core.queue("queued", saw_end=False)  # for the turns that ended: it runs without waiting for another turn
    assert await asyncio.wait_for(core.stop("user pressed stop"), PROMPTLY_S) is True
    assert core.queued() == ["queued"] and core.queue_held()
    assert len(srv.chat_requests) == 1
    await core.run_queue()  # the user's word
    assert core.reply == "queued answer"


async def test_a_stop_just_as_a_queued_prompt_was_taken_to_run_keeps_it_held(scripted_llm, make_core, monkeypatch):
    """The stop comes in the loop pass between the queue handing its prompt over and that turn's start (nothing
    to interrupt yet): the turn does not begin, and the prompt was dropped; it is held with the others."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("first answer"), Reply.text("one answered"), Reply.text("two answered"))
    core = await make_core(srv, toy=ToyServer())
    inbox = core._inbox
    taken = inbox.next_prompt
    stopped: list[asyncio.Future[bool]] = []

    def take_then_stop() -> str | None:
        text = taken()
        if text == "queued one" and not stopped:  # handed over: its turn's task starts a loop pass later
            stopped.append(core.stop("user pressed stop"))
        return text

    monkeypatch.setattr(inbox, "next_prompt", take_then_stop)
    sub = core.bus.subscribe()
    first = asyncio.create_task(core.submit("hi"))
    await _streaming(sub)
    core.queue("queued one")
    core.queue("queued two")
    assert (await first).reply == "first answer"
    assert await stopped[0] is True
    assert core.queued() == ["queued one", "queued two"] and core.queue_held()
    assert len(srv.chat_requests) == 1
    await core.run_queue()  # the user's word: both run, in their order
    assert [m["content"] for m in sent_messages(srv) if m["role"] == "user"] == ["hi", "queued one", "queued two"]


async def test_a_stop_ends_the_question_an_agent_switch_waits_on(scripted_llm, make_core, agents_dir):
    """`/agent bare` asks first (that agent runs unsandboxed): a stop before the user answers ends the question and
    the switch at once. The stop waited for the answer (up to the question timeout)."""
    (agents_dir / "bare.json").write_text(json.dumps({"prompt": "Unsandboxed.", "sandbox": "none"}))
    core = await make_core(scripted_llm("openai"))
    agent = core.agent_name
    asked = asyncio.Event()

    async def unanswered(question: object) -> object:
        asked.set()
        return await asyncio.get_running_loop().create_future()  # the user has not answered

    core.step_approver = unanswered
    switch = asyncio.create_task(core.submit("/agent bare"))
    await asyncio.wait_for(asked.wait(), HANG_S)
    assert await asyncio.wait_for(core.stop("user pressed stop"), PROMPTLY_S) is True
    assert (await switch).stop == "interrupted" and core.agent_name == agent
