"""The images a batch's steps read, in the Neovim chat (nvim in tmux, README's `setup({})`): each under its own step,
live and resumed in a new Neovim."""

from __future__ import annotations

import time
from pathlib import Path

from ollie.testing import Reply

from tests.pictures import png

from .test_nvim_tui import Tmux, assert_clean, daemons_of, start_nvim


def chat_lines(screen: str) -> list[str]:
    """The chat's column of the screen (right of the code's window), line by line."""
    return [line.split("│")[-1].rstrip() for line in screen.splitlines()]


def assert_each_under_its_step(screen: str, small: str, big: str) -> None:
    """a.png's image line follows a.png's step (before b.png's), b.png's follows b.png's; none under the call."""
    lines = chat_lines(screen)
    a = next(i for i, line in enumerate(lines) if line.endswith("Read a.png"))
    b = next(i for i, line in enumerate(lines) if line.endswith("Read pics/b.png"))
    assert lines[a + 1:b] == ["      → a.png", f"      {small}"], screen
    assert lines[b + 1:b + 3] == ["      → pics/b.png", f"      {big}"], screen
    assert sum(small in line or big in line for line in lines) == 2, screen


def test_each_image_a_batch_read_shows_under_its_step_live_and_resumed(tmp_path: Path, scripted_llm):
    # Bug: both showed under the call, after its last step, ignoring the `step` each names (the VS Code chat too).
    srv = scripted_llm("anthropic")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_read", "args": ["a.png"]},
                                                         {"tool": "file_read", "args": ["pics/b.png"]}]})),
               Reply.text("Both are red."))
    files = {"notes.txt": "notes\n"}
    tmux = start_nvim(tmp_path, srv.env(), files)
    ws = tmp_path / "ws"
    (ws / "a.png").write_bytes(png(2, 2))
    (ws / "pics").mkdir()
    (ws / "pics" / "b.png").write_bytes(png(2, 2) + bytes(6000))  # its own size: which line is whose shows
    small, big = "[image: image/png, 1 KB]", "[image: image/png, 6 KB]"
    try:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie look at both pictures", "Enter")
        live = tmux.keep("1-live", tmux.wait(lambda s: "Both are red." in s, "the answer"))
        assert_each_under_its_step(live, small, big)
        tmux.keys(":qa!", "Enter")
        tmux.wait_exit(":qa!")
    finally:
        tmux.close()
    deadline = time.monotonic() + 30
    while daemons_of(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    tmux = start_nvim(tmp_path, srv.env(), files)
    try:
        resumed = resume(tmux, "look at both pictures")
        assert_each_under_its_step(resumed, small, big)
        assert_clean(tmux.screens)
    finally:
        tmux.close()


def resume(tmux: Tmux, title: str) -> str:
    """Pick the session titled `title` in :OllieSessions; the screen once its steps show."""
    tmux.wait(lambda s: "notes" in s, "nvim to start again")
    tmux.keys(":OllieSessions", "Enter")
    picker = tmux.wait(lambda s: "Type number" in s and title in s, "the sessions to pick from")
    number = next(line.split(".")[0].strip() for line in picker.splitlines() if title in line)
    tmux.keys(number, "Enter")
    return tmux.keep("2-resumed", tmux.wait(lambda s: "Both are red." in s and "Read pics/b.png" in s, "the session"))
