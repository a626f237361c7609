"""Every step sees the agent's own earlier edits: an edit of an open document goes to the editor's buffer and
then to the disk (the client saves it on `ollie/saveDocuments`, or the daemon writes it when the buffer held what
the disk holds), so the next command runs the edited code; the user's unsaved text is never saved behind their
back, and the model is told about it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from ollie.testing import Reply
from tests.procs import eventually

from .conftest import Daemon
from .test_documents import Editor, _path, share, start, submit

CALC = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\nassert add(2, 3) == 5, f'add(2, 3) is {add(2, 3)}'\nprint('tests passed')\n"


def run(code: str) -> Reply:
    return Reply.tool_calls(("execute_code", {"steps": [{"code": code, "language": "bash"}]}))


def edit_then_test(llm: Any) -> None:
    llm.script(Reply.file_edit("calc.py", "a - b", "a + b"), run("python3 test_calc.py"), Reply.text("done"))


def workspace(daemon: Daemon) -> Path:
    (daemon.workspace / "calc.py").write_text(CALC)
    (daemon.workspace / "test_calc.py").write_text(TEST)
    return daemon.workspace / "calc.py"


def results(llm: Any) -> tuple[str, str]:
    """What the model was told by the edit and by the test run (the last two tool results)."""
    edit_request, run_request = llm.chat_requests[-2:]
    return edit_request.body["messages"][-1]["content"], run_request.body["messages"][-1]["content"]


class SavingEditor(Editor):
    """An editor that serves ollie/saveDocuments: it writes the named buffers to disk, as `:write` does; `formats`:
    its format on save, whose change of the buffer is told by `told()` (Neovim's didChange waits out a debounce: late,
    at worst after the step that edited ended)."""

    def __init__(self, daemon: Daemon, formats: Callable[[str], str] = str) -> None:
        super().__init__(daemon)
        self.saves: list[list[str]] = []
        self.untold: list[tuple[Path, str]] = []

        @daemon.client.feature("ollie/saveDocuments")
        def on_save(params: Any) -> dict[str, list[str]]:
            uris = list(params["uris"])
            self.saves.append(uris)
            for uri in uris:
                _path(uri).write_text(text := formats(self.texts[uri]))
                if text != self.texts[uri]:
                    self.untold.append((_path(uri), text))
            return {"saved": uris}

    def told(self) -> None:
        """The format on save's changes of the buffers, told now."""
        while self.untold:
            self.change(*self.untold.pop(0))


async def test_a_plain_client_s_edit_is_written_to_disk_before_the_next_command(shared_daemon, llm):
    """No ollie client features: the buffer held what the disk holds, so the daemon writes the edit there too."""
    edit_then_test(llm)
    daemon = await share(shared_daemon, llm.env())
    calc = workspace(daemon)
    editor = Editor(daemon)
    editor.open(calc, CALC)
    assert await submit(daemon, "fix add and run the tests") == "done"
    edited, ran = results(llm)
    assert len(editor.edits) == 1 and editor.texts[calc.as_uri()] == FIXED, "the edit went to the buffer"
    assert calc.read_text() == FIXED and "unsaved" not in edited
    assert "tests passed" in ran and "AssertionError" not in ran


async def test_a_plain_client_s_unsaved_text_is_not_saved_and_the_model_is_told(shared_daemon, llm):
    edit_then_test(llm)
    daemon = await share(shared_daemon, llm.env())
    calc = workspace(daemon)
    editor = Editor(daemon)
    editor.open(calc, CALC + "# the user's unsaved note\n")
    assert await submit(daemon, "fix add and run the tests") == "done"
    edited, ran = results(llm)
    assert editor.texts[calc.as_uri()] == FIXED + "# the user's unsaved note\n"
    assert calc.read_text() == CALC, "the user's unsaved text was written behind their back"
    assert "calc.py has unsaved changes in the editor: your edit is in its buffer only, not on disk" in edited
    assert "AssertionError" in ran


async def test_a_client_that_saves_gets_only_the_edited_document_saved(shared_daemon, llm):
    """`saveDocuments`: the client is asked to save calc.py (with the user's unsaved line in it, which the model is
    told of); notes.txt, unsaved and untouched by the agent, is never named."""
    edit_then_test(llm)
    daemon = await share(shared_daemon, llm.env(), init_options={"saveDocuments": True})
    calc = workspace(daemon)
    notes = daemon.workspace / "notes.txt"
    notes.write_text("on disk\n")
    editor = SavingEditor(daemon)
    editor.open(calc, "# the user's unsaved note\n" + CALC)
    editor.open(notes, "the user's unsaved notes\n")
    assert await submit(daemon, "fix add and run the tests") == "done"
    edited, ran = results(llm)
    assert editor.saves == [[calc.as_uri()]]
    assert calc.read_text() == "# the user's unsaved note\n" + FIXED and notes.read_text() == "on disk\n"
    assert "calc.py had unsaved changes in the editor: your edit was made on top of them and the file was saved" in edited
    assert "tests passed" in ran
    told = [e["content"] for e in daemon.events if e["role"] == "info"]
    assert told == ["calc.py had your unsaved changes in the editor: the agent's edit was made on top of them and the "
                    "file was saved with them (the editor's undo takes back the agent's edit alone)"], told


async def test_an_undo_of_a_saved_buffer_edit_reaches_the_disk_and_leaves_the_list(shared_daemon, llm):
    """The edit was saved, so its undo (in the buffer, through applyEdit) is saved too: the file is back on disk and
    the turn lists no change (before, the disk's change came back in the list after the buffer's was undone)."""
    for saving in (True, False):
        llm.script(Reply.file_edit("calc.py", "a - b", "a + b"), Reply.text("done"))
        daemon = await share(shared_daemon, llm.env(), init_options={"saveDocuments": saving})
        calc = workspace(daemon)
        editor = SavingEditor(daemon) if saving else Editor(daemon)
        editor.open(calc, CALC)
        assert await submit(daemon, "fix add") == "done"
        assert calc.read_text() == FIXED
        undone = await daemon.request("ollie/review/undo", {"path": "calc.py"})
        assert undone["inEditor"] and editor.texts[calc.as_uri()] == CALC
        assert calc.read_text() == CALC, f"saving={saving}"
        assert (await daemon.request("ollie/changes", {}))["files"] == []


async def test_an_undone_edit_of_an_unsaved_buffer_leaves_the_user_s_text_out_of_the_turn(shared_daemon, llm):
    """The user's unsaved line was saved with the agent's edit; once the edit is undone the turn lists no change
    (before, the user's own line showed as the turn's change, and undoing that deleted it from the file)."""
    llm.script(Reply.file_edit("calc.py", "a - b", "a + b"), Reply.text("done"))
    daemon = await share(shared_daemon, llm.env(), init_options={"saveDocuments": True})
    calc = workspace(daemon)
    mine = "# the user's unsaved note\n" + CALC
    editor = SavingEditor(daemon)
    editor.open(calc, mine)
    assert await submit(daemon, "fix add") == "done"
    assert calc.read_text() == "# the user's unsaved note\n" + FIXED
    await daemon.request("ollie/review/undo", {"path": "calc.py"})
    assert editor.texts[calc.as_uri()] == mine and calc.read_text() == mine
    assert (await daemon.request("ollie/changes", {}))["files"] == []
    with pytest.raises(JsonRpcException, match="did not change it"):
        await daemon.request("ollie/review/undo", {"path": "calc.py"})
    assert calc.read_text() == mine


async def test_a_turns_chmod_of_a_file_whose_buffer_it_edited_and_saved_goes_with_its_rewind(shared_daemon, llm):
    """The turn's checkpoint holds the user's unsaved text of a buffer it edited and saved: it took that file's mode at
    the turn's end too, so the turn's `chmod +x` was no change of its, and the file stayed executable once rewound."""
    llm.script(Reply.file_edit("calc.py", "a - b", "a + b"), run("chmod +x calc.py"), Reply.text("done"))
    daemon = await share(shared_daemon, llm.env(), init_options={"saveDocuments": True})
    calc = workspace(daemon)
    mine = "# the user's unsaved note\n" + CALC
    SavingEditor(daemon).open(calc, mine)
    assert await submit(daemon, "fix add") == "done"
    assert calc.stat().st_mode & 0o111 and calc.read_text() == "# the user's unsaved note\n" + FIXED
    await daemon.request("ollie/rewind", {"turn": 1})
    assert calc.read_text() == mine and not calc.stat().st_mode & 0o111


async def test_after_a_daemon_restart_the_user_s_saved_text_is_still_not_the_turn_s(start_daemon, llm):
    """The buffer edits are forgotten with the daemon, and the disk's change is then listed: it is the agent's edit
    alone (before, it held the user's line, saved with the edit, and undoing it deleted that line)."""
    llm.script(Reply.file_edit("calc.py", "a - b", "a + b"), Reply.text("done"))
    first = await start(start_daemon, llm.env(), init_options={"saveDocuments": True})
    calc = workspace(first)
    mine = "# the user's unsaved note\n" + CALC
    SavingEditor(first).open(calc, mine)
    session = (await first.request("ollie/submit", {"text": "fix add"}))["session"]
    await first.client.shutdown_session()
    second = await start_daemon(env=llm.env(), workspace=first.workspace, init_options={"session": session})
    [listed] = (await second.request("ollie/changes", {}))["files"]
    assert (listed["oldText"], listed["newText"]) == (mine, "# the user's unsaved note\n" + FIXED)
    await second.request("ollie/review/undo", {"path": "calc.py"})
    assert calc.read_text() == mine


async def test_no_edit_is_saved_while_a_step_that_may_swap_the_file_for_a_link_runs(start_daemon, llm, tmp_path):
    """Red team round 22: the editor saves the model's edit by the file's name, following a link, as `:write` does. A
    step of another session (or one left running) swapped `notes.txt` for a link to a file outside between the
    daemon's check and the save: the model's text went there, outside every sandbox. ACP's `fs/*` waited for no step
    to be able to write the path (`writers.quiet`); the editor's edits did not. Now the edit waits for the step to end
    (it gives up waiting for `go` and ends), and only then is it sent and saved: to notes.txt itself."""
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's own file\n")
    # Session B's step: waits for the save (the editor's `go`), then swaps the file for a link out.
    swap = (f"touch started; for i in $(seq 100); do [ -e go ] && break; sleep 0.05; done; "
            f"[ -e go ] && ln -s {outside} link.tmp && mv -T link.tmp notes.txt; sleep 1; touch ended")
    llm.script(run(swap), Reply.file_edit("notes.txt", "old", "new"), Reply.text("done"), Reply.text("done"))
    daemon = await start(start_daemon, llm.env(), init_options={"saveDocuments": True})
    ws = daemon.workspace
    (ws / "notes.txt").write_text("old\n")
    editor = Editor(daemon)
    editor.open(ws / "notes.txt", "old\n")

    @daemon.client.feature("ollie/saveDocuments")
    async def on_save(params: Any) -> dict[str, list[str]]:
        (ws / "go").touch()
        for _ in range(200):  # the step's swap lands now, after the daemon looked at the path (or the step is over)
            if (ws / "notes.txt").is_symlink() or (ws / "ended").exists():
                break
            await asyncio.sleep(0.05)
        for uri in params["uris"]:
            _path(uri).write_text(editor.texts[uri])  # by name, as editors write: through a link
        return {"saved": list(params["uris"])}

    other = (await daemon.request("ollie/session/new", {}))["session"]
    swapping = asyncio.ensure_future(daemon.request("ollie/submit", {"session": other, "text": "swap"}, timeout=60))
    for _ in range(200):
        if (ws / "started").exists():
            break
        await asyncio.sleep(0.05)
    assert await submit(daemon, "edit notes.txt") == "done"
    await swapping
    assert outside.read_text() == "the user's own file\n"
    assert (ws / "notes.txt").read_text() == "new\n" and not (ws / "notes.txt").is_symlink()


async def an_edit_held_by_a_step(start_daemon: Any, llm: Any, tmp_path: Path, *replies: Reply) -> Any:
    """The default session's edit of open notes.txt, under way while another session's step that may write it runs
    (until `done` exists): (daemon, editor, the step's submit, the edit's submit)."""
    llm.script(run("touch started; while [ ! -e done ]; do sleep 0.05; done"), Reply.file_edit("notes.txt", "old", "new"),
               *replies)
    runtime = tmp_path / "run"  # the sessions' tmp dirs, where the edit's copy of the buffer is
    runtime.mkdir(mode=0o700)
    daemon = await start(start_daemon, {**llm.env(), "XDG_RUNTIME_DIR": str(runtime)},
                         init_options={"saveDocuments": True})
    ws = daemon.workspace
    (ws / "notes.txt").write_text("old\n")
    editor = SavingEditor(daemon)
    editor.open(ws / "notes.txt", "old\n")
    other = (await daemon.request("ollie/session/new", {}))["session"]
    stepping = asyncio.ensure_future(daemon.request("ollie/submit", {"session": other, "text": "run"}, timeout=60))
    await eventually(lambda: (ws / "started").exists(), "the other session's step started")
    editing = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "edit notes.txt"}, timeout=60))
    copies = lambda: [c.read_text() for c in runtime.glob("ollie/*/**/.editor-*-notes.txt")]  # noqa: E731
    await eventually(lambda: copies() == ["new\n"], "the edit made in the copy and sent to the editor")
    return daemon, editor, stepping, editing


async def test_an_edit_waits_for_another_session_s_step_to_end_and_lands(start_daemon, llm, tmp_path):
    """The edit of an open document waits for a running step that may write it (another session's, here) to end,
    then reaches the buffer and the disk (before, it was refused at once and the model retried blindly)."""
    daemon, editor, stepping, editing = await an_edit_held_by_a_step(start_daemon, llm, tmp_path, Reply.text("done"),
                                                                     Reply.text("done"))
    ws = daemon.workspace
    (ws / "done").touch()  # the step ends
    assert (await editing)["reply"] == "done" and (await stepping)["reply"] == "done"
    assert editor.texts[(ws / "notes.txt").as_uri()] == "new\n" and (ws / "notes.txt").read_text() == "new\n"
    told = [r.body["messages"][-1]["content"] for r in llm.chat_requests[2:]]
    assert not any("still running" in t for t in told), told


async def test_stop_ends_an_edit_s_wait_for_a_step_and_nothing_is_written(start_daemon, llm, tmp_path):
    """Stop while the edit waits for another session's step: the turn ends at once (the step still running), and
    neither the buffer nor the file gets the edit."""
    daemon, editor, stepping, editing = await an_edit_held_by_a_step(start_daemon, llm, tmp_path, Reply.text("done"))
    ws = daemon.workspace
    assert (await daemon.request("ollie/interrupt", {}))["interrupted"] is True
    assert (await editing)["stop"] == "interrupted" and not stepping.done()
    (ws / "done").touch()
    assert (await stepping)["reply"] == "done"
    assert editor.texts[(ws / "notes.txt").as_uri()] == "old\n" and (ws / "notes.txt").read_text() == "old\n"


async def test_what_a_format_on_save_changed_is_the_agent_s_edit_not_a_change_under_its_buffer(start_daemon, llm):
    """ollie's save ran the user's formatter: the step took the formatted file for another's change on disk under a
    buffer with her unsaved text (told so, the agent's next edits of it refused), the edit's hunk was not undone
    (edited since) and a rewind left the buffer (changed since the agent's edit)."""
    for review in ("ollie/review/undo", "ollie/rewind"):
        llm.script(Reply.file_edit("calc.py", "a - b", "a + b  "), run("python3 test_calc.py"), Reply.text("done"))
        daemon = await start(start_daemon, llm.env(), init_options={"saveDocuments": True})
        calc = workspace(daemon)
        editor = SavingEditor(daemon, lambda text: "\n".join(line.rstrip(" ") for line in text.split("\n")))
        editor.open(calc, CALC)
        assert await submit(daemon, "fix add and run the tests") == "done"
        edited, ran = results(llm)
        assert calc.read_text() == FIXED and "tests passed" in ran
        assert "unsaved" not in edited + ran, edited + ran
        assert not [e for e in daemon.events if "unsaved" in str(e.get("content"))]
        editor.told()
        [listed] = (await daemon.request("ollie/changes", {}))["files"]
        assert listed["newText"] == FIXED and listed["inEditor"], listed
        if review == "ollie/rewind":
            rewound = await daemon.request(review, {})
            assert rewound["buffers"] == [{"path": "calc.py", "status": "reverted"}], rewound
        else:
            assert (await daemon.request(review, {"path": "calc.py", "hunk": 0}))["inEditor"]
        assert editor.texts[calc.as_uri()] == CALC and calc.read_text() == CALC, review


async def test_an_undo_in_an_open_buffer_waits_for_another_session_s_step_that_may_write_it(start_daemon, llm, tmp_path):
    """The undo's save, as an agent edit's, follows a link the editor finds at the name: no step that may write the
    file runs until it has saved (it was sent at once, while another session's step could swap a link in)."""
    llm.script(Reply.file_edit("notes.txt", "old", "new"), Reply.text("edited"),
               run("touch started; while [ ! -e done ]; do sleep 0.05; done"), Reply.text("done"))
    daemon = await start(start_daemon, llm.env(), init_options={"saveDocuments": True})
    ws = daemon.workspace
    (ws / "notes.txt").write_text("old\n")
    editor = SavingEditor(daemon)
    editor.open(ws / "notes.txt", "old\n")
    assert await submit(daemon, "edit notes.txt") == "edited" and (ws / "notes.txt").read_text() == "new\n"
    other = (await daemon.request("ollie/session/new", {}))["session"]
    stepping = asyncio.ensure_future(daemon.request("ollie/submit", {"session": other, "text": "run"}, timeout=60))
    await eventually(lambda: (ws / "started").exists(), "the other session's step started")
    undoing = asyncio.ensure_future(daemon.request("ollie/review/undo", {"path": "notes.txt", "hunk": 0}, timeout=60))
    await asyncio.wait([undoing], timeout=1.0)  # long enough for an undo that does not wait to be done
    assert not undoing.done() and editor.texts[(ws / "notes.txt").as_uri()] == "new\n" and not editor.saves[1:]
    (ws / "done").touch()  # the step ends
    assert (await undoing)["inEditor"] and (await stepping)["reply"] == "done"
    assert editor.texts[(ws / "notes.txt").as_uri()] == "old\n" and (ws / "notes.txt").read_text() == "old\n"
