"""Every retry class over real HTTP: rate limits, 5xx, stream drops, context overflow, tool unsupported."""

from __future__ import annotations

import json

from agentkit import ToyServer, drain, roles, sent_messages, write_agent

from ollie.agent.taskstate import MEMORY_HEAD
from ollie.testing import Reply
from tests.compactions import read_compaction_snapshots


async def test_rate_limits_back_off_exponentially_then_succeed(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(Reply.error(429, retry_after=0), Reply.error(429, retry_after=0), Reply.text("finally"))
    core = await make_core(srv, toy=ToyServer())
    sub = core.bus.subscribe()
    result = await core.submit("hi")
    assert (result.stop, result.reply) == ("end", "finally")
    retries = roles(drain(sub), "limitretry")
    assert [r.content.split(" in ")[-1] for r in retries] == ["0.01s", "0.02s"]
    # Plain words, the class as the event's name (Bug: the text began `rate_limit:`, the class's name).
    assert all(r.content.startswith("the model's server is limiting requests (rate limit): ") for r in retries), retries
    assert {r.name for r in retries} == {"rate_limit"} and "retry 2/3" in retries[1].content


async def test_transient_errors_retry_and_give_up_after_three(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(Reply.error(503), Reply.text("recovered"))
    srv.script(*[Reply.error(502)] * 4)
    core = await make_core(srv, toy=ToyServer())
    sub = core.bus.subscribe()
    assert (await core.submit("one")).reply == "recovered"
    failed = await core.submit("two")
    assert failed.stop == "error" and failed.error.startswith("the model request failed: ") and \
        failed.error.endswith("gave up after 3 retries: send the prompt again; if it keeps failing, check the model's "
                              "server (`ollie doctor`)"), failed.error
    assert failed.reply == "" and core.reply == "recovered"  # no text this turn; the core keeps the last
    events = drain(sub)
    assert len(roles(events, "limitretry")) == 1 + 3
    assert (roles(events, "error")[-1].content, roles(events, "error")[-1].name) == (failed.error, "transient")
    assert len(srv.chat_requests) == 2 + 4


async def test_a_dropped_stream_is_retried_and_the_partial_reply_discarded(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(Reply.drop(after=3, text="partial partial partial"), Reply.text("whole answer"))
    core = await make_core(srv, toy=ToyServer(), limits={"drop_backoff_base_s": 0.02, "backoff_base_s": 5})
    sub = core.bus.subscribe()
    result = await core.submit("hi")
    assert (result.stop, result.reply) == ("end", "whole answer")
    retry = roles(drain(sub), "limitretry")
    assert len(retry) == 1 and retry[0].content.startswith("the model request failed: ") and retry[0].content.endswith("in 0.02s")
    assert [m.content for m in core.session.messages if m.role == "assistant"] == ["whole answer"]


async def test_context_overflow_compacts_and_retries_once(scripted_llm, make_core, tmp_path):
    srv = scripted_llm("openai")
    state = {"goal": "ship it", "plan": ["a", "b"], "plan_step": "b", "decisions": ["use x"]}
    srv.script(
        Reply.text("first answer"),
        Reply.context_overflow(),
        Reply.text("```json\n" + json.dumps(state) + "\n```"),  # the compaction answer
        Reply.text("after compaction"),
    )
    core = await make_core(srv, toy=ToyServer())
    await core.submit("turn one")
    result = await core.submit("turn two")
    assert (result.stop, result.reply) == ("end", "after compaction")
    assert core.session.task_state.goal == "ship it"
    # The retried request carries the task state right after the system prompt.
    retried = sent_messages(srv, 3)
    assert retried[1]["role"] == "user" and retried[1]["content"].startswith(MEMORY_HEAD)
    assert '"goal": "ship it"' in retried[1]["content"]
    # The pre-compaction history was snapshotted.
    snapshots = read_compaction_snapshots(core.sessions_dir, core.session_id)
    assert [m.content for m in snapshots[-1][1]][:2] == ["turn one", "first answer"]


async def test_a_second_overflow_ends_the_turn(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(Reply.context_overflow(), Reply.text('{"goal": "g"}'), Reply.context_overflow())
    core = await make_core(srv, toy=ToyServer())
    result = await core.submit("hi")
    assert result.stop == "error" and result.error.startswith("the conversation is too long for the model (")
    assert "(/clear)" in result.error, result.error


async def test_tool_unsupported_goes_to_the_turn_error_hook(scripted_llm, make_core, agents_dir, tmp_path):
    payload = tmp_path / "payload.json"
    write_agent(agents_dir, "hooked", hooks={"turnError": f"cat > {payload}"})
    srv = scripted_llm("openai")
    srv.script(Reply.tool_unsupported())
    core = await make_core(srv, toy=ToyServer(), agent="hooked")
    sub = core.bus.subscribe()
    result = await core.submit("hi")
    assert result.stop == "error" and result.error.endswith("(the turnError hook handled it)")
    data = json.loads(payload.read_text())
    assert data["error_type"] == "tool_unsupported" and data["hook"] == "turnError"
    assert data["session_id"] == core.session_id and data["model"] == core.model_name
    assert not roles(drain(sub), "limitretry")


async def test_tool_unsupported_without_a_hook_is_an_error(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_unsupported())
    core = await make_core(srv, toy=ToyServer())
    result = await core.submit("hi")
    assert result.stop == "error" and result.error


async def test_turn_error_hook_exit_0_handles_a_rate_limit_without_retry(scripted_llm, make_core, agents_dir, tmp_path):
    payload = tmp_path / "payload.json"
    write_agent(agents_dir, "hooked", hooks={"turnError": f"cat > {payload}; echo switching model"})
    srv = scripted_llm("openai")
    srv.script(Reply.error(429, retry_after=0))
    core = await make_core(srv, toy=ToyServer(), agent="hooked")
    sub = core.bus.subscribe()
    result = await core.submit("hi")
    assert result.stop == "error" and "handled" in result.error
    assert json.loads(payload.read_text())["error_type"] == "rate_limit"
    events = drain(sub)
    assert not roles(events, "limitretry")
    assert any("switching model" in e.content for e in roles(events, "info"))


async def test_turn_error_hook_failing_lets_the_retry_go_on(scripted_llm, make_core, agents_dir):
    write_agent(agents_dir, "hooked", hooks={"turnError": "exit 1"})
    srv = scripted_llm("openai")
    srv.script(Reply.error(500), Reply.text("ok"))
    core = await make_core(srv, toy=ToyServer(), agent="hooked")
    sub = core.bus.subscribe()
    assert (await core.submit("hi")).reply == "ok"
    events = drain(sub)
    assert len(roles(events, "limitretry")) == 1
    assert any("exited 1" in e.content for e in roles(events, "info"))


async def test_a_missing_api_key_ends_the_first_turn_with_an_error(scripted_llm, make_core):
    srv = scripted_llm("openai", check=False)
    core = await make_core(srv, toy=ToyServer(), env={"OLLIE_OPENAI_KEY": ""})
    result = await core.submit("hi")
    assert result.stop == "error" and "OLLIE_OPENAI_KEY" in result.error
    assert core.backend_name == "none"
