"""Edits that went into an open editor buffer (unsaved) are changes of the turn: listed, and undone per hunk."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ollie.testing import Reply

from .test_documents import Editor, start, submit

ORIGINAL = "".join(f"line {i}\n" for i in range(1, 21))
DISK = "what the disk has\n"


def two_edits() -> Reply:
    """One reply editing two places of notes.txt (two hunks)."""
    return Reply.tool_calls(("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["notes.txt", "line 2\n", "LINE TWO\n"]},
        {"tool": "file_edit", "args": ["notes.txt", "line 18\n", "LINE EIGHTEEN\n"]},
    ]}))


def buffer_text(editor: Editor) -> str:
    """The buffer as the last applyEdit left it."""
    change = editor.edits[-1].edit.document_changes[0]  # type: ignore[index]
    assert isinstance(change, types.TextDocumentEdit)
    return editor.texts[change.text_document.uri]


async def test_buffer_edits_are_listed_and_undone_through_the_editor(start_daemon, llm):
    llm.script(two_edits(), Reply.text("edited"),
               Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_read", "args": ["notes.txt"]}]})),
               Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit",
                                                          "args": ["notes.txt", "line 5\n", "LINE FIVE\n"]}]})),
               Reply.text("edited again"))
    daemon = await start(start_daemon, llm.env())
    notes = daemon.workspace / "notes.txt"
    notes.write_text(DISK)
    editor = Editor(daemon)
    editor.open(notes, ORIGINAL)
    assert await submit(daemon, "edit it") == "edited"
    edited = ORIGINAL.replace("line 2\n", "LINE TWO\n").replace("line 18\n", "LINE EIGHTEEN\n")
    assert buffer_text(editor) == edited and notes.read_text() == DISK, "the buffer has it, the disk not"

    # The steps say where each edit went, and the turn's changes list the buffer's change, flagged.
    step = [e for e in daemon.events if e["role"] == "tool"][-1]
    assert [s["locations"] for s in step["steps"]] == [[{"path": "notes.txt", "line": 2}],
                                                       [{"path": "notes.txt", "line": 18}]]
    assert step["tool"]["diffs"] == [{"path": "notes.txt", "oldText": ORIGINAL, "newText": edited}]
    (listed,) = (await daemon.request("ollie/changes", {}))["files"]
    assert listed["path"] == "notes.txt" and listed["inEditor"] is True and listed["status"] == "modified"
    assert (listed["oldText"], listed["newText"]) == (ORIGINAL, edited)
    # The turn's end event listed it so too (the buffer's change, not the disk's).
    end = [e for e in daemon.events if e["role"] == "turn" and e["content"] == "end"][-1]
    assert end["turnChanges"] == {"turn": 1, "files": 1, "changed": [
        {"path": "notes.txt", "status": "modified", "added": 2, "removed": 2, "inEditor": True}]}
    assert [(h["oldStart"], h["lines"]) for h in listed["hunks"]] == [
        (2, ["-line 2\n", "+LINE TWO\n"]), (18, ["-line 18\n", "+LINE EIGHTEEN\n"])]

    # Undo of one hunk: a versioned applyEdit of the buffer; the other hunk stays listed.
    undone = await daemon.request("ollie/review/undo", {"path": "notes.txt", "hunk": 0})
    assert undone["inEditor"] is True and undone["text"] == ORIGINAL.replace("line 18\n", "LINE EIGHTEEN\n")
    assert buffer_text(editor) == undone["text"] and notes.read_text() == DISK
    (left,) = (await daemon.request("ollie/changes", {}))["files"]
    assert [h["lines"] for h in left["hunks"]] == [["-line 18\n", "+LINE EIGHTEEN\n"]] and left["inEditor"]

    # The user types in the buffer, in the line the hunk left changed: its undo is stale, nothing is sent.
    sent = len(editor.edits)
    typed = undone["text"].replace("LINE EIGHTEEN\n", "LINE EIGHTEEN typed by the user\n")
    editor.change(notes, typed)
    with pytest.raises(JsonRpcException) as caught:
        await daemon.request("ollie/review/undo", {"path": "notes.txt"})
    assert caught.value.code == -32003 and len(editor.edits) == sent

    # The next turn reads and edits the buffer again; its whole-file undo puts back what the turn found.
    before = typed
    assert await submit(daemon, "again") == "edited again"
    (second,) = (await daemon.request("ollie/changes", {}))["files"]
    assert (second["oldText"], second["newText"]) == (before, before.replace("line 5\n", "LINE FIVE\n"))
    assert second["inEditor"] is True
    assert (await daemon.request("ollie/review/undo", {"path": "notes.txt"}))["text"] == before
    assert buffer_text(editor) == before
    assert (await daemon.request("ollie/changes", {}))["files"] == []
    # The model hears of the undos with its next prompt, as for changes on disk.
    llm.script(Reply.text("noted"))
    await submit(daemon, "next")
    prompt = llm.chat_requests[-1].body["messages"][-1]["content"]
    assert "the user undid these changes of yours (turn 2): notes.txt (the whole file" in prompt
