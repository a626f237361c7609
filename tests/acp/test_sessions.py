"""`ollie acp` sessions: load replays history, list, permission answers, modes, config options, stdin EOF."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import acp
import pytest

from ollie.backend.types import Message
from ollie.testing import Reply
from ollie_acp.history import replay


async def test_load_replays_the_history_and_list_shows_titles_and_times(shared_agent, start_agent_beside,
                                                                        llm) -> None:
    first = await start_agent_beside(env=llm.env())
    (first.workspace / "hello.py").write_text("print('hi')\n")
    llm.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_read", "args": ["hello.py"]}]})),
               Reply.text("It prints hi."))
    sid = await first.new()
    await first.prompt(sid, "what does hello.py print")
    first.proc.stdin.close()
    await asyncio.wait_for(first.proc.wait(), 30)  # stdin closed: the agent saves and exits

    second = await shared_agent()  # an agent running on: the saved session is loaded as any other
    listed = await asyncio.wait_for(second.conn.list_sessions(cwd=str(first.workspace)), 30)
    (info,) = [s for s in listed.sessions if s.session_id == sid]
    assert info.title == "what does hello.py print"
    assert info.updated_at and info.updated_at.startswith("20")
    await asyncio.wait_for(second.conn.load_session(cwd=str(first.workspace), session_id=sid, mcp_servers=[]), 30)
    client = second.client
    assert client.text(sid, "user_message_chunk") == "what does hello.py print"
    (step,) = client.of(sid, "tool_call")
    assert (step.kind, step.title, step.status) == ("read", "Read hello.py", "completed")
    assert client.text(sid) == "It prints hi."
    # The loaded session goes on where it stopped: the model sees the earlier turn.
    llm.script(Reply.text("Still hi."))
    assert (await second.prompt(sid, "and now?")).stop_reason == "end_turn"
    assert any("It prints hi." in str(m.get("content")) for m in llm.requests[-1].body["messages"])


async def test_a_step_running_when_the_agent_was_killed_is_in_the_history_it_lists_and_loads(
        shared_agent, start_agent_beside, llm, sleeper) -> None:
    # kill -9 as a step ran lost the reply that called it: the loaded session showed the prompt alone, and the model
    # was never told that its command (which may have changed files) had run.
    first = await start_agent_beside(env=llm.env())
    sid, _ = await sleeper.start(first, llm, "62.75")
    first.proc.kill()
    await asyncio.wait_for(first.proc.wait(), 30)
    second = await shared_agent()  # an agent running on: the saved session is loaded as any other
    assert sid in [s.session_id for s in (await asyncio.wait_for(second.conn.list_sessions(), 30)).sessions]
    await asyncio.wait_for(second.conn.load_session(cwd=str(first.workspace), session_id=sid, mcp_servers=[]), 30)
    (step,) = second.client.of(sid, "tool_call")
    assert (step.title, step.status) == ("Run `exec sleep 62.75`", "failed")
    llm.script(Reply.text("back"))
    assert (await second.prompt(sid, "go on")).stop_reason == "end_turn"
    *_, call, result, prompt = llm.chat_requests[-1].body["messages"]
    assert "sleep 62.75" in call["tool_calls"][0]["function"]["arguments"] and prompt["content"] == "go on"
    assert result["content"].startswith("[interrupted before this call finished"), result


async def test_loading_an_unknown_session_is_an_error(shared_agent, llm) -> None:
    agent = await shared_agent()
    with pytest.raises(acp.RequestError) as caught:
        await agent.conn.load_session(cwd=str(agent.workspace), session_id="nosuchsession", mcp_servers=[])
    assert caught.value.code == -32002  # resource not found


ELEVATED = {"steps": [{"code": "echo out > elevated.txt", "elevated": True}]}


@pytest.mark.parametrize(("answer", "runs"), [
    ("allow_once", True), ("reject_once", False),  # (a `cancelled` answer cancels the turn: test_approval.py)
    ("allow_always", False),  # not offered: a no (it was, and it let every later elevated step out unasked)
])
async def test_an_elevated_step_asks_for_permission_each_time(shared_agent, llm, answer, runs) -> None:
    agent = await shared_agent()
    llm.script(Reply.tool_calls(("execute_code", ELEVATED)), Reply.text("ok"))
    sid = await agent.new()
    agent.client.permission_answers = [answer, "reject_once"]
    await agent.prompt(sid, "write it outside the sandbox")
    (tool_call, options), = agent.client.permission_requests
    # As when the approval mode asks about the step too (test_approval.py): no "always" either way.
    assert [o.kind for o in options] == ["allow_once", "reject_once"]
    assert "echo out > elevated.txt" in tool_call.content[0].content.text
    assert (agent.workspace / "elevated.txt").exists() is runs
    # The card asks and shows the answer: no "asking to run outside the sandbox" or "approved: ..." as agent text.
    assert agent.client.text(sid) == "ok"
    # The session mode is the approval mode: an elevation answer leaves it alone.
    assert agent.client.of(sid, "current_mode_update") == []
    # The next elevated step is asked about again, whatever the answer was.
    (agent.workspace / "elevated.txt").unlink(missing_ok=True)
    llm.script(Reply.tool_calls(("execute_code", ELEVATED)), Reply.text("ok"))
    await agent.prompt(sid, "again")
    assert len(agent.client.permission_requests) == 2 and not (agent.workspace / "elevated.txt").exists()


async def test_model_and_agent_are_config_options(shared_agent, llm) -> None:
    llm.models["other-model"] = 8192
    agent = await shared_agent()
    response = await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[])
    sid = response.session_id
    options = {o.id: o for o in response.config_options}
    assert options["agent"].current_value == "default"
    assert {"default", "coding", "plan"} <= {o.value for o in options["agent"].options}
    changed = await agent.conn.set_config_option(config_id="model", session_id=sid, value="other-model")
    assert {o.id: o.current_value for o in changed.config_options}["model"] == "other-model"
    llm.script(Reply.text("hi"))
    await agent.prompt(sid, "hello")
    assert llm.requests[-1].body["model"] == "other-model"
    changed = await agent.conn.set_config_option(config_id="agent", session_id=sid, value="coding")
    assert {o.id: o.current_value for o in changed.config_options}["agent"] == "coding"
    with pytest.raises(acp.RequestError):
        await agent.conn.set_config_option(config_id="agent", session_id=sid, value="no-such-agent")


async def test_the_model_option_takes_a_listed_model_alone_and_a_resume_keeps_it(shared_agent, start_agent_beside,
                                                                                 llm) -> None:
    # Any name was taken (each later request then failed on it), and a resumed session went back to the default.
    llm.models["other-model"] = 8192
    first = await start_agent_beside(env=llm.env())
    sid = await first.new()
    with pytest.raises(acp.RequestError) as caught:
        await first.conn.set_config_option(config_id="model", session_id=sid, value="no-such-model")
    assert caught.value.code == -32602 and "has no model 'no-such-model'" in caught.value.data["value"]
    await first.conn.set_config_option(config_id="model", session_id=sid, value="other-model")
    llm.script(Reply.text("hi"), Reply.text("again"))
    await first.prompt(sid, "hello")
    first.proc.stdin.close()
    await asyncio.wait_for(first.proc.wait(), 30)
    second = await shared_agent()  # an agent running on: the saved session is loaded as any other
    resumed = await second.conn.resume_session(cwd=str(first.workspace), session_id=sid, mcp_servers=[])
    assert {o.id: o.current_value for o in resumed.config_options}["model"] == "other-model"
    await second.prompt(sid, "hello again")
    assert [r.body["model"] for r in llm.chat_requests] == ["other-model", "other-model"]


async def test_without_a_backend_key_no_model_is_offered_and_each_try_says_what_to_set(start_agent, llm) -> None:
    # A model option of one empty name was offered, and picking a model in it answered -32603 "Internal error".
    agent = await start_agent(env={**llm.env(), "OLLIE_BACKEND": "anthropic", "ANTHROPIC_API_KEY": ""})
    response = await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[])
    sid = response.session_id
    assert [o.id for o in response.config_options] == ["mode", "agent"]
    with pytest.raises(acp.RequestError) as caught:
        await agent.conn.set_config_option(config_id="model", session_id=sid, value="claude-x")
    fix = "the anthropic backend needs an API key: set OLLIE_ANTHROPIC_KEY (or ANTHROPIC_API_KEY)"
    assert caught.value.code == -32602 and caught.value.data == {"value": f"no backend: {fix}"}
    with pytest.raises(acp.RequestError) as caught:
        await agent.prompt(sid, "hello")
    assert (caught.value.code, str(caught.value), agent.client.text(sid)) == (-32603, fix, "")


async def test_session_new_answers_before_the_model_list_which_follows_as_an_update(shared_agent, llm) -> None:
    """GET /models is off the first prompt's path: the answer offers the current model, an update the list."""
    llm.models["other-model"] = 8192
    agent = await shared_agent()
    llm.models_gate.clear()  # the backend lists its models only once released
    try:
        response = await asyncio.wait_for(
            agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[]), 30)
        sid = response.session_id
        model = {o.id: o for o in response.config_options}["model"]
        assert (model.current_value, [o.value for o in model.options]) == ("scripted-model", ["scripted-model"])
        assert not agent.client.of(sid, "config_option_update")
    finally:
        llm.models_gate.set()
    update = (await agent.updates(sid, "config_option_update"))[0]
    model = {o.id: o for o in update.config_options}["model"]
    assert model.current_value == "scripted-model"
    assert [o.value for o in model.options] == ["scripted-model", "other-model"]


async def test_the_model_list_update_offers_the_agent_configs_session_new_read(start_agent, llm, tmp_path) -> None:
    """The configs are read once for the answer and the update both: one added in between shows only later."""
    llm.models["other-model"] = 8192
    agents_dir = tmp_path / "agents"
    agents_dir.mkdir()
    agent = await start_agent(env={**llm.env(), "OLLIE_AGENTS_DIR": str(agents_dir)})
    llm.models_gate.clear()
    try:
        response = await asyncio.wait_for(agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[]), 30)
        sid = response.session_id
        answered = [o.value for o in {o.id: o for o in response.config_options}["agent"].options]
        assert "default" in answered and "late" not in answered
        (agents_dir / "late.json").write_text((Path(__file__).parents[2] / "agents" / "default.json").read_text())
    finally:
        llm.models_gate.set()
    update = (await agent.updates(sid, "config_option_update"))[0]
    assert [o.value for o in {o.id: o for o in update.config_options}["agent"].options] == answered
    changed = await agent.conn.set_config_option(config_id="mode", session_id=sid, value="auto")
    assert "late" in [o.value for o in {o.id: o for o in changed.config_options}["agent"].options]  # read afresh


async def test_stdin_closing_ends_tools_and_saves_through_the_ollie_command(start_agent, llm, sleeper,
                                                                           _private_dirs) -> None:
    ollie = shutil.which("ollie", path=str(Path(__import__("sys").executable).parent))
    assert ollie, "the ollie console script is installed"
    agent = await start_agent(env=llm.env(), command=[ollie, "acp"])
    sid, prompt = await sleeper.start(agent, llm, "62.5")
    agent.proc.stdin.close()
    assert await asyncio.wait_for(agent.proc.wait(), 30) == 0
    prompt.cancel()
    assert sleeper.pids("62.5") == []
    saved = list((_private_dirs / "data" / "ollie" / "sessions").glob(f"{sid}*"))
    assert saved, "the session was not saved"


async def test_list_reports_each_sessions_cwd_and_filters_by_it(shared_agent, llm, tmp_path) -> None:
    agent = await shared_agent()
    other = tmp_path / "other project"
    other.mkdir()
    llm.script(Reply.text("one"), Reply.text("two"))
    here = await agent.new()
    await agent.prompt(here, "first project")
    there = await agent.new(cwd=other)
    await agent.prompt(there, "second project")
    untouched = await agent.new()  # nobody typed in it: not worth listing
    listed = await asyncio.wait_for(agent.conn.list_sessions(), 30)
    cwds = {s.session_id: s.cwd for s in listed.sessions}
    assert (cwds[here], cwds[there]) == (str(agent.workspace.resolve()), str(other.resolve()))
    assert untouched not in cwds
    only = await asyncio.wait_for(agent.conn.list_sessions(cwd=str(other)), 30)
    assert [s.session_id for s in only.sessions] == [there]
    with pytest.raises(acp.RequestError) as caught:
        await agent.conn.list_sessions(cwd="relative/dir")
    assert caught.value.code == -32602


async def test_list_keeps_a_session_a_rewind_of_every_turn_emptied_while_it_can_be_undone(shared_agent, llm) -> None:
    # Bug: left out (untitled, no turn) where the daemon's ollie/session/list keeps it while its rewind can be undone:
    # the only way back to it.
    agent = await shared_agent()
    llm.script(Reply.text("one"), Reply.text("two"))
    emptied, kept = await agent.new(), await agent.new()
    await agent.prompt(emptied, "write a haiku")
    await agent.prompt(kept, "write a limerick")
    await agent.prompt(emptied, "/rewind")
    assert "rewound to before turn 1" in agent.client.text(emptied), agent.client.text(emptied)
    listed = {s.session_id for s in (await asyncio.wait_for(agent.conn.list_sessions(), 30)).sessions}
    assert kept in listed and emptied in listed, listed
    await agent.prompt(emptied, "/rewind undo")
    assert "rewind undone: turn 1 back" in agent.client.text(emptied), agent.client.text(emptied)
    titles = {s.session_id: s.title for s in (await asyncio.wait_for(agent.conn.list_sessions(), 30)).sessions}
    assert titles[emptied] == "write a haiku", titles


async def test_list_pages_past_session_records_no_ollie_wrote(start_agent, llm) -> None:
    # Pages went by row count: a row the registry leaves out (written by hand) ended the listing after the first
    # page, or shifted the next page's start by one, and a session was never listed.
    from tests.acp.conftest import store_hand_written_sessions

    listed = store_hand_written_sessions("alice")
    agent = await start_agent(env={**llm.env(), "OLLIE_USER": "alice"})
    assert await agent.list_pages() == [listed[:50], listed[50:100], listed[100:]]
    with pytest.raises(acp.RequestError) as caught:
        await agent.conn.list_sessions(cursor="50")  # an old count, or none of ours
    assert caught.value.code == -32602 and "not a cursor of ollie's session list" in str(caught.value.data), caught.value.data
    # Forged ones: a lone surrogate (no UTF-8 for the store) and a NUL (PostgreSQL's text holds none) failed the
    # listing as an internal error; a megabyte of junk was echoed whole.
    for forged in ("1:\ud800", ":a\x00b", "x" * 1_000_000):
        with pytest.raises(acp.RequestError) as caught:
            await agent.conn.list_sessions(cursor=forged)
        data = str(caught.value.data)
        assert caught.value.code == -32602 and "not a cursor of ollie's session list" in data and len(data) < 300, data


async def test_the_slash_commands_follow_the_session_new_answer(shared_agent, llm) -> None:
    agent = await shared_agent()
    sid = await agent.new()
    await agent.updates(sid, "available_commands_update")
    answer = next(i for i, m in enumerate(agent.wire) if (m.get("result") or {}).get("sessionId") == sid)
    update = next(i for i, m in enumerate(agent.wire) if (m.get("params") or {}).get("sessionId") == sid
                  and m["params"].get("update", {}).get("sessionUpdate") == "available_commands_update")
    assert answer < update, "the client learns the session id before its first update"


async def test_close_ends_the_turn_saves_and_forgets_the_session(shared_agent, llm, sleeper) -> None:
    agent = await shared_agent()
    assert agent.init.agent_capabilities.session_capabilities.close is not None
    sid, prompt = await sleeper.start(agent, llm, "63.5")
    await asyncio.wait_for(agent.conn.close_session(session_id=sid), 30)
    assert (await asyncio.wait_for(prompt, 30)).stop_reason == "cancelled"
    assert sleeper.pids("63.5") == []
    saved = Path(os.environ["XDG_DATA_HOME"]) / "ollie" / "sessions"  # the agent's (shared_agent)
    assert list(saved.glob(f"{sid}*")), "the session was not saved"
    with pytest.raises(acp.RequestError) as caught:
        await agent.prompt(sid, "still there?")
    assert caught.value.code == -32602
    # The agent keeps serving its other sessions.
    llm.script(Reply.text("yes"))
    other = await agent.new()
    assert (await agent.prompt(other, "hello")).stop_reason == "end_turn"


async def test_kill_closes_the_session_says_so_and_a_load_opens_it_again(shared_agent, llm) -> None:
    # `/kill` closed the engine but left the session open: its reply was lost and every later prompt ended silently.
    agent = await shared_agent()
    llm.script(Reply.text("first answer"))
    sid = await agent.new()
    await agent.prompt(sid, "hello")
    assert (await agent.prompt(sid, "/kill")).stop_reason == "end_turn"
    assert agent.client.text(sid).endswith(f"session {sid} killed: session/load opens it again\n\n")
    with pytest.raises(acp.RequestError) as caught:
        await agent.prompt(sid, "still there?")
    assert caught.value.code == -32602 and sid in str(caught.value.data)
    await asyncio.wait_for(agent.conn.load_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[]), 30)
    llm.script(Reply.text("back"))
    assert (await agent.prompt(sid, "again")).stop_reason == "end_turn"
    assert agent.client.text(sid).endswith("first answerback")  # the history replayed, then the new turn


async def test_a_reply_cancelled_mid_way_replays_as_it_was_shown(shared_agent, llm) -> None:
    # The engine's note ending a cut-off reply (for the model) was replayed as agent text: the live view never
    # showed it, nor do VS Code's and Neovim's histories.
    hold = threading.Event()
    llm.script(Reply(text="half an answer", chunk_size=4, hold=hold))
    agent = await shared_agent()
    sid = await agent.new()
    prompt = asyncio.ensure_future(agent.prompt(sid, "tell me"))
    try:
        deadline = time.monotonic() + 30
        while agent.client.text(sid) != "half an answer":  # streamed, held before its end
            assert time.monotonic() < deadline and not prompt.done(), agent.client.text(sid)
            await asyncio.sleep(0.01)
        await agent.conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(prompt, 30)).stop_reason == "cancelled"
    finally:
        hold.set()
    await asyncio.wait_for(agent.conn.close_session(session_id=sid), 30)
    agent.client.reset()
    await asyncio.wait_for(agent.conn.load_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[]), 30)
    assert agent.client.text(sid) == "half an answer"
    llm.script(Reply.text("in full"))  # the model still reads that its reply was cut off
    await agent.prompt(sid, "again")
    assert "[interrupted by the user" in str(llm.chat_requests[-1].body["messages"])


async def test_stdin_that_is_dev_null_or_a_file_ends_the_agent_promptly(tmp_path, llm) -> None:
    import json
    import subprocess
    import sys

    from tests.acp.conftest import child_env

    command = [sys.executable, "-m", "ollie_acp"]
    # /dev/null (the event loop never sees its end): the agent ends rather than hanging (a hang times out here; a
    # loaded machine's start-up alone can take many seconds).
    ended = await asyncio.to_thread(subprocess.run, command, stdin=subprocess.DEVNULL, capture_output=True,
                                    env=child_env(llm.env()), cwd=tmp_path, timeout=60)
    assert ended.returncode == 0 and ended.stdout == b"", ended.stderr[-2000:]
    # A file in, a file out (the loop refuses both as pipes): the request is answered, then the end of the file ends it.
    requests, answers = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    requests.write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                    "params": {"protocolVersion": 1}}) + "\n")
    with requests.open("rb") as stdin, answers.open("wb") as stdout:
        ended = await asyncio.to_thread(subprocess.run, command, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE,
                                        env=child_env(llm.env()), cwd=tmp_path, timeout=60)
    assert ended.returncode == 0, ended.stderr[-2000:]
    (answer,) = [json.loads(line) for line in answers.read_text().splitlines()]
    assert answer["id"] == 1 and answer["result"]["agentInfo"]["name"] == "ollie", answer


async def test_the_title_reaches_the_client_and_rn_renames_the_listed_session(shared_agent, llm) -> None:
    # `/rn` said "session renamed" but only the session's file had the name: session/list (Zed's history, every
    # other front end) kept the first prompt's words. And Zed names a thread by the agent's `session_info_update`,
    # which never came: neither title reached the open thread.
    llm.script(Reply.text("seen"))
    agent = await shared_agent()
    sid = await agent.new()
    await agent.prompt(sid, "what does hello.py print")
    assert [u.title for u in await agent.updates(sid, "session_info_update")] == ["what does hello.py print"]
    await agent.prompt(sid, "/rn hello printer")
    assert "session renamed to 'hello printer'" in agent.client.text(sid)
    assert [u.title for u in agent.client.of(sid, "session_info_update")][-1] == "hello printer"
    (listed,) = [s for s in (await agent.conn.list_sessions()).sessions if s.session_id == sid]
    assert listed.title == "hello printer"
    # Zed loads an open thread again as its panel reopens: it was not told the title again, the thread unnamed.
    agent.client.reset()
    await asyncio.wait_for(agent.conn.load_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[]), 30)
    assert [u.title for u in await agent.updates(sid, "session_info_update")] == ["hello printer"]


async def test_a_session_runs_in_one_acp_agent_at_a_time(shared_agent, start_agent_beside, llm) -> None:
    """Two Zed windows: the second `ollie acp` cannot load the session the first runs (-32007 naming it), so no
    writer's turn is lost; once the first closed it, the second loads it whole and goes on."""
    llm.script(Reply.text("first answer"), Reply.text("second answer"))
    first = await shared_agent()
    second = await start_agent_beside(env=llm.env(), workspace=first.workspace)
    sid = await first.new()
    assert (await first.prompt(sid, "first question")).stop_reason == "end_turn"
    with pytest.raises(acp.RequestError) as caught:
        await asyncio.wait_for(second.conn.load_session(cwd=str(second.workspace), session_id=sid, mcp_servers=[]),
                               30)
    assert caught.value.code == -32007, caught.value
    message = str(caught.value)
    assert "session is live elsewhere" in message and f"(ollie acp pid {first.proc.pid})" in message, message
    await asyncio.wait_for(first.conn.close_session(session_id=sid), 30)
    await asyncio.wait_for(second.conn.load_session(cwd=str(second.workspace), session_id=sid, mcp_servers=[]), 30)
    assert (await second.prompt(sid, "second question")).stop_reason == "end_turn"
    users = [m["content"] for m in llm.requests[-1].body["messages"] if m["role"] == "user"]
    assert users == ["first question", "second question"], users


async def test_a_second_load_of_an_open_session_replays_it_and_the_one_session_goes_on(shared_agent, llm,
                                                                                        sleeper) -> None:
    """Zed loads a thread again as its panel reopens: a session open in this agent was refused (-32602 `already
    open`), the thread left empty. The load replays it and the same session goes on (no second writer on its log);
    a step still running replays as running, and ends live."""
    agent = await shared_agent()
    llm.script(Reply.text("first answer"))
    sid = await agent.new()
    await agent.prompt(sid, "first question")
    agent.client.reset()
    await asyncio.wait_for(agent.conn.load_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[]), 30)
    assert (agent.client.text(sid, "user_message_chunk"), agent.client.text(sid)) == ("first question", "first answer")
    await asyncio.wait_for(agent.conn.resume_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[]), 30)
    llm.script(Reply.text("second answer"))
    assert (await agent.prompt(sid, "second question")).stop_reason == "end_turn"
    users = [m["content"] for m in llm.requests[-1].body["messages"] if m["role"] == "user"]
    assert users == ["first question", "second question"], users
    await asyncio.wait_for(agent.conn.close_session(session_id=sid), 30)
    agent.client.reset()
    await asyncio.wait_for(agent.conn.load_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[]), 30)
    assert agent.client.text(sid, "user_message_chunk") == "first questionsecond question"  # each turn saved once

    running, prompt = await sleeper.start(agent, llm, "64.25")
    agent.client.reset()
    await asyncio.wait_for(agent.conn.load_session(cwd=str(agent.workspace), session_id=running, mcp_servers=[]), 30)
    (step,) = agent.client.of(running, "tool_call")
    assert step.status == "in_progress"  # replayed as it is, not as a step cut off
    await agent.conn.cancel(session_id=running)
    assert (await asyncio.wait_for(prompt, 30)).stop_reason == "cancelled"
    assert agent.client.of(running, "tool_call_update")[-1].status == "failed"


def test_ollie_acp_hands_its_options_to_ollie_acp() -> None:
    """`ollie acp ...` runs `ollie_acp ...` before the terminal's imports (an editor waits on it)."""
    import subprocess
    import sys

    ollie = shutil.which("ollie", path=str(Path(sys.executable).parent))
    assert ollie, "the ollie console script is installed"
    done = subprocess.run([ollie, "acp", "--version"], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.startswith("ollie-acp ")  # ollie_acp's own parser answered, not `ollie`'s
    bad = subprocess.run([ollie, "acp", "--no-such-option"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "ollie acp" in bad.stderr


async def test_a_loaded_session_replays_its_edits_diffs_and_list_reports_its_moved_cwd(shared_agent, start_agent_beside,
                                                                                       llm) -> None:
    first = await start_agent_beside(env=llm.env())
    ws = first.workspace.resolve()
    (ws / "sub").mkdir()
    (ws / "sub" / "a.txt").write_text("one\n")
    llm.script(Reply.tool_calls(("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["a.txt", "one", "two"]},
        {"tool": "file_write", "args": ["b.txt", "new\n"]}]})), Reply.text("done"))
    sid = await first.new()
    await first.prompt(sid, "/cwd sub")  # the session moves: the saved one keeps where it works now
    await first.prompt(sid, "edit a and write b")
    assert (ws / "sub" / "a.txt").read_text() == "two\n"
    first.proc.stdin.close()
    await asyncio.wait_for(first.proc.wait(), 30)

    second = await shared_agent()  # an agent running on: the saved session is loaded as any other
    listed = await asyncio.wait_for(second.conn.list_sessions(), 30)
    assert [s.cwd for s in listed.sessions if s.session_id == sid] == [str(ws / "sub")]
    await asyncio.wait_for(second.conn.load_session(cwd=str(ws / "sub"), session_id=sid, mcp_servers=[]), 30)
    diffs = [c for u in second.client.of(sid, "tool_call_update") for c in (u.content or []) if c.type == "diff"]
    assert [(d.path, d.old_text, d.new_text) for d in diffs] == [  # the files' texts, as live (tests/acp/test_steps.py)
        (str(ws / "sub" / "a.txt"), "one\n", "two\n"), (str(ws / "sub" / "b.txt"), None, "new\n")]
    starts = second.client.of(sid, "tool_call")
    assert starts[0].raw_input["calls"][0]["tool"] == "file_edit"
    assert [loc.path for s in starts for loc in s.locations] == [str(ws / "sub" / "a.txt"), str(ws / "sub" / "b.txt")]


async def test_a_loaded_session_shows_its_plan_and_context_use(shared_agent, llm) -> None:
    # Zed's reopened thread showed no plan, and an empty context meter, until a step of the next turn.
    llm.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "task_add", "args": ["write it", "run it"]}]})),
               Reply.text("planned"))
    agent = await shared_agent()
    sid = await agent.new()
    await agent.prompt(sid, "plan it")
    await asyncio.wait_for(agent.conn.close_session(session_id=sid), 30)
    agent.client.reset()
    await asyncio.wait_for(agent.conn.load_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[]), 30)
    (plan,) = await agent.updates(sid, "plan")
    assert [(e.content, e.status) for e in plan.entries] == [("write it", "in_progress"), ("run it", "pending")]
    (usage,) = await agent.updates(sid, "usage_update")
    assert usage.used > 0 and usage.size > 0  # the model's window looked up, not "0 tokens" until the next turn


async def test_resume_reopens_a_saved_session_without_replaying_it(shared_agent, start_agent_beside,
                                                                   llm) -> None:
    first = await start_agent_beside(env=llm.env())
    llm.script(Reply.text("It prints hi."))
    sid = await first.new()
    await first.prompt(sid, "what does hello.py print")
    first.proc.stdin.close()
    await asyncio.wait_for(first.proc.wait(), 30)

    second = await shared_agent()  # an agent running on: the saved session is loaded as any other
    assert second.init.agent_capabilities.session_capabilities.resume is not None
    response = await asyncio.wait_for(
        second.conn.resume_session(cwd=str(first.workspace), session_id=sid, mcp_servers=[]), 30)
    assert response.modes.current_mode_id == "auto"
    assert second.client.of(sid, "user_message_chunk") == [] and second.client.of(sid, "agent_message_chunk") == []
    llm.script(Reply.text("Still hi."))
    assert (await second.prompt(sid, "and now?")).stop_reason == "end_turn"
    assert any("It prints hi." in str(m.get("content")) for m in llm.requests[-1].body["messages"])
    with pytest.raises(acp.RequestError) as caught:
        await second.conn.resume_session(cwd=str(first.workspace), session_id="nosuchsession", mcp_servers=[])
    assert caught.value.code == -32002


async def test_fork_goes_on_from_a_copy_and_leaves_the_source_as_it_was(shared_agent, llm, tmp_path) -> None:
    agent = await shared_agent()
    assert agent.init.agent_capabilities.session_capabilities.fork is not None
    llm.script(Reply.text("It prints hi."))
    sid = await agent.new()
    await agent.prompt(sid, "what does hello.py print")
    await agent.conn.set_session_mode(mode_id="auto-edit", session_id=sid)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    forked = await asyncio.wait_for(agent.conn.fork_session(session_id=sid, cwd=str(elsewhere), mcp_servers=[]), 30)
    fid = forked.session_id
    assert fid != sid and forked.modes.current_mode_id == "auto-edit"
    llm.script(Reply.text("In the fork."), Reply.text("In the source."))
    await agent.prompt(fid, "fork question")
    told = [str(m.get("content")) for m in llm.requests[-1].body["messages"]]
    assert any("It prints hi." in t for t in told) and any("fork question" in t for t in told)
    await agent.prompt(sid, "source question")
    told = [str(m.get("content")) for m in llm.requests[-1].body["messages"]]
    assert any("It prints hi." in t for t in told) and not any("fork question" in t for t in told)

    listed = {s.session_id: s for s in (await agent.conn.list_sessions()).sessions}
    assert listed[fid].cwd == str(elsewhere.resolve()) and "(fork)" in (listed[fid].title or "")
    with pytest.raises(acp.RequestError) as caught:
        await agent.conn.fork_session(session_id="nosuchsession", cwd=str(elsewhere), mcp_servers=[])
    assert caught.value.code == -32002


async def test_a_fork_killed_as_it_is_made_is_listed_only_with_its_copy(start_agent, llm) -> None:
    """Bug: `ollie acp` titled a fork (listed it) before its copy of the conversation was saved, so an agent killed
    between left an empty `<title> (fork)` in the session list."""
    agent = await start_agent(env=llm.env())
    llm.script(Reply(text="answered " * 1_000_000, chunk_size=1 << 16))  # 9 MB: the copy takes a while to save
    sid = await agent.new()
    await agent.prompt(sid, "first question", timeout=120)
    registry = Path(os.environ["XDG_DATA_HOME"]) / "ollie" / "sessions.db"

    def forked() -> list[str]:
        """The forks the session list has, read from its database as the agent writes it."""
        with contextlib.closing(sqlite3.connect(f"file:{registry}?mode=ro", uri=True)) as db:
            return [row[0] for row in db.execute("SELECT id FROM sessions WHERE title LIKE '%(fork)'")]

    fork = asyncio.ensure_future(agent.conn.fork_session(session_id=sid, cwd=str(agent.workspace), mcp_servers=[]))
    deadline = time.monotonic() + 60
    while not forked() and not fork.done():  # no pause but the loop's: killed the moment the list has it
        assert time.monotonic() < deadline, "the fork was never listed"
        await asyncio.sleep(0)
    agent.proc.kill()
    await agent.proc.wait()
    fork.cancel()
    await asyncio.gather(fork, return_exceptions=True)
    second = await start_agent(env=llm.env(), workspace=agent.workspace)
    for listed in forked():
        await asyncio.wait_for(second.conn.load_session(session_id=listed, cwd=str(agent.workspace),
                                                        mcp_servers=[]), 60)
        prompts = second.client.text(listed, "user_message_chunk")
        assert "first question" in prompts, f"the listed fork {listed} holds no copy: {prompts!r}"


def test_a_replayed_prompt_is_the_user_s_text_without_ollie_s_notes(tmp_path) -> None:
    noted = Message("user", "fix it\n\n[preTurn hook]\nrun the tests first", notes="[preTurn hook]\nrun the tests first")
    [chunk] = replay([noted], cwd=tmp_path, kind_of=None)
    assert chunk.model_dump()["content"]["text"] == "fix it"


async def test_a_cwd_that_is_no_existing_absolute_directory_is_invalid_params_naming_it(shared_agent, llm) -> None:
    # `~nosuchuser/...` has no home to expand to: pathlib raised, and the client got an internal error.
    agent = await shared_agent()
    for cwd in ("~nosuchuser-ollie/work", "relative/dir", str(agent.workspace / "absent")):
        with pytest.raises(acp.RequestError) as caught:
            await asyncio.wait_for(agent.conn.new_session(cwd=cwd, mcp_servers=[]), 30)
        assert caught.value.code == -32602 and "cwd" in str(caught.value.data), (cwd, caught.value.data)


async def test_an_archived_session_is_refused_as_archived_on_load_and_resume(shared_agent, llm) -> None:
    # ArchivedError had no case among the store errors: the session opened all the same, its turns unrecorded.
    from ollie.sessions.records import UserRecords

    llm.script(Reply.text("first answer"))
    first = await shared_agent()
    sid = await first.new()
    assert (await first.prompt(sid, "first question")).stop_reason == "end_turn"
    await asyncio.wait_for(first.conn.close_session(session_id=sid), 30)
    records = UserRecords()
    records.registry.archive(records.scope, sid)  # as `ollie/session/archive` does
    for reopen in (first.conn.load_session, first.conn.resume_session):
        with pytest.raises(acp.RequestError) as caught:
            await asyncio.wait_for(reopen(cwd=str(first.workspace), session_id=sid, mcp_servers=[]), 30)
        assert (caught.value.code, str(caught.value)) == (-32002, f"session is archived: {sid}"), caught.value
        assert caught.value.data == {"sessionId": sid}


async def test_a_prompt_to_a_session_another_client_archived_is_refused_as_archived(shared_agent, llm) -> None:
    # Archived elsewhere (the daemon, another window) while open here: the prompt ran and its turn went into the
    # archived session. The archive wins, as at a load: refused, nothing sent to the model, the session left as it was.
    from ollie.sessions.records import UserRecords

    llm.script(Reply.text("first answer"))
    agent = await shared_agent()
    sid = await agent.new()
    assert (await agent.prompt(sid, "first question")).stop_reason == "end_turn"
    asked = len(llm.requests)
    records = UserRecords()
    records.registry.archive(records.scope, sid)  # as another client's `ollie/session/archive` does
    with pytest.raises(acp.RequestError) as caught:
        await agent.prompt(sid, "second question")
    assert (caught.value.code, str(caught.value)) == (-32002, f"session is archived: {sid}"), caught.value
    assert caught.value.data == {"sessionId": sid} and len(llm.requests) == asked
    assert records.registry.get(records.scope, sid).archived


async def test_a_new_sessions_cwd_is_walked_off_the_loop(tmp_path, monkeypatch) -> None:
    # session/new, load, resume and fork resolved the cwd on the loop every session shares: a hung NFS or FUSE
    # workspace froze them all.
    from ollie_acp.agent import _directory
    from tests.stalls import StalledWalk

    work = tmp_path / "nfs"
    work.mkdir()
    stall = StalledWalk(monkeypatch, work)
    assert await stall.walked_off_the_loop(_directory(str(work))) == work


async def test_a_session_whose_record_cannot_be_written_runs_and_its_turn_says_so(start_agent, llm, tmp_path) -> None:
    # The engine's one rule for every front end (Recorder.open): the session runs on, what it saved is kept, and its
    # turn is told, once. ACP ran on with a log line alone; a registry's refusal now refuses the session, as elsewhere.
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the data dir should be\n")
    llm.script(Reply.text("answered anyway"), Reply.text("and again"))
    agent = await start_agent(env={**llm.env(), "OLLIE_DATA_DIR": str(blocker / "data"),
                                   "OLLIE_SESSIONS_DIR": str(tmp_path / "sessions")})
    sid = await agent.new()
    assert (await agent.prompt(sid, "hello")).stop_reason == "end_turn"
    assert (await agent.prompt(sid, "again")).stop_reason == "end_turn"
    told = agent.client.text(sid)
    assert told.count(f"⚠ session {sid} is not recorded in the session list") == 1, told
    assert str(blocker) in told and "answered anyway" in told and "and again" in told, told
    assert list((tmp_path / "sessions").glob(f"{sid}*")), "the session was not saved"


async def test_a_fork_of_a_session_mid_turn_takes_the_turns_that_ended(start_agent, llm) -> None:
    """Bug: `ollie acp` forked an open session whose turn was running with that turn's prompt and no reply (the
    daemon took only the turns that ended: each front end filled in the fork's source, and they drifted)."""
    hold = threading.Event()
    llm.script(Reply.text("one"), Reply(text="slow two", chunk_size=2, hold=hold))
    agent = await start_agent(env=llm.env())
    sid = await agent.new()
    await agent.prompt(sid, "first prompt")
    running = asyncio.ensure_future(agent.prompt(sid, "second prompt"))
    try:
        deadline = time.monotonic() + 30
        while agent.client.text(sid) == "one":  # its reply began (held before its end): the prompt is saved
            assert time.monotonic() < deadline, "the second turn's reply never began"
            await asyncio.sleep(0.01)
        forked = await asyncio.wait_for(agent.conn.fork_session(session_id=sid, cwd=str(agent.workspace),
                                                                mcp_servers=[]), 30)
    finally:
        hold.set()
    await running
    llm.script(Reply.text("in the fork"))
    await agent.prompt(forked.session_id, "fork question")
    told = [(m["role"], str(m.get("content"))) for m in llm.requests[-1].body["messages"] if m["role"] != "system"]
    assert told[:2] == [("user", "first prompt"), ("assistant", "one")]
    assert not any("second prompt" in text for _, text in told), told


async def test_a_new_session_is_never_started_in_a_link_a_step_planted(shared_agent, llm, tmp_path) -> None:
    # Red team 55: session/new took the real path of whatever cwd it was given; one session's step planted a link in
    # its own directory (granted it), and a session opened there (a client picks a project's folder) worked beyond it.
    outside = tmp_path / "outside"
    outside.mkdir()
    agent = await shared_agent()
    sid = await agent.new()
    await agent.conn.set_session_mode(mode_id="auto", session_id=sid)
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": f"ln -s {outside} l && mkdir real"}]})),
               Reply.text("done"))
    assert (await agent.prompt(sid, "plant")).stop_reason == "end_turn"
    link = agent.workspace.resolve() / "l"
    assert link.is_symlink()
    with pytest.raises(acp.RequestError) as caught:
        await asyncio.wait_for(agent.conn.new_session(cwd=str(link), mcp_servers=[]), 30)
    assert caught.value.code == -32602 and f"{link} is a symlink inside" in str(caught.value.data), caught.value.data
    assert (await asyncio.wait_for(agent.conn.new_session(cwd=str(link.parent / "real"), mcp_servers=[]), 30)).session_id
