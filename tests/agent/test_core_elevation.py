"""An agent's `elevation` setting through the real Core and execute server: ask (the default), allow, deny."""

from __future__ import annotations

import pytest
from agentkit import drain, roles, tool_messages, write_agent

from ollie.testing import Reply


def elevated_write(target):
    return Reply.tool_calls(("execute_code", {"steps": [{"code": f"echo x > {target}", "elevated": True}]}))


async def test_ask_puts_the_step_to_the_approver(scripted_llm, make_core, outside):
    srv = scripted_llm("openai")
    target = outside / "approved.txt"
    srv.script(elevated_write(target), Reply.text("done"))
    core = await make_core(srv)
    asked = []

    async def approve(what: str) -> bool:
        asked.append(what)
        return True

    core.approver = approve
    sub = core.bus.subscribe()
    assert (await core.submit("write outside")).reply == "done"
    assert target.read_text() == "x\n"
    assert asked == [f"echo x > {target}"]
    infos = " ".join(e.content for e in roles(drain(sub), "info"))
    assert "asking to run outside the sandbox" in infos and "approved" in infos


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
    core.approver = pytest.fail  # never asked under deny or allow
    await core.submit("try")
    assert not denied.exists()
    assert '"elevation": "deny"' in tool_messages(srv, 1)[0]["content"]
    asked: list[str] = []

    async def switch_only(what: str) -> bool:
        assert what.startswith("switch to agent trusting"), what  # the step under "allow" is never asked
        asked.append(what)
        return True

    core.approver = switch_only
    await core.switch_agent("trusting")  # its elevated steps run unasked: the switch itself asks
    assert len(asked) == 1 and "WITHOUT a sandbox" in asked[0]
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
    core.approver = pytest.fail
    core.step_approver = pytest.fail
    assert (await core.submit("try")).reply == "refused"
    assert not denied.exists()
    assert '"elevation": "deny"' in tool_messages(srv, 1)[0]["content"]
