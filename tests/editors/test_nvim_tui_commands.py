"""Slash commands typed in the Neovim chat's input (nvim in tmux, README's `setup({})`): what each says shows once,
and one that fails leaves the chat as it was."""

from __future__ import annotations

import threading
from pathlib import Path

from ollie.testing import Reply

from . import screens
from .test_nvim_tui import assert_clean, start_nvim


def chat_text(screen: str) -> str:
    """The chat's side of the screen (right of the code's window), one line per row."""
    return "\n".join(line.split("│")[-1].rstrip() for line in screen.splitlines())


def test_a_failed_command_says_why_once_and_keeps_the_chat(tmp_path: Path, scripted_llm):
    """`/cwd` to a missing directory said its error twice (the `error` event, then the answer), a bare `!` said
    "error: error: ..."; `/rewind abc` redrew the chat from the history as a rewind does, and the notes of the
    commands before it (`/network`) were gone."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("Hello back."))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"}, size=(140, 40)) as tmux:

        def command(line: str, until: str) -> str:
            tmux.type(line, "C-s")
            return chat_text(tmux.wait(lambda s: until in chat_text(s), f"the answer to {line}"))

        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":OllieChat", "Enter")
        tmux.type("hello", "C-s")
        tmux.wait(lambda s: "Hello back." in s and "(end)" in s, "the answer")
        command("/network", "no network use in this session")
        command("/cwd /nonexistent", "usage: /cwd")
        command("!", "needs a shell command")  # the client says "error: ", the text did too
        command("/rewnd", "did you mean /rewind?")  # a typo's answer was the whole /help list
        # Answered after /cwd's: by then each has said all it says.
        after = tmux.keep("1-after", command("/rewind abc", "takes a turn number"))
        assert after.count("no such directory: /nonexistent") == 1, after
        assert after.count("takes a turn number") == 1, after
        assert after.count("needs a shell command") == 1 and "error: error:" not in after, after
        assert after.count("unknown command /rewnd: did you mean /rewind?") == 1 and "commands:" not in after, after
        assert "no network use in this session" in after and "Hello back." in after, after
        assert_clean(tmux.screens)


def test_a_command_typed_while_the_answer_streams_leaves_the_answer_whole_and_apart_from_its_note(tmp_path: Path,
                                                                                                 scripted_llm):
    """`/clear` typed while an answer streams is refused, said above the line still streaming, which goes on whole
    under it (Bug: the note went under the words so far and split a word: "The ans", the note, "wer goes on"; before
    that, the answer's next words came on the very next line, read as the end of the error)."""
    answer = "The answer goes on slowly, word after word, to its end."
    srv = scripted_llm("openai")
    refused_yet = threading.Event()  # its last words wait for the refusal (they came 7 s after the first, to be sure)
    srv.script(Reply(text="Before it, a paragraph.\n\n" + answer, chunk_size=6, delay=0.1, hold=refused_yet))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"}) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":OllieChat", "Enter")
        tmux.type("explain", "C-s")
        tmux.wait(lambda s: "The ans" in s, "the answer streaming")
        tmux.type("/clear", "C-s")
        refused = tmux.wait(lambda s: "cannot clear while a turn is running" in s, "the refusal")
        assert "to its end." not in refused, "the note came before the answer's end"
        refused_yet.set()
        done = tmux.keep("1-done", tmux.wait(lambda s: "to its end." in s and "(end)" in s, "the end"))
        lines = chat_text(done).splitlines()
        start = lines.index("Before it, a paragraph.")
        assert lines[start:start + 7] == ["Before it, a paragraph.", "", "› /clear", "",
                                          "error: /clear failed: cannot clear while a turn is running; interrupt it "
                                          "first", "", answer], done
        assert_clean(tmux.screens)


def test_a_failed_shell_line_shows_failed_and_a_done_step_s_mark_green(tmp_path: Path, scripted_llm):
    """Bugs: a `!cmd` that exited non-zero showed as one that worked (the daemon's answer did not say it failed: now
    its output is red, as a failed step's); a completed step's ✓ was cyan (the title's Function), VS Code's green."""
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": "echo ran"}]})]), Reply.text("It ran."))
    with start_nvim(tmp_path, srv.env(approval="auto"), {"calc.py": "x = 1\n"}, size=(140, 30)) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":OllieChat", "Enter")
        tmux.type("run it", "C-s")
        tmux.wait(lambda s: "It ran." in s and "(end)" in s, "the answer")
        tmux.type("!echo fine", "C-s")
        tmux.wait(lambda s: "\nfine" in chat_text(s), "the first line's output")
        tmux.type("!echo broke; exit 3", "C-s")
        tmux.keep("1-failed", tmux.wait(lambda s: "[exit 3]" in s, "the failed line's output"), (1100, 480))
        ansi = (tmux.captures / "1-failed.ansi").read_text()  # type: ignore[operator]
        # The failed line's output in the error colour (a failed step's, OllieToolFailed); the one that worked not.
        assert screens.fg_at(ansi, "│broke", 1) not in (screens.fg_at(ansi, "│fine", 1), screens.FG), ansi
        assert screens.fg_at(ansi, "✓") != screens.fg_at(ansi, "Run echo ran"), ansi
        assert_clean(tmux.screens)


def test_model_and_agent_names_complete_on_the_command_line(tmp_path: Path, scripted_llm):
    """A newcomer types `:OllieModel <Tab>` as any command's argument: it inserted a literal ^I (the commands had no
    completion); now the backend's models and the agent configs complete, and the completed command switches."""
    srv = scripted_llm("openai", models={"scripted-model": 32_768, "qwen-coder": 32_768})
    with start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"}, size=(80, 24)) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":OllieModel ", "Tab")
        menu = tmux.keep("1-models", tmux.wait(lambda s: "qwen-coder" in s, "the models to complete"))
        assert "scripted-model" in menu and "^I" not in menu, menu
        tmux.keys("C-u", "Escape")
        tmux.keys(":OllieAgent pl", "Tab")
        tmux.keep("2-agent", tmux.wait(lambda s: ":OllieAgent plan" in s, "the agent's name completed"))
        tmux.keys("C-u", "Escape")
        tmux.keys(":OllieModel qw", "Tab")
        tmux.wait(lambda s: ":OllieModel qwen-coder" in s, "the model's name completed")
        tmux.keys("Enter")
        tmux.keep("3-switched", tmux.wait(lambda s: "model: qwen-coder" in s, "the switch said"))
        assert_clean(tmux.screens)


def test_the_ollie_command_completes_context_tags_as_the_chat_s_input_does(tmp_path: Path, scripted_llm):
    """`:Ollie explain #sel<Tab>` typed a literal ^I (the command had no completion); now its `#` tags and `/` commands
    complete as in the chat's input (`#file:` with the workspace's files), and the prompt runs with them."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("It adds one."))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"}, size=(80, 24)) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie /usa", "Tab")  # (the daemon's commands: the first <Tab> is before it listed them)
        tmux.keep("0-command", tmux.wait(lambda s: ":Ollie /usage" in s, "the command completed"))
        tmux.keys("C-u", "Escape")
        tmux.keys(":Ollie explain #sel", "Tab")
        tmux.keep("1-tag", tmux.wait(lambda s: ":Ollie explain #selection" in s, "the tag completed"))
        tmux.keys("C-u", "Escape")
        tmux.keys(":Ollie explain #file:ca", "Tab")
        tmux.keep("2-file", tmux.wait(lambda s: ":Ollie explain #file:calc.py" in s, "the file completed"))
        tmux.keys("Enter")
        done = tmux.keep("3-answer", tmux.wait(lambda s: "It adds one." in s and "(end)" in s, "the answer"))
        assert "📎 calc.py" in done, done
        assert_clean(tmux.screens)


def test_help_s_lines_break_at_the_chat_s_edge_not_at_80_columns(tmp_path: Path, scripted_llm):
    """`/help` in a chat 120 columns wide: the daemon broke each description at 80 columns, the rest of a line under
    it on a row of its own with the window half empty (and a narrower window's breaks ragged); the window breaks it."""
    tmux = start_nvim(tmp_path, scripted_llm("openai").env(), {"calc.py": "x = 1\n"}, size=(240, 70))
    try:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie /help", "Enter")
        rows = chat_text(tmux.keep("1-help", tmux.wait(lambda s: "this list" in s, "/help's answer"),
                                   (2400, 1310))).splitlines()
        at = next(n for n, row in enumerate(rows) if row.lstrip().startswith("/agent [name]"))
        assert rows[at].endswith("(a new conversation; this one is saved to resume)"), "\n".join(rows)
        assert rows[at + 1].lstrip().startswith("/agents "), "\n".join(rows)
        assert_clean(tmux.screens)
    finally:
        tmux.close()


def test_help_s_columns_hold_in_a_chat_narrower_than_its_lines(tmp_path: Path, scripted_llm):
    """`/help` in a chat half a 120-column screen wide: a description too long for the window goes on under its own
    column (Bug: under the commands' column, "/network   every connection this session's" then "  steps made, ...")."""
    with start_nvim(tmp_path, scripted_llm("openai").env(), {"calc.py": "x = 1\n"}, size=(120, 40)) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie /help", "Enter")
        rows = chat_text(tmux.keep("1-help", tmux.wait(lambda s: "this list" in s, "/help's answer"))).splitlines()
        at = next(n for n, row in enumerate(rows) if row.lstrip().startswith("/network "))
        column = rows[at].index("every connection")
        assert rows[at + 1][:column].strip() == "" and rows[at + 1][column:].strip(), "\n".join(rows)
        assert_clean(tmux.screens)
