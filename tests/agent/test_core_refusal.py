"""A declined reply ends the turn with stop "refusal"; calls cut off by it are not run."""

from __future__ import annotations

from agentkit import drain, roles

from ollie.testing import Reply


async def test_a_refusal_with_a_cut_off_call_runs_nothing(scripted_llm, make_core, workdir):
    srv = scripted_llm("anthropic")
    # Anthropic may stop with "refusal" part way into a tool call: the call must not run.
    srv.script(Reply(text="I won't do that.", refused=True,
                     tool_calls=[("execute_code", {"steps": [{"code": "echo x > ran.txt"}]})]))
    core = await make_core(srv)
    sub = core.bus.subscribe()
    result = await core.submit("do something off limits")
    assert (result.stop, result.reply) == ("refusal", "I won't do that.")
    assert not (workdir / "ran.txt").exists()
    assert core.tool_call_count == 0 and len(srv.requests) == 1
    assert [e.content for e in roles(drain(sub), "turn")] == ["start", "refusal"]
    assert [m.role for m in core.session.messages] == ["user", "assistant"]
