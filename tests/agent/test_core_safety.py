"""Safety mechanisms: error nudge and abort, replan, stall, max steps, task-state re-injection, plan file."""

from __future__ import annotations

import asyncio
import json
import time

from agentkit import ToyServer, drain, roles, tool_messages

from ollie.agent.safety import ERROR_NUDGE, MAX_STEPS_NUDGE, REPLAN_NUDGE, STALL_NUDGE
from ollie.agent.taskstate import has_plan_block, plan_path
from ollie.testing import Reply


def _head(template: str) -> str:
    return template.split("{n}")[0]


async def test_error_nudge_after_five_failing_rounds_then_abort_at_ten(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(*[Reply.tool_calls(("fail", {"n": i})) for i in range(10)])
    core = await make_core(srv, toy=ToyServer())
    sub = core.bus.subscribe()
    result = await core.submit("keep failing")
    assert result.stop == "error" and "10 consecutive failing tool rounds" in result.error
    assert len(srv.chat_requests) == 10
    nudged = [i for i in range(1, 10) if _head(ERROR_NUDGE) in tool_messages(srv, i)[-1]["content"]]
    assert nudged == [5]
    assert any(_head(ERROR_NUDGE) in e.content for e in roles(drain(sub), "info"))


async def test_a_success_resets_the_error_streak(scripted_llm, make_core):
    srv = scripted_llm("openai")
    replies = [Reply.tool_calls(("fail", {"n": i})) for i in range(4)]
    replies.append(Reply.tool_calls(("slow_read", {"tag": "ok"})))
    replies += [Reply.tool_calls(("fail", {"n": i})) for i in range(4, 8)]
    srv.script(*replies, Reply.text("stopped"))
    core = await make_core(srv, toy=ToyServer())
    assert (await core.submit("mixed")).stop == "end"
    assert not any(_head(ERROR_NUDGE) in m.content for m in core.session.messages)


async def test_replan_nudge_after_eight_rounds_without_a_plan(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(*[Reply.tool_calls(("slow_read", {"tag": i})) for i in range(8)], Reply.text("done"))
    srv.script(Reply(text="PLAN:\n- [ ] read\n- [ ] write", tool_calls=[("slow_read", {"tag": "p"})]))
    srv.script(*[Reply.tool_calls(("slow_read", {"tag": f"q{i}"})) for i in range(6)], Reply.text("done"))
    core = await make_core(srv, toy=ToyServer())
    await core.submit("work")
    nudged = [i for i in range(1, 9) if _head(REPLAN_NUDGE) in tool_messages(srv, i)[-1]["content"]]
    assert nudged == [8]
    # With a PLAN: block the count starts over: 7 rounds in the next turn bring no nudge.
    await core.submit("more work")
    assert sum(_head(REPLAN_NUDGE) in m["content"] for m in tool_messages(srv, -1)) == 1  # turn one's only


async def test_stall_nudge_after_five_identical_rounds(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(*[Reply.tool_calls(("slow_read", {"tag": "same"})) for _ in range(5)], Reply.text("ok"))
    toy = ToyServer()
    core = await make_core(srv, toy=toy)
    await core.submit("loop")
    nudged = [i for i in range(1, 6) if _head(STALL_NUDGE) in tool_messages(srv, i)[-1]["content"]]
    assert nudged == [5]
    assert len(toy.executions) == 1  # the same read-safe call is cached for the turn


async def test_max_steps_ends_softly_with_a_summary_request_without_tools(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(*[Reply.tool_calls(("slow_read", {"tag": i})) for i in range(3)], Reply.text("summary: did 3 reads"))
    core = await make_core(srv, toy=ToyServer())
    core.set_max_steps(3)
    assert core.max_steps == 3
    result = await core.submit("do lots")
    assert (result.stop, result.reply) == ("max_steps", "summary: did 3 reads")
    final = srv.chat_requests[3].body
    assert not final.get("tools")
    assert MAX_STEPS_NUDGE in final["messages"][-1]["content"]
    assert srv.chat_requests[2].body.get("tools")


async def test_max_steps_override_and_agent_default(scripted_llm, make_core, agents_dir):
    from agentkit import write_agent

    write_agent(agents_dir, "short", maxSteps=1)
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("slow_read", {})), Reply.text("sum"))
    srv.script(Reply.tool_calls(("slow_read", {"a": 1})), Reply.tool_calls(("slow_read", {"a": 2})), Reply.text("end"))
    core = await make_core(srv, toy=ToyServer(), agent="short")
    assert core.max_steps == 1
    assert (await core.submit("one")).stop == "max_steps"
    core.set_max_steps(0)
    assert (await core.submit("unlimited")).stop == "end"


async def test_task_state_is_reinjected_with_the_plan_files_next_step(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(*[Reply.tool_calls(("slow_read", {"tag": i})) for i in range(3)], Reply.text("ok"))
    core = await make_core(srv, toy=ToyServer(), limits={"reinject_rounds": 3})
    plan = plan_path(core.session_id)
    plan.parent.mkdir(parents=True, exist_ok=True)
    plan.write_text("# plan\n- [x] look around\n- [ ] write the parser\n- [ ] test it\n")
    await core.submit("work")
    last = tool_messages(srv, 3)[-1]["content"]
    assert "[task state]" in last
    state = json.loads(last.split("[task state]\n", 1)[1])
    assert state["plan_step"] == "write the parser"
    assert state["last_action"].startswith('slow_read({"tag":2})')
    assert not any("[task state]" in m["content"] for m in tool_messages(srv, 2))



async def test_a_reply_of_blank_lines_before_its_call_holds_no_loop(scripted_llm, make_core):
    """Each round's text is searched for a `PLAN:` block on the event loop: its `^\\s*` ran from every line start over
    the blank lines after it, so 20,000 line breaks (a model stuck emitting them) before a call held every session of
    the daemon ~8 s (40,000: a minute). A plan block after them is still one."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("slow_read", {"tag": "w"})), Reply.text("warm"),
               Reply(text="\n" * 20_000, tool_calls=[("slow_read", {"tag": "a"})]), Reply.text("done"))
    core = await make_core(srv, toy=ToyServer())
    await core.submit("warm up")  # (what a first round loads is loaded: the measure is the text's search alone)
    gaps: list[float] = []

    async def tick() -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.01)
            gaps.append(time.perf_counter() - last)
            last = time.perf_counter()

    ticker = asyncio.create_task(tick())
    assert (await core.submit("work")).reply == "done"
    ticker.cancel()
    assert max(gaps) < 2  # (the search: ~1 ms; from each line start to the end: ~8 s)
    assert has_plan_block("\n" * 20_000 + "  ## **PLAN**:\n- [ ] read") and not has_plan_block("a PLAN: b")
