"""`ollie acp`: session modes are the approval modes; approval questions go to session/request_permission."""

from __future__ import annotations

import asyncio

import acp
import pytest

from ollie.testing import Reply
from tests.procs import eventually


def run(code: str) -> Reply:
    return Reply.tool_calls(("execute_code", {"steps": [{"code": code}]}))


async def asked_edit(shared_agent, llm, text: str, answer: str, *script: Reply):
    """An agent (approval: ask) whose workspace has a.txt holding `text`, the model saying `script`, after one
    prompt "edit" whose question was answered `answer`: (agent, session id)."""
    llm.script(*script)
    agent = await shared_agent(approval="")
    (agent.workspace / "a.txt").write_text(text)
    sid = await agent.new()
    agent.client.permission_answers = [answer]
    await agent.prompt(sid, "edit")
    return agent, sid


async def test_session_modes_are_the_approval_modes(shared_agent, llm) -> None:
    llm.script(Reply.file_edit("a.txt", "one", "two"), Reply.text("1"), run("touch x1"), Reply.text("2"),
               run("touch x2"), Reply.text("3"))
    agent = await shared_agent(approval="")
    (agent.workspace / "a.txt").write_text("one\n")
    response = await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[])
    sid = response.session_id
    assert response.modes.current_mode_id == "ask"
    assert [m.id for m in response.modes.available_modes] == ["ask", "auto-edit", "auto", "read-only"]
    await agent.conn.set_session_mode(session_id=sid, mode_id="auto-edit")

    await agent.prompt(sid, "edit")  # auto-edit: the edit is not asked about
    assert (agent.workspace / "a.txt").read_text() == "two\n"
    assert agent.client.permission_requests == []
    agent.client.permission_answers = ["allow_always"]
    await agent.prompt(sid, "touch")  # a command asks; "always" covers `touch` for the session
    await agent.prompt(sid, "touch again")
    (tool_call, options), = agent.client.permission_requests
    assert tool_call.kind == "execute" and tool_call.title == "Run `touch x1`"
    assert [o.kind for o in options] == ["allow_once", "allow_always", "reject_once", "reject_always"]
    assert (agent.workspace / "x1").exists() and (agent.workspace / "x2").exists()
    with pytest.raises(acp.RequestError):
        await agent.conn.set_session_mode(session_id=sid, mode_id="allow")


async def test_a_rejected_edit_is_not_made_and_the_model_is_told(shared_agent, llm) -> None:
    agent, sid = await asked_edit(shared_agent, llm, "one\n", "reject_always",
                                  Reply.file_edit("a.txt", "one", "two"), Reply.text("1"), Reply.file_edit("a.txt", "one", "two"),
                                  Reply.text("2"))
    (tool_call, _), = agent.client.permission_requests
    assert tool_call.kind == "edit" and tool_call.title == "Edit a.txt"
    diff = tool_call.content[0]
    path = str(agent.workspace.resolve() / "a.txt")  # absolute, as the spec wants
    assert (diff.type, diff.path, diff.old_text, diff.new_text) == ("diff", path, "one\n", "two\n")
    assert [loc.path for loc in tool_call.locations] == [path]
    assert (agent.workspace / "a.txt").read_text() == "one\n"
    assert "rejected" in llm.chat_requests[-1].body["messages"][-1]["content"]
    # "Reject always" holds for edits in this session: the next one is rejected without a question.
    await agent.prompt(sid, "edit again")
    assert len(agent.client.permission_requests) == 1
    assert (agent.workspace / "a.txt").read_text() == "one\n"


async def test_a_client_that_cannot_answer_a_question_is_told_once_what_to_do(shared_agent, llm) -> None:
    # The SDK's example client answers session/request_permission "method not found": under `ask` each step was
    # rejected with no word of why, the model told the user refused.
    llm.script(run("touch x"), Reply.text("1"), run("touch y"), Reply.text("2"))
    agent = await shared_agent(approval="")
    sid = await agent.new()
    agent.client.permission_answers = ["fail", "fail"]
    await agent.prompt(sid, "touch x")
    told = agent.client.text(sid)
    assert '"Run `touch x`" was rejected: this client failed ollie\'s question about it' in told, told
    assert "pick the mode `auto-edit` (edits) or `auto` (edits and commands), or send `/approval auto`" in told
    assert not (agent.workspace / "x").exists()
    await agent.prompt(sid, "touch y")
    assert len(agent.client.permission_requests) == 2 and agent.client.text(sid).count("was rejected") == 1


async def test_an_answer_shows_on_its_card_not_as_the_model_s_text(shared_agent, llm) -> None:
    # Zed showed "allowed: Run `touch x`" as agent text, as if the model wrote it, beside the card saying "Allowed".
    llm.script(run("touch x"), Reply.file_edit("a.txt", "one", "two"), Reply.text("done"))
    agent = await shared_agent(approval="")
    (agent.workspace / "a.txt").write_text("one\n")
    sid = await agent.new()
    agent.client.permission_answers = ["allow_once", "reject_once"]
    await agent.prompt(sid, "go")
    assert len(agent.client.permission_requests) == 2 and (agent.workspace / "x").exists()
    assert (agent.workspace / "a.txt").read_text() == "one\n"
    assert agent.client.text(sid) == "done"


async def test_an_edit_s_question_and_its_end_name_the_line_it_changes(shared_agent, llm) -> None:
    """A client following the agent (Zed) opens the file where the edit is: the question's location and the
    finished step's carry the line (they named the file alone)."""
    agent, sid = await asked_edit(shared_agent, llm, "one\ntwo\nthree\nfour\n", "allow_once",
                                  Reply.file_edit("a.txt", "three", "THREE"), Reply.text("done"))
    (tool_call, _), = agent.client.permission_requests
    path = str(agent.workspace.resolve() / "a.txt")
    assert [(loc.path, loc.line) for loc in tool_call.locations] == [(path, 3)]
    ended = [u for u in agent.client.of(sid, "tool_call_update") if u.status == "completed"]
    assert [(loc.path, loc.line) for loc in ended[-1].locations] == [(path, 3)]


def test_where_a_diff_first_changes() -> None:
    from ollie.agent.steps import Diff

    assert Diff("a", "1\n2\n3\n", "1\nX\n3\n").first_line() == 2
    assert Diff("a", "1\n2\n", "1\n2\n3\n").first_line() == 3  # appended
    assert Diff("a", "1\n2\n3\n", "1\n2\n").first_line() == 2  # its last line cut: the new text's last line
    assert Diff("a", None, "new\n").first_line() == 1 and Diff("a", "old\n", None).first_line() == 1
    assert Diff("a", "", "").first_line() == 1


async def test_each_question_of_a_batch_names_the_tool_call_of_its_step(shared_agent, llm) -> None:
    # A client shows a question as the tool call it names (Zed upserts it): another id is a second card that
    # nothing ever ends, beside the step's own.
    calls = [{"tool": "file_edit", "args": [name, "one", "two"]} for name in ("a.txt", "b.txt")]
    llm.script(Reply.tool_calls(("call_tool", {"calls": calls})), Reply.text("done"))
    agent = await shared_agent(approval="")
    for name in ("a.txt", "b.txt"):
        (agent.workspace / name).write_text("one\n")
    sid = await agent.new()
    agent.client.permission_answers = ["allow_once", "allow_once"]
    assert (await agent.prompt(sid, "edit both")).stop_reason == "end_turn"
    asked = [tool_call.tool_call_id for tool_call, _ in agent.client.permission_requests]
    steps = [start.tool_call_id for start in agent.client.of(sid, "tool_call")]
    assert len(asked) == 2 and asked == steps
    ended = {u.tool_call_id: u.status for u in agent.client.of(sid, "tool_call_update") if u.status == "completed"}
    assert set(asked) <= set(ended)
    assert (agent.workspace / "b.txt").read_text() == "two\n"


async def test_a_big_batch_s_one_question_leaves_its_first_step_s_card_with_its_own_title(shared_agent, llm) -> None:
    # More than 5 asked steps are one question, on the first step's card: it kept "Edit f0.txt and 6 more steps"
    # after the step ended, a second name for one edit.
    calls = [{"tool": "file_edit", "args": [f"f{n}.txt", "one", "two"]} for n in range(7)]  # (f6.txt: none)
    llm.script(Reply.tool_calls(("call_tool", {"calls": calls})), Reply.text("done"))
    agent = await shared_agent(approval="")
    for n in range(6):
        (agent.workspace / f"f{n}.txt").write_text("one\n")
    sid = await agent.new()
    agent.client.permission_answers = ["allow_once"]
    assert (await agent.prompt(sid, "edit them")).stop_reason == "end_turn"
    ((asked, _),) = agent.client.permission_requests
    assert asked.title == "Edit f0.txt and 6 more steps"
    # Each edit's diff, as a single edit's question carries its own (it carried none: the calls' lines alone).
    diffs = [(c.path, c.old_text, c.new_text) for c in asked.content if c.type == "diff"]
    assert diffs == [(str(agent.workspace / f"f{n}.txt"), "one\n", "two\n") for n in range(6)]
    assert asked.content[-1].content.text == "(1 more edit not previewed)"
    first = agent.client.of(sid, "tool_call")[0]
    titles = [u.title for u in agent.client.of(sid, "tool_call_update") if u.tool_call_id == first.tool_call_id and u.title]
    assert titles[-1] == first.title != asked.title, titles


async def test_read_only_mode_refuses_writes_without_asking(shared_agent, llm) -> None:
    llm.script(run("touch x"), Reply.text("planned"))
    agent = await shared_agent(approval="")
    sid = await agent.new()
    await agent.conn.set_session_mode(session_id=sid, mode_id="read-only")
    await agent.prompt(sid, "make x")
    assert not (agent.workspace / "x").exists() and agent.client.permission_requests == []
    assert "read-only" in llm.chat_requests[-1].body["messages"][-1]["content"]


async def test_a_question_nobody_answers_is_a_rejection_after_the_timeout(start_agent, llm) -> None:
    llm.script(Reply.file_edit("a.txt", "one", "two"), Reply.text("gave up"))
    agent = await start_agent(env={**llm.env(approval=""), "OLLIE_QUESTION_TIMEOUT_S": "1"})
    (agent.workspace / "a.txt").write_text("one\n")
    sid = await agent.new()
    agent.client.permission_answers = ["away"]
    await agent.prompt(sid, "edit")
    assert len(agent.client.permission_requests) == 1
    assert (agent.workspace / "a.txt").read_text() == "one\n"
    assert "nobody answered whether 'Edit a.txt'" in llm.chat_requests[-1].body["messages"][-1]["content"]


async def test_a_cancel_while_a_question_waits_ends_its_card_and_the_prompt(shared_agent, llm) -> None:
    # Zed's stop button mid-question: the card, drawn from the question alone (no step had begun), stayed pending.
    llm.script(run("touch x"))
    agent = await shared_agent(approval="")
    sid = await agent.new()
    agent.client.permission_answers = ["away"]
    prompt = asyncio.ensure_future(agent.prompt(sid, "touch"))
    await eventually(lambda: agent.client.permission_requests, "the question")
    await agent.conn.cancel(session_id=sid)
    assert (await asyncio.wait_for(prompt, 30)).stop_reason == "cancelled"
    (question, _), = agent.client.permission_requests
    assert [u.status for u in agent.client.of(sid, "tool_call_update")
            if u.tool_call_id == question.tool_call_id] == ["failed"]
    assert not (agent.workspace / "x").exists()


async def test_a_network_question_goes_to_request_permission(shared_agent, llm) -> None:
    from tests.netserver import Listener

    server = Listener()
    server.start()
    try:
        llm.script(run(f"curl -s http://other.test:{server.port}/x"), Reply.text("1"))
        agent = await shared_agent(approval="auto")
        sid = await agent.new()
        agent.client.permission_answers = ["reject_once"]
        await agent.prompt(sid, "fetch")
        (tool_call, options), = agent.client.permission_requests
        assert tool_call.kind == "fetch" and tool_call.title.startswith(f"connect to other.test:{server.port} ")
        assert tool_call.raw_input == {"network": {"host": "other.test", "port": server.port, "scheme": "http"}}
        assert [(o.option_id, o.name) for o in options][:3] == [
            ("allow_once", "Allow once"), ("allow_session", "Allow for this session"),
            ("allow_always", "Always allow (this and later sessions)")]
        assert not server.received
        # The question is a tool call of its own (Zed shows a card for it, running once allowed): the answer ends it.
        assert [(u.tool_call_id, u.status) for u in agent.client.of(sid, "tool_call_update")
                if u.tool_call_id == tool_call.tool_call_id] == [(tool_call.tool_call_id, "failed")]
        assert f"[network] other.test:{server.port} denied" in llm.chat_requests[-1].body["messages"][-1]["content"]
        # The step's tool call content (its result's preview) names the connection too.
        closing = [u for u in agent.client.of(sid, "tool_call_update") if u.content]
        assert any(f"[network] other.test:{server.port} denied" in c.content.text for u in closing for c in u.content
                   if getattr(c, "type", "") == "content"), closing
    finally:
        server.sock.close()


async def test_allow_for_this_session_through_request_permission_lets_the_later_steps_through(start_agent, llm) -> None:
    from ollie.sandbox import netsaved
    from ollie.testing import nethosts
    from tests.netserver import Listener

    server = Listener()
    server.start()
    try:
        fetch = run(f"curl -s -w ' status %{{http_code}}' http://other.test:{server.port}/x")
        llm.script(fetch, Reply.text("1"), fetch, Reply.text("2"), fetch, Reply.text("3"))
        agent = await start_agent(env={**llm.env(approval="auto"), **nethosts.env({"other.test": "127.0.0.1"})})
        sid = await agent.new()
        agent.client.permission_answers = ["allow_session", "reject_once"]
        await agent.prompt(sid, "fetch")
        (asked, options), = agent.client.permission_requests
        assert next(o for o in options if o.option_id == "allow_session").kind == "allow_always"
        assert [u.status for u in agent.client.of(sid, "tool_call_update") if u.tool_call_id == asked.tool_call_id] \
            == ["completed"]
        await agent.prompt(sid, "again")  # not asked: the session's answer holds
        told = llm.chat_requests[-1].body["messages"][-1]["content"]
        assert "hello status 200" in told and f"[network] other.test:{server.port} allowed for this session" in told
        assert len(agent.client.permission_requests) == 1 and server.received.count(b"GET /x ") == 2
        await agent.prompt(await agent.new(), "fetch")  # another session asks again
        assert len(agent.client.permission_requests) == 2 and server.received.count(b"GET /x ") == 2
        assert not netsaved.saved_file().exists()
    finally:
        server.sock.close()


async def test_a_steps_question_shows_its_program_whole(shared_agent, llm) -> None:
    """The question's card held the step's title, `Run `cat a.txt …``, and what "always" covers: a client showing no
    raw input had the user allow a program whose next line, `touch made.txt`, they never saw."""
    llm.script(run("cat a.txt\ntouch made.txt"), Reply.text("ok"))
    agent = await shared_agent(approval="ask")
    sid = await agent.new()
    agent.client.permission_answers = ["reject_once"]
    await agent.prompt(sid, "look")
    (tool_call, options), = agent.client.permission_requests
    assert "cat a.txt\ntouch made.txt" in tool_call.content[0].content.text, tool_call.content
    assert not (agent.workspace / "made.txt").exists()
    # No "Allow always" (`cat` commands) for two lines that no rule covers: it would ask again at once.
    assert [o.kind for o in options] == ["allow_once", "reject_once", "reject_always"], options
    assert "always" not in tool_call.content[0].content.text, tool_call.content


@pytest.mark.parametrize(("answer", "runs"), [("allow_once", True), ("reject_once", False)])
async def test_under_ask_an_elevated_step_is_one_question(shared_agent, llm, answer, runs) -> None:
    # It was two: the step's approval, then "Run outside the sandbox" for the same code.
    code = "echo out > elevated.txt"
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": code, "elevated": True}]})), Reply.text("ok"))
    agent = await shared_agent(approval="ask")
    sid = await agent.new()
    agent.client.permission_answers = [answer, "allow_once"]
    await agent.prompt(sid, "write it outside the sandbox")
    (tool_call, options), = agent.client.permission_requests
    assert tool_call.title == f"Run `{code}` outside the sandbox"
    assert tool_call.content[0].content.text.endswith(f"runs outside the sandbox:\n{code}")
    assert [o.kind for o in options] == ["allow_once", "reject_once"]  # asked each time: no "always"
    assert (agent.workspace / "elevated.txt").exists() is runs


async def test_a_question_shows_a_bidi_override_in_its_code_as_an_escape(shared_agent, llm) -> None:
    """A U+202E in a program (one to run outside the sandbox too) went into the card's text as it was: a client
    drawing it reordered the rest of the line (Trojan Source), so what the user read was not what runs."""
    code = "cat notes # \u202e; rm -rf ~"
    llm.script(run(code), Reply.text("1"),
               Reply.tool_calls(("execute_code", {"steps": [{"code": code, "elevated": True}]})), Reply.text("2"))
    agent = await shared_agent(approval="ask")
    sid = await agent.new()
    agent.client.permission_answers = ["reject_once", "reject_once"]
    await agent.prompt(sid, "lint")
    await agent.prompt(sid, "lint outside")
    texts = [tool_call.content[0].content.text for tool_call, _ in agent.client.permission_requests]
    assert len(texts) == 2 and all("\u202e" not in text and "# \\u202e; rm" in text for text in texts), texts


async def test_a_question_names_a_file_with_a_bidi_override_escaped_its_location_the_real_path(shared_agent, llm) -> None:
    # A batch's card names its first file; its files are its locations, which a client draws as they are:
    # `x\u202eyp.txt` read as `xtxt.py`.
    names = [f"f{n}.txt" for n in range(5)] + ["x\u202eyp.txt"]
    llm.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": [n, "one", "two"]}
                                                         for n in names]})), Reply.text("left"))
    agent = await shared_agent(approval="ask")
    for n in names:
        (agent.workspace / n).write_text("one\n")
    sid = await agent.new()
    agent.client.permission_answers = ["reject_once"]
    await agent.prompt(sid, "edit")
    ((asked, _),) = agent.client.permission_requests
    [text] = [c.content.text for c in asked.content if c.type == "content" and "bidi" in c.content.text]
    assert text.endswith("\n(files named with controls or bidi overrides, shown escaped: x\\u202eyp.txt)"), text
    assert "\u202e" not in text, text
    assert [loc.path for loc in asked.locations] == [str(agent.workspace / n) for n in names]  # what each opens


async def test_an_elevation_alone_is_asked_as_the_question_that_covers_one_under_ask(shared_agent, llm) -> None:
    # Under `auto` the elevation was asked its own way (the bare code, no title); now as the step question is.
    code = "echo out > elevated.txt"
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": code, "elevated": True}]})), Reply.text("ok"))
    agent = await shared_agent(approval="auto")
    sid = await agent.new()
    agent.client.permission_answers = ["allow_once"]
    await agent.prompt(sid, "write it outside the sandbox")
    (tool_call, options), = agent.client.permission_requests
    assert tool_call.title == f"Run `{code}` outside the sandbox"
    assert tool_call.content[0].content.text == f"{tool_call.title}\nruns outside the sandbox:\n{code}"
    assert [o.kind for o in options] == ["allow_once", "reject_once"]
    assert (agent.workspace / "elevated.txt").exists()


@pytest.mark.parametrize("approval", ["auto", "ask"])
async def test_each_elevated_call_of_a_batch_is_asked_on_its_own_tool_call(shared_agent, llm, approval) -> None:
    # Under `auto` each elevation question went to the batch's last tool call: the second step showed the first's code.
    llm.script(Reply.tool_calls(("call_tool", {"calls": [
        {"tool": "file_write", "args": [name, "hello"], "elevated": True} for name in ("a.txt", "b.txt")]})),
        Reply.text("ok"))
    agent = await shared_agent(approval=approval)
    sid = await agent.new()
    agent.client.permission_answers = ["allow_once", "reject_once"]
    await agent.prompt(sid, "write both outside the sandbox")
    steps = [u.tool_call_id for u in agent.client.of(sid, "tool_call")]
    asked = [(t.tool_call_id, t.content[-1].content.text.rpartition("\n")[2], [o.kind for o in options])
             for t, options in agent.client.permission_requests]
    assert asked == [(step, f"file_write {name} hello", ["allow_once", "reject_once"])
                     for step, name in zip(steps, ("a.txt", "b.txt"), strict=True)]
    # Each question keeps its step's own title (it says the step leaves the sandbox), not a generic one.
    assert [t.title for t, _ in agent.client.permission_requests] == [
        f"Write {name} outside the sandbox" for name in ("a.txt", "b.txt")]
    # Under `ask` both are asked before the batch runs, and a rejection refuses it whole.
    assert [(agent.workspace / n).exists() for n in ("a.txt", "b.txt")] == [approval == "auto", False]


async def test_reject_always_never_answers_a_later_elevation(shared_agent, llm) -> None:
    # "Reject always" of `touch` (a step in the sandbox) was remembered by its label, so a later `touch` that runs
    # outside the sandbox was rejected unasked and the user never heard of it; an elevation is asked every time.
    llm.script(run("touch inside.txt"), Reply.text("1"), run("touch again.txt"), Reply.text("2"),
               Reply.tool_calls(("execute_code", {"steps": [{"code": "touch outside.txt", "elevated": True}]})),
               Reply.text("3"))
    agent = await shared_agent(approval="ask")
    sid = await agent.new()
    agent.client.permission_answers = ["reject_always", "allow_once"]
    await agent.prompt(sid, "touch")
    await agent.prompt(sid, "touch again")  # rejected unasked, and its card says why
    assert len(agent.client.permission_requests) == 1 and not (agent.workspace / "again.txt").exists()
    told = "".join(c.content.text for u in agent.client.of(sid, "tool_call_update") for c in u.content or ()
                   if getattr(c, "type", "") == "content")
    assert '"Reject always" (`touch` commands, this session)' in told, told
    await agent.prompt(sid, "touch outside the sandbox")
    (_, first), (elevation, options) = agent.client.permission_requests
    assert elevation.title == "Run `touch outside.txt` outside the sandbox"
    assert [o.kind for o in options] == ["allow_once", "reject_once"]
    assert (agent.workspace / "outside.txt").exists()


async def test_deny_for_this_session_through_request_permission_denies_the_later_steps_unasked(shared_agent, llm) -> None:
    """The network question's `reject_always` says what it does (it said "Deny always", yet no other session ever
    heard of it): the session's later steps are denied that host unasked; another session asks again; nothing saved."""
    from ollie.sandbox import netsaved
    from tests.netserver import Listener

    server = Listener()
    server.start()
    try:
        fetch = run(f"curl -s http://other.test:{server.port}/x")
        llm.script(fetch, Reply.text("1"), fetch, Reply.text("2"), fetch, Reply.text("3"))
        agent = await shared_agent(approval="auto")
        sid = await agent.new()
        agent.client.permission_answers = ["reject_always", "reject_once"]
        await agent.prompt(sid, "fetch")
        (_, options), = agent.client.permission_requests
        assert [(o.option_id, o.name) for o in options][3:] == [
            ("reject_once", "Deny"), ("reject_always", "Deny for this session")]
        await agent.prompt(sid, "again")  # not asked: the session's answer holds
        assert len(agent.client.permission_requests) == 1 and not server.received
        assert f"[network] other.test:{server.port} denied" in llm.chat_requests[-1].body["messages"][-1]["content"]
        await agent.prompt(await agent.new(), "fetch")  # another session asks again
        assert len(agent.client.permission_requests) == 2 and not server.received
        assert not netsaved.saved_file().exists()
    finally:
        server.sock.close()


async def test_a_question_the_client_answers_cancelled_cancels_the_turn(shared_agent, llm) -> None:
    # ACP's `cancelled` outcome is what a client answers as it cancels the turn: taken for "Reject", the turn went on
    # (the model asked again, and the prompt ended `end_turn`) though the user had stopped it.
    llm.script(run("touch x"))  # and no more: the model is not asked again
    agent = await shared_agent(approval="")
    sid = await agent.new()
    agent.client.permission_answers = [None]  # cancelled, and no session/cancel
    assert (await agent.prompt(sid, "touch")).stop_reason == "cancelled"
    (question, _), = agent.client.permission_requests
    assert [u.status for u in agent.client.of(sid, "tool_call_update")
            if u.tool_call_id == question.tool_call_id][-1] == "failed"
    assert not (agent.workspace / "x").exists()
