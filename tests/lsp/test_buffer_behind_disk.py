"""A step that changes a file on disk under a buffer with the user's unsaved edits loses neither side: the user and
the model are told when the step ends, and the agent's later edit of that buffer is refused (before, it went into the
buffer and the client's save wrote it, with the stale text, over the step's change) until the buffer and the file
agree again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ollie.agent.behind import saved_notice
from ollie.testing import Reply

from .conftest import Daemon
from .test_documents import Editor, share, submit
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


async def open_a_py(shared_daemon: Any, llm: Any, buffer: str, *replies: Reply) -> tuple[Daemon, Path, SavingEditor]:
    """A session whose model says `replies`, and an editor (that saves on request) with a.py open holding `buffer`."""
    llm.script(*replies)
    daemon = await share(shared_daemon, llm.env(), init_options={"saveDocuments": True})
    path = daemon.workspace / "a.py"
    path.write_text(ON_DISK)
    editor = SavingEditor(daemon)
    editor.open(path, buffer)
    return daemon, path, editor


async def test_a_step_s_change_under_unsaved_edits_is_told_and_the_buffer_is_not_edited_over_it(shared_daemon, llm):
    daemon, path, editor = await open_a_py(shared_daemon, llm, MINE, run(SED),
                                           Reply.file_edit("a.py", "x = 1", "x = 3"), Reply.text("done"))
    assert await submit(daemon, "bump x, then set it to 3") == "done"
    assert path.read_text() == STEPPED, "the step's change on disk was overwritten"
    assert editor.texts[path.as_uri()] == MINE and editor.edits == [] and editor.saves == []
    stepped, edited = tool_results(llm)
    assert "[editor] a.py: the user has unsaved changes in the editor that this step's change on disk" in stepped
    assert "not edited: the buffer of a.py has the user's unsaved changes and a step changed the file on disk" in edited
    assert "Ask the user to merge the two and save a.py (or reload it from disk)" in edited
    [notice] = [i for i in infos(daemon) if "a.py" in i]
    assert notice.startswith("warning: a.py has unsaved changes in the editor, and this step changed the file on disk")


async def test_a_step_that_rewrites_the_file_with_its_own_bytes_changes_nothing_under_the_buffer(shared_daemon, llm):
    """`sed -i` that matches nothing writes a.py anew (a new inode and mtime) with the same bytes: no change on disk
    is told, and the agent's edit goes on top of the user's unsaved text (the step's changes are compared by content,
    not by inode or mtime)."""
    daemon, path, editor = await open_a_py(shared_daemon, llm, MINE, run("sed -i 's/no such text/y/' a.py"),
                                           Reply.file_edit("a.py", "x = 1", "x = 3"), Reply.text("done"))
    inode = path.stat().st_ino
    assert await submit(daemon, "tidy, then set x to 3") == "done"
    stepped, edited = tool_results(llm)
    assert "[editor]" not in stepped and "not edited" not in edited, (stepped, edited)
    # No change on disk told: only that the user's unsaved lines were saved with the edit.
    assert [i for i in infos(daemon) if "a.py" in i] == [saved_notice("a.py")]
    assert path.stat().st_ino != inode and path.read_text() == "x = 3\n# the user's unsaved note\n"

async def test_once_the_user_merged_and_saved_the_agent_edits_the_buffer_again(shared_daemon, llm):
    daemon, path, editor = await open_a_py(shared_daemon, llm, MINE, run(SED), Reply.text("bumped"),
                                           Reply.file_edit("a.py", "x = 2", "x = 3"), Reply.text("done"))
    assert await submit(daemon, "bump x") == "bumped"
    merged = STEPPED + "# the user's unsaved note\n"
    editor.change(path, merged)
    path.write_text(merged)  # the user's :w
    assert await submit(daemon, "set it to 3") == "done"
    assert editor.texts[path.as_uri()] == "x = 3\n# the user's unsaved note\n" == path.read_text()
    assert "not edited" not in tool_results(llm)[-1]


async def test_a_clean_buffer_under_a_step_s_change_is_not_reported(shared_daemon, llm):
    """The editor reloads a buffer without unsaved edits: nothing to tell."""
    daemon, path, _ = await open_a_py(shared_daemon, llm, ON_DISK, run(SED), Reply.text("done"))
    assert await submit(daemon, "bump x") == "done"
    assert path.read_text() == STEPPED
    assert not [i for i in infos(daemon) if "a.py" in i] and "[editor]" not in tool_results(llm)[-1]


async def test_a_clean_buffer_the_editor_has_not_reloaded_yet_is_not_edited_on_its_old_text(shared_daemon, llm):
    """The step and the edit in one reply: the editor has not reloaded a.py when the edit comes, so the edit is refused
    (before, it was made on the old text and saved over the step's change); once reloaded, the next edit goes, on
    top of what the user typed since."""
    both = Reply.tool_calls(*run(SED).tool_calls, *Reply.file_edit("a.py", "x = 1", "x = 3").tool_calls)
    daemon, path, editor = await open_a_py(shared_daemon, llm, ON_DISK, both, Reply.text("refused"),
                                           Reply.file_edit("a.py", "x = 2", "x = 3"), Reply.text("done"))
    assert await submit(daemon, "bump x, then set it to 3") == "refused"
    assert path.read_text() == STEPPED and editor.saves == []
    assert "not edited: a step changed a.py on disk and the editor has not reloaded its buffer yet" in tool_results(llm)[-1]
    assert not [i for i in infos(daemon) if "a.py" in i], "a clean buffer is the editor's to reload, not the user's"
    editor.change(path, STEPPED)  # the editor reloads it
    editor.change(path, STEPPED + "# typed since\n")
    assert await submit(daemon, "set it to 3") == "done"
    assert editor.texts[path.as_uri()] == "x = 3\n# typed since\n" == path.read_text()


class CheckingEditor(Editor):
    """An editor that, as Neovim's and VS Code's clients do, will not save a buffer whose file changed on disk since
    it last read or wrote it (its mtime and size then): it answers `changedOnDisk` instead."""

    def __init__(self, daemon: Daemon) -> None:
        super().__init__(daemon)
        self.stats: dict[str, tuple[int, int]] = {}
        self.saves: list[list[str]] = []

        @daemon.client.feature("ollie/saveDocuments")
        def on_save(params: Any) -> dict[str, list[str]]:
            saved, changed = [], []
            for uri in params["uris"]:
                path = Path(uri.removeprefix("file://"))
                if self._stat(path) != self.stats[uri]:
                    changed.append(uri)
                    continue
                path.write_text(self.texts[uri])
                self.stats[uri] = self._stat(path)
                saved.append(uri)
            self.saves.append(saved)
            return {"saved": saved, "changedOnDisk": changed}

    @staticmethod
    def _stat(path: Path) -> tuple[int, int]:
        st = path.stat()
        return st.st_mtime_ns, st.st_size

    def open(self, path: Path, text: str) -> None:
        super().open(path, text)
        self.stats[path.as_uri()] = self._stat(path)


async def setting_x_to_3(shared_daemon, llm):
    """A daemon that saves documents, a.py on disk and open as ON_DISK in a CheckingEditor, and a model that edits
    its x to 3: (daemon, path, editor)."""
    llm.script(Reply.file_edit("a.py", "x = 1", "x = 3"), Reply.text("done"))
    daemon = await share(shared_daemon, llm.env(), init_options={"saveDocuments": True})
    path = daemon.workspace / "a.py"
    path.write_text(ON_DISK)
    editor = CheckingEditor(daemon)
    editor.open(path, ON_DISK)
    return daemon, path, editor


async def test_an_edit_the_editor_will_not_save_over_a_change_made_outside_fails_and_says_so(shared_daemon, llm):
    """a.py changed on disk outside the agent's steps (the user's `git checkout`); the agent's edit goes to the buffer
    but the editor will not save it over that change: the disk keeps it, the tool call fails saying why, and the user
    is shown a warning (before, the daemon told the model the buffer had the user's unsaved changes)."""
    daemon, path, editor = await setting_x_to_3(shared_daemon, llm)
    path.write_text("x = 5  # checked out\n")
    assert await submit(daemon, "set x to 3") == "done"
    assert path.read_text() == "x = 5  # checked out\n", "the change made outside was overwritten"
    assert editor.texts[path.as_uri()] == "x = 3\n" and editor.saves == [[]]
    [result] = tool_results(llm)
    assert "a.py: your edit is in the editor's buffer only, not saved: a.py changed on disk since the editor" in result
    assert "unsaved changes" not in result
    [shown] = [m.message for m in daemon.client.messages if "a.py" in m.message]
    assert shown.startswith("ollie: a.py changed on disk since the editor read it, so the agent's edit of it was not")


async def test_a_rewinds_undo_into_a_buffer_that_agrees_with_the_disk_again_says_nothing_of_a_change_on_disk(
        shared_daemon, llm):
    """The agent's edit of a.py, saved with her unsaved line, is rewound (the disk and the buffer back) and undone: the
    disk holds the edit again and the buffer takes it back, the editor not saving it over the restored file. There is
    nothing to merge, and nothing is said (it warned that the agent's edit was in the buffer only: merge the two)."""
    daemon, path, editor = await setting_x_to_3(shared_daemon, llm)
    editor.change(path, ON_DISK + "# mine\n")
    assert await submit(daemon, "set x to 3") == "done"
    assert path.read_text() == "x = 3\n# mine\n" == editor.texts[path.as_uri()]
    await daemon.request("ollie/rewind", {})
    assert editor.texts[path.as_uri()] == ON_DISK + "# mine\n"
    said = len(daemon.client.messages)
    undone = await daemon.request("ollie/rewind", {"undo": True})
    assert undone["buffers"] == [{"path": "a.py", "status": "reverted"}]
    assert path.read_text() == "x = 3\n# mine\n" == editor.texts[path.as_uri()]
    # (A notice is sent before the answer, and read first.)
    assert not [m.message for m in daemon.client.messages[said:] if "changed on disk" in m.message]
