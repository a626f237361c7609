"""The task_* tools' plan as the engine reads and copies it: reads that overlap, a fork of a running session, the read
a turn's end skips, through a real Core, real steps and the scripted LLM server."""

from __future__ import annotations

import asyncio
import os
import threading

from agentkit import write_agent

from ollie.agent import taskstate, turnhost
from ollie.agent.fork import cut_at_turn
from ollie.agent.taskstate import PlanEntry, next_unchecked, read_plan
from ollie.sessions import persist
from ollie.testing import Reply
from ollie.tools.execute.childenv import plan_file


def _writes_plan(text: str, then: str = "") -> Reply:
    step = {"code": f'printf -- "{text}" > "$OLLIE_PLAN_FILE"{then}', "language": "bash"}
    return Reply.tool_calls(("execute_code", {"steps": [step]}))


async def _auto(make_core, srv):
    core = await make_core(srv)
    core.set_approval("auto")
    return core


async def test_a_plan_read_started_later_stays_shown_when_an_older_one_ends_after_it(scripted_llm, make_core, workdir,
                                                                                       monkeypatch):
    # A round's read parsed in its thread while the user's `!cmd` wrote the plan anew and its read ended: the round's,
    # ending after, showed the older plan until the turn's end read it again.
    parsing, release, answered = threading.Event(), threading.Event(), threading.Event()
    parse = taskstate.checklist

    def stalled(text: str) -> list[tuple[str, bool]]:
        if "old step" in text:
            parsing.set()
            release.wait(30)
        return parse(text)

    monkeypatch.setattr(taskstate, "checklist", stalled)
    srv = scripted_llm("openai")
    srv.script(_writes_plan("- [ ] old step\\n"), Reply(text="planned", hold=answered))
    core = await _auto(make_core, srv)
    turn = asyncio.ensure_future(core.submit("plan"))
    try:
        await asyncio.to_thread(parsing.wait, 30)
        shell = await core.submit(f'!printf -- "- [ ] new step\\n" > {plan_file(core.session_id)}')
        assert shell.reply == ""
        assert core.plan == [PlanEntry("new step", "in_progress")]
        streamed = core.bus.subscribe(frozenset({"assistant"}))
        release.set()
        await streamed.get()  # the next request streams: the round's read has ended
        assert core.plan == [PlanEntry("new step", "in_progress")]
    finally:
        release.set()
        answered.set()
    assert (await turn).reply == "planned"


async def test_a_fork_of_a_running_session_takes_the_plan_as_the_turn_it_runs_found_it(scripted_llm, make_core, workdir):
    # The running turn's step had checked `write it` off: the fork, of the turn before, began at `run it`.
    answered = threading.Event()
    srv = scripted_llm("openai")
    srv.script(_writes_plan("- [ ] write it\\n- [ ] run it\\n"), Reply.text("planned"),
               _writes_plan("- [x] write it\\n- [ ] run it\\n"), Reply(text="written", hold=answered))
    core = await _auto(make_core, srv)
    await core.submit("plan it")
    streamed = core.bus.subscribe(frozenset({"assistant"}))
    turn = asyncio.ensure_future(core.submit("write it"))
    try:
        await streamed.get()  # the second turn's step ran and its round was read: its reply streams
        assert core.plan[0] == PlanEntry("write it", "completed")
        saved = persist.load(core.sessions_dir, core.session_id)
        cut_at_turn(saved, 1)  # the turns that ended (`ollie.agent.fork.plan`)
        fork = await _auto(make_core, srv)
        await fork.fork_from(saved)
        assert next_unchecked(await read_plan(fork.session_id)) == "write it"
    finally:
        answered.set()
    assert (await turn).reply == "written"
    assert core.session.plans_before == {"1": "", "2": "- [ ] write it\n- [ ] run it\n"}


async def test_a_turns_end_reads_the_plan_only_when_something_may_have_written_it_since(scripted_llm, make_core,
                                                                                         workdir, monkeypatch):
    reads: list[str] = []
    read = turnhost.read_plan

    async def counted(session_id: str) -> str:
        reads.append(session_id)
        return await read(session_id)

    monkeypatch.setattr(turnhost, "read_plan", counted)
    ready = workdir / "ready"
    os.mkfifo(ready)
    srv = scripted_llm("openai")
    srv.script(_writes_plan("- [ ] one\\n"), Reply.text("planned"),
               _writes_plan("- [ ] two\\n", '; echo > ready; sleep 60'))
    core = await _auto(make_core, srv)
    await core.submit("plan")
    assert len(reads) == 1 and core.plan == [PlanEntry("one", "in_progress")]  # the round's read: the end had no news
    turn = asyncio.ensure_future(core.submit("replan"))
    await asyncio.to_thread(ready.read_text)  # the step wrote the plan, and waits
    assert core.interrupt("test")
    assert (await turn).stop == "interrupted"
    # The round an interrupt cut short was not read: the turn's end read it.
    assert len(reads) == 2 and core.plan == [PlanEntry("two", "in_progress")]
    assert core.session.plans_before == {"1": "", "2": "- [ ] one\n"}


async def test_a_turn_stopped_as_it_began_gets_no_number_nor_the_plan_a_command_wrote_meanwhile(
        scripted_llm, make_core, workdir, monkeypatch):
    # Numbered before it began, it stayed a turn with no prompt: the next prompt was turn 3, the `!cmd`'s plan change was
    # that empty turn's, and `/rewind` (the last turn) took the empty one, putting back the plan the user had replaced.
    from ollie.agent.review import Review

    starting, release = threading.Event(), threading.Event()
    drop = Review.drop_rewind

    def held(self: Review) -> None:
        starting.set()
        release.wait(30)
        drop(self)

    srv = scripted_llm("openai")
    srv.script(_writes_plan("- [ ] one\\n"), Reply.text("planned"))
    core = await _auto(make_core, srv)
    await core.submit("plan")
    monkeypatch.setattr(Review, "drop_rewind", held)
    ends = core.bus.subscribe(frozenset({"turn"}))
    turn = asyncio.ensure_future(core.submit("stopped"))
    try:
        await asyncio.to_thread(starting.wait, 30)  # the turn's start holds in its thread
        await core.submit(f'!printf -- "- [ ] two\\n" > {plan_file(core.session_id)}')
        assert core.interrupt("test")
        assert (await turn).stop == "interrupted"
    finally:
        release.set()
    assert [(e.content, e.turn) for e in [await ends.get(), await ends.get()]] == [("start", 0), ("interrupted", 0)]
    assert list(core.session.turn_starts) == [0] and core.session.plans_before == {"1": ""}
    assert (await core.rewind()).turn == 1
    assert core.plan == []


async def test_the_first_turns_end_reads_a_plan_the_prompt_commands_wrote(scripted_llm, make_core, workdir,
                                                                           agents_dir):
    # They run as the first turn (or command) needs the prompt, and may write the plan as a hook may: the first
    # turn's end did not read it (nothing it counted had run), and it showed at a later turn's end, as that turn's.
    write = 'mkdir -p "${OLLIE_PLAN_FILE%/*}"; printf -- "- [ ] from the prompt\\n" > "$OLLIE_PLAN_FILE"; echo Plan.'
    write_agent(agents_dir, "planner", commandSandbox="none", prompt=[write])
    srv = scripted_llm("openai")
    srv.script(Reply.text("hello"))
    core = await make_core(srv, agent="planner")
    assert (await core.submit("hi")).reply == "hello"
    assert core.plan == [PlanEntry("from the prompt", "in_progress")]
    assert core.session.plans_before == {"1": ""}  # what a rewind of the turn puts back, as for a hook's write


async def test_a_plan_a_preturn_hook_writes_is_read_as_the_turn_ends(scripted_llm, make_core, agents_dir):
    # A hook may write the plan: a turn with no tool round (nothing else read it) reads it at its end.
    hook = 'mkdir -p "${OLLIE_PLAN_FILE%/*}"; printf -- "- [ ] hook step\\n" > "$OLLIE_PLAN_FILE"'
    write_agent(agents_dir, "h", hooks={"preTurn": hook})
    srv = scripted_llm("openai")
    srv.script(Reply.text("noted"))
    core = await make_core(srv, agent="h")
    assert (await core.submit("go")).reply == "noted"
    assert core.plan == [PlanEntry("hook step", "in_progress")]
