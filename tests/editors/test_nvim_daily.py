"""A day's work in the real Neovim TUI (nvim in tmux, README's `setup({})`): what a user meets after the first turn."""

from __future__ import annotations

from pathlib import Path

from ollie.testing import Reply

from .test_nvim_tui import assert_clean, show_code_actions, start_nvim


def chat_of(screen: str) -> str:
    """The chat column of a screen: what is right of the last window border of each line."""
    return "\n".join(line.split("│")[-1].rstrip() for line in screen.splitlines())


def test_a_code_action_after_ollie_new_shows_in_the_chat(tmp_path: Path, scripted_llm):
    """`:OllieNew`, then ollie's Explain on lines of the code: the turn runs in the chat's new session and shows there
    (Bug: it ran in the daemon's default session, which no chat showed any more: the chat stayed empty, and the answer
    came only as one line of the command line, cut short)."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("Hello."), Reply.text("It adds two numbers."))
    tmux = start_nvim(tmp_path, srv.env(), {"calc.py": "def add(a, b):\n    return a + b\n"})
    try:
        tmux.wait(lambda s: "calc.py" in s, "nvim to start")
        tmux.keys(":Ollie hi", "Enter")
        tmux.wait(lambda s: "Hello." in s and "(end)" in s, "the first answer", timeout=60)
        tmux.keys(":OllieNew", "Enter")
        tmux.keep("1-new", tmux.wait(lambda s: "Hello." not in s, "the new session's empty chat"))
        tmux.keys("Escape", "C-w", "h")
        show_code_actions(tmux, ':lua vim.lsp.buf.code_action({ range = { start = { 1, 0 }, ["end"] = { 2, 12 } } })',
                          "Enter")
        tmux.keys("1", "Enter")
        done = tmux.keep("2-explained", tmux.wait(lambda s: "It adds two numbers." in s, "the answer", timeout=60))
        chat = chat_of(done)
        assert "## You\nExplain what this code does" in chat and "📎 calc.py:1-2" in chat, done
        assert "It adds two numbers.\n\n(end)" in chat and "Hello." not in chat, done
        assert_clean(tmux.screens)
    finally:
        tmux.close()
