"""Neovim's review of an earlier turn in the real TUI (nvim in tmux, README's `setup({})`): its own change, undone."""

from __future__ import annotations

from pathlib import Path

from ollie.testing import Reply

from . import screens
from .test_nvim_tui import send_in_chat, start_nvim

NOTES = "".join(f"line {i}\n" for i in range(1, 13))


def edit(old: str, new: str) -> Reply:
    """A reply that edits notes.txt once."""
    return Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["notes.txt", old, new]}]}))


def two_turns(tmp_path: Path, scripted_llm, second: Reply):
    """Neovim on notes.txt after turn 1 (line 3 edited) and turn 2 (`second`), on turn 1's diff."""
    srv = scripted_llm("openai")
    srv.script(edit("line 3\n", "line three\n"), Reply.text("Edited three."), second, Reply.text("Edited again."))
    tmux = start_nvim(tmp_path, srv.env(), {"notes.txt": NOTES})
    tmux.wait(lambda s: "line 1" in s, "nvim to start")
    tmux.keys(":Ollie edit line 3", "Enter")
    tmux.wait(lambda s: "Edited three." in s and "(end)" in s, "turn 1")
    send_in_chat(tmux, "and again")
    tmux.wait(lambda s: "Edited again." in s, "turn 2")
    tmux.keys("Escape", ":OllieChanges 1", "Enter")
    tmux.wait(lambda s: "turn 1 changed 1 file" in s, "turn 1's changes")
    tmux.keys("Enter")
    return tmux


def test_an_earlier_turns_diff_is_its_own_change_and_its_hunk_undone_keeps_the_later_edit(tmp_path, scripted_llm):
    # Bug: turn 1's diff was against the file now, so turn 2's edit of line 9 showed as turn 1's ("1 hunk" listed,
    # two differences drawn), and `du` there was always refused ("the editor's text changed since this change").
    tmux = two_turns(tmp_path, scripted_llm, edit("line 9\n", "line nine\n"))
    try:
        diff = tmux.keep("1-diff", tmux.wait(lambda s: "after turn 1: notes.txt" in s and "line three" in s,
                                             "turn 1's diff"))
        assert "line three" in diff and "line nine" not in diff, diff  # turn 2's line is not turn 1's change
        assert tmux.captures is not None
        screens.png(tmux.screen(colours=True), tmux.captures / "1-diff.png", (1000, 560))
        tmux.keys("d", "u")
        tmux.keep("2-undone", tmux.wait(lambda s: "undone: hunk 1 of notes.txt" in s, "the undo"))
        assert (tmp_path / "ws" / "notes.txt").read_text() == NOTES.replace("line 9\n", "line nine\n")
        screens.png(tmux.screen(colours=True), tmux.captures / "2-undone.png", (1000, 560))
    finally:
        tmux.close()


def test_an_undo_of_a_hunk_a_later_turn_edited_again_says_so(tmp_path, scripted_llm):
    # She had typed nothing: the refusal says a later turn's edit counts too (she took it for a bug).
    tmux = two_turns(tmp_path, scripted_llm, edit("line three\n", "line THREE\n"))
    try:
        tmux.wait(lambda s: "after turn 1: notes.txt" in s, "turn 1's diff")
        tmux.keys("d", "u")
        said = tmux.keep("1-refused", tmux.wait(lambda s: "by you, or by a later turn" in " ".join(s.split()),
                                                "the refusal"))
        assert "by you, or by a later turn" in " ".join(said.split()), said
        assert "line THREE" in (tmp_path / "ws" / "notes.txt").read_text()
    finally:
        tmux.close()
