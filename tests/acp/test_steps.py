"""`ollie acp` tool steps by the engine's ids, with each step's file changes as ACP diff content."""

from __future__ import annotations

import asyncio

from acp.schema import FileEditToolCallContent

from ollie.testing import Reply
from tests.planted import git_fifo_and_link


async def _read_edit_and_sed(agent, llm) -> str:  # type: ignore[no-untyped-def]
    """A new session's turn (auto mode) that reads app.py, edits it and runs `sed -i` on notes.txt; its id."""
    ws = agent.workspace
    (ws / "app.py").write_text("x = 1\n")
    (ws / "notes.txt").write_text("alpha\nbeta\n")
    llm.script(
        Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_read", "args": ["app.py"]},
                                                  {"tool": "file_edit", "args": ["app.py", "x = 1", "x = 2"]}]})),
        Reply.tool_calls(("execute_code", {"steps": [{"code": "sed -i 's/beta/gamma/' notes.txt"}]})),
        Reply.text("done"),
    )
    sid = await agent.new()
    await agent.conn.set_session_mode(mode_id="auto", session_id=sid)
    assert (await agent.prompt(sid, "edit")).stop_reason == "end_turn"
    return sid


async def test_steps_use_the_engine_ids_and_carry_their_diffs_with_absolute_paths(shared_agent, llm) -> None:
    agent = await shared_agent()
    ws = agent.workspace
    sid = await _read_edit_and_sed(agent, llm)
    starts = agent.client.of(sid, "tool_call")
    # The id the model gave the batch, as the next request answers it.
    batch_id = next(m["tool_call_id"] for r in llm.requests for m in (r.body or {}).get("messages", []) if m["role"] == "tool")
    # The batch's inner steps are `<call id>.<n>`: the ids the engine's events carry.
    assert [s.tool_call_id for s in starts[:2]] == [f"{batch_id}.1", f"{batch_id}.2"]
    updates = agent.client.of(sid, "tool_call_update")

    def diffs(step_id: str) -> list[FileEditToolCallContent]:
        return [c for u in updates if u.tool_call_id == step_id for c in (u.content or [])
                if isinstance(c, FileEditToolCallContent)]

    assert diffs(starts[0].tool_call_id) == []  # the read changed nothing
    (edit,) = diffs(starts[1].tool_call_id)
    assert (edit.type, edit.path, edit.old_text, edit.new_text) == ("diff", str(ws / "app.py"), "x = 1\n", "x = 2\n")
    (sed,) = diffs(starts[2].tool_call_id)
    assert (sed.path, sed.old_text, sed.new_text) == (str(ws / "notes.txt"), "alpha\nbeta\n", "alpha\ngamma\n")


async def test_a_running_command_streams_its_output_into_its_tool_call(shared_agent, llm) -> None:
    # The step prints, then waits for the test: its first line can only be seen while it runs.
    code = "echo first-line; while [ ! -e go ]; do sleep 0.05; done; echo second-line"
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": code}]})), Reply.text("done"))
    agent = await shared_agent()
    sid = await agent.new()
    prompt = asyncio.ensure_future(agent.prompt(sid, "run it", timeout=60))

    def live() -> list[str]:
        return [c.content.text for u in agent.client.of(sid, "tool_call_update") if u.status is None
                for c in (u.content or []) if c.type == "content"]

    for _ in range(3000):
        if any("first-line" in text for text in live()) or prompt.done():
            break
        await asyncio.sleep(0.01)
    assert any("first-line" in text for text in live()), "no live output while the step ran"
    assert not any("second-line" in text for text in live())
    (agent.workspace / "go").touch()
    assert (await prompt).stop_reason == "end_turn"
    (start,) = agent.client.of(sid, "tool_call")
    final = [u for u in agent.client.of(sid, "tool_call_update") if u.status == "completed"]
    assert final[-1].tool_call_id == start.tool_call_id and "second-line" in final[-1].content[0].content.text


async def test_a_failed_step_of_a_batch_shows_why_live_and_on_load(shared_agent, llm) -> None:
    # A batch has one result for all its steps: a failed step's card showed nothing, not why it failed.
    calls = [{"tool": "file_read", "args": ["app.py"]}, {"tool": "file_edit", "args": ["app.py", "nowhere", "x"]}]
    llm.script(Reply.tool_calls(("call_tool", {"calls": calls})), Reply.text("done"))
    agent = await shared_agent()
    (agent.workspace / "app.py").write_text("x = 1\n")
    sid = await agent.new()
    assert (await agent.prompt(sid, "edit")).stop_reason == "end_turn"

    def shown(since: int = 0) -> dict[str, tuple[str, str]]:
        return {u.tool_call_id: (u.status, "".join(c.content.text for c in u.content or [] if c.type == "content"))
                for s, u in agent.client.updates[since:] if s == sid and u.session_update == "tool_call_update"
                and u.status in ("completed", "failed")}

    told = next(m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "tool")
    live = shown()
    read, edit = (s.tool_call_id for s in agent.client.of(sid, "tool_call"))
    assert live[read] == ("completed", "") and live[edit] == ("failed", told), live
    await agent.conn.close_session(session_id=sid)
    before = len(agent.client.updates)
    await agent.conn.load_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[])
    assert shown(before) == live  # the replay shows what the live turn did


async def test_a_call_id_the_model_repeats_or_spells_oddly_is_a_new_card(shared_agent, llm) -> None:
    # A hostile model gives a write the id of an earlier read (or of one of its own batch's steps, or a question's
    # "mcp/<name>"): ACP's tool_call_id is the card a client updates in place (Zed's upsert), so the write's card took
    # the place of the old one, far up the thread, and nothing new showed where the user looks.
    agent = await shared_agent()
    (agent.workspace / "a.txt").write_text("a\n")
    def tool(name: str, *args: str) -> tuple[str, dict]:
        return "call_tool", {"calls": [{"tool": name, "args": list(args)}]}

    llm.script(
        Reply.tool_calls(tool("file_read", "a.txt"), call_ids=["call_1"]),
        Reply.text("read"),
        Reply.tool_calls(tool("file_write", "b.txt", "b\n"), tool("file_write", "c.txt", "c\n"),
                         tool("file_write", "d.txt", "d\n"), tool("file_read", "a.txt"), tool("file_read", "a.txt"),
                         call_ids=["call_1", "call_1", "mcp/x", "call_1.1", "functions.file_read:5"]),
        Reply.text("wrote"),
    )
    sid = await agent.new()
    await agent.conn.set_session_mode(mode_id="auto", session_id=sid)
    assert (await agent.prompt(sid, "read")).stop_reason == "end_turn"
    assert (await agent.prompt(sid, "write")).stop_reason == "end_turn"
    ids = [start.tool_call_id for start in agent.client.of(sid, "tool_call")]
    assert len(ids) == 6 and len(set(ids)) == 6 and ids[0] == "call_1", ids
    assert "/" not in "".join(ids) and "call_1.1" not in ids, ids
    assert ids[-1] == "functions.file_read:5", ids  # an id of a vendor's own form is kept (Kimi's)
    # Each result pairs with its own call in what the model is sent next.
    sent = llm.requests[-1].body["messages"]
    calls = [c["id"] for m in sent if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    results = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert calls == results == ids, (calls, results)
    assert all((agent.workspace / f"{n}.txt").read_text() == f"{n}\n" for n in "bcd")


async def test_a_replayed_edit_points_at_the_line_it_changed_as_live(shared_agent, llm) -> None:
    # The replay read each step's status from the result's text again, not what the session kept of how it ended (the
    # daemon's history does): an edit's card lost the line the live one was given.
    edit = {"tool": "file_edit", "args": ["app.py", "c = 3", "c = 4"]}
    llm.script(Reply.tool_calls(("call_tool", {"calls": [edit]})), Reply.text("done"))
    agent = await shared_agent()
    (agent.workspace / "app.py").write_text("a = 1\nb = 2\nc = 3\n")
    sid = await agent.new()
    await agent.conn.set_session_mode(mode_id="auto", session_id=sid)
    assert (await agent.prompt(sid, "edit")).stop_reason == "end_turn"

    def pointed(since: int = 0) -> dict[str, list[tuple[str, int | None]]]:
        where: dict[str, list[tuple[str, int | None]]] = {}
        for s, u in agent.client.updates[since:]:
            if s == sid and u.session_update in ("tool_call", "tool_call_update") and u.locations:
                where[u.tool_call_id] = [(loc.path, loc.line) for loc in u.locations]
        return where

    live = pointed()
    assert list(live.values()) == [[(str(agent.workspace / "app.py"), 3)]], live
    await agent.conn.close_session(session_id=sid)
    before = len(agent.client.updates)
    await agent.conn.load_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[])
    assert pointed(before) == live


async def test_a_call_nested_too_deep_is_shown_and_its_session_loads(shared_agent, start_agent_beside, llm) -> None:
    """Red team round 24: a call's arguments nested 5,000 deep raised `RecursionError` where ACP decodes them for
    `rawInput` and for a loaded session's diffs."""
    nested = '{"steps": ' + "[" * 5_000 + "]" * 5_000 + "}"
    llm.script(Reply.tool_calls(("execute_code", nested), chunk_size=1 << 22), Reply.text("done"))
    agent = await start_agent_beside(env=llm.env())
    sid = await agent.new()
    assert (await agent.prompt(sid, "go")).stop_reason == "end_turn"
    (start,) = agent.client.of(sid, "tool_call")
    assert start.raw_input is None
    agent.proc.stdin.close()
    await asyncio.wait_for(agent.proc.wait(), 30)  # stdin closed: the agent saves and exits
    second = await shared_agent()  # an agent running on loads it
    await asyncio.wait_for(second.conn.load_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[]), 30)
    assert [s.tool_call_id for s in second.client.of(sid, "tool_call")] == [start.tool_call_id]


async def test_a_loaded_session_replays_each_steps_diffs_and_locations_as_live(shared_agent, start_agent_beside,
                                                                               llm) -> None:
    # session/load replayed an edit's diff from its arguments alone and a command's (`sed -i`) not at all, though the
    # session keeps the files each step changed: they are the turn's changes, from its checkpoints, as live.
    first = await start_agent_beside(env=llm.env())
    ws = first.workspace
    sid = await _read_edit_and_sed(first, llm)
    llm.script(Reply.text("nothing to do"))
    assert (await first.prompt(sid, "and now?")).stop_reason == "end_turn"  # a later turn changes nothing

    def ends(client) -> list[tuple[str, list, list]]:  # type: ignore[no-untyped-def]
        """Each step's end as the client got it: its status, diffs and located lines."""
        return [(u.status, [(c.path, c.old_text, c.new_text) for c in u.content or [] if c.type == "diff"],
                 [(loc.path, loc.line) for loc in u.locations or []])
                for u in client.of(sid, "tool_call_update") if u.status in ("completed", "failed")]

    live = ends(first.client)
    assert [diffs for _, diffs, _ in live] == [[], [(str(ws / "app.py"), "x = 1\n", "x = 2\n")],
                                               [(str(ws / "notes.txt"), "alpha\nbeta\n", "alpha\ngamma\n")]], live
    first.proc.stdin.close()
    await asyncio.wait_for(first.proc.wait(), 30)
    (ws / "notes.txt").write_text("changed since\n")  # the replay shows what the turn did, not the file now

    second = await shared_agent()
    await asyncio.wait_for(second.conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[]), 30)
    assert ends(second.client) == live


async def test_a_load_replays_its_diffs_past_a_planted_git_a_fifo_and_a_link(start_agent_beside, llm,
                                                                            tmp_path) -> None:
    # The load's diffs (the turns' checkpoints) are the daemon's own reads: a `git` a step planted in the workspace's
    # `.venv/bin` (on the agent's PATH, an activated venv) never runs, and the edited files swapped since for a FIFO
    # and a link to a secret are never read (the replay waited on the FIFO, or showed the secret, if they were).
    first = await start_agent_beside(env=llm.env())
    ws = first.workspace
    sid = await _read_edit_and_sed(first, llm)
    live = [(c.path, c.old_text, c.new_text) for u in first.client.of(sid, "tool_call_update")
            for c in u.content or [] if c.type == "diff"]
    first.proc.stdin.close()
    await asyncio.wait_for(first.proc.wait(), 30)
    ran = tmp_path / "planted-git-ran"
    path = git_fifo_and_link(ws, ran, fifo="app.py", link="notes.txt")
    second = await start_agent_beside(env={**llm.env(), "PATH": path}, workspace=ws)
    await asyncio.wait_for(second.conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[]), 30)
    replayed = [(c.path, c.old_text, c.new_text) for u in second.client.of(sid, "tool_call_update")
                for c in u.content or [] if c.type == "diff"]
    assert replayed == live and len(live) == 2, replayed
    assert not ran.exists()


async def test_a_load_replays_two_steps_of_one_file_each_with_its_own_diff(start_agent_beside, llm) -> None:
    # The load gave the turn's change of a file to the last step that changed it, and none to the one before: each
    # step's own now, from the checkpoints logged around it, as live.
    first = await start_agent_beside(env=llm.env())
    ws = first.workspace
    (ws / "app.py").write_text("x = 1\n")
    llm.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["app.py", "x = 1", "x = 2"]}]}),
                                ("call_tool", {"calls": [{"tool": "file_edit", "args": ["app.py", "x = 2", "x = 3"]}]})),
               Reply.text("done"))
    sid = await first.new()
    await first.conn.set_session_mode(mode_id="auto", session_id=sid)
    assert (await first.prompt(sid, "edit")).stop_reason == "end_turn"

    def diffs(client) -> list[list[tuple[str, str | None, str]]]:  # type: ignore[no-untyped-def]
        return [[(c.path, c.old_text, c.new_text) for c in u.content or [] if c.type == "diff"]
                for u in client.of(sid, "tool_call_update") if u.status == "completed"]

    live = diffs(first.client)
    assert live == [[(str(ws / "app.py"), "x = 1\n", "x = 2\n")], [(str(ws / "app.py"), "x = 2\n", "x = 3\n")]]
    first.proc.stdin.close()
    await asyncio.wait_for(first.proc.wait(), 30)
    second = await start_agent_beside(env=llm.env(), workspace=ws)
    await asyncio.wait_for(second.conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[]), 30)
    assert diffs(second.client) == live


async def test_a_diff_of_a_file_named_with_a_line_break_or_bidi_override_is_named_escaped_live_and_on_load(
        shared_agent, start_agent_beside, llm) -> None:
    # A client draws a diff's header as its path is: `a<LF>b.py` as two lines (a file `b.py`?), `gen<U+202E>yp.txt` as
    # "gentxt.py". A command's card (its title its command line) named neither file.
    first = await start_agent_beside(env=llm.env())
    code = "printf 'print(1)\\n' > \"$(printf 'gen\\342\\200\\256yp.txt')\"; printf x > \"$(printf 'a\\nb.py')\""
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": code, "language": "bash"}]})), Reply.text("done"))
    sid = await first.new()
    await first.prompt(sid, "make them")

    def end(client) -> tuple[list[str], list[str]]:  # type: ignore[no-untyped-def]
        """The step's end as the client got it: its text and its diffs' paths."""
        (done,) = [u for u in client.of(sid, "tool_call_update") if u.status == "completed"]
        return ([c.content.text for c in done.content if c.type == "content"],
                [c.path for c in done.content if c.type == "diff"])

    texts, paths = end(first.client)
    assert paths == [str(first.workspace / "a\nb.py"), str(first.workspace / "gen\u202eyp.txt")]  # opened as they are
    assert texts == ["[step 1 bash] exit 0\n(files named with controls or bidi overrides, shown escaped: a\\nb.py, "
                     "gen\\u202eyp.txt)"], texts
    first.proc.stdin.close()
    await asyncio.wait_for(first.proc.wait(), 30)
    second = await shared_agent()
    await asyncio.wait_for(second.conn.load_session(cwd=str(first.workspace), session_id=sid, mcp_servers=[]), 30)
    assert end(second.client) == (texts, paths)


async def test_a_file_named_with_a_line_break_is_named_escaped_in_the_tool_lines_and_changes(shared_agent, llm) -> None:
    # A client shows a step's result and a command's reply as they are: ollie's own line `created a<LF>b.py: ...`
    # read as two lines, the second a forged line of ollie's ("b.py: ..."). The file's content is the tool's.
    agent = await shared_agent()
    write = {"tool": "file_write", "args": ["a\nb.py", "x = 1\n"]}
    llm.script(Reply.tool_calls(("call_tool", {"calls": [write]})), Reply.text("done"))
    sid = await agent.new()
    await agent.prompt(sid, "make it")
    (done,) = [u for u in agent.client.of(sid, "tool_call_update") if u.status == "completed"]
    (text,) = [c.content.text for c in done.content if c.type == "content"]
    assert "created a\\nb.py: 6 bytes, 1 lines" in text and "\nb.py" not in text, text
    await agent.prompt(sid, "/changes")
    assert "added a\\nb.py (+1 -0)" in agent.client.text(sid), agent.client.text(sid)
