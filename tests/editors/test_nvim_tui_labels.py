"""What Neovim's bars say of ollie (nvim in tmux, README's `setup({})`): the chat's statusline after a rewind of
every turn and after :OllieFork, and the tab labels of a user with Neovim's default tabline."""

from __future__ import annotations

from pathlib import Path

from ollie.testing import Reply

from .test_nvim_tui import assert_clean, start_nvim


def chat_bar(screen: str) -> str:
    """The transcript's statusline (right of the code's window)."""
    return next((line.split("│")[-1] for line in screen.splitlines() if "│ ollie: " in line), "")


WIDE = (1300, 560)  # a screen's PNG, in pixels


def test_a_rewind_of_every_turn_leaves_a_fresh_session_s_statusline_and_a_fork_shows_its_title(tmp_path: Path,
                                                                                               scripted_llm):
    """After :OllieRewind of every turn the chat's statusline is a fresh session's (Bug: it kept "· Write a haiku
    about the sea" over the empty chat), and the next prompt titles it again; two turns on, :OllieFork 1 shows the
    fork's title and only the turn it took."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("Waves roll in."), Reply.text("Clouds drift by."), Reply.text("Rain falls."))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"}, size=(120, 30)) as tmux:
        keep = tmux.keep
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie Write a haiku about the sea", "Enter")
        titled = keep("1-titled", tmux.wait(lambda s: "(end)" in s and " · Write a haiku" in chat_bar(s)
                                            and "ollie: idle $" in chat_bar(s),
                                            "the turn's end, its prompt titling the session"))
        assert chat_bar(titled).strip().startswith("ollie: idle $"), chat_bar(titled)
        tmux.keys(":OllieRewind 1", "Enter")
        tmux.wait(lambda s: "Type number" in s and "Rewind to before turn 1?" in s, "the confirmation")
        tmux.keys("1", "Enter")
        fresh = keep("2-rewound", tmux.wait(lambda s: "rewound to before turn 1" in s and "Waves roll in." not in s
                                            and "·" not in chat_bar(s)
                                            and "ollie: idle $" in chat_bar(s),
                                            "the chat emptied and its statusline untitled"), WIDE)
        assert chat_bar(fresh).strip().startswith("ollie: idle $"), chat_bar(fresh)
        # The next first prompt titles the session again.
        tmux.keys(":Ollie Describe the sky", "Enter")
        keep("3-new-title", tmux.wait(lambda s: "Clouds drift by." in s and " · Describe the sky" in chat_bar(s),
                                      "the new prompt's title"))
        tmux.keys(":Ollie And the rain", "Enter")
        keep("4-two-turns", tmux.wait(lambda s: "Rain falls." in s and s.count("(end)") == 2, "the second turn"))
        tmux.keys(":OllieFork 1", "Enter")
        forked = keep("5-forked", tmux.wait(lambda s: chat_bar(s).rstrip().endswith("· Describe the sky (fork)")
                                            and "Rain falls." not in s and "Clouds drift by." in s,
                                            "the chat on the fork of turn 1"), WIDE)
        assert "Clouds drift by." in forked and "And the rain" not in forked, forked
        assert chat_bar(forked).rstrip().endswith("· Describe the sky (fork)"), chat_bar(forked)
        assert_clean(tmux.screens)


def test_ollie_s_tabs_are_labelled_by_what_they_show_not_by_a_buffer_name(tmp_path: Path, scripted_llm):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["util.py", "return x",
                                                                                         "return x * 2"]}]})),
               Reply.text("Doubled."))
    with start_nvim(tmp_path, srv.env(approval="auto"), {"util.py": "def double(x):\n    return x\n"},
                    size=(120, 30)) as tmux:
        keep = tmux.keep

        def tabline(screen: str) -> str:
            return screen.splitlines()[0]

        tmux.wait(lambda s: "def double" in s, "nvim to start")
        tmux.keys(":Ollie make double double", "Enter")
        tmux.wait(lambda s: "(end)" in s, "the turn's end", timeout=40)
        tmux.keys(":OllieChanges", "Enter")
        tmux.wait(lambda s: "M  util.py" in s, "the changes list")
        tmux.keys("Enter")
        # Two tabs: the chat's (the changes list in use: a sidebar, the tab named by the file she came from), the
        # diff's (the file in use). Bug: "4 o//changes", then "4 ollie: changes".
        listed = keep("1-changes-in-use", tmux.wait(lambda s: "before turn 1: util.py" in s
                                                    and tabline(s).startswith(" 4 util.py  2 util.py "),
                                                    "the diff tab and the tab labels"))
        assert tabline(listed).startswith(" 4 util.py  2 util.py "), tabline(listed)
        assert "o//" not in tabline(listed)
        # The chat's input in use: its session's title ("4 o//i/1" before).
        tmux.keys("g", "t", ":OllieChat", "Enter")
        chatting = keep("2-chat-in-use", tmux.wait(lambda s: "-- INSERT --" in s and "ollie: make double double"
                                                   in tabline(s), "the chat's label"), WIDE)
        assert tabline(chatting).startswith(" 4 ollie: make double double  2 util.py "), tabline(chatting)
        # The code in use: the file, as Neovim labels it.
        tmux.keys("Escape", ":wincmd t", "Enter")
        coding = keep("3-code-in-use", tmux.wait(lambda s: tabline(s).startswith(" 4 util.py "), "the file's label"))
        assert tabline(coding).rstrip().endswith("X"), "the close button, as Neovim's own tabline has"
        # A step's own diff (<CR> on its title in the transcript): the after side in use. Bug: "2 o//s/a/util.py".
        tmux.keys(":OllieChat", "Enter", "Escape", "C-w", "k", ":call search('Edit util.py')", "Enter", "Enter")
        step = keep("4-step-diff", tmux.wait(lambda s: "after Edit util.py" in s and tabline(s).count(" 2 ") == 2,
                                             "the step's diff tab"))
        assert " 2 ollie: after Edit util.py: util.py " in tabline(step), tabline(step)
        assert_clean(tmux.screens)


def test_two_sessions_of_one_title_made_in_one_minute_are_told_apart_in_ollie_sessions(tmp_path: Path,
                                                                                      scripted_llm):
    # Bug: the picker showed "hello · just now" twice, one line as the other: which was which, none could tell.
    srv = scripted_llm("openai")
    srv.script(Reply.text("Waves roll in."), Reply.text("Clouds drift by."), Reply.text("Rain falls."))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"}, size=(100, 30)) as tmux:

        def labels(screen: str) -> list[str]:
            return [line.strip() for line in screen.splitlines() if ": hello ·" in line]

        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie hello", "Enter")
        tmux.wait(lambda s: "Waves roll in." in s and "(end)" in s, "the first session's answer")
        tmux.keys(":OllieNew", "Enter")
        tmux.wait(lambda s: "Type a prompt" in s and "Waves roll in." not in s, "the new session's empty chat")
        tmux.keys("Escape", ":Ollie hello", "Enter")
        tmux.wait(lambda s: "Clouds drift by." in s and "(end)" in s, "the second session's first answer")
        tmux.keys(":Ollie and again", "Enter")
        tmux.wait(lambda s: "Rain falls." in s and s.count("(end)") == 2, "its second answer")
        tmux.keys(":OllieSessions", "Enter")
        picker = tmux.keep("1-picker", tmux.wait(lambda s: "Type number" in s and len(labels(s)) == 2,
                                                 "both sessions listed"), (1000, 800))
        assert labels(picker) == ["1: hello · just now · 2 turns (current)", "2: hello · just now · 1 turn"], picker
        tmux.keys("Escape")
        assert_clean(tmux.screens)
