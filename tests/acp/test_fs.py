"""A client offering fs/read_text_file and fs/write_text_file: the file tools read its text and write through it."""

from __future__ import annotations

import os

from ollie.testing import Reply


def read(path: str) -> Reply:
    return Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_read", "args": [path]}]}))


def tool_result(llm) -> str:
    """What the model was told by its last tool call."""
    return llm.chat_requests[-1].body["messages"][-1]["content"]


async def open_notes(shared_agent, llm, disk: str, client_text: str, *, fs: bool = True):
    """An agent whose workspace has notes.txt (`disk`) and whose client holds `client_text` for it; (agent, sid, key)."""
    agent = await shared_agent(fs=fs)
    notes = agent.workspace / "notes.txt"
    notes.write_text(disk)
    key = os.path.realpath(notes)
    agent.client.files[key] = client_text
    agent.client.permission_answers = ["allow_once"] * 3  # edits may ask first (approval modes)
    return agent, await agent.new(), key


async def test_the_model_reads_the_clients_text_and_edits_through_it(shared_agent, llm) -> None:
    llm.script(read("notes.txt"), Reply.text("read"), Reply.file_edit("notes.txt", "client text", "changed"),
               Reply.text("edited"))
    agent, sid, key = await open_notes(shared_agent, llm, "disk text\n", "client text\nmore\n")
    await agent.prompt(sid, "read notes.txt")
    assert "     1\tclient text" in tool_result(llm) and "disk text" not in tool_result(llm)
    await agent.prompt(sid, "edit it")
    assert "replaced 1 occurrence" in tool_result(llm)
    assert agent.client.writes == [(key, "changed\nmore\n")]
    assert (agent.workspace / "notes.txt").read_text() == "disk text\n"


async def test_an_edit_after_the_client_text_changed_is_refused(shared_agent, llm) -> None:
    llm.script(read("notes.txt"), Reply.text("read"), Reply.file_edit("notes.txt", "client", "mine"), Reply.text("refused"))
    agent, sid, key = await open_notes(shared_agent, llm, "disk\n", "client\n")
    await agent.prompt(sid, "read it")
    agent.client.files[key] = "client\nthe user typed\n"
    await agent.prompt(sid, "edit it")
    assert "the file changed in the editor since you read it; read it again" in tool_result(llm)
    assert agent.client.writes == [] and (agent.workspace / "notes.txt").read_text() == "disk\n"


async def test_what_the_user_types_while_an_edit_runs_is_not_written_over(shared_agent, llm) -> None:
    # The client's text is read again just before the write: the check at the edit's start alone (the test above) let
    # an edit whose step ran while the user typed write over what they typed (that check removed, no test failed).
    llm.script(Reply.file_edit("notes.txt", "client", "mine"), Reply.text("refused"))
    agent, sid, key = await open_notes(shared_agent, llm, "disk\n", "client\n")
    texts = iter(["client\n"])  # what the edit reads; then the user types

    class Typing(dict):  # type: ignore[type-arg]
        def __getitem__(self, path: str) -> str:
            return next(texts, "client\nthe user typed\n")

    agent.client.files = Typing()
    await agent.prompt(sid, "edit it")
    assert "the file changed in the editor since you read it; read it again" in tool_result(llm)
    assert agent.client.writes == [] and (agent.workspace / "notes.txt").read_text() == "disk\n"


async def test_without_fs_the_tools_use_the_disk(shared_agent, llm) -> None:
    llm.script(read("notes.txt"), Reply.text("read"))
    agent, sid, _ = await open_notes(shared_agent, llm, "disk text\n", "client text\n", fs=False)
    await agent.prompt(sid, "read it")
    assert "     1\tdisk text" in tool_result(llm)


async def test_a_clients_answer_read_through_a_link_put_there_and_back_never_reaches_a_step(shared_agent, llm, tmp_path):
    # Round 68a: the client opens the name, following links. A program outside ollie's sandboxes (writers.quiet holds
    # every step) that made notes.txt a link to a secret as the client read, then put a file back, had the secret's
    # text handed to file_read as the editor's, which printed it: the name's checks before the ask all held.
    llm.script(read("notes.txt"), Reply.text("read"))
    agent, sid, key = await open_notes(shared_agent, llm, "disk\n", "client\n")
    notes = agent.workspace / "notes.txt"
    (secret := tmp_path / "credentials").write_text("on disk\n")

    class Swapping(dict):  # type: ignore[type-arg]
        def __getitem__(self, path: str) -> str:
            notes.unlink()
            notes.symlink_to(secret)  # what the client opens now: the secret, open in its buffer
            text = "unsaved secret\n"
            notes.unlink()
            notes.write_text("put back\n")
            return text

    agent.client.files = Swapping({key: ""})
    await agent.prompt(sid, "read it")
    assert "unsaved secret" not in tool_result(llm) and "     1\tput back" in tool_result(llm), tool_result(llm)


def run(code: str) -> Reply:
    return Reply.tool_calls(("execute_code", {"steps": [{"code": code, "language": "bash"}]}))


async def test_an_edit_the_client_kept_in_its_buffer_reaches_the_disk_before_the_next_command(shared_agent, llm) -> None:
    """A client whose fs/write_text_file changes its buffer only (this one): its text was the disk's, so ollie writes
    the edit to disk too, and the next command runs the edited code. (Zed saves what it writes: then nothing more.)"""
    llm.script(Reply.file_edit("calc.py", "a - b", "a + b"), run("python3 -c 'import calc; print(calc.add(2, 3))'"),
               Reply.text("done"))
    agent = await shared_agent(fs=True)
    calc = agent.workspace / "calc.py"
    calc.write_text("def add(a, b):\n    return a - b\n")
    key = os.path.realpath(calc)
    agent.client.files[key] = calc.read_text()
    agent.client.permission_answers = ["allow_once"] * 3
    sid = await agent.new()
    await agent.prompt(sid, "fix add")
    assert agent.client.writes == [(key, "def add(a, b):\n    return a + b\n")]
    assert calc.read_text() == "def add(a, b):\n    return a + b\n"
    assert "5" in tool_result(llm).split("\n")


async def test_unsaved_client_text_is_not_written_and_the_model_is_told(shared_agent, llm) -> None:
    llm.script(Reply.file_edit("notes.txt", "client text", "changed"), Reply.text("edited"))
    agent, sid, key = await open_notes(shared_agent, llm, "disk text\n", "client text\nmore\n")
    await agent.prompt(sid, "edit it")
    assert "notes.txt has unsaved changes in the editor: your edit is in its buffer only" in tool_result(llm)
    assert (agent.workspace / "notes.txt").read_text() == "disk text\n"


async def test_a_latin_1_file_the_client_shows_as_on_disk_is_not_called_unsaved(shared_agent, llm) -> None:
    """Its buffer was compared with the disk read as UTF-8 (each Latin-1 byte a U+FFFD): the model was told the file
    had unsaved changes and its edit was in the buffer only, while the client held the disk's text."""
    llm.script(Reply.file_edit("notes.txt", "caf\u00e9", "bistro"), Reply.text("edited"))
    agent, sid, key = await open_notes(shared_agent, llm, "", "caf\u00e9\n")
    (agent.workspace / "notes.txt").write_bytes("caf\u00e9\n".encode("latin-1"))
    await agent.prompt(sid, "edit it")
    assert "replaced 1 occurrence" in tool_result(llm) and "unsaved" not in tool_result(llm), tool_result(llm)
    assert agent.client.writes == [(key, "bistro\n")]


async def test_a_clients_format_on_save_is_kept_and_is_what_the_step_diff_and_a_rewind_go_by(shared_agent, llm) -> None:
    """A client whose fs/write_text_file saves through the user's formatter (Zed's format on save): ollie took the
    saved file for a buffer-only write and wrote its own unformatted text over the formatter's, and a rewind then found
    the buffer "changed since the agent's edit"."""
    llm.script(Reply.file_edit("calc.py", "a - b", "a + b"), Reply.text("done"))
    agent = await shared_agent(fs=True)
    calc = agent.workspace / "calc.py"
    calc.write_text(before := "def add(a, b):\n    return a - b\n")
    key = os.path.realpath(calc)
    agent.client.files[key] = before
    agent.client.format_on_save = lambda text: text.replace("a + b", "(a + b)")
    agent.client.permission_answers = ["allow_once"] * 3
    sid = await agent.new()
    await agent.prompt(sid, "fix add")
    formatted = "def add(a, b):\n    return (a + b)\n"
    assert calc.read_text() == formatted
    (diff,) = [c for u in agent.client.of(sid, "tool_call_update") for c in u.content or [] if c.type == "diff"]
    assert (diff.old_text, diff.new_text) == (before, formatted)
    await agent.prompt(sid, "/rewind")
    assert calc.read_text() == before and agent.client.files[key] == before, agent.client.text(sid)
    assert "changed since" not in agent.client.text(sid)
