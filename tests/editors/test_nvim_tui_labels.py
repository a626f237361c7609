"""What Neovim's bars say of ollie (nvim in tmux, README's `setup({})`): the chat's statusline after a rewind of
every turn, and the tab labels of a user with Neovim's default tabline."""

from __future__ import annotations

from pathlib import Path

from ollie.testing import Reply

from . import screens
from .test_nvim_tui import Tmux, assert_clean, start_nvim


def chat_bar(screen: str) -> str:
    """The transcript's statusline (right of the code's window)."""
    return next((line.split("│")[-1] for line in screen.splitlines() if "│ ollie: " in line), "")


def photo(tmux: Tmux, name: str) -> None:
    """Keep the screen as a PNG too, to look at."""
    assert tmux.captures is not None
    screens.png(tmux.screen(colours=True), tmux.captures / f"{name}.png", (1300, 560))


def test_a_rewind_of_every_turn_leaves_the_statusline_of_a_fresh_session(tmp_path: Path, scripted_llm):
    srv = scripted_llm("openai")
    srv.script(Reply.text("Waves roll in."), Reply.text("Clouds drift by."))
    tmux = start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"}, size=(120, 30))
    keep = tmux.keep
    try:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie Write a haiku about the sea", "Enter")
        titled = keep("1-titled", tmux.wait(lambda s: "(end)" in s and " · Write a haiku" in chat_bar(s),
                                            "the turn's end, its prompt titling the session"))
        assert chat_bar(titled).strip().startswith("ollie: idle $"), chat_bar(titled)
        tmux.keys(":OllieRewind 1", "Enter")
        tmux.wait(lambda s: "Type number" in s and "Rewind to before turn 1?" in s, "the confirmation")
        tmux.keys("1", "Enter")
        # Bug: the statusline kept "· Write a haiku about the sea" over the empty chat.
        fresh = keep("2-rewound", tmux.wait(lambda s: "Waves roll in." not in s and "·" not in chat_bar(s),
                                            "the chat emptied and its statusline untitled"))
        assert chat_bar(fresh).strip().startswith("ollie: idle $"), chat_bar(fresh)
        photo(tmux, "2-rewound")
        # The next first prompt titles the session again.
        tmux.keys(":Ollie Describe the sky", "Enter")
        keep("3-new-title", tmux.wait(lambda s: "Clouds drift by." in s and " · Describe the sky" in chat_bar(s),
                                      "the new prompt's title"))
        assert_clean(tmux.screens)
    finally:
        tmux.close()
