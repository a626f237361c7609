"""An edit the sandbox or the file's mode would refuse is refused at once under `ask`: no question, the model hears
why, nothing is written; an edit that can be made is asked about as ever."""

from __future__ import annotations

import os

from agentkit import tool_messages, write_agent

from ollie.agent.questions import Answer
from ollie.testing import Reply


def call(tool: str, *args: str) -> Reply:
    return Reply.tool_calls(("call_tool", {"calls": [{"tool": tool, "args": list(args)}]}))


async def test_edits_no_answer_could_allow_are_refused_without_a_question(scripted_llm, make_core, workdir, outside,
                                                                         monkeypatch):
    monkeypatch.setenv("OLLIE_APPROVAL", "ask")
    (outside / "f.txt").write_text("one\n")  # `outside`: a dir no sandbox policy grants
    (workdir / "locked.txt").write_text("one\n")
    (workdir / "locked.txt").chmod(0o444)
    (workdir / "link.txt").symlink_to(outside / "f.txt")
    (workdir / "linkdir").symlink_to(outside)
    (workdir / ".git").mkdir()  # steps see it read-only
    refused = [
        ("file_edit", "../outside/f.txt", "one", "two"),  # `..` out of the workspace
        ("file_write", str(outside / "new.txt"), "x\n"),  # absolute, a new file
        ("file_edit", "link.txt", "one", "two"),  # a link out of the workspace
        ("file_write", "linkdir/new.txt", "x\n"),  # a new file through a linked directory
        ("file_write", ".git/hooks/pre-commit", "x\n"),  # a new file in a read-only directory
        ("file_edit", "locked.txt", "one", "two"),  # the file's own mode
        ("file_edit", "/etc/hosts", "ollie-never-there", "x"),  # one of the policy's read-only paths
    ]
    srv = scripted_llm("openai")
    for n, args in enumerate(refused):
        srv.script(call(*args), Reply.text(f"refused {n}"))
    srv.script(call("file_write", "sub/new.txt", "made\n"), Reply.text("made"))
    core = await make_core(srv)
    asked: list[str] = []

    def approve(question):
        asked.append(question.title)
        return Answer("allow_once")

    core.step_approver = approve
    told = []
    for n in range(len(refused)):
        assert (await core.submit(f"edit {n}")).reply == f"refused {n}"
        told.append(tool_messages(srv)[-1]["content"])
    assert asked == [], asked
    reasons = ["outside the sandbox's writable paths"] * 4 + [
        "its directory is read-only (a read-only mount: ollie's sandbox shows .git directories",
        "read-only (no write permission), not changed",
        "read-only in the sandbox: outside the sandbox's writable paths"]
    for args, text, reason in zip(refused, told, reasons, strict=True):
        tool, path = args[0], args[1]
        assert text.startswith("refused, without asking the user"), text
        # Named as the model gave it, with the rule that refuses it.
        assert f"{tool}: {path}: " in text and reason in text, text
        # Read-only is said of a path the policy lets a step read alone, never of one outside every grant.
        assert ("read-only in the sandbox" in text) == ("read-only in the sandbox" in reason), text
        # Outside the policy: the note says which file and key would allow it, as a step's refusal does.
        assert ("filesystem.rw in" in text) == ("outside the sandbox's" in reason), text
    assert (outside / "f.txt").read_text() == "one\n" and (workdir / "locked.txt").read_text() == "one\n"
    assert sorted(os.listdir(outside)) == ["f.txt"] and os.listdir(workdir / ".git") == []

    # A new file in a writable directory is asked about, as any edit, and made once allowed.
    assert (await core.submit("make it")).reply == "made"
    assert asked == ["Write sub/new.txt"], asked
    assert (workdir / "sub" / "new.txt").read_text() == "made\n"


async def test_an_unsandboxed_agent_is_asked_as_before(scripted_llm, make_core, workdir, agents_dir, monkeypatch):
    # No sandbox, no check: the question comes, and the tool refuses the read-only file after it.
    monkeypatch.setenv("OLLIE_APPROVAL", "ask")
    write_agent(agents_dir, "yolo", sandbox="none")
    (workdir / "locked.txt").write_text("one\n")
    (workdir / "locked.txt").chmod(0o444)
    srv = scripted_llm("openai")
    srv.script(call("file_edit", "locked.txt", "one", "two"), Reply.text("refused"))
    core = await make_core(srv, agent="yolo")
    asked: list[str] = []
    core.step_approver = lambda question: asked.append(question.title) or Answer("allow_once")
    assert (await core.submit("edit it")).reply == "refused"
    assert asked == ["Edit locked.txt"]
    told = tool_messages(srv)[-1]["content"]
    assert "locked.txt: read-only (no write permission), not changed" in told and "without asking" not in told, told
    assert (workdir / "locked.txt").read_text() == "one\n"


async def test_the_file_tools_switches_in_the_sessions_env_never_reach_a_write(scripted_llm, make_core, workdir, tmp_path):
    # The session's env (an editor's `env` option, an ACP client's) goes to every step: the file tools' per-call
    # switches in it made each write a check that wrote nothing, or a write to a copy, while the model was told it wrote.
    srv = scripted_llm("openai")
    srv.script(call("file_write", "new.txt", "made\n"), Reply.text("made"))
    core = await make_core(srv)
    core.set_approval("auto")
    core.set_env("OLLIE_WRITE_CHECK", "1")
    core.set_env("OLLIE_EDITOR_COPY", str(tmp_path / "copy"))
    assert (await core.submit("write it")).reply == "made"
    assert (workdir / "new.txt").read_text() == "made\n", tool_messages(srv)[-1]["content"]
