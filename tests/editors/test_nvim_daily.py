"""A day's work in the real Neovim TUI (nvim in tmux, README's `setup({})`): what a user meets after the first turn."""

from __future__ import annotations

import subprocess
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


def test_the_chat_shows_its_end_after_the_terminal_narrows(tmp_path: Path, scripted_llm):
    """A long answer, its end on screen in a 160-column terminal; the terminal narrows to 80×24 while the user is in
    the code: the chat, narrower, wraps it onto more rows and still shows its end (Bug: it kept its top line, and the
    answer's last lines and its end were below the window's foot, until the next event)."""
    paragraphs = [f"Paragraph {n} says a little more about the code than fits one narrow line." for n in range(1, 25)]
    srv = scripted_llm("openai")
    srv.script(Reply.text("\n\n".join(paragraphs) + "\n\nTHE LAST LINE."))
    tmux = start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"})
    try:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie tell me about the code", "Enter")
        wide = tmux.keep("1-wide", tmux.wait(lambda s: "(end)" in s, "the answer"))
        assert "THE LAST LINE." in wide, wide
        subprocess.run([*tmux.base, "resize-window", "-t", "t", "-x", "80", "-y", "24"], check=True)
        narrow = tmux.keep("2-narrow", tmux.wait(
            lambda s: len(s.splitlines()) == 24 and 38 <= s.splitlines()[1].find("│") <= 41, "the narrow layout"))
        tmux.keep("3-end", tmux.wait(lambda s: "THE LAST LINE." in s and "(end)" in s, f"the end:\n{narrow}"))
        assert_clean(tmux.screens)
    finally:
        tmux.close()
