"""Review of an earlier turn after a later one edited the same file: its own diff, and undo keeping the later edit."""

from __future__ import annotations

from ollie.testing import Reply

from . import test_documents
from .test_context_items import lines
from .test_editor_review import ORIGINAL, buffer_text, two_edits
from .test_edits_reach_disk import SavingEditor
from .test_review import EDITED_A, ORIGINAL_A, edit_two_files, rpc_error, seeded, start

LATER_A = EDITED_A.replace("line 10\n", "LINE TEN\n")


def edit_line_ten() -> list[Reply]:
    """A later turn: one file_edit of a.txt, between the two lines the first turn changed."""
    return [Reply.tool_calls(("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["a.txt", "line 10\n", "LINE TEN\n"]}]})), Reply.text("ten")]


async def test_undo_of_an_earlier_turns_hunk_keeps_the_later_turns_edit(start_daemon, llm, tmp_path):
    llm.script(*edit_two_files(), *edit_line_ten())
    ws = seeded(tmp_path)
    daemon = await start(start_daemon, llm, workspace=ws)
    await daemon.request("ollie/submit", {"text": "edit them"})
    await daemon.request("ollie/submit", {"text": "and line ten"})
    assert (ws / "a.txt").read_text() == LATER_A

    # Turn 1's diff is what turn 1 did: the file as it left it, its two hunks, not turn 2's line.
    first = {f["path"]: f for f in (await daemon.request("ollie/changes", {"turn": 1}))["files"]}["a.txt"]
    assert first["newText"] == EDITED_A and len(first["hunks"]) == 2

    undone = await daemon.request("ollie/review/undo", {"turn": 1, "path": "a.txt", "hunk": 1})
    kept = LATER_A.replace("LINE EIGHTEEN\n", "line 18\n")
    assert undone == {"path": "a.txt", "hunk": 1, "text": kept, "inEditor": False}
    assert (ws / "a.txt").read_text() == kept  # turn 2's line 10 kept, turn 1's line 2 kept
    first = {f["path"]: f for f in (await daemon.request("ollie/changes", {"turn": 1}))["files"]}["a.txt"]
    assert [h["lines"] for h in first["hunks"]] == [["-line 2\n", "+LINE TWO\n"]]
    assert first["newText"] == EDITED_A.replace("LINE EIGHTEEN\n", "line 18\n")  # turn 2's edit is not turn 1's
    second = (await daemon.request("ollie/changes", {"turn": 2}))["files"]
    assert [h["lines"] for f in second for h in f["hunks"]] == [["-line 10\n", "+LINE TEN\n"]]

    # A hunk whose lines were edited since is refused, and the file left as it is.
    (ws / "a.txt").write_text(kept.replace("LINE TWO\n", "my line two\n"))
    err = await rpc_error(daemon, "ollie/review/undo", {"turn": 1, "path": "a.txt", "hunk": 0})
    assert err.code == -32003 and "in this change's lines; undo refused" in err.message
    assert (ws / "a.txt").read_text() == kept.replace("LINE TWO\n", "my line two\n")

    # The whole file's change, once its lines are back as the turn left them: undone, turn 2's line still kept.
    (ws / "a.txt").write_text(kept)
    await daemon.request("ollie/review/undo", {"turn": 1, "path": "a.txt"})
    assert (ws / "a.txt").read_text() == ORIGINAL_A.replace("line 10\n", "LINE TEN\n")
    assert not [f for f in (await daemon.request("ollie/changes", {"turn": 1}))["files"] if f["path"] == "a.txt"]


async def test_undo_in_an_open_buffer_of_an_earlier_turns_hunk_keeps_the_later_turns_edit(start_daemon, llm):
    ten = Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["notes.txt", "line 10\n",
                                                                                     "LINE TEN\n"]}]}))
    llm.script(two_edits(), Reply.text("edited"), ten, Reply.text("ten"))
    daemon = await test_documents.start(start_daemon, llm.env())
    notes = daemon.workspace / "notes.txt"
    notes.write_text(ORIGINAL)
    editor = test_documents.Editor(daemon)
    editor.open(notes, ORIGINAL)
    await test_documents.submit(daemon, "edit it")
    await test_documents.submit(daemon, "and line ten")
    edited = ORIGINAL.replace("line 2\n", "LINE TWO\n").replace("line 18\n", "LINE EIGHTEEN\n")
    assert buffer_text(editor) == edited.replace("line 10\n", "LINE TEN\n")

    (first,) = (await daemon.request("ollie/changes", {"turn": 1}))["files"]
    assert first["inEditor"] and first["newText"] == edited and len(first["hunks"]) == 2
    undone = await daemon.request("ollie/review/undo", {"turn": 1, "path": "notes.txt", "hunk": 0})
    assert undone["inEditor"] and undone["text"] == edited.replace("LINE TWO\n", "line 2\n").replace(
        "line 10\n", "LINE TEN\n")
    assert buffer_text(editor) == undone["text"]  # one versioned edit, turn 2's line kept
    (first,) = (await daemon.request("ollie/changes", {"turn": 1}))["files"]
    assert [h["lines"] for h in first["hunks"]] == [["-line 18\n", "+LINE EIGHTEEN\n"]]
    (second,) = (await daemon.request("ollie/changes", {"turn": 2}))["files"]
    assert [h["lines"] for h in second["hunks"]] == [["-line 10\n", "+LINE TEN\n"]]


async def test_a_buffer_the_editor_read_through_a_link_is_never_undone_into_or_sent_as_context(start_daemon, llm):
    """Turn 1 removed a line of key.pem; a step then swaps it for a link to the user's key, the editor reloads it
    through the link (round 28), and a plain file goes back with the key's mtime and size (no editor sees a change).
    The undo merged the hunk onto the editor's text, the key, and the editor saved it (as Neovim's and VS Code's do
    when the disk looks unchanged): the key landed in the workspace for the model to read; the prompt's context of the
    open file sent it as well. That text is never the file's: the undo goes to the disk, the context reads the disk."""
    begin, end = "-----BEGIN OPENSSH PRIVATE KEY-----\n", "-----END OPENSSH PRIVATE KEY-----\n"
    llm.script(Reply.file_edit("key.pem", f"{end}W\n", end), Reply.text("tidied"), Reply.text("ok"))
    daemon = await test_documents.start(start_daemon, llm.env(), init_options={"saveDocuments": True})
    pem = daemon.workspace / "key.pem"
    pem.write_text(f"{begin}{end}W\n")
    await test_documents.submit(daemon, "tidy it")
    assert pem.read_text() == begin + end
    editor = SavingEditor(daemon)
    editor.open(pem, begin + end)
    key = daemon.workspace.parent / "id_rsa"
    key.write_text(f"{begin}the user's secret\n{end}")
    await test_documents.read_through_a_link(daemon, editor, pem, key)  # the daemon saw the link
    pem.unlink()
    pem.write_text(begin + end)

    undone = await daemon.request("ollie/review/undo", {"turn": 1, "path": "key.pem", "hunk": 0})
    assert not undone["inEditor"] and pem.read_text() == f"{begin}{end}W\n" and not editor.saves
    await daemon.request("ollie/submit", {"text": "look", "context": [{"uri": pem.as_uri(), "range": lines(0, 2)}]})
    prompt = llm.chat_requests[-1].body["messages"][-1]["content"]
    assert "END OPENSSH" in prompt and "secret" not in prompt, prompt
