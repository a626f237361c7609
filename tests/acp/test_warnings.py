"""What ollie warns about as it builds a session (a broken config file, an agent whose backend cannot be made)
reaches an ACP user as agent text, once."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ollie.testing import Reply

pytestmark = pytest.mark.timeout(120)


def config_dir() -> Path:
    """The user's ollie config dir the agent reads (the test's private XDG_CONFIG_HOME)."""
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "ollie"
    path.mkdir(parents=True, exist_ok=True)
    return path


async def test_a_broken_config_file_is_told_once_at_the_start_of_the_first_reply(start_agent, llm) -> None:
    mcp_json = config_dir() / "mcp.json"
    mcp_json.write_text('{"mcpServers": {"github": {"command": "gh-mcp",}}}')  # a trailing comma
    llm.script(Reply.text("first answer"), Reply.text("second answer"))
    agent = await start_agent(env=llm.env())
    sid = await agent.new()
    await agent.prompt(sid, "hi")
    chunks = [u.content.text for u in agent.client.of(sid, "agent_message_chunk")]
    assert chunks[0].startswith(f"warning: MCP servers of mcp.json not started: {mcp_json}: line 1"), chunks
    assert "".join(chunks).endswith("\n\nfirst answer")  # set apart from the model's words, before them
    await agent.prompt(sid, "again")
    assert agent.client.text(sid).count("warning:") == 1


async def test_an_agent_picked_in_the_config_option_tells_what_it_warned_about(start_agent, llm, tmp_path) -> None:
    # Picked from the client's agent selector (no `/agent` to print them), its warnings went nowhere: the user was
    # never told the agent's backend could not be made and the session stayed on the old one.
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "default.json").write_text(json.dumps({"prompt": "You write code."}))
    (agents / "claude.json").write_text(json.dumps({"prompt": "You write code.", "backend": "anthropic"}))
    llm.script(Reply.text("answer"))
    agent = await start_agent(env={**llm.env(), "OLLIE_AGENTS_DIR": str(agents)})
    sid = await agent.new()
    # A workspace server that came after the session began: the new agent's runtime warns of it (first told here).
    (agent.workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"planted": {"command": "planted-mcp"}}}))
    await agent.conn.set_config_option(config_id="agent", session_id=sid, value="claude")
    told = agent.client.text(sid)
    assert told.startswith("warning: MCP server 'planted' of ") and "is the workspace's" in told, told
    assert told.endswith("warning: kept backend local: the anthropic backend needs an API key: set "
                         "OLLIE_ANTHROPIC_KEY (or ANTHROPIC_API_KEY)\n\n"), told
    agent.client.permission_answers = ["reject_once"]  # the workspace's server, asked about before the turn
    await agent.prompt(sid, "hi")
    assert agent.client.text(sid) == told + "answer"  # not again as the turn ends


async def test_an_agent_config_that_cannot_load_is_told_once_not_silently_left_out(start_agent, llm) -> None:
    # The daemon's pickers say "cannot load: <why>"; ACP's agent selector just left it out, and nobody said why.
    mine = config_dir() / "agents" / "mine.json"
    mine.parent.mkdir()
    mine.write_text('{"prompt": "You review code.",}')  # a trailing comma
    llm.script(Reply.text("first answer"), Reply.text("second answer"))
    agent = await start_agent(env=llm.env())
    response = await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[])
    sid = response.session_id
    (selector,) = [o for o in response.config_options if o.id == "agent"]
    offered = {o.value for o in selector.options}
    assert "mine" not in offered and "coding" in offered
    await agent.prompt(sid, "hi")
    assert agent.client.text(sid) == (f"warning: agent config 'mine' cannot load, so the agent selector leaves it "
                                      f"out: {mine}: invalid JSON at line 1 column 31: Expecting property name "
                                      "enclosed in double quotes\n\nfirst answer")
    await agent.prompt(sid, "again")
    assert agent.client.text(sid).count("warning:") == 1


async def test_a_broken_sandbox_policy_is_told_after_the_first_replys_text(start_agent, llm) -> None:
    # The daemon and the terminal say it as a session opens; ACP said it only when a step was refused. Its read (YAML
    # and its checks, ~25 ms of CPU) held the first chunk back when it was told first: the reply's text comes first.
    policy = config_dir() / "sandbox.yaml"
    policy.write_text("netwrok:\n  enabled: true\n")
    llm.script(Reply.text("first answer"), Reply.text("second answer"))
    agent = await start_agent(env=llm.env())
    sid = await agent.new()
    await agent.prompt(sid, "hi")
    assert agent.client.text(sid) == (f"first answer\n\nwarning: {policy}: key 'netwrok': unknown key; fix the file: "
                                      "no step runs until it loads\n\n")
    await agent.prompt(sid, "again")
    assert agent.client.text(sid).count("warning:") == 1


async def test_a_broken_sandbox_policy_is_told_before_the_first_tool_call_and_a_command_hears_it_first(
        start_agent, llm) -> None:
    # Told before the reply's first step, not after the turn: the step itself is refused (no step runs until it loads).
    policy = config_dir() / "sandbox.yaml"
    policy.write_text("netwrok:\n  enabled: true\n")
    llm.script(Reply(text="let me look", tool_calls=[("execute_code", {"steps": [{"code": "true"}]})]),
               Reply.text("done"))
    agent = await start_agent(env=llm.env())
    sid = await agent.new()
    await agent.prompt(sid, "hi")
    kinds = [(u.session_update, getattr(getattr(u, "content", None), "text", "")) for u in agent.client.of(sid)]
    told = next(n for n, (kind, text) in enumerate(kinds) if "'netwrok'" in text)
    first_call = next(n for n, (kind, _) in enumerate(kinds) if kind == "tool_call")
    assert "".join(text for kind, text in kinds[:told] if kind == "agent_message_chunk") == "let me look", kinds
    assert told < first_call, kinds
    assert agent.client.text(sid).count("warning:") == 1
    # A command (no reply streams first) hears it before it runs.
    other = await agent.new()
    await agent.prompt(other, "/help")
    assert agent.client.text(other).startswith(f"warning: {policy}: key 'netwrok'"), agent.client.text(other)


async def test_a_sandbox_policy_made_a_fifo_is_told_and_a_linked_one_is_read(start_agent, llm) -> None:
    # Bug (red team 29): a sandbox.yaml the user made a FIFO was read by name: the first prompt waited for good.
    policy = config_dir() / "sandbox.yaml"
    os.mkfifo(policy)  # nobody ever writes to it
    llm.script(Reply.text("first answer"), Reply.text("second answer"))
    agent = await start_agent(env=llm.env())
    sid = await agent.new()
    await agent.prompt(sid, "hi")
    said = agent.client.text(sid)
    assert said.startswith(f"first answer\n\nwarning: {policy}: cannot read the sandbox policy: {policy} is not a "
                           "regular file"), said
    # A link the user made to their own file is theirs to make: followed (the file it names is what is read).
    policy.unlink()
    (config_dir() / "mine.yaml").write_text("netwrok:\n  enabled: true\n")
    policy.symlink_to("mine.yaml")
    other = await agent.new()
    await agent.prompt(other, "hi")
    assert agent.client.text(other).startswith(f"second answer\n\nwarning: {policy}: key 'netwrok': unknown key"), \
        agent.client.text(other)
