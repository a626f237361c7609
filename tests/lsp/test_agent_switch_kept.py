"""An agent switch starts a new conversation and keeps the one before as a saved session to resume (the daemon)."""

from __future__ import annotations

import re

from ollie.testing import Reply
from tests.procs import eventually
from tests.reliability.test_attacks_as_user import daemon_as_alice
from tests.tools.test_os_users import ALICE, home_of, shared  # noqa: F401  (fixtures)

from .test_methods import rpc_error


async def test_agent_switch_keeps_the_conversation_as_a_session_to_resume(shared_daemon, llm):
    # Bug: `/agent plan` typed in a chat wiped the conversation, unasked: it was saved nowhere, no list offered it.
    llm.script(Reply.text("the parser is fixed"), Reply.text("on we go"))
    daemon = await shared_daemon(env=llm.env())
    sid = (await daemon.request("ollie/submit", {"text": "Fix the parser"}))["session"]
    await daemon.request("ollie/session/rename", {"session": sid, "title": "Parser work"})  # a name goes with it
    output = (await daemon.request("ollie/command", {"line": "/agent plan"}))["output"]
    kept = re.search(r'^the previous conversation is saved as "Parser work" \((\S+)\): resume it with the editor\'s '
                     r"session list \(VS Code: Ollie: Switch Session; Neovim: :OllieSessions\)$", output, re.M)
    assert kept, output
    await eventually(lambda: daemon.states and daemon.states[-1]["title"] == "", "the switched session untitled")
    listed = {s["id"]: s for s in (await daemon.request("ollie/session/list", {}))["sessions"]}
    assert (listed[kept[1]]["title"], listed[kept[1]]["agent"]) == ("Parser work", "default"), listed
    assert sid not in listed, listed  # untitled with no turn: nothing to resume, as in the terminal's /sessions
    state = await daemon.request("ollie/state", {"session": sid})
    assert (state["title"], state["agent"]) == ("", "plan"), state
    assert (await daemon.request("ollie/context", {"session": sid}))["messages"] == []

    # Resumed from the list: the conversation as it was, in the agent it ran; it goes on from there.
    loaded = await daemon.request("ollie/session/load", {"session": kept[1]})
    assert loaded["info"]["agent"] == "default"
    said = [(m["role"], m["content"]) for m in (await daemon.request("ollie/context", {"session": kept[1]}))["messages"]]
    assert said[-2:] == [("user", "Fix the parser"), ("assistant", "the parser is fixed")], said
    await daemon.request("ollie/submit", {"session": kept[1], "text": "and the tests?"})
    assert [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"] == [
        "Fix the parser", "and the tests?"]


async def test_an_editor_s_help_says_what_resumes_a_session_there(shared_daemon, llm):
    # Bug: a chat's `/help` and `/resume` advised a terminal's new run (`ollie --session <id>`).
    daemon = await shared_daemon(env=llm.env())
    words = " ".join((await daemon.request("ollie/command", {"line": "/help"}))["output"].split())
    assert "/resume [n|id] this directory's sessions; resume one with the editor's session list (VS Code: " in words
    assert "ollie --session" not in words


async def test_clear_keeps_the_conversation_as_an_agent_switch_does(shared_daemon, llm):
    # Bug: `/clear` dropped the conversation with no copy kept (an agent switch saved it as a session to resume).
    llm.script(Reply.text("the parser is fixed"))
    daemon = await shared_daemon(env=llm.env())
    sid = (await daemon.request("ollie/submit", {"text": "Fix the parser"}))["session"]
    await daemon.request("ollie/session/rename", {"session": sid, "title": "Parser work"})
    output = (await daemon.request("ollie/command", {"line": "/clear"}))["output"]
    kept = re.fullmatch(r'session cleared: history and task state dropped\nthe previous conversation is saved as '
                        r'"Parser work" \((\S+)\): resume it with the editor\'s session list \(VS Code: Ollie: Switch '
                        r"Session; Neovim: :OllieSessions\)", output)
    assert kept, output
    await eventually(lambda: daemon.states and daemon.states[-1]["title"] == "", "the cleared session untitled")
    listed = {s["id"]: s["title"] for s in (await daemon.request("ollie/session/list", {}))["sessions"]}
    assert listed[kept[1]] == "Parser work" and sid not in listed, listed  # (untitled with no turn: not listed)
    await daemon.request("ollie/session/load", {"session": kept[1]})
    said = [(m["role"], m["content"]) for m in (await daemon.request("ollie/context", {"session": kept[1]}))["messages"]]
    assert said[-2:] == [("user", "Fix the parser"), ("assistant", "the parser is fixed")], said

    # An empty conversation keeps nothing.
    again = await daemon.request("ollie/command", {"session": sid, "line": "/clear"})
    assert again["output"] == "session cleared: history and task state dropped"
    assert len((await daemon.request("ollie/session/list", {}))["sessions"]) == len(listed)


def edit(old: str, new: str) -> list[Reply]:
    """One turn: a file_edit of a.txt, `old` to `new`."""
    return [Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["a.txt", old, new]}]})),
            Reply.text("edited")]


async def hunks(daemon, session: str, turn: int) -> list[list[str]]:
    """The lines of each hunk `ollie/changes` lists for turn `turn` of `session`."""
    files = (await daemon.request("ollie/changes", {"session": session, "turn": turn}))["files"]
    return [h["lines"] for f in files for h in f["hunks"]]


async def test_a_kept_conversation_reviews_its_turns_and_the_new_one_only_its_own(start_daemon, llm, tmp_path):
    # Bug: the kept copy's history said "1 file changed" but `ollie/changes` found no checkpoint under its new id,
    # while the session it came from went on reviewing the old turns as its own.
    llm.script(*edit("line 2\n", "LINE TWO\n"), *edit("line 5\n", "LINE FIVE\n"))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 9)))
    daemon = await start_daemon(env={**llm.env(), "OLLIE_APPROVAL": "auto"}, workspace=ws)
    sid = (await daemon.request("ollie/submit", {"text": "edit it"}))["session"]
    kept = re.search(r"saved as \"edit it\" \((\S+)\)", (await daemon.request("ollie/command", {"line": "/clear"}))["output"])
    assert kept, "no copy kept"
    assert await daemon.request("ollie/changes", {"session": sid}) == {"turn": None, "files": []}

    await daemon.request("ollie/session/load", {"session": kept[1]})
    marks = [m.get("turnChanges") for m in (await daemon.request("ollie/context", {"session": kept[1]}))["messages"]]
    assert {"turn": 1, "files": 1} in marks, marks
    assert await hunks(daemon, kept[1], 1) == [["-line 2\n", "+LINE TWO\n"]]

    # The cleared session's first turn is its own turn 1: its review shows its change only, the copy's stays.
    await daemon.request("ollie/submit", {"session": sid, "text": "and line five"})
    assert await hunks(daemon, sid, 1) == [["-line 5\n", "+LINE FIVE\n"]]
    assert await hunks(daemon, kept[1], 1) == [["-line 2\n", "+LINE TWO\n"]]

    # Its turn is undone file by file (the other conversation's later edit kept), never rewound: a rewind puts back
    # the whole workspace, the other conversation's work too.
    err = await rpc_error(daemon, "ollie/rewind", {"session": kept[1], "turn": 1})
    assert err.code == -32602 and "turn 1 came with this copy of another conversation" in err.message, err.message
    await daemon.request("ollie/review/undo", {"session": kept[1], "turn": 1, "path": "a.txt", "hunk": 0})
    assert (ws / "a.txt").read_text() == "".join(f"line {i}\n" for i in range(1, 9)).replace("line 5", "LINE FIVE")


async def test_a_rewind_before_clear_is_not_undone_into_the_new_conversation(shared_daemon, llm):
    # Bug: `/rewind undo` after `/clear` put the kept conversation back into the new one (its copy had it already).
    llm.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    daemon = await shared_daemon(env=llm.env())
    sid = (await daemon.request("ollie/submit", {"text": "first"}))["session"]
    await daemon.request("ollie/submit", {"session": sid, "text": "second"})
    await daemon.request("ollie/rewind", {"session": sid, "turn": 2})
    await daemon.request("ollie/command", {"session": sid, "line": "/clear"})
    err = await rpc_error(daemon, "ollie/rewind", {"session": sid, "undo": True})
    assert err.code == -32602 and "no rewind to undo" in err.message, err.message
    assert (await daemon.request("ollie/context", {"session": sid}))["messages"] == []

    # A conversation rewound to its start keeps nothing at a `/clear`: its rewind is still undone.
    await daemon.request("ollie/submit", {"session": sid, "text": "third"})
    await daemon.request("ollie/rewind", {"session": sid, "turn": 1})
    await daemon.request("ollie/command", {"session": sid, "line": "/clear"})
    await daemon.request("ollie/rewind", {"session": sid, "undo": True})
    said = [m["content"] for m in (await daemon.request("ollie/context", {"session": sid}))["messages"]]
    assert said == ["third", "three"], said


async def test_a_switch_or_clear_whose_copy_cannot_be_written_changes_nothing(llm, shared):  # noqa: F811
    # Bug: a switch whose copy failed (the disk full, the sessions dir unwritable) had already swapped in the new
    # agent (the old one's tool servers left open): the conversation stayed, under the new agent's name.
    llm.script(Reply.text("the parser is fixed"), Reply.text("on we go"))
    home = home_of(ALICE, shared)
    async with daemon_as_alice(home, llm.env()) as daemon:
        sid = (await daemon.request("ollie/submit", {"text": "Fix the parser"}))["session"]
        sessions = home / "data" / "ollie" / "sessions"
        assert (sessions / f"{sid}.jsonl").is_file()
        sessions.chmod(0o500)  # its own log still takes rounds; no new file (a copy) can be made there
        try:
            for line, refused in (("/agent plan", "agent not switched"), ("/clear", "session not cleared")):
                output = (await daemon.request("ollie/command", {"line": line}))["output"]
                assert (await daemon.request("ollie/command", {"line": "/agent"}))["output"] == "agent: default"
                assert re.fullmatch(rf"{line.split()[0]} failed: {refused}: the conversation could not be kept as a "
                                    r"session of its own \(.*Permission denied.*\); nothing changed", output), output
            listed = (await daemon.request("ollie/session/list", {}))["sessions"]
            assert [(s["id"], s["agent"]) for s in listed] == [(sid, "default")], listed
            await daemon.request("ollie/submit", {"session": sid, "text": "and the tests?"})  # it goes on as it was
            assert [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"] == [
                "Fix the parser", "and the tests?"]
        finally:
            sessions.chmod(0o700)
