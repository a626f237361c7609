"""`ollie acp` starts the MCP servers a client sends in session/new; their calls are ACP tool calls."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest
from acp.exceptions import RequestError
from acp.schema import EnvVariable, McpServerStdio

from ollie.mcp.host import FIRST_LIST_WAIT_S
from ollie.mcp.stdio import state_dir
from ollie.testing import Reply
from tests.procs import eventually

SERVER = Path(__file__).parents[1] / "mcp" / "server.py"
pytestmark = pytest.mark.timeout(180)


async def test_session_new_servers_are_tool_calls_with_kinds_titles_and_permission(shared_agent, llm) -> None:
    agent = await shared_agent(approval="ask")
    assert agent.init.agent_capabilities.mcp_capabilities.http is True
    llm.script(Reply.tool_calls(("mcp__zed__add", {"a": 40, "b": 2})),
               Reply.tool_calls(("mcp__zed__create_issue", {"title": "from zed"})), Reply.text("done"))
    server = McpServerStdio(name="zed", command=sys.executable, args=[str(SERVER)],
                            env=[EnvVariable(name="GREETING", value="hi")])
    response = await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[server])
    sid = response.session_id
    agent.client.permission_answers = ["allow_once"]
    assert (await agent.prompt(sid, "go", timeout=90)).stop_reason == "end_turn"
    starts = agent.client.of(sid, "tool_call")
    assert [(s.title, s.kind) for s in starts] == [("zed: add", "read"), ('zed: create_issue "from zed"', "other")]
    # Only the call that may change something was put to the user.
    (asked,) = agent.client.permission_requests
    assert asked[0].title == 'zed: create_issue "from zed"'
    told = [m["content"] for m in llm.requests[-1].body["messages"] if m["role"] == "tool"]
    assert told[0] == "42" and "created issue 'from zed'" in told[1]


async def test_session_new_answers_at_once_and_its_first_prompt_waits_once_naming_the_servers(start_agent, llm) -> None:
    # session/new waited up to 15 s for the client's servers: Zed spun all that time. A hanging server then held each
    # prompt 15 s more, and said so each time. (An agent of its own, whose wait for `hung` is 6 s: 15 s of the test's.)
    agent = await start_agent(env={**llm.env(), "OLLIE_MCP_START_WAIT_S": "6"})
    shutil.rmtree(home := state_dir("slow"), ignore_errors=True)
    llm.script(Reply.tool_calls(("mcp__slow__add", {"a": 2, "b": 3})), Reply.text("added"), Reply.text("again"))
    slow = McpServerStdio(name="slow", command=sys.executable, args=[str(SERVER), "gated"], env=[])
    hung = McpServerStdio(name="hung", command=sys.executable, args=["-c", "import time; time.sleep(600)"], env=[])
    # Within the wait it did: `slow` cannot finish starting before the prompt below opens its gate.
    new = agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[slow, hung])
    sid = (await asyncio.wait_for(new, FIRST_LIST_WAIT_S)).session_id
    first = asyncio.ensure_future(agent.prompt(sid, "add", timeout=90))
    said = "waiting for MCP server 'slow', 'hung' to start"
    await eventually(lambda: said in agent.client.text(sid) or first.done(), "the prompt saying what it waits for")
    await eventually((home / "gated").exists, "the server waiting at its gate")
    (home / "open").touch()  # it starts now; `hung` never does: the prompt goes on without it after the wait
    assert (await first).stop_reason == "end_turn"
    assert [m["content"] for m in llm.requests[-1].body["messages"] if m["role"] == "tool"] == ["5"]
    offered = [t["function"]["name"] for t in llm.requests[-2].body["tools"]]
    assert "mcp__slow__add" in offered and not any(name.startswith("mcp__hung__") for name in offered)
    # The next prompt waits for nobody again (`hung` still starting), nor says so.
    assert (await agent.prompt(sid, "more")).stop_reason == "end_turn"
    assert agent.client.text(sid).count("waiting for MCP server") == 1, agent.client.text(sid)
    await asyncio.wait_for(agent.conn.close_session(session_id=sid), 30)


async def test_the_wait_note_is_a_paragraph_of_its_own_after_the_reply_a_load_replayed(shared_agent, llm) -> None:
    # A client joining the agent's chunks showed "donewaiting for MCP server ...": the note began where the
    # replayed reply ended, with no line break.
    agent = await shared_agent()
    llm.script(Reply.text("done"), Reply.text("again"))
    sid = await agent.new()
    await agent.prompt(sid, "hi")
    await asyncio.wait_for(agent.conn.close_session(session_id=sid), 30)
    shutil.rmtree(home := state_dir("slow"), ignore_errors=True)
    slow = McpServerStdio(name="slow", command=sys.executable, args=[str(SERVER), "gated"], env=[])
    await asyncio.wait_for(agent.conn.load_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[slow]), 30)
    await eventually((home / "gated").exists, "the server waiting at its gate")
    first = asyncio.ensure_future(agent.prompt(sid, "more", timeout=90))
    await eventually(lambda: "waiting for MCP server" in agent.client.text(sid) or first.done(), "the wait note")
    (home / "open").touch()
    assert (await first).stop_reason == "end_turn"
    assert "done\n\nwaiting for MCP server 'slow' to start" in agent.client.text(sid), agent.client.text(sid)
    await asyncio.wait_for(agent.conn.close_session(session_id=sid), 30)


async def test_a_malformed_server_is_invalid_params_naming_it(shared_agent, llm) -> None:
    agent = await shared_agent()
    bad = McpServerStdio(name="bad__name", command="x", args=[], env=[])
    with pytest.raises(RequestError) as raised:
        await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[bad])
    assert raised.value.code == -32602 and "mcpServers.bad__name" in str(raised.value.data)


async def test_a_server_that_fails_at_once_is_told_at_once_naming_it_and_why(shared_agent, llm) -> None:
    # The first failure went unsaid (the session listened only once its servers had started): the user learnt of it
    # at the retry, or not at all when the server came up then.
    agent = await shared_agent()
    dead = McpServerStdio(name="github", command=sys.executable,
                          args=["-c", "import sys; sys.exit('error: GITHUB_TOKEN is not set')"], env=[])
    response = await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[dead])
    sid = response.session_id
    first = (await agent.updates(sid, "agent_message_chunk"))[0].content.text
    assert first.startswith("MCP server 'github' failed (the server exited (status 1): error: GITHUB_TOKEN is not "
                            "set); restarting in 1s"), first
    # After session/new's answer: an update naming a session the client has not been told of has nowhere to go.
    answered = next(n for n, m in enumerate(agent.wire) if m.get("result", {}).get("sessionId") == sid)
    told = next(n for n, m in enumerate(agent.wire) if m.get("method") == "session/update"
                and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
    assert answered < told
    assert all(n > answered for n, m in enumerate(agent.wire) if m.get("method") == "session/update")


async def test_an_agent_picked_whose_server_fails_at_once_tells_it_at_once(start_agent, llm, tmp_path) -> None:
    # Its servers start as the agent's session is built, before anyone listens: the first failure went unsaid.
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "default.json").write_text(json.dumps({"prompt": "You write code."}))
    (agents / "gh.json").write_text(json.dumps({"prompt": "You file issues.", "mcpServers": {"github": {
        "command": sys.executable, "args": ["-c", "import sys; sys.exit('error: GITHUB_TOKEN is not set')"]}}}))
    agent = await start_agent(env={**llm.env(), "OLLIE_AGENTS_DIR": str(agents)})
    sid = await agent.new()
    await agent.conn.set_config_option(config_id="agent", session_id=sid, value="gh")
    first = (await agent.updates(sid, "agent_message_chunk"))[0].content.text
    assert first.startswith("MCP server 'github' failed (the server exited (status 1): error: GITHUB_TOKEN is not "
                            "set); restarting in 1s"), first


async def test_the_npm_filesystem_server_from_session_new(shared_agent, llm) -> None:
    fs_bin = Path(__file__).parents[1] / "mcp" / "npm" / "node_modules" / ".bin" / "mcp-server-filesystem"
    if not fs_bin.exists():
        pytest.fail("the filesystem server is missing: run scripts/setup.d/45-mcp.sh (scripts/test does)")
    agent = await shared_agent()
    (agent.workspace / "hello.txt").write_text("hello from the workspace\n")
    llm.script(Reply.tool_calls(("mcp__fs__read_text_file", {"path": str(agent.workspace / "hello.txt")})),
               Reply.text("read it"))
    server = McpServerStdio(name="fs", command=str(fs_bin), args=[str(agent.workspace)], env=[])
    sid = (await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[server])).session_id
    assert (await agent.prompt(sid, "read hello", timeout=120)).stop_reason == "end_turn"
    (start,) = agent.client.of(sid, "tool_call")
    assert start.title.startswith("fs: read_text_file") and start.kind == "read"
    told = [m["content"] for m in llm.requests[-1].body["messages"] if m["role"] == "tool"]
    assert told == ["hello from the workspace\n"]


async def test_a_workspace_server_is_asked_about_through_request_permission(shared_agent, llm) -> None:

    agent = await shared_agent()
    (agent.workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"planted": {
        "command": sys.executable, "args": [str(SERVER)]}}}))
    llm.script(Reply.tool_calls(("mcp__planted__add", {"a": 1, "b": 2})), Reply.text("3"))
    sid = (await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[])).session_id
    agent.client.permission_answers = ["allow_once"]
    assert (await agent.prompt(sid, "add", timeout=90)).stop_reason == "end_turn"
    (asked,) = agent.client.permission_requests
    assert asked[0].title.startswith("start MCP server 'planted' of ") and str(SERVER) in asked[0].title
    assert [o.name for o in asked[1]] == ["Allow once", "Allow always (this workspace)", "Reject"]
    told = [m["content"] for m in llm.requests[-1].body["messages"] if m["role"] == "tool"]
    assert told == ["3"]
    # The card says it was allowed (and ends completed): no "allowed MCP server ..." line as the model's text.
    assert "allowed MCP server" not in agent.client.text(sid) and agent.client.text(sid).endswith("3")
