"""Neovim's review of an earlier turn in the real TUI (nvim in tmux, README's `setup({})`): what a refused undo says."""

from __future__ import annotations

from pathlib import Path

from ollie.testing import Reply

from .test_nvim_tui import send_in_chat, start_nvim


def edit(old: str, new: str) -> Reply:
    """A reply that edits notes.txt once."""
    return Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["notes.txt", old, new]}]}))


def test_an_undo_in_a_turn_a_later_one_changed_the_file_after_says_so(tmp_path: Path, scripted_llm):
    # Bug: `du` on turn 1's hunk, the file edited again by turn 2, was refused with "the editor's text changed since
    # this change": she had typed nothing, and took it for a bug (the diff of turn 1 shows turn 2's edit too).
    srv = scripted_llm("openai")
    srv.script(edit("line 3\n", "line three\n"), Reply.text("Edited three."), edit("line 9\n", "line nine\n"),
               Reply.text("Edited nine."))
    tmux = start_nvim(tmp_path, srv.env(), {"notes.txt": "".join(f"line {i}\n" for i in range(1, 13))})
    try:
        tmux.wait(lambda s: "line 1" in s, "nvim to start")
        tmux.keys(":Ollie edit line 3", "Enter")
        tmux.wait(lambda s: "Edited three." in s and "(end)" in s, "turn 1")
        send_in_chat(tmux, "now line 9")
        tmux.wait(lambda s: "Edited nine." in s and "line nine" in s, "turn 2")
        tmux.keys("Escape", ":OllieChanges 1", "Enter")
        tmux.wait(lambda s: "turn 1 changed 1 file" in s, "turn 1's changes")
        tmux.keys("Enter")
        tmux.wait(lambda s: "before turn 1: notes.txt" in s, "its diff")
        tmux.keys("d", "u")
        said = tmux.keep("1-refused", tmux.wait(lambda s: "undo refused" in s, "the refusal"))
        assert "by you, or by a later turn" in " ".join(said.split()), said
        assert "line three" in (tmp_path / "ws" / "notes.txt").read_text()
    finally:
        tmux.close()
