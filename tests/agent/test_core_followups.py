"""What runs after a turn on its own: a postTurn continuation (exit 2), queued prompts; a detached turnError hook."""

from __future__ import annotations

import asyncio
import threading

from agentkit import ToyServer, drain, sent_messages, write_agent

from ollie.agent.inbox import MAX_CONTINUATIONS
from ollie.testing import Reply
from tests.procs import eventually

CONTINUE_ONCE = ("if grep -q '\"reply\": \"first answer\"'; then echo 'now run the tests' >&2; exit 2; fi")


async def test_a_post_turn_hook_exiting_2_continues_with_its_output_as_the_prompt(scripted_llm, make_core,
                                                                                  agents_dir):
    write_agent(agents_dir, "cont", hooks={"postTurn": CONTINUE_ONCE}, commandSandbox="none")
    srv = scripted_llm("openai")
    srv.script(Reply.text("first answer"), Reply.text("tests pass"))
    core = await make_core(srv, toy=ToyServer(), agent="cont")
    sub = core.bus.subscribe()
    result = await core.submit("fix the bug")
    assert result.reply == "first answer"
    assert sent_messages(srv, 1)[-1] == {"role": "user", "content": "now run the tests"}
    assert core.reply == "tests pass"
    events = [(e.role, e.content) for e in drain(sub) if e.role in ("turn", "user")]
    assert events == [("turn", "start"), ("turn", "end"), ("turn", "start"), ("user", "now run the tests"),
                      ("turn", "end")]


async def test_continuations_stop_after_the_cap(scripted_llm, make_core, agents_dir):
    write_agent(agents_dir, "loop", hooks={"postTurn": "echo again >&2; exit 2"}, commandSandbox="none")
    srv = scripted_llm("openai")
    srv.script(*[Reply.text(f"answer {i}") for i in range(MAX_CONTINUATIONS + 1)])
    core = await make_core(srv, toy=ToyServer(), agent="loop")
    await core.submit("go")
    assert len(srv.chat_requests) == MAX_CONTINUATIONS + 1


async def test_queued_prompts_run_as_turns_announced_with_a_user_event(scripted_llm, make_core):
    srv = scripted_llm("openai")
    hold = threading.Event()  # the first answer ends once the prompt is queued
    srv.script(Reply(text="one", chunk_size=1, hold=hold), Reply.text("two"))
    core = await make_core(srv, toy=ToyServer())
    sub = core.bus.subscribe()
    turn = asyncio.create_task(core.submit("first"))
    await eventually(lambda: core.is_running, "the first turn running")
    core.queue("second prompt")
    hold.set()
    assert (await turn).reply == "one"
    events = [(e.role, e.content) for e in drain(sub) if e.role in ("turn", "user")]
    assert events == [("turn", "start"), ("turn", "end"), ("turn", "start"), ("user", "second prompt"),
                      ("turn", "end")]


async def test_an_interrupt_does_not_cancel_the_turn_error_hook(scripted_llm, make_core, agents_dir, tmp_path):
    started, go, done = tmp_path / "hook-started", tmp_path / "hook-go", tmp_path / "hook-finished"
    # The hook runs until the test lets it go: the interrupt surely comes while it runs, however slow the machine.
    hook = f"touch {started}; while [ ! -e {go} ]; do sleep 0.01; done; echo finished > {done}"
    write_agent(agents_dir, "slowhook", hooks={"turnError": hook}, commandSandbox="none")
    srv = scripted_llm("openai", check=False)
    srv.script(Reply.error(503))
    core = await make_core(srv, toy=ToyServer(), agent="slowhook")
    turn = asyncio.create_task(core.submit("hi"))
    await eventually(started.exists, "the turnError hook to start")
    assert core.interrupt("user")
    assert (await turn).stop == "interrupted"
    go.touch()
    await eventually(lambda: done.exists() and done.read_text() == "finished\n", "the hook to finish")


async def test_a_prompt_queued_once_its_sender_saw_the_turn_end_waits_for_the_next_turn_however_soon(
        scripted_llm, make_core):
    """The user saw the turn end and queued a prompt at once: it comes while the ended turn's submit still drains
    the queue (it has not returned), and waits for the next turn's end all the same, not run as a follow-up."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("done"), Reply.text("next answer"), Reply.text("queued answer"))
    core = await make_core(srv, toy=ToyServer())
    ends = core.bus.subscribe(frozenset({"turn"}))
    turn = asyncio.create_task(core.submit("quick"))

    async def queue_on_the_end() -> bool:
        async for event in ends:
            if event.content != "start":  # the end reached this subscriber: the user saw it
                core.queue("for later")
                return turn.done()
        return True

    assert await queue_on_the_end() is False  # queued before the ended turn's submit returned
    assert (await turn).reply == "done"
    assert core.queued() == ["for later"] and not core.queue_held() and len(srv.chat_requests) == 1
    sub = core.bus.subscribe()
    assert (await core.submit("next")).reply == "next answer"
    events = [(e.role, e.content) for e in drain(sub) if e.role in ("turn", "user")]
    assert events == [("turn", "start"), ("turn", "end"), ("turn", "start"), ("user", "for later"),
                      ("turn", "end")]
    assert core.queued() == [] and core.reply == "queued answer"


async def test_a_queued_prompt_is_listed_queued_until_its_turn_announces_it(scripted_llm, make_core):
    # Bug (the Neovim chat's flaky queued-image test): for the loop pass between the queue handing the prompt over and
    # its turn's task publishing the `user` event, `queued()` (ollie/state's `queuedPrompts`) listed it nowhere: a
    # chat that read the state then dropped its queued line, and the images it had named with it.
    srv = scripted_llm("openai")
    srv.script(Reply.text("one"), Reply.text("two"))
    core = await make_core(srv, toy=ToyServer())
    announced = core.bus.subscribe(frozenset({"user"}))
    core.queue("second prompt")  # idle: it runs after the next turn's end
    turn = asyncio.create_task(core.submit("first"))
    nowhere = 0
    while not turn.done():  # looked at every loop pass
        nowhere += announced.pending() == 0 and "second prompt" not in core.queued()
        await asyncio.sleep(0)
    assert core.reply == "two" and announced.pending() == 1
    assert nowhere == 0
