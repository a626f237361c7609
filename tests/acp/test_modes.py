"""`ollie acp`: the `mode` slot is the approval mode; an agent switch is apart, and leaving the sandbox asks."""

from __future__ import annotations

import asyncio
import re

import acp

from ollie.testing import Reply

APPROVAL_MODES = ["ask", "auto-edit", "auto", "read-only"]


def by_id(options: list) -> dict:
    return {o.id: o for o in options}


async def latest(agent, sid: str, kind: str, holds) -> object:
    """The session's last update of `kind` once it `holds` (updates may come twice: the count is not the point)."""
    for _ in range(3000):
        if (found := agent.client.of(sid, kind)) and holds(found[-1]):
            return found[-1]
        await asyncio.sleep(0.01)
    raise AssertionError(f"no {kind} update as expected, got {agent.client.of(sid, kind)}")


def mode_option_is(value: str):
    """Whether a config_option_update's `mode` option is `value`."""
    return lambda update: by_id(update.config_options)["mode"].current_value == value


async def test_the_mode_option_is_the_approval_mode_and_the_agent_is_not_a_mode(shared_agent, llm) -> None:
    agent = await shared_agent(approval="ask")
    response = await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[])
    options = by_id(response.config_options)
    mode = options["mode"]
    assert (mode.category, mode.current_value) == ("mode", "ask")
    assert [o.value for o in mode.options] == APPROVAL_MODES
    # The only option in the `mode` slot is the approval mode; the agent selector is elsewhere.
    assert [o.id for o in response.config_options if o.category == "mode"] == ["mode"]
    # On the wire the agent selector has a category of its own (the Python SDK's client drops `_` names: see
    # ollie_acp.options.AGENT_CATEGORY), so no client takes it for the mode.
    answer = next(m["result"] for m in agent.wire if "configOptions" in m.get("result", {}))
    assert {o["id"]: o.get("category") for o in answer["configOptions"]} == {
        "mode": "mode", "model": "model", "agent": "_ollie_agent"}
    assert {"default", "yolo"} <= {o.value for o in options["agent"].options}
    assert "NO sandbox" in next(o.name for o in options["agent"].options if o.value == "yolo")
    # Old clients: the legacy modes are the same approval modes.
    assert [m.id for m in response.modes.available_modes] == APPROVAL_MODES


async def test_mode_option_legacy_mode_and_slash_approval_stay_in_sync(shared_agent, llm) -> None:
    agent = await shared_agent(approval="ask")
    sid = await agent.new()
    changed = await agent.conn.set_config_option(config_id="mode", session_id=sid, value="auto-edit")
    assert by_id(changed.config_options)["mode"].current_value == "auto-edit"
    await latest(agent, sid, "current_mode_update", lambda u: u.current_mode_id == "auto-edit")

    await agent.conn.set_session_mode(session_id=sid, mode_id="read-only")  # the legacy way
    await latest(agent, sid, "config_option_update", mode_option_is("read-only"))

    await agent.prompt(sid, "/approval auto")  # the slash command: both follow
    await latest(agent, sid, "config_option_update", mode_option_is("auto"))
    await latest(agent, sid, "current_mode_update", lambda u: u.current_mode_id == "auto")

    try:
        await agent.conn.set_config_option(config_id="mode", session_id=sid, value="yolo")
    except acp.RequestError as exc:
        assert exc.code == -32602 and "value" in str(exc.data)
    else:
        raise AssertionError("an unknown approval mode is refused")


async def test_switching_to_an_unsandboxed_agent_asks_and_a_refusal_keeps_the_agent(shared_agent, llm) -> None:
    agent = await shared_agent()
    sid = await agent.new()
    agent.client.permission_answers = ["reject_once"]
    changed = await agent.conn.set_config_option(config_id="agent", session_id=sid, value="yolo")
    assert by_id(changed.config_options)["agent"].current_value == "default"
    (tool_call, options), = agent.client.permission_requests
    # The engine's question of an agent switch (a step's shape, id `agent/<name>`), on a card of its own.
    assert tool_call.tool_call_id.startswith("agent/yolo/")
    assert tool_call.title == "switch to agent yolo: it runs WITHOUT a sandbox"
    assert "runs outside the sandbox:\neverything agent yolo runs" in tool_call.content[0].content.text
    assert [(o.kind, o.name) for o in options] == [("allow_once", "Switch (no sandbox)"),
                                                   ("reject_once", "Keep the current agent")]  # never "always"

    # Typed as a slash command: the same question; a cancelled one keeps the agent too.
    await agent.prompt(sid, "/agent yolo")
    assert len(agent.client.permission_requests) == 2
    assert "not switched" in agent.client.text(sid)
    await agent.prompt(sid, "/agent")
    assert "agent: default" in agent.client.text(sid)

    # A sandboxed agent switches without a question; allowing the unsandboxed one switches it.
    changed = await agent.conn.set_config_option(config_id="agent", session_id=sid, value="coding")
    assert by_id(changed.config_options)["agent"].current_value == "coding"
    assert len(agent.client.permission_requests) == 2
    agent.client.permission_answers = ["allow_once"]
    changed = await agent.conn.set_config_option(config_id="agent", session_id=sid, value="yolo")
    assert by_id(changed.config_options)["agent"].current_value == "yolo"
    assert len(agent.client.permission_requests) == 3
    # Each question was a tool call of its own: its answer ended it (a refusal failed, the switch completed).
    ends = {u.tool_call_id: u.status for u in agent.client.of(sid, "tool_call_update")}
    assert [ends.get(tool_call.tool_call_id) for tool_call, _ in agent.client.permission_requests] \
        == ["failed", "failed", "completed"]


async def test_the_agent_selector_keeps_the_conversation_as_a_session_to_load(shared_agent, llm) -> None:
    # Bug: picking another agent in the client's selector wiped the conversation, said nothing and kept no copy.
    agent = await shared_agent()
    llm.script(Reply.text("the parser is fixed"))
    sid = await agent.new()
    await agent.prompt(sid, "Fix the parser")
    await agent.conn.set_config_option(config_id="agent", session_id=sid, value="coding")
    said = re.search(r'the previous conversation is saved as "Fix the parser" \((\S+)\): resume it with the '
                     r"client's session list \(session/load\)", agent.client.text(sid))
    assert said, agent.client.text(sid)
    listed = {s.session_id: s for s in (await asyncio.wait_for(agent.conn.list_sessions(), 30)).sessions}
    assert listed[said[1]].title == "Fix the parser"
    await asyncio.wait_for(agent.conn.load_session(cwd=str(agent.workspace), session_id=said[1], mcp_servers=[]), 30)
    assert agent.client.text(said[1], "user_message_chunk") == "Fix the parser"
    assert agent.client.text(said[1]) == "the parser is fixed"


async def test_clear_keeps_the_conversation_as_a_session_to_load(shared_agent, llm) -> None:
    # Bug: `/clear` dropped the conversation with no copy kept (the agent selector's switch keeps one).
    agent = await shared_agent()
    llm.script(Reply.text("the parser is fixed"))
    sid = await agent.new()
    await agent.prompt(sid, "Fix the parser")
    await agent.prompt(sid, "/clear")
    said = re.search(r'session cleared: history and task state dropped\nthe previous conversation is saved as "Fix the '
                     r"parser\" \((\S+)\): resume it with the client's session list \(session/load\)",
                     agent.client.text(sid))
    assert said, agent.client.text(sid)
    listed = {s.session_id: s for s in (await asyncio.wait_for(agent.conn.list_sessions(), 30)).sessions}
    assert listed[said[1]].title == "Fix the parser"
    await asyncio.wait_for(agent.conn.load_session(cwd=str(agent.workspace), session_id=said[1], mcp_servers=[]), 30)
    assert agent.client.text(said[1]) == "the parser is fixed"


def call(tool: str, *args: str) -> Reply:
    return Reply.tool_calls(("call_tool", {"calls": [{"tool": tool, "args": list(args)}]}))


def plan_shown(agent, sid: str) -> list[str]:
    return [e.content for e in agent.client.of(sid, "plan")[-1].entries]


async def test_clear_drops_the_plan_the_client_shows_and_the_next_plan_starts_without_it(shared_agent, llm) -> None:
    # `/clear` said "task state dropped", yet the client kept showing the plan (an agent switch's too), and the new
    # conversation's first `task_add` added its steps below the old ones.
    agent = await shared_agent()
    llm.script(call("task_add", "port the old parser"), Reply.text("planned"),
               call("task_add", "write the new one"), Reply.text("planned anew"))
    sid = await agent.new()
    await agent.prompt(sid, "plan it")
    await agent.prompt(sid, "/clear")
    assert agent.client.of(sid, "plan")[-1].entries == []
    # The conversation's copy kept its plan (loading it showed none).
    kept = re.search(r"saved as .* \((\S+)\): resume it", agent.client.text(sid))[1]
    await asyncio.wait_for(agent.conn.load_session(cwd=str(agent.workspace), session_id=kept, mcp_servers=[]), 30)
    await latest(agent, kept, "plan", lambda update: [e.content for e in update.entries] == ["port the old parser"])
    await agent.prompt(sid, "something new")
    assert plan_shown(agent, sid) == ["write the new one"]
    await asyncio.wait_for(agent.conn.set_config_option(config_id="agent", session_id=sid, value="coding"), 30)
    assert agent.client.of(sid, "plan")[-1].entries == []  # the agent selector's switch: a new conversation too


async def test_rewind_puts_back_the_plan_the_turn_found_and_its_undo_the_plan_it_left(shared_agent, llm) -> None:
    # A rewind to before the turn that added a step left the step in the plan (the client's, the model's next turn).
    agent = await shared_agent()
    llm.script(call("task_add", "port the old parser"), Reply.text("planned"), Reply.text("looked"),
               call("task_add", "write the new one"), Reply.text("planned more"))
    sid = await agent.new()
    for prompt in ("plan it", "look around", "plan more"):  # the middle turn leaves the plan as it found it
        await agent.prompt(sid, prompt)
    both = ["port the old parser", "write the new one"]
    assert plan_shown(agent, sid) == both
    await agent.prompt(sid, "/rewind 2")
    assert plan_shown(agent, sid) == ["port the old parser"]
    await agent.prompt(sid, "/rewind undo")
    assert plan_shown(agent, sid) == both
    await agent.prompt(sid, "/rewind 1")
    assert plan_shown(agent, sid) == []
