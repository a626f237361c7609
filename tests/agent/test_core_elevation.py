"""An agent's `elevation` setting through the real Core and execute server: ask (the default), allow, deny."""

from __future__ import annotations

import pytest
from agentkit import drain, roles, tool_messages, write_agent

from ollie.agent.questions import Answer, StepQuestion
from ollie.testing import Reply


def elevated_write(target):
    return Reply.tool_calls(("execute_code", {"steps": [{"code": f"echo x > {target}", "elevated": True}]}))


async def test_ask_puts_the_step_to_the_step_approver_as_its_question(scripted_llm, make_core, outside):
    """Under `auto` the elevation alone is asked, as the step's question covering it (once two ways: an elevation
    approver with the code alone, and the step approver); a rejection's feedback reaches the model."""
    srv = scripted_llm("openai")
    target, refused = outside / "approved.txt", outside / "refused.txt"
    srv.script(elevated_write(target), Reply.text("done"), elevated_write(refused), Reply.text("not done"))
    core = await make_core(srv)
    asked: list[StepQuestion] = []
    answers = iter([Answer("allow_once"), Answer("reject_with_feedback", "use the workspace")])

    async def approve(question: StepQuestion) -> Answer:
        asked.append(question)
        return next(answers)

    core.step_approver = approve
    sub = core.bus.subscribe()
    assert (await core.submit("write outside")).reply == "done"
    assert target.read_text() == "x\n"
    assert (await core.submit("again")).reply == "not done"
    assert not refused.exists()
    assert [q.outside for q in asked] == [(f"echo x > {target}",), (f"echo x > {refused}",)]
    step = asked[0]
    assert step.kind == "execute" and step.title.endswith("outside the sandbox") and step.id.startswith("call")
    assert step.outcomes() == ("allow_once", "reject", "reject_with_feedback")
    told = tool_messages(srv, 3)[-1]["content"]
    assert "the user did not allow" in told and "The user's feedback: use the workspace" in told, told
    infos = [e.content for e in roles(drain(sub), "info")]
    assert infos == [f"allowed: {asked[0].title}", f"rejected: {asked[1].title}"], infos


async def test_ask_without_an_approver_refuses_and_the_model_hears_why(scripted_llm, make_core, outside):
    srv = scripted_llm("openai")
    target = outside / "refused.txt"
    srv.script(elevated_write(target), Reply.text("ok, I won't"))
    core = await make_core(srv)
    await core.submit("write outside")
    assert not target.exists()
    assert "nobody can give it" in tool_messages(srv, 1)[0]["content"]


async def test_deny_and_allow_come_from_the_agent_config(scripted_llm, make_core, agents_dir, outside):
    write_agent(agents_dir, "strict", elevation="deny")
    write_agent(agents_dir, "trusting", elevation="allow")
    srv = scripted_llm("openai")
    denied, allowed = outside / "denied.txt", outside / "allowed.txt"
    srv.script(elevated_write(denied), Reply.text("refused"), elevated_write(allowed), Reply.text("written"))
    core = await make_core(srv, agent="strict")
    core.step_approver = pytest.fail  # never asked under deny or allow
    await core.submit("try")
    assert not denied.exists()
    assert '"elevation": "deny"' in tool_messages(srv, 1)[0]["content"]
    asked: list[str] = []

    async def switch_only(question: StepQuestion) -> Answer:
        assert question.id.startswith("agent/trusting/"), question.id  # the step under "allow" is never asked
        asked.append(question.title)
        assert question.outcomes() == ("allow_once", "reject")  # asked every time, no feedback: no turn hears it
        return Answer("allow_once")

    core.step_approver = switch_only
    await core.switch_agent("trusting")  # its elevated steps run unasked: the switch itself asks
    assert asked == ["switch to agent trusting: it runs WITHOUT a sandbox"]
    await core.submit("try again")
    assert len(asked) == 1
    assert allowed.read_text() == "x\n"


async def test_under_ask_a_denied_elevation_is_refused_without_a_question(scripted_llm, make_core, agents_dir,
                                                                           outside):
    """The agent denies every elevation: its step is refused at once, the user never asked to approve a step that
    no answer could let run (they were asked, then the step refused anyway)."""
    write_agent(agents_dir, "strict", elevation="deny")
    srv = scripted_llm("openai")
    denied = outside / "denied.txt"
    srv.script(elevated_write(denied), Reply.text("refused"))
    core = await make_core(srv, agent="strict")
    core.set_approval("ask")
    core.step_approver = pytest.fail
    assert (await core.submit("try")).reply == "refused"
    assert not denied.exists()
    assert '"elevation": "deny"' in tool_messages(srv, 1)[0]["content"]
