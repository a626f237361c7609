"""An agent switch starts a new conversation and keeps the one before as a saved session to resume (the daemon)."""

from __future__ import annotations

import re

from ollie.testing import Reply
from tests.procs import eventually
from tests.reliability.test_attacks_as_user import daemon_as_alice
from tests.tools.test_os_users import ALICE, home_of, shared  # noqa: F401  (fixtures)


async def test_agent_switch_keeps_the_conversation_as_a_session_to_resume(start_daemon, llm):
    # Bug: `/agent plan` typed in a chat wiped the conversation, unasked: it was saved nowhere, no list offered it.
    llm.script(Reply.text("the parser is fixed"), Reply.text("on we go"))
    daemon = await start_daemon(env=llm.env())
    sid = (await daemon.request("ollie/submit", {"text": "Fix the parser"}))["session"]
    await daemon.request("ollie/session/rename", {"session": sid, "title": "Parser work"})  # a name goes with it
    output = (await daemon.request("ollie/command", {"line": "/agent plan"}))["output"]
    kept = re.search(r'^the previous conversation is saved as "Parser work" \((\S+)\): resume it with the editor\'s '
                     r"session list \(VS Code: Ollie: Switch Session; Neovim: :OllieSessions\)$", output, re.M)
    assert kept, output
    await eventually(lambda: daemon.states and daemon.states[-1]["title"] == "", "the switched session untitled")
    listed = {s["id"]: s for s in (await daemon.request("ollie/session/list", {}))["sessions"]}
    assert (listed[kept[1]]["title"], listed[kept[1]]["agent"]) == ("Parser work", "default"), listed
    assert listed[sid]["title"] == "" and listed[sid]["agent"] == "plan", listed
    assert (await daemon.request("ollie/context", {"session": sid}))["messages"] == []

    # Resumed from the list: the conversation as it was, in the agent it ran; it goes on from there.
    loaded = await daemon.request("ollie/session/load", {"session": kept[1]})
    assert loaded["info"]["agent"] == "default"
    said = [(m["role"], m["content"]) for m in (await daemon.request("ollie/context", {"session": kept[1]}))["messages"]]
    assert said[-2:] == [("user", "Fix the parser"), ("assistant", "the parser is fixed")], said
    await daemon.request("ollie/submit", {"session": kept[1], "text": "and the tests?"})
    assert [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"] == [
        "Fix the parser", "and the tests?"]


async def test_an_editor_s_help_says_what_resumes_a_session_there(start_daemon, llm):
    # Bug: a chat's `/help` and `/resume` advised a terminal's new run (`ollie --session <id>`).
    daemon = await start_daemon(env=llm.env())
    words = " ".join((await daemon.request("ollie/command", {"line": "/help"}))["output"].split())
    assert "/resume [n|id] this directory's sessions; resume one with the editor's session list (VS Code: " in words
    assert "ollie --session" not in words


async def test_clear_keeps_the_conversation_as_an_agent_switch_does(start_daemon, llm):
    # Bug: `/clear` dropped the conversation with no copy kept (an agent switch saved it as a session to resume).
    llm.script(Reply.text("the parser is fixed"))
    daemon = await start_daemon(env=llm.env())
    sid = (await daemon.request("ollie/submit", {"text": "Fix the parser"}))["session"]
    await daemon.request("ollie/session/rename", {"session": sid, "title": "Parser work"})
    output = (await daemon.request("ollie/command", {"line": "/clear"}))["output"]
    kept = re.fullmatch(r'session cleared: history and task state dropped\nthe previous conversation is saved as '
                        r'"Parser work" \((\S+)\): resume it with the editor\'s session list \(VS Code: Ollie: Switch '
                        r"Session; Neovim: :OllieSessions\)", output)
    assert kept, output
    await eventually(lambda: daemon.states and daemon.states[-1]["title"] == "", "the cleared session untitled")
    listed = {s["id"]: s["title"] for s in (await daemon.request("ollie/session/list", {}))["sessions"]}
    assert (listed[kept[1]], listed[sid]) == ("Parser work", ""), listed
    await daemon.request("ollie/session/load", {"session": kept[1]})
    said = [(m["role"], m["content"]) for m in (await daemon.request("ollie/context", {"session": kept[1]}))["messages"]]
    assert said[-2:] == [("user", "Fix the parser"), ("assistant", "the parser is fixed")], said

    # An empty conversation keeps nothing.
    again = await daemon.request("ollie/command", {"session": sid, "line": "/clear"})
    assert again["output"] == "session cleared: history and task state dropped"
    assert len((await daemon.request("ollie/session/list", {}))["sessions"]) == len(listed)


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
