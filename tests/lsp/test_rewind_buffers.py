"""ollie/rewind reverts the edits the cut turns made to open editor buffers, not only the disk."""

from __future__ import annotations

from pathlib import Path

from ollie.testing import Reply

from .conftest import Daemon
from .test_documents import Editor, edit_caps, start, submit, tool_result
from .test_editor_review import ORIGINAL, buffer_text


async def test_rewind_reverts_buffer_edits_and_leaves_a_buffer_the_user_changed(start_daemon, llm):
    llm.script(Reply.file_edit("a.txt", "line 2\n", "A TWO\n"), Reply.text("one"),
               Reply.file_edit("a.txt", "line 3\n", "A THREE\n"), Reply.file_edit("b.txt", "line 4\n", "B FOUR\n"),
               Reply.text("two"),
               Reply.file_edit("a.txt", "line 5\n", "A FIVE\n"), Reply.text("three"))
    daemon = await start(start_daemon, llm.env())
    a, b = daemon.workspace / "a.txt", daemon.workspace / "b.txt"
    a.write_text("a on disk\n")
    b.write_text("b on disk\n")
    editor = Editor(daemon)
    editor.open(a, ORIGINAL)
    editor.open(b, ORIGINAL)
    for prompt, reply in (("first", "one"), ("second", "two")):
        assert await submit(daemon, prompt) == reply
    after_first = ORIGINAL.replace("line 2\n", "A TWO\n")
    b_edited = ORIGINAL.replace("line 4\n", "B FOUR\n")

    # The user types in b.txt after the agent's edit: its buffer moved on and is left alone.
    editor.change(b, b_edited + "mine\n")  # read before the rewind that follows it: no wait
    sent = len(editor.edits)
    rewound = await daemon.request("ollie/rewind", {"turn": 2})
    assert rewound["turn"] == 2 and rewound["files"] == []
    assert rewound["buffers"] == [
        {"path": "a.txt", "status": "reverted"},
        {"path": "b.txt", "status": "stale", "reason": "the buffer changed since the agent's edit; left as it is"}]
    # One versioned applyEdit, of a.txt only: back to what turn 1 left; the disk was never touched.
    assert len(editor.edits) == sent + 1 and buffer_text(editor) == after_first
    assert editor.edits[-1].edit.document_changes[0].text_document.uri == a.as_uri()  # type: ignore[union-attr,index]
    assert (a.read_text(), b.read_text()) == ("a on disk\n", "b on disk\n")
    # Undone, a.txt has turn 2's edit again (it stayed rewound, the undo saying nothing); rewound again, b.txt is named
    # again (the undo lost the cut turn's buffer edits: it was named nowhere).
    undone = await daemon.request("ollie/rewind", {"undo": True})
    assert undone["buffers"] == [{"path": "a.txt", "status": "reverted"}]
    assert buffer_text(editor) == after_first.replace("line 3\n", "A THREE\n")
    again = await daemon.request("ollie/rewind", {"turn": 2})
    assert again["buffers"] == rewound["buffers"] and buffer_text(editor) == after_first
    # The cut turn's buffer changes are no longer listed; turn 1's still is.
    (listed,) = (await daemon.request("ollie/changes", {}))["files"]
    assert (listed["path"], listed["newText"], listed["inEditor"]) == ("a.txt", after_first, True)

    # A next turn after the rewind is turn 2 again; rewinding it and turn 1 at once nets their edits.
    assert await submit(daemon, "third") == "three"
    rewound = await daemon.request("ollie/rewind", {"turn": 1})
    assert rewound["buffers"] == [{"path": "a.txt", "status": "reverted"}]
    assert buffer_text(editor) == ORIGINAL
    assert await daemon.request("ollie/changes", {}) == {"turn": None, "files": []}


async def one_turn_edited_a_buffer(start_daemon, llm, *then: Reply) -> tuple[Daemon, Editor, Path]:
    """A daemon whose one turn edited a.txt's open buffer (then made `then`'s calls): the daemon, its editor, a.txt."""
    llm.script(Reply.file_edit("a.txt", "line 2\n", "A TWO\n"), *then, Reply.text("one"))
    daemon = await start(start_daemon, llm.env())
    a = daemon.workspace / "a.txt"
    a.write_text("a on disk\n")
    editor = Editor(daemon)
    editor.open(a, ORIGINAL)
    assert await submit(daemon, "first") == "one"
    return daemon, editor, a


async def test_rewind_reports_a_buffer_the_editor_would_not_revert(start_daemon, llm):
    daemon, editor, a = await one_turn_edited_a_buffer(start_daemon, llm)
    # The agent's edit is in the buffer (a failed one, given the scripted reply all the same, left nothing to list).
    assert len(editor.edits) == 1 and buffer_text(editor) == ORIGINAL.replace("line 2\n", "A TWO\n"), tool_result(llm)
    # The editor refuses the next edit (a real one would for a version it no longer has).
    editor.versions[a.as_uri()] += 100
    rewound = await daemon.request("ollie/rewind", {})
    (refused,) = rewound["buffers"]
    assert (refused["path"], refused["status"]) == ("a.txt", "refused")
    assert "version mismatch" in refused["reason"], refused
    # The conversation is cut all the same: the session has no turns left.
    assert rewound["messages"] == 0 and (await daemon.request("ollie/changes", {}))["turn"] is None


async def test_a_buffer_the_editor_reloaded_from_the_rewound_disk_as_the_edit_came_is_not_named(start_daemon, llm):
    """VS Code reloads a clean buffer from the disk the rewind (or its undo) restored, maybe just as the daemon's edit of
    it is on its way, and refuses that edit for its older version: the buffer holds the text all the same (it was
    named "not in the editor", the editor not applying the edit)."""
    daemon, editor, a = await one_turn_edited_a_buffer(start_daemon, llm)
    editor.reloads[a.as_uri()] = ORIGINAL
    rewound = await daemon.request("ollie/rewind", {})
    assert rewound["buffers"] == [] and buffer_text(editor) == ORIGINAL
    assert len(editor.edits) == 2 and not editor.reloads  # the edit came, and was refused


async def test_a_buffer_she_put_back_herself_is_neither_edited_nor_named_by_the_rewind(start_daemon, llm):
    daemon, editor, a = await one_turn_edited_a_buffer(start_daemon, llm)
    assert buffer_text(editor) == ORIGINAL.replace("line 2\n", "A TWO\n"), tool_result(llm)
    editor.change(a, ORIGINAL)  # she undid the agent's edit in the buffer: it holds what the rewind goes back to
    sent = len(editor.edits)
    rewound = await daemon.request("ollie/rewind", {})
    assert rewound["buffers"] == [] and len(editor.edits) == sent and buffer_text(editor) == ORIGINAL


async def test_a_rewinds_undo_after_a_reload_puts_the_agents_edits_back_in_the_open_buffers(start_daemon, llm):
    llm.script(Reply.file_edit("a.txt", "line 2\n", "A TWO\n"), Reply.file_edit("b.txt", "line 2\n", "B TWO\n"),
               Reply.text("one"))
    first = await start(start_daemon, llm.env())
    a, b = first.workspace / "a.txt", first.workspace / "b.txt"
    a.write_text("a on disk\n")
    b.write_text("b on disk\n")
    editor = Editor(first)
    editor.open(a, ORIGINAL)  # her unsaved text: the agent's edits stay in the buffers
    editor.open(b, ORIGINAL)
    session = (await first.request("ollie/state", {}))["session"]
    assert await submit(first, "first") == "one"
    await first.request("ollie/rewind", {})
    assert editor.texts[a.as_uri()] == editor.texts[b.as_uri()] == ORIGINAL
    # The window reloads: a new daemon, her unsaved buffers back (VS Code's hot exit), typed on in b.txt since.
    await first.client.shutdown_session()
    second = await start_daemon(env=llm.env(), workspace=first.workspace, caps=edit_caps())
    editor = Editor(second)
    editor.open(a, ORIGINAL)
    editor.open(b, ORIGINAL + "mine\n")
    await second.request("ollie/session/load", {"session": session})
    undone = await second.request("ollie/rewind", {"session": session, "undo": True})
    # a.txt has the agent's edit again (the undo put back the files alone, saying nothing); b.txt is named.
    assert undone["buffers"] == [
        {"path": "a.txt", "status": "reverted"},
        {"path": "b.txt", "status": "stale", "reason": "the buffer changed since the rewind; the agent's edit is not in it"}]
    assert buffer_text(editor) == ORIGINAL.replace("line 2\n", "A TWO\n")
    assert (a.read_text(), b.read_text()) == ("a on disk\n", "b on disk\n")


async def test_a_rewinds_undo_that_puts_a_link_back_names_the_buffer_it_left(start_daemon, llm, tmp_path):
    # Red team round 68: the cut turn's step made the open a.txt a link out of the workspace; the rewind restored the
    # file and reverted the buffer, and the undo's restore made the link again and (rightly) left the buffer alone,
    # but named nothing: she was not told the agent's edit was missing from it.
    outside = tmp_path / "outside.txt"
    outside.write_text("not the project's\n")
    link = {"steps": [{"code": f"rm a.txt && ln -s {outside} a.txt"}]}
    daemon, editor, a = await one_turn_edited_a_buffer(start_daemon, llm, Reply.tool_calls(("execute_code", link)))
    assert a.is_symlink(), tool_result(llm)
    rewound = await daemon.request("ollie/rewind", {})
    assert rewound["buffers"] == [{"path": "a.txt", "status": "reverted"}] and not a.is_symlink()
    assert buffer_text(editor) == ORIGINAL
    sent = len(editor.edits)
    undone = await daemon.request("ollie/rewind", {"undo": True})
    assert a.is_symlink() and len(editor.edits) == sent and buffer_text(editor) == ORIGINAL
    assert undone["buffers"] == [{"path": "a.txt", "status": "refused", "reason": "a.txt is now a symbolic link (or a "
                                  "folder): its buffer, if open, was left as it is; the agent's edit is not in it"}]
    assert outside.read_text() == "not the project's\n"
