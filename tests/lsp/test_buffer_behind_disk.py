"""A step that changes a file on disk under a buffer with the user's unsaved edits loses neither side: the user and
the model are told when the step ends, and the agent's later edit of that buffer is refused (before, it went into the
buffer and the client's save wrote it, with the stale text, over the step's change) until the buffer and the file
agree again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ollie.testing import Reply

from .conftest import Daemon
from .test_documents import edit, start, submit
from .test_edits_reach_disk import SavingEditor, run

ON_DISK = "x = 1\n"
STEPPED = "x = 2\n"  # what the step's sed writes
MINE = "x = 1\n# the user's unsaved note\n"
SED = "sed -i 's/x = 1/x = 2/' a.py"


def tool_results(llm: Any) -> list[str]:
    """What the model was told by each tool call, in order."""
    return [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "tool"]


def infos(daemon: Daemon) -> list[str]:
    """The `info` events' texts."""
    return [e["content"] for e in daemon.events if e.get("role") == "info"]


async def open_a_py(start_daemon: Any, llm: Any, buffer: str, *replies: Reply) -> tuple[Daemon, Path, SavingEditor]:
    """A daemon whose model says `replies`, and an editor (that saves on request) with a.py open holding `buffer`."""
    llm.script(*replies)
    daemon = await start(start_daemon, llm.env(), init_options={"saveDocuments": True})
    path = daemon.workspace / "a.py"
    path.write_text(ON_DISK)
    editor = SavingEditor(daemon)
    editor.open(path, buffer)
    return daemon, path, editor


async def test_a_step_s_change_under_unsaved_edits_is_told_and_the_buffer_is_not_edited_over_it(start_daemon, llm):
    daemon, path, editor = await open_a_py(start_daemon, llm, MINE, run(SED), edit("a.py", "x = 1", "x = 3"), Reply.text("done"))
    assert await submit(daemon, "bump x, then set it to 3") == "done"
    assert path.read_text() == STEPPED, "the step's change on disk was overwritten"
    assert editor.texts[path.as_uri()] == MINE and editor.edits == [] and editor.saves == []
    stepped, edited = tool_results(llm)
    assert "[editor] a.py: the user has unsaved changes in the editor that this step's change on disk" in stepped
    assert "not edited: the buffer of a.py has the user's unsaved changes and a step changed the file on disk" in edited
    assert "Ask the user to merge the two and save a.py (or reload it from disk)" in edited
    [notice] = [i for i in infos(daemon) if "a.py" in i]
    assert notice.startswith("warning: a.py has unsaved changes in the editor, and this step changed the file on disk")


async def test_once_the_user_merged_and_saved_the_agent_edits_the_buffer_again(start_daemon, llm):
    daemon, path, editor = await open_a_py(start_daemon, llm, MINE, run(SED), Reply.text("bumped"),
                                           edit("a.py", "x = 2", "x = 3"), Reply.text("done"))
    assert await submit(daemon, "bump x") == "bumped"
    merged = STEPPED + "# the user's unsaved note\n"
    editor.change(path, merged)
    path.write_text(merged)  # the user's :w
    assert await submit(daemon, "set it to 3") == "done"
    assert editor.texts[path.as_uri()] == "x = 3\n# the user's unsaved note\n" == path.read_text()
    assert "not edited" not in tool_results(llm)[-1]


async def test_a_clean_buffer_under_a_step_s_change_is_not_reported(start_daemon, llm):
    """The editor reloads a buffer without unsaved edits: nothing to tell."""
    daemon, path, _ = await open_a_py(start_daemon, llm, ON_DISK, run(SED), Reply.text("done"))
    assert await submit(daemon, "bump x") == "done"
    assert path.read_text() == STEPPED
    assert not [i for i in infos(daemon) if "a.py" in i] and "[editor]" not in tool_results(llm)[-1]


async def test_a_clean_buffer_the_editor_has_not_reloaded_yet_is_not_edited_on_its_old_text(start_daemon, llm):
    """The step and the edit in one reply: the editor has not reloaded a.py when the edit comes, so the edit is refused
    (before, it was made on the old text and saved over the step's change); once reloaded, the next edit goes, on
    top of what the user typed since."""
    both = Reply.tool_calls(*run(SED).tool_calls, *edit("a.py", "x = 1", "x = 3").tool_calls)
    daemon, path, editor = await open_a_py(start_daemon, llm, ON_DISK, both, Reply.text("refused"),
                                           edit("a.py", "x = 2", "x = 3"), Reply.text("done"))
    assert await submit(daemon, "bump x, then set it to 3") == "refused"
    assert path.read_text() == STEPPED and editor.saves == []
    assert "not edited: a step changed a.py on disk and the editor has not reloaded its buffer yet" in tool_results(llm)[-1]
    assert not [i for i in infos(daemon) if "a.py" in i], "a clean buffer is the editor's to reload, not the user's"
    editor.change(path, STEPPED)  # the editor reloads it
    editor.change(path, STEPPED + "# typed since\n")
    assert await submit(daemon, "set it to 3") == "done"
    assert editor.texts[path.as_uri()] == "x = 3\n# typed since\n" == path.read_text()
