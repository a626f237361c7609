"""A day's work in the real Neovim TUI (nvim in tmux, README's `setup({})`): what a user meets after the first turn."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

from ollie.testing import Reply
from tests.procs import wait_until

from .test_nvim_tui import _nvim, assert_clean, daemons_gone, quit_nvim, resume, show_code_actions, start_nvim


def chat_of(screen: str) -> str:
    """The chat column of a screen: what is right of the last window border of each line."""
    return "\n".join(line.split("│")[-1].rstrip() for line in screen.splitlines())


@contextmanager
def a_story_streaming(tmp_path: Path, srv, then: str):
    """Neovim on calc.py whose first turn streams "A long story." and is held there: (the release, the tmux), both
    let go on the way out."""
    story = threading.Event()
    srv.script(Reply(text="A long story.", hold=story), Reply.text(then))
    tmux = start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"})
    try:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie tell a story", "Enter")
        tmux.wait(lambda s: "A long story." in s, "the story")
        yield story, tmux
    finally:
        story.set()
        tmux.close()


def test_a_code_action_after_ollie_new_shows_in_the_chat(tmp_path: Path, scripted_llm):
    """`:OllieNew`, then ollie's Explain on lines of the code: the turn runs in the chat's new session and shows there
    (Bug: it ran in the daemon's default session, which no chat showed any more: the chat stayed empty, and the answer
    came only as one line of the command line, cut short)."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("Hello."), Reply.text("It adds two numbers."))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "def add(a, b):\n    return a + b\n"}) as tmux:
        tmux.wait(lambda s: "calc.py" in s, "nvim to start")
        tmux.keys(":Ollie hi", "Enter")
        tmux.wait(lambda s: "Hello." in s and "(end)" in s, "the first answer", timeout=60)
        tmux.keys(":OllieNew", "Enter")
        tmux.keep("1-new", tmux.wait(lambda s: "Type a prompt" in s and "Hello." not in s, "the new session's empty chat"))
        tmux.keys("Escape", "C-w", "h")
        show_code_actions(tmux, ':lua vim.lsp.buf.code_action({ range = { start = { 1, 0 }, ["end"] = { 2, 12 } } })',
                          "Enter")
        tmux.keys("1", "Enter")
        done = tmux.keep("2-explained", tmux.wait(lambda s: "It adds two numbers.\n\n(end)" in chat_of(s), "the answer",
                                                  timeout=60))
        chat = chat_of(done)
        assert "## You\nExplain what this code does" in chat and "📎 calc.py:1-2" in chat, done
        assert "It adds two numbers.\n\n(end)" in chat and "Hello." not in chat, done
        assert_clean(tmux.screens)


@pytest.mark.parametrize("streaming", [False, True], ids=["after-its-end", "while-it-streams"])
def test_a_prompt_typed_right_after_ollie_new_runs_and_shows_in_the_new_session(tmp_path: Path, scripted_llm,
                                                                                streaming: bool):
    """`:OllieNew` and, before the new chat has drawn, `:Ollie hello` (typed at once), after the first turn's end or
    while it streams: the prompt runs in the new session and its chat shows it and its answer, and none of the first
    turn's words (Bug: it ran in the session the chat left, and the chat then showed the new session empty)."""
    srv = scripted_llm("openai")
    first = Reply(text="First answer. " + "It goes on. " * 150, delay=0.05, chunk_size=6) if streaming else \
        Reply.text("First answer.")
    srv.script(first, Reply.text("Hello back."))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"}) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie first question", "Enter")
        tmux.wait(lambda s: "It goes on." in s if streaming else "First answer." in s and "(end)" in s,
                  "the first answer")
        tmux.keys(":OllieNew", "Enter", ":Ollie hello", "Enter")
        done = tmux.keep("1-hello", tmux.wait(lambda s: "Hello back.\n\n(end)" in chat_of(s), "the answer"),
                         (1000, 800))
        chat = chat_of(done)
        assert "## You\nhello" in chat and "first question" not in chat and "First answer." not in chat, done
        assert "It goes on." not in chat, done
        assert_clean(tmux.screens)
    asked = [r.body["messages"] for r in srv.chat_requests]
    assert len(asked) == 2 and "first question" not in json.dumps(asked[1]), asked


def test_the_chat_shows_its_end_after_the_terminal_narrows(tmp_path: Path, scripted_llm):
    """A long answer, its end on screen in a 160-column terminal; the terminal narrows to 80×24 while the user is in
    the code: the chat, narrower, wraps it onto more rows and still shows its end (Bug: it kept its top line, and the
    answer's last lines and its end were below the window's foot, until the next event)."""
    paragraphs = [f"Paragraph {n} says a little more about the code than fits one narrow line." for n in range(1, 25)]
    srv = scripted_llm("openai")
    srv.script(Reply.text("\n\n".join(paragraphs) + "\n\nTHE LAST LINE."))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"}) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie tell me about the code", "Enter")
        wide = tmux.keep("1-wide", tmux.wait(lambda s: "(end)" in s and "THE LAST LINE." in s, "the answer"))
        assert "THE LAST LINE." in wide, wide
        subprocess.run([*tmux.base, "resize-window", "-t", "t", "-x", "80", "-y", "24"], check=True)
        narrow = tmux.keep("2-narrow", tmux.wait(
            lambda s: len(s.splitlines()) == 24 and 38 <= s.splitlines()[1].find("│") <= 41, "the narrow layout"))
        tmux.keep("3-end", tmux.wait(lambda s: "THE LAST LINE." in s and "(end)" in s, f"the end:\n{narrow}"))
        assert_clean(tmux.screens)


def test_undo_of_the_agent_s_edit_undoes_its_line_and_shows_it(tmp_path: Path, scripted_llm):
    """The agent changes one line near the top of a long file the user reads at its end; `u` there undoes that one
    line and shows it, as Vim's undo of any change does (Bug: the edit replaced every line of the buffer: `u` said
    "451 changes" and left the cursor at the end, the undone line out of sight)."""
    long = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(150))
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["long.py", "return x + 3\n", "return x + 3 + 0\n"]}]})), Reply.text("Edited."))
    with start_nvim(tmp_path, srv.env(approval="auto"), {"long.py": long}) as tmux:
        tmux.wait(lambda s: "def f0(x):" in s, "nvim to start")
        tmux.keys("G")
        tmux.wait(lambda s: "def f149(x):" in s, "the file's end")
        tmux.keys(":Ollie edit f3", "Enter")
        tmux.keep("1-edited", tmux.wait(lambda s: "Edited." in s and "(end)" in s, "the turn", timeout=60))
        assert "return x + 3 + 0" in (tmp_path / "ws" / "long.py").read_text()
        tmux.keys("u")
        # The undo's whole frame: its message came with the window's new lines while the status line still showed
        # 450 in one capture of a loaded machine (tmux between two writes of one redraw); `[+]` is its status line's.
        undone = tmux.keep("2-undone", tmux.wait(
            lambda s: "before #1" in s and re.search(r"^long\.py \[\+\] +11,1 ", s, re.M) is not None
            and "    return x + 3 " in s, "the undo"))
        assert re.search(r"^[12] changes?; before #1", undone, re.M), undone
        assert re.search(r"^long\.py \[\+\] +11,1 ", undone, re.M), "the cursor is on the undone line"
        assert "    return x + 3 " in undone and "+ 3 + 0" not in undone, "the undone line shows"
        assert_clean(tmux.screens)


def test_the_agent_s_edit_landing_while_she_types_in_the_file_is_an_undo_step_of_its_own(tmp_path: Path,
                                                                                          scripted_llm):
    """She types a comment into calc.py while the turn runs; the agent's edit of add lands mid-typing and she types
    on: `u` takes back what she typed after it, the next `u` the agent's edit alone, her first words staying (Bug:
    insert mode's one undo block took the edit in, and the first `u` undid the edit and all she had typed)."""
    srv = scripted_llm("openai")
    typing = threading.Event()
    edit = {"calls": [{"tool": "file_edit", "args": ["calc.py", "a - b", "a + b"]}]}
    srv.script(Reply(text="On it.", tool_calls=[("call_tool", edit)], hold=typing), Reply.text("Fixed."))
    with start_nvim(tmp_path, srv.env(approval="auto"), {"calc.py": "def add(a, b):\n    return a - b\n"}) as tmux:

        def code(screen: str) -> list[str]:
            return [line.split("│")[0].rstrip() for line in screen.splitlines()[:4]]

        tmux.wait(lambda s: "def add(a, b):" in s, "nvim to start")
        tmux.keys(":Ollie fix add", "Enter")
        tmux.wait(lambda s: "On it." in s, "the turn to start")
        tmux.keys("G", "o")
        tmux.keys("# typed before", literal=True)
        tmux.wait(lambda s: "# typed before" in s, "her typing")
        typing.set()
        tmux.keep("1-landed", tmux.wait(lambda s: "return a + b" in s and "-- INSERT --" in s, "the edit mid-typing"))
        tmux.type(" and after", "Escape")
        tmux.wait(lambda s: "Fixed." in s and "# typed before and after" in s, "the turn's end")
        tmux.keys("u")
        first = tmux.keep("2-undo", tmux.wait(lambda s: code(s)[2] == "# typed before", "the first undo"))
        assert code(first)[:3] == ["def add(a, b):", "    return a + b", "# typed before"], first
        tmux.keys("u")
        second = tmux.keep("3-undo", tmux.wait(lambda s: "return a - b" in s, "the second undo"))
        assert code(second)[:3] == ["def add(a, b):", "    return a - b", "# typed before"], second
        assert_clean(tmux.screens)


def test_the_sessions_picker_says_which_session_another_neovim_on_the_project_runs(tmp_path: Path, scripted_llm):
    """Two Neovims on one project: the second's `:OllieSessions` labels the session the first runs `live on <host>
    (pid N)`, as a teammate's is (Bug: it listed it as any saved one; picked, it was refused by a line cut short)."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("Answer in the first."))
    first = start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"})
    second = None
    try:
        first.wait(lambda s: "x = 1" in s, "the first nvim to start")
        first.keys(":Ollie from the first window", "Enter")
        first.wait(lambda s: "Answer in the first." in s and "(end)" in s, "the first's turn")
        second = start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"}, window="-second")
        second.wait(lambda s: "x = 1" in s, "the second nvim to start")
        second.keys(":OllieSessions", "Enter")
        listed = second.keep("1-sessions", second.wait(lambda s: "Type number" in s and "from the first window" in s,
                                                       "the sessions picker"))
        label = next(line for line in listed.splitlines() if "from the first window" in line)
        assert re.search(r"just now · 1 turn · live on \S+ \(pid \d+\)$", label.rstrip()), label
        second.keys("Escape")
        assert_clean(second.screens)
    finally:
        first.close()
        if second:
            second.close()


def test_typing_into_the_file_the_agent_s_step_just_edited_is_no_change_behind_the_buffer(tmp_path: Path,
                                                                                          scripted_llm):
    """The agent's edit of calc.py lands in its buffer and is saved; she types into it while the step runs on: the step
    changed nothing under her buffer, so nobody is warned and the model is told nothing of it (Bug: her typing made the
    buffer differ from the step's change on disk, taken for a change the buffer did not show: a warning to merge and
    save, and the agent's next edits of calc.py refused until she did)."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "wait_go").write_text("#!/bin/bash\n# description: Wait until the test says go.\n"
                                   "while [ ! -e .git/go ]; do sleep 0.05; done\necho went\n")
    srv = scripted_llm("openai")
    srv.script(Reply(text="On it.", tool_calls=[("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["calc.py", "a - b", "a + b"]}, {"tool": "wait_go", "args": []}]})]),
        Reply.text("Fixed."))
    ws = tmp_path / "ws"
    tmux = start_nvim(tmp_path, {**srv.env(approval="auto"), "OLLIE_TOOLS_PATH": str(tools)},
                      {"calc.py": "def add(a, b):\n    return a - b\n"})
    try:
        tmux.wait(lambda s: "def add(a, b):" in s, "nvim to start")
        tmux.keys(":Ollie fix add", "Enter")
        tmux.wait(lambda s: "return a + b" in s and "calc.py [+]" not in s, "the edit, saved")
        tmux.keys("G", "o")
        tmux.type("# typed while the step runs", "Escape")
        tmux.wait(lambda s: "calc.py [+]" in s, "her unsaved line")
        (ws / ".git" / "go").write_text("")
        done = tmux.keep("1-done", tmux.wait(lambda s: "Fixed." in s and "(end)" in s, "the turn's end"))
        assert "✎ 1 file changed" in done and "changed the file on disk" not in chat_of(done).replace("\n", " "), done
        assert "[editor]" not in json.dumps(srv.chat_requests[1].body["messages"][-1]), "the model was told of it"
        assert (ws / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
        assert_clean(tmux.screens)
    finally:
        (ws / ".git" / "go").write_text("")
        tmux.close()


def test_the_chat_goes_on_showing_the_turn_while_she_types_a_command_line(tmp_path: Path, scripted_llm):
    """She starts typing `:e ...` while the answer streams: the chat shows the answer's end and its steps as they come
    (Bug: Neovim redraws no window in command-line mode, so the chat stood still until the command was done)."""
    srv = scripted_llm("openai")
    ending = threading.Event()
    step = ("execute_code", {"steps": [{"code": "echo listed", "language": "bash"}]})
    srv.script(Reply(text="First words.", tool_calls=[step], hold=ending), Reply.text("Last words."))
    with start_nvim(tmp_path, srv.env(approval="auto"), {"calc.py": "x = 1\n"}) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie list and tell", "Enter")
        tmux.wait(lambda s: "First words." in s, "the answer's first words")
        tmux.keys(":e cal", literal=True)
        tmux.wait(lambda s: s.rstrip().endswith(":e cal"), "the command line")
        ending.set()
        typing = tmux.keep("1-typing", tmux.wait(lambda s: "Last words." in s and "(end)" in s
                                                 and "✓ Run echo listed" in s and s.rstrip().endswith(":e cal"),
                                                 "the turn's end, its step and her command line"))
        assert "✓ Run echo listed" in typing and typing.rstrip().endswith(":e cal"), typing
        tmux.type("c.py", "Enter")
        tmux.wait(lambda s: re.search(r"^calc\.py +1,1 ", s, re.M) is not None, "the command done")
        assert_clean(tmux.screens)


def test_a_question_to_run_outside_the_sandbox_waits_until_she_stops_typing(tmp_path: Path, scripted_llm):
    """The model asks to run a step outside the sandbox while she types `1` and Enter into calc.py: her keys stay hers
    and the step does not run; the question shows in the float, and its buttons once she leaves insert mode (Bug:
    Neovim's own window/showMessageRequest handler put up its inputlist at once, and the `1<CR>` she was typing
    answered "Allow once": the step ran outside the sandbox, the question never seen). Rejected with feedback, the
    step says "rejected: <her feedback>" as any step does (Bug: its raw result, `[step 1 bash (elevated)] error: ...`)."""
    srv = scripted_llm("openai")
    srv.script(Reply(text="Needs root.", tool_calls=[("execute_code", {"steps": [
        {"code": "echo ran > proof\necho again >> proof", "elevated": True}]})]), Reply.text("Not run, then."))
    ws = tmp_path / "ws"
    with start_nvim(tmp_path, srv.env(approval="auto"), {"calc.py": "x = 0\n"}) as tmux:
        tmux.wait(lambda s: "x = 0" in s, "nvim to start")
        tmux.keys("G", "o", "C-o", ":Ollie run it outside", "Enter")
        # The float, then its hint drawn after it (under load the screen was read between the two).
        asked = tmux.keep("1-asked", tmux.wait(lambda s: "outside the sandbox:" in s and "once you stop typing" in s
                                               and "-- INSERT --" in s and "    echo again >> proof" in s,
                                               "the question, its float whole"))
        assert "once you stop typing: <Esc>" in asked and "-- INSERT --" in asked, asked
        # The ollie/permission float, the program's lines each on its own (a notification ran them together).
        shown = [line.rstrip(" │").rpartition("│")[2] for line in asked.splitlines()]
        assert "    echo ran > proof" in shown and "    echo again >> proof" in shown, asked
        tmux.keys("1", "Enter", "2")
        typed = tmux.keep("2-typed", tmux.wait(lambda s: [line[:2] for line in s.splitlines()[1:3]] == ["1 ", "2 "],
                                                   "her typing"))
        assert not (ws / "proof").exists() and "Allow once" not in typed, typed
        tmux.keys("Escape")
        picker = tmux.keep("3-picker", tmux.wait(lambda s: "1: Allow once" in s and "3: Reject with feedback" in s,
                                                 "the buttons"))
        # The step's question, as under `ask`: Allow once or Reject (with feedback), never "always".
        assert "Allow always" not in picker and "3: Reject with feedback" in picker, picker
        tmux.keys("3", "Enter")
        tmux.wait(lambda s: "Tell the model why" in s, "the feedback's prompt")
        tmux.type("use the venv instead", "Enter")
        done = tmux.keep("4-denied", tmux.wait(lambda s: "Not run, then." in s and "(end)" in s, "the turn's end"))
        assert "✗ rejected: use the venv instead" in chat_of(done) and not (ws / "proof").exists(), done
        assert "(elevated)] error" not in done and "the user did not allow" not in done, done
        assert_clean(tmux.screens)


def asked_about(tmp_path: Path, srv, prompt: str, shown: str):
    """Neovim under approval `ask` on calc.py, `:Ollie <prompt>` sent: the TUI and its screen once the question
    shows `shown` (kept as 1-asked)."""
    tmux = start_nvim(tmp_path, srv.env(approval="ask"), {"calc.py": "x = 0\n"})
    try:
        tmux.wait(lambda s: "x = 0" in s, "nvim to start")
        tmux.keys(f":Ollie {prompt}", "Enter")
        return tmux, tmux.keep("1-asked", tmux.wait(lambda s: shown in s, "the question"))
    except BaseException:
        tmux.close()
        raise


def test_a_switch_to_an_unsandboxed_agent_is_the_steps_question_float_and_a_no_keeps_the_agent(tmp_path: Path,
                                                                                                  scripted_llm):
    """`/agent yolo` asks in the question float, as a step's question (it was a window/showMessageRequest of its own,
    worded as an elevation): what it means, Allow once or Reject alone; rejected, the agent stays."""
    tmux, asked = asked_about(tmp_path, scripted_llm("openai"), "/agent yolo", "2: Reject")
    with tmux:
        assert "switch to agent yolo: it runs WITHOUT a sandbox" in asked and "everything agent yolo runs" in asked, asked
        assert "1: Allow once" in asked and "Allow always" not in asked and "feedback" not in asked, asked
        tmux.keys("2", "Enter")
        kept = tmux.keep("2-kept", tmux.wait(lambda s: "agent not switched: yolo runs without a sandbox" in s,
                                             "the refusal"))
        # The chat says it (Bug: a redraw of the conversation, which the refused switch had not cleared, wiped the
        # line): the command's answer, as the plugin asks the daemon for no "rejected: ..." line (showsAnswers).
        said = " ".join(chat_of(kept).split())
        assert "agent not switched: yolo runs without a sandbox and was not allowed" in said, kept
        assert_clean(tmux.screens)


def test_under_ask_a_step_to_run_outside_the_sandbox_is_one_question_showing_its_code(tmp_path: Path, scripted_llm):
    """Approval `ask`, the model runs a step outside the sandbox: one question, its float naming exactly what runs
    outside, its buttons without "Allow always"; allowed, it runs (Bug: two questions, the step's approval and then
    the elevation, the second to be answered again for the same code)."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": "echo ran > proof", "elevated": True}]})),
               Reply.text("Ran it."))
    ws = tmp_path / "ws"
    tmux, asked = asked_about(tmp_path, srv, "run it outside", "3: Reject with feedback")
    with tmux:
        assert "runs outside the sandbox:" in asked and "echo ran > proof" in asked, asked
        assert "1: Allow once" in asked and "2: Reject" in asked and "Allow always" not in asked, asked
        tmux.keys("1", "Enter")
        done = tmux.keep("2-ran", tmux.wait(lambda s: "Ran it." in s and "(end)" in s, "the turn's end"))
        assert (ws / "proof").read_text() == "ran\n" and "Deny" not in done, done
        assert_clean(tmux.screens)


def test_a_programs_question_shows_every_line_of_its_code_in_the_float(tmp_path: Path, scripted_llm):
    """Approval `ask`, a two-line program: the float shows both lines under "code:", not the title's first line
    alone (Bug: she was asked to approve `rm -rf ~/stuff` she could not see); rejected, nothing runs."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": "echo one > proof\nrm -rf ~/stuff"}]})),
               Reply.text("Left it."))
    ws = tmp_path / "ws"
    tmux, asked = asked_about(tmp_path, srv, "tidy up", "3: Reject with feedback")
    with tmux:
        assert "code:" in asked and "echo one > proof" in asked and "rm -rf ~/stuff" in asked, asked
        # No "Allow always": no rule would cover a program of two lines (it would be asked about again at once).
        assert "Allow always" not in asked, asked
        tmux.keys("2", "Enter")  # Reject
        tmux.keep("2-rejected", tmux.wait(lambda s: "Left it." in s and "(end)" in s, "the turn's end"))
        assert not (ws / "proof").exists()
        assert_clean(tmux.screens)


def test_the_agent_s_edit_of_a_latin1_file_keeps_the_bytes_it_does_not_edit(tmp_path: Path, scripted_llm):
    """Two Latin-1 files, one open in a buffer: the agent bumps a line of each; every "é" on disk stays the byte it was
    (Bug: the file not open was read with U+FFFD for the byte and written back so, the lines it did not edit
    corrupted)."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["open.py", "value = 1", "value = 2"]},
        {"tool": "file_edit", "args": ["closed.py", "value = 1", "value = 2"]}]})), Reply.text("Bumped both."))
    ws = tmp_path / "ws"
    with start_nvim(tmp_path, srv.env(approval="auto"), {"open.py": "", "closed.py": ""}) as tmux:
        for name in ("open.py", "closed.py"):
            (ws / name).write_bytes(b'name = "caf\xe9"\nvalue = 1\n')
        tmux.keys(":e!", "Enter")
        tmux.wait(lambda s: 'name = "café"' in s, "the Latin-1 file")
        tmux.keys(":Ollie bump both", "Enter")
        tmux.keep("1-bumped", tmux.wait(lambda s: "Bumped both." in s and "(end)" in s, "the turn"))
        for name in ("open.py", "closed.py"):
            assert (ws / name).read_bytes() == b'name = "caf\xe9"\nvalue = 2\n', name
        assert_clean(tmux.screens)


@pytest.mark.parametrize("at_once", [False, True], ids=["queued-then-new", "new-while-queueing"])
def test_a_prompt_queued_before_ollie_new_is_back_in_the_new_chat_s_input_not_run_out_of_sight(
        tmp_path: Path, scripted_llm, at_once: bool):
    """A prompt queued behind a running turn, then `:OllieNew` (right after it was shown queued, or while it was still
    being queued): the new chat says it was not sent and puts it back in its input; sent from there, it runs in the
    new session (Bug: it stayed queued in the old session and ran there once its turn ended, unseen, after showing in
    the new chat as queued and vanishing). It is back as typed, its `#file:` tag with it (it came back flattened to
    the file's name, and went without the file)."""
    srv = scripted_llm("openai")
    with a_story_streaming(tmp_path, srv, "The follow-up's answer.") as (story, tmux):
        if at_once:
            tmux.keys(":OllieQueue and then this #file:calc.py", "Enter", ":OllieNew", "Enter")
        else:
            tmux.keys(":OllieQueue and then this #file:calc.py", "Enter")
            tmux.wait(lambda s: "⏳ queued: and then this calc.py" in s, "the queued prompt")
            tmux.keys(":OllieNew", "Enter")
        back = tmux.keep("1-back", tmux.wait(lambda s: "A long story." not in s and "back in the input" in s,
                                             "the prompt put back"))
        assert "⏳ queued" not in back and "and then this #file:calc.py" in back, back
        story.set()
        tmux.keys(":OllieChat", "Enter", "Escape", "Enter")  # the input holds it: sent as typed
        done = tmux.keep("2-sent", tmux.wait(lambda s: "The follow-up's answer." in s and "(end)" in s, "its answer"))
        assert "## You\nand then this calc.py" in chat_of(done) and "A long story." not in done, done
        assert_clean(tmux.screens)
    asked = [r.body["messages"] for r in srv.chat_requests]
    assert len(asked) == 2 and "A long story." not in json.dumps(asked[1]) and "x = 1" in json.dumps(asked[1]), asked


def test_ollie_restart_in_a_second_neovim_keeps_the_first_one_s_saved_queued_prompt(tmp_path: Path, scripted_llm):
    """The first Neovim has a prompt queued behind its turn (kept in case it quits); `:OllieRestart` in a second one
    on the project forgets only its own daemon's (Bug: it emptied the file every Neovim of the user shares, so the
    first's prompt was gone had it quit or crashed then)."""
    saved = Path(os.environ["XDG_STATE_HOME"]) / "nvim" / "ollie" / "queued.json"
    srv = scripted_llm("openai", check=False)
    story = threading.Event()
    srv.script(Reply(text="A long story.", hold=story), Reply.text("The queued one's answer."))
    first = start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"})
    second = None
    try:
        first.wait(lambda s: "x = 1" in s, "the first nvim to start")
        first.keys(":Ollie tell a story", "Enter")
        first.wait(lambda s: "A long story." in s, "the story")
        first.keys(":OllieQueue and then this", "Enter")
        first.wait(lambda s: "⏳ queued: and then this" in s, "the queued prompt")
        assert "and then this" in saved.read_text()
        second = start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"}, window="-second")
        second.wait(lambda s: "x = 1" in s, "the second nvim to start")
        second.keys(":OllieRestart", "Enter")
        second.keep("1-restarted", second.wait(lambda s: "the daemon restarted" in s, "the restart"))
        assert "and then this" in saved.read_text(), "the first Neovim's queued prompt is kept"
        story.set()
        first.wait(lambda s: "The queued one's answer." in s, "the queued turn")
    finally:
        story.set()
        first.close()
        if second:
            second.close()


def test_a_prompt_queued_when_ollie_restart_ends_its_daemon_is_back_in_the_input(tmp_path: Path, scripted_llm):
    """A prompt queued behind a running turn, then `:OllieRestart` while typing the next: the fresh daemon has no
    queue, so the queued prompt goes back in the input after what was being typed, said; sent from there, it runs
    (Bug: it vanished without a word, neither queued, shown nor in the input)."""
    srv = scripted_llm("openai", check=False)
    with a_story_streaming(tmp_path, srv, "The queued one's answer.") as (story, tmux):
        tmux.keys(":OllieQueue and then this", "Enter")
        tmux.wait(lambda s: "⏳ queued: and then this" in s, "the queued prompt")
        tmux.keys(":OllieChat", "Enter")
        tmux.keys("still typing", literal=True)
        # Kept as the session's draft as it is typed (a kill -9 loses nothing): that is this Neovim's own, and the
        # restart took it as an earlier editor's ("still typing still typing", "not sent before the editor quit").
        saved = Path(os.environ["XDG_STATE_HOME"]) / "nvim" / "ollie" / "queued.json"
        wait_until(lambda: saved.exists() and "still typing" in saved.read_text(), "the draft saved")
        tmux.keys("Escape", ":OllieRestart", "Enter")
        back = tmux.keep("1-back", tmux.wait(lambda s: "back in the input" in s and "(interrupted)" in s,
                                             "the queued prompt put back"))
        assert "⏳ queued" not in back and "still typing and then this" in chat_of(back), back
        assert "before the editor quit" not in back, back
        tmux.keys(":OllieChat", "Enter", "Escape", "Enter")  # the input holds both: sent as they stand
        done = tmux.keep("2-sent", tmux.wait(lambda s: "The queued one's answer." in s and "(end)" in s, "its answer"))
        assert "## You\nstill typing and then this" in chat_of(done), done
        assert_clean(tmux.screens)
    assert srv.chat_requests[-1].body["messages"][-1]["content"] == "still typing and then this"


def test_a_binary_file_named_as_context_goes_as_a_note_not_as_its_bytes(tmp_path: Path, scripted_llm):
    """`#file:` of a binary file: the model is told it is binary, as file_read tells it (Bug: its bytes went as text,
    control characters and U+FFFD, a NUL among them, which some APIs refuse)."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("It is binary."))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"}) as tmux:
        (tmp_path / "ws" / "blob.bin").write_bytes(bytes(range(256)) * 4)
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie what is #file:blob.bin", "Enter")
        tmux.keep("1-answered", tmux.wait(lambda s: "It is binary." in s and "(end)" in s, "the answer"))
        sent = srv.chat_requests[0].body["messages"][-1]["content"]
        assert "File: blob.bin\nBinary file: its bytes are not shown." in sent and "\0" not in sent, sent
        assert_clean(tmux.screens)


def test_a_retry_after_a_server_error_is_not_called_a_rate_limit(tmp_path: Path, scripted_llm):
    """The reply breaks off with a 503 after its first words, then comes whole: the chat says it retries after that
    error (Bug: every retry read "rate limited, retrying", so a crashed local server sent the user looking at quotas),
    and shows the answer once, without the words of the attempt that failed (Bug: "Half an Recovered."); meanwhile its
    statusline counts down the wait to retry (it said "thinking"). One that fails for good (a 400 after its first
    words) shows the error without those words (Bug: they stayed above it, as if the model had said them, though the
    session never kept them)."""
    srv = scripted_llm("openai")
    srv.script(Reply.stream_error(after=2, status=400, text="Broken off mid-word", chunk_size=5),
               Reply.stream_error(after=2, status=503, text="Half an answer", chunk_size=5), Reply.text("Recovered."))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"}) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie break", "Enter")
        failed = tmux.keep("0-failed", tmux.wait(lambda s: "HTTP 400" in s and "(error)" in s, "the error", timeout=60),
                              (1300, 560))
        assert "Broke" not in chat_of(failed) and "retrying" not in failed, failed
        tmux.keys(":Ollie hi", "Enter")
        # The statusline counts down the wait before the retry (Bug: it said "thinking").
        tmux.keep("0-waiting", tmux.wait(lambda s: re.search(r"ollie: the request failed, retry 1/3 in [3-5]s", s) is not None,
                                         "the wait in the statusline"), (1300, 740))
        # In an 80-column terminal (a chat 40 wide) the state is cut in its middle (Bug: Neovim cut the statusline at
        # its start, "<try 1/3 in 5s $0.00": whose wait, for what, was gone).
        subprocess.run([*tmux.base, "resize-window", "-t", "t", "-x", "80", "-y", "24"], check=True)
        tmux.keep("0-narrow", tmux.wait(lambda s: re.search(r" ollie: the reque… retry 1/3 in [1-2]s \$0\.00", s)
                                        is not None, "the count down at 80 columns"), (760, 440))
        subprocess.run([*tmux.base, "resize-window", "-t", "t", "-x", "160", "-y", "40"], check=True)
        done = tmux.keep("1-retried", tmux.wait(lambda s: "Recovered." in s, "the answer after the retry", timeout=60),
                         (1300, 560))
        chat = chat_of(done)
        # In words, no class name (Bug: "retrying after an error: transient: ..."; the class goes as the event's name).
        assert "retrying: the model request failed: " in chat and "503" in chat and "transient" not in chat, done
        assert "rate limited" not in chat and "Half" not in chat, done
        assert_clean(tmux.screens)


def test_the_question_about_an_edit_of_unsaved_text_shows_its_diff(tmp_path: Path, scripted_llm):
    """The user typed a function into calc.py without saving and asks for an edit of it: the approval question shows
    the edit's diff of that text (Bug: the preview was made from the disk, where the text the edit replaces is not:
    the question came with no diff at all, to be approved blind)."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["calc.py", "return x * x", "return x ** 2"]}]})), Reply.text("Squared."))
    with start_nvim(tmp_path, srv.env(approval="ask"), {"calc.py": "def add(a, b):\n    return a + b\n"}) as tmux:
        tmux.wait(lambda s: "def add(a, b):" in s, "nvim to start")
        tmux.keys("G", "o", "def square(x):", "Enter", "return x * x", "Escape")
        tmux.wait(lambda s: "calc.py [+]" in s, "the unsaved function")
        tmux.keys(":Ollie use ** in square", "Enter")
        asked = tmux.keep("1-asked", tmux.wait(lambda s: "Allow once" in s and "ollie asks to: Edit calc.py" in s
                                               and "+    return x ** 2" in s, "the question and its diff", timeout=60))
        assert "ollie asks to: Edit calc.py" in asked, asked
        assert "-    return x * x" in asked and "+    return x ** 2" in asked, asked
        tmux.keys("1", "Enter")
        done = tmux.keep("2-done", tmux.wait(lambda s: "Squared." in s and "(end)" in s, "the turn"))
        assert "return x ** 2" in done, done
        assert_clean(tmux.screens)


def test_the_statusline_names_the_step_that_runs(tmp_path: Path, scripted_llm):
    """While a command runs, the chat's statusline says which (`Run sh wait.sh`), as its step line does (Bug: it said
    "calling: execute_code", the name of the tool the model called)."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": "sh wait.sh", "language": "bash"}]})),
               Reply.text("Waited."))
    # The step runs until the test has seen the statusline (its file `go` appears).
    tmux = start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n", "wait.sh": "while [ ! -e go ]; do sleep 0.1; done\n"})
    try:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie wait", "Enter")
        running = tmux.keep("1-running", tmux.wait(lambda s: "◐ Run sh wait.sh" in s, "the running step", timeout=60))
        tmux.keep("2-status", tmux.wait(lambda s: " ollie: Run sh wait.sh $" in s, f"the statusline:\n{running}"))
        (tmp_path / "ws" / "go").write_text("")
        done = tmux.keep("3-done", tmux.wait(lambda s: "Waited." in s and "(end)" in s and " ollie: idle $" in s,
                                             "the turn's end, its statusline too"))
        assert " ollie: idle $" in done, done
        assert_clean(tmux.screens)
    finally:
        (tmp_path / "ws" / "go").write_text("")
        tmux.close()


def test_the_statusline_says_starting_until_the_daemon_answers(tmp_path: Path, scripted_llm):
    """The chat opened while the daemon starts says so in its statusline, then idle once it answered (Bug: it said
    "idle" over an empty chat and session list for the ~20 s a cold daemon took on a loaded machine)."""
    srv = scripted_llm("openai")
    # ollie-lsp on PATH waits for the file `go` (the test's say-so) before it becomes the daemon.
    go = tmp_path / "go"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "ws").mkdir()
    real = Path(sys.executable).parent / "ollie-lsp"
    (bin_dir / "ollie-lsp").write_text(f'#!/bin/sh\nwhile [ ! -e "{go}" ]; do sleep 0.05; done\nexec "{real}" "$@"\n')
    (bin_dir / "ollie-lsp").chmod(0o755)
    tmux = start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"})
    try:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":OllieChat", "Enter")
        tmux.keep("1-starting", tmux.wait(lambda s: " ollie: starting $" in s, "the statusline while the daemon starts"))
        go.write_text("")
        tmux.keep("2-idle", tmux.wait(lambda s: " ollie: idle $" in s, "the statusline once it answered", timeout=60))
        assert_clean(tmux.screens)
    finally:
        go.write_text("")
        tmux.close()


def test_the_diff_tab_s_two_sides_fold_alike(tmp_path: Path, scripted_llm):
    """`:OllieChanges` typed in the chat's input area, then the diff of a long file: both sides fold their unchanged
    lines alike (`+-- 52 lines: def f1():` on each), as `:diffsplit` does, for the file open in the editor and for one
    never opened. Bug: the chat's window options (a transparent foldtext, `·` fills, no sign column, conceal) went to
    the windows split from it and to the buffers shown there: the "before" side folded showing the folded line's own
    text, the file's side (when the file was open) `+-- 52 lines`; a file never opened took them on both sides."""
    code = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(1, 30))
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["funcs.py", "return 20", "return 2000"]},
        {"tool": "file_edit", "args": ["more.py", "return 20", "return 2000"]}]})), Reply.text("Edited."))
    with start_nvim(tmp_path, srv.env(approval="auto"), {"funcs.py": code, "more.py": code}) as tmux:
        tmux.wait(lambda s: "def f1():" in s, "nvim to start")
        tmux.keys(":Ollie make f20 return 2000", "Enter")
        tmux.wait(lambda s: "Edited." in s and "(end)" in s, "the turn", timeout=60)
        tmux.keys(":OllieChat", "Enter", "Escape", ":OllieChanges", "Enter")
        tmux.wait(lambda s: "M  funcs.py  (+1 -1, 1 hunk)" in s, "the changes list")
        for n, name in enumerate(["funcs.py", "more.py"], 1):
            if n > 1:
                tmux.keys("q")  # the diff tab closes: back in the list
                tmux.wait(lambda s: "M  funcs.py" in s and "before turn 1" not in s, "the list again")
                tmux.keys(":call search('more.py')", "Enter")
            tmux.keys("Enter")
            diff = tmux.keep(f"{n}-diff", tmux.wait(
                lambda s, name=name: f"before turn 1: {name}" in s and "return 2000" in s, f"the diff of {name}"))
            folds = [line.split("│") for line in diff.splitlines() if line.startswith("+ ")]
            assert len(folds) == 2, diff  # the 52 lines above the change, the 22 under it
            for before, now in folds:
                assert before.rstrip("· ") == now.rstrip("· "), diff
            assert folds[0][0].startswith("+ +-- 52 lines: def f1():"), diff
        assert_clean(tmux.screens)


def agent_picked(tmux) -> str:
    """The line of the agent `:OllieAgent` lists as current (the picker dismissed)."""
    tmux.keys(":OllieAgent", "Enter")
    picker = tmux.wait(lambda s: "Type number" in s and "(current)" in s, "the agent picker")
    tmux.keys("Enter")  # empty: dismissed
    return next(line.strip() for line in picker.splitlines() if line.rstrip().endswith("(current)"))


def test_a_session_switched_to_the_plan_agent_is_resumed_in_it_after_a_quit(tmp_path: Path, scripted_llm):
    """A prompt, `:OllieAgent plan` (read-only), a prompt, `:qa!`; the next Neovim resumes the session from
    `:OllieSessions`: it runs plan still (Bug: the session list kept the agent the session was made with, and a resume
    ran that one: the default agent, which edits files and runs programs, in a session she had made read-only). The
    conversation before the switch is kept as a session of its own, which the picker lists (it was lost)."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("Hello."), Reply.text("The plan."))
    files = {"calc.py": "x = 1\n"}
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie hello", "Enter")
        tmux.wait(lambda s: "Hello." in s and "(end)" in s, "the first answer", timeout=60)
        tmux.keys(":OllieAgent plan", "Enter")
        # The conversation before is kept (it was lost): the chat names it and where to resume it.
        tmux.keep("0-switched", tmux.wait(lambda s: "agent: plan (session cleared" in s
                                          and 'conversation is saved as "hello"' in s, "the switch"))
        tmux.keys(":Ollie plan the work", "Enter")
        tmux.keep("1-planned", tmux.wait(lambda s: "The plan." in s and "(end)" in s, "the plan"))
        assert agent_picked(tmux).startswith("4: plan")
        quit_nvim(tmux, tmp_path)
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start again")
        tmux.keys(":OllieSessions", "Enter")
        picker = tmux.wait(lambda s: "Type number" in s and "plan the work" in s and "hello" in s,
                           "the sessions to pick from, the one the switch kept too")
        tmux.keys(next(line.split(":")[0].strip() for line in picker.splitlines() if "plan the work" in line), "Enter")
        tmux.keep("2-resumed", tmux.wait(lambda s: "The plan." in s, "the resumed session"))
        current = agent_picked(tmux)
        assert current.startswith("4: plan"), current
        assert_clean(tmux.screens)


def test_a_broken_sandbox_policy_is_said_as_the_daemon_starts(tmp_path: Path, scripted_llm):
    """A misspelt key in sandbox.yaml is said as the daemon starts (here for `:OllieChanges`), file and key named with
    what to do, as a broken agent config is (it was said only when the first step ran, and refused). Its path under
    $HOME is said from `~` (a long home dir's path filled the line, and the notice was cut to fit it)."""
    policy = Path(os.environ["XDG_CONFIG_HOME"]) / "ollie" / "sandbox.yaml"
    policy.parent.mkdir(parents=True, exist_ok=True)
    policy.write_text("netwrok:\n  enabled: true\n")
    home = policy.parents[2]  # this test's own (XDG_CONFIG_HOME is its config/)
    with start_nvim(tmp_path, {**scripted_llm("openai").env(), "HOME": str(home)}, {"calc.py": "x = 1\n"},
                    size=(230, 40)) as tmux:  # wide: the whole notice, on one line
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":OllieChanges", "Enter")  # the daemon starts
        # The notice and the command's own answer ("no turn yet") share the message line, in either order: once the
        # answer came last, the notice is in :messages (CI, loaded: the screen showed the answer alone).
        tmux.wait(lambda s: "netwrok" in s or "no turn yet" in s, "the daemon's first words")
        if "netwrok" not in tmux.screen():
            tmux.keys(":messages", "Enter")
        said = tmux.keep("1-said", tmux.wait(lambda s: "no step runs until it loads" in s, "the policy's problem"))
        assert "~/config/ollie/sandbox.yaml: key 'netwrok': unknown key; fix the file: no step runs until it loads" \
            in said, said
        assert str(home) not in said, said


def test_a_notice_wider_than_the_command_line_shows_cut_and_stays_whole_in_messages(tmp_path: Path, scripted_llm):
    """At 80 columns the policy's notice shows on one line cut to fit, no Press ENTER prompt, and `:messages` has it
    whole, as the README says (Bug: the cut line was all `:messages` kept, its end, what to do, gone)."""
    policy = Path(os.environ["XDG_CONFIG_HOME"]) / "ollie" / "sandbox.yaml"
    policy.parent.mkdir(parents=True, exist_ok=True)
    policy.write_text("netwrok:\n  enabled: true\n")
    home = policy.parents[2]  # this test's own: the path is written from `~`, as short under xdist's folders
    with start_nvim(tmp_path, {**scripted_llm("openai").env(), "HOME": str(home)}, {"calc.py": "x = 1\n"},
                    size=(80, 24), init_lua="vim.o.showmode = false") as tmux:  # (said as it comes)
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":OllieChat", "Enter")  # the daemon starts
        said = tmux.keep("0-said", tmux.wait(lambda s: s.splitlines()[-1].startswith("ollie: ~/config/ollie/sandbox"),
                                             "the notice"))
        assert "Press ENTER" not in said and "loads" not in said and said.rstrip().endswith("…"), said
        tmux.keys("Escape", ":messages", "Enter")
        whole = "key'netwrok':unknownkey;fixthefile:nosteprunsuntilitloads"  # (wrapped: no spaces compared)
        tmux.keep("1-messages", tmux.wait(lambda s: whole in re.sub(r"\s", "", s), "the notice whole in :messages"))


@pytest.mark.parametrize("showmode", [True, False], ids=["showmode", "noshowmode"])
def test_a_broken_sandbox_policy_said_while_the_chat_opens_in_insert_mode_is_seen_and_kept_in_messages(
        tmp_path: Path, scripted_llm, showmode: bool):
    """The chat opened first (in insert mode) with a misspelt key in sandbox.yaml: the daemon's notice, come while she
    types, shows once she leaves insert mode, and `:messages` keeps it (Bug: echoed without history while
    `-- INSERT --` showed, it was gone at once, and nowhere to find). With 'noshowmode' (a statusline plugin's
    setting) nothing covers it: it shows as it comes, as she types."""
    policy = Path(os.environ["XDG_CONFIG_HOME"]) / "ollie" / "sandbox.yaml"
    policy.parent.mkdir(parents=True, exist_ok=True)
    policy.write_text("netwrok:\n  enabled: true\n")
    with start_nvim(tmp_path, scripted_llm("openai").env(), {"calc.py": "x = 1\n"}, size=(230, 30),
                    init_lua="" if showmode else "vim.o.showmode = false") as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":OllieChat", "Enter")
        tmux.wait(lambda s: ("-- INSERT --" in s) == showmode and " ollie: idle" in s, "the chat, idle")
        # Sent (the daemon logs it first) while she is in insert mode: she types on, then leaves it.
        log = Path(os.environ["XDG_STATE_HOME"]) / "ollie" / "ollie.log"
        wait_until(lambda: log.exists() and "key 'netwrok'" in log.read_text(), "the daemon to send it")
        tmux.keys("fix")
        if not showmode:
            tmux.keep("1-typing", tmux.wait(lambda s: "fix" in chat_of(s) and "key 'netwrok'" in s, "it as she types"))
            return
        typed = tmux.keep("1-typing", tmux.wait(lambda s: "fix" in chat_of(s), "her typing"))
        assert "netwrok" not in typed and "-- INSERT --" in typed, typed
        tmux.keys("Escape")
        tmux.keep("2-said", tmux.wait(lambda s: "key 'netwrok'" in s, "the policy's problem"))
        tmux.keys(":echo 'clea' .. 'red'", "Enter")
        tmux.wait(lambda s: "cleared" in s and "netwrok" not in s, "the command line cleared")
        tmux.keys(":messages", "Enter")
        kept = tmux.keep("3-messages", tmux.wait(lambda s: "sandbox.yaml: key 'netwrok': unknown key" in s,
                                                 "it in :messages"))
        assert "unknown key" in kept, kept
        assert_clean(tmux.screens)


def pick(tmux, title: str, *then: str) -> None:
    """Pick the session titled `title` in :OllieSessions, then type `then` at once (while it loads)."""
    tmux.keys(":OllieSessions", "Enter")
    listed = tmux.wait(lambda s: "Type number" in s and title in s, "the sessions picker")
    tmux.keys(next(line for line in listed.splitlines() if title in line and re.match(r"\d+: ", line)).split(":")[0],
              "Enter", *then)


def test_a_chat_switched_back_to_a_session_mid_answer_shows_what_it_said_so_far(tmp_path: Path, scripted_llm):
    """The story streams in session A; `:OllieNew`, a question answered in B, then `:OllieSessions` back to A while
    its answer still streams: the chat shows the story so far, and once, when the turn ends (Bug: it showed `## ollie`
    and "…" alone, the streamed words gone from sight until the turn's end). `:OllieQueue` (`:OllieInject`) typed as B is
    picked again, away from A's running turn, runs in B at once."""
    srv = scripted_llm("openai")
    with a_story_streaming(tmp_path, srv, "Hello back from B.") as (story, tmux):
        tmux.keys(":OllieNew", "Enter")
        tmux.wait(lambda s: "Type a prompt" in s and "A long story." not in s, "the new session's empty chat")
        tmux.keys(":Ollie hello", "Enter")
        tmux.wait(lambda s: "Hello back from B.\n\n(end)" in chat_of(s), "the answer in B")
        pick(tmux, "tell a story")
        back = tmux.keep("1-back", tmux.wait(lambda s: "## You\ntell a story" in chat_of(s), "session A's chat"),
                         (1000, 800))
        assert "## ollie\nA long story." in chat_of(back) and "(end)" not in chat_of(back), back
        # Away from A, running, to B, idle: `:OllieQueue` typed as B loads runs in B at once (Bug: it went by A's turn
        # running and was queued in B, where it waited for a turn's end that never came).
        srv.script(Reply.text("Again from B."), Reply.text("Injected in B."))
        pick(tmux, "hello", ":OllieQueue and again", "Enter")
        tmux.keep("1-queued-in-b", tmux.wait(lambda s: "## You\nand again\n\n## ollie\nAgain from B.\n\n(end)"
                                             in chat_of(s), "the queued prompt run in B"), (1000, 800))
        pick(tmux, "tell a story")
        tmux.wait(lambda s: "## You\ntell a story" in chat_of(s), "session A's chat again")
        pick(tmux, "hello", ":OllieInject and inject", "Enter")  # the same for an inject: B runs no turn to join
        tmux.wait(lambda s: "## You\nand inject\n\n## ollie\nInjected in B.\n\n(end)" in chat_of(s), "it run in B")
        pick(tmux, "tell a story")
        tmux.wait(lambda s: "## You\ntell a story" in chat_of(s), "session A's chat at last")
        story.set()
        done = tmux.keep("2-end", tmux.wait(lambda s: "(end)" in chat_of(s), "the story's end"))
        assert chat_of(done).count("A long story.") == 1 and "Hello back" not in done, done
        assert_clean(tmux.screens)


def test_a_session_compacted_mid_turn_resumes_without_the_agent_s_notes_as_her_unanswered_prompt(
        tmp_path: Path, scripted_llm):
    """A step's long output compacts the history mid-turn (a model of 1,000 tokens); Neovim quit, the session resumed
    from `:OllieSessions`: the chat says the conversation was compacted, and shows her turns (Bug: the agent's notes,
    which the history starts with from then on, showed as her prompt, `## You [ollie: the agent's own notes ...`, with
    "(no answer saved: the turn failed or was interrupted)" under it)."""
    state = {"goal": "print a lot", "plan": ["print"], "plan_step": "print", "decisions": [], "files": []}
    srv = scripted_llm("openai", context_length=1000)
    srv.script(Reply.text("Earlier answer."),
               Reply(text="Let me print a lot.", tool_calls=[("execute_code", {"steps": [
                   {"code": "python3 -c \"print('x' * 3000)\"", "language": "bash"}]})]),
               Reply.text(json.dumps(state)), Reply.text("Done after compaction."))
    files = {"notes.txt": "notes\n"}
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie first question", "Enter")
        tmux.wait(lambda s: "Earlier answer.\n\n(end)" in chat_of(s), "the first answer")
        tmux.keys(":Ollie print a lot", "Enter")
        tmux.keep("1-compacted", tmux.wait(lambda s: "compacted:" in s and "Done after compaction.\n\n(end)" in chat_of(s),
                                           "the compacted turn's end", timeout=60))
        quit_nvim(tmux, tmp_path)
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        resumed = chat_of(resume(tmux, "first question", "Done after compaction.", png=(1000, 800)))
        assert resumed.lstrip().startswith("(earlier conversation compacted: the agent goes on from its notes of it)\n\n"
                                           "## You\nfirst question"), resumed
        assert "own notes" not in resumed and "no answer saved" not in resumed and "goal" not in resumed, resumed
        assert_clean(tmux.screens)


def test_a_session_whose_neovim_was_killed_mid_step_resumes_with_that_step_and_its_turn_shown_cut_short(
        tmp_path: Path, scripted_llm):
    """Neovim killed (its tmux server) while the agent's step runs; the session resumed in the next Neovim: the step is
    shown failed, saying the session closed before it finished, and the turn as ended with no answer (Bug: the chat
    ended at the step, as if the turn still ran; idle, nothing said it was over)."""
    srv = scripted_llm("openai")
    srv.script(Reply(text="Running the slow tests.", tool_calls=[("execute_code", {"steps": [
        {"code": "echo started; sleep 60", "language": "bash"}]})]))
    files = {"notes.txt": "notes\n"}
    with start_nvim(tmp_path, {**srv.env(), "OLLIE_APPROVAL": "auto"}, files) as tmux:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie run the slow tests", "Enter")
        tmux.keep("1-running", tmux.wait(lambda s: "sleep 60" in s, "the step to run"))
    daemons_gone(tmp_path)  # (killed at the `with`'s end, mid-step)
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        resumed = " ".join(chat_of(resume(tmux, "slow tests", "Running the slow tests.")).split())
        assert "✗ Run echo started; sleep 60" in resumed and "the session was closed" in resumed, resumed
        assert "closed (its editor closed, or ollie stopped)] ─── (no answer after these steps: the turn failed or " \
               "stopped) ~" in resumed, resumed
        assert_clean(tmux.screens)


def test_a_file_the_agent_moved_while_open_with_unsaved_changes_is_followed_by_its_buffer(tmp_path: Path,
                                                                                         scripted_llm):
    """A step moves calc.py, open with her unsaved line, to mathx.py: the buffer is mathx.py now, her line kept and
    said so, and the model reads it there, not in calc.py; her `:w` writes it there, and `u` takes back her line (Bug:
    the buffer kept the gone name unsaid, the model read her text in the gone calc.py, and her `:w` made calc.py again
    beside mathx.py, the code in two files)."""
    srv = scripted_llm("openai")
    reads = [{"tool": "file_read", "args": [name]} for name in ("calc.py", "mathx.py")]
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": "mv calc.py mathx.py", "language": "bash"}]})),
               Reply.text("Moved."), Reply.tool_calls(("call_tool", {"calls": reads})), Reply.text("Read."))
    with start_nvim(tmp_path, srv.env(approval="auto"), {"calc.py": "def add(a, b):\n    return a - b\n"}) as tmux:
        ws = tmp_path / "ws"
        tmux.wait(lambda s: "return a - b" in s, "nvim to start")
        tmux.keys("G", "o", "SUB = 0", "Escape")
        tmux.wait(lambda s: "calc.py [+]" in s, "her unsaved line")
        tmux.keys(":Ollie move calc.py to mathx.py", "Enter")
        moved = tmux.keep("1-moved", tmux.wait(lambda s: "Moved." in s and "(end)" in s, "the turn", 60))
        assert re.search(r"^mathx\.py \[\+\] ", moved, re.M) and "SUB = 0" in moved, moved
        assert "calc.py moved to mathx.py: its buffer follows it, your unsaved changes kept" in moved, moved
        tmux.keys(":Ollie read both", "Enter")
        tmux.wait(lambda s: "Read." in s and "(end)" in s, "the reads", 60)
        read = srv.chat_requests[-1].body["messages"][-1]["content"]
        assert "calc.py: no such file" in read and "3\tSUB = 0" in read, read
        tmux.keys("Escape", "C-w", "h", ":w", "Enter")
        tmux.keep("2-saved", tmux.wait(lambda s: '"mathx.py" 3L, 40B written' in s, "her save"))
        assert sorted(p.name for p in ws.iterdir()) == [".git", "mathx.py"]
        assert (ws / "mathx.py").read_text() == "def add(a, b):\n    return a - b\nSUB = 0\n"
        tmux.keys("u")
        undone = tmux.keep("3-undone", tmux.wait(lambda s: re.search(r"^mathx\.py \[\+\] +2,", s, re.M) is not None,
                                                 "the undo"))
        assert [line.split("│")[0].rstrip() for line in undone.splitlines()[:3]] == [
            "def add(a, b):", "    return a - b", "~"], undone
        assert_clean(tmux.screens)


def test_a_files_new_name_a_step_chose_runs_nothing_when_its_buffer_follows_it(tmp_path: Path, scripted_llm):
    """Red team 54: a step writes a Vim script and moves calc.py, open, to `c<U+202E>yp.txt`, then that to
    `m<LF>so.x.vim`: the buffer follows the first move, said escaped, not the second (said deleted, escaped), no script
    runs, and a session saved then runs none either (Bug: `:file` took the name spliced into a command line,
    fnameescape kept its line break and Neovim ran `so.x.vim`, the step's script outside the sandbox; the notices
    printed the names as they came; a buffer so named wrote its line break into `:mksession`'s file, which ran it)."""
    srv = scripted_llm("openai")
    srv.script(*(Reply.tool_calls(("execute_code", {"steps": [{"language": "bash", "code": code}]})) for code in (
        "echo \"call writefile(['ran'], 'ran.txt')\" > .x.vim; mv calc.py \"$(printf 'c\\342\\200\\256yp.txt')\"",
        "mv c*yp.txt \"$(printf 'm\\nso.x.vim')\"")), Reply.text("Moved."))
    tmux = start_nvim(tmp_path, srv.env(approval="auto"), {"calc.py": "def add(a, b):\n    return a - b\n"})
    ws = tmp_path / "ws"
    try:
        tmux.wait(lambda s: "return a - b" in s, "nvim to start")
        tmux.keys(":Ollie move calc.py", "Enter")
        tmux.wait(lambda s: "Moved." in s and "(end)" in s, "the turn", 60)
        tmux.keys("Escape", "C-w", "h", ":mksession! s.vim", "Enter")
        tmux.wait(lambda _: (ws / "s.vim").exists(), "the session file")
        subprocess.run([_nvim(), "--headless", "-u", "NONE", "-i", "NONE", "-n", "-S", "s.vim", "-c", "qa!"], cwd=ws,
                       timeout=60, capture_output=True, check=False)  # the session brought back
        assert not (ws / "ran.txt").exists()
        tmux.keys(":messages", "Enter")
        said = tmux.keep("1-said", tmux.wait(lambda s: "moved to" in s and "was deleted" in s, "the messages"))
        assert "calc.py moved to c\\u202eyp.txt: its buffer follows it" in said, said
        assert "c\\u202eyp.txt was deleted: its buffer keeps the text" in said, said
        assert not re.search(r"^so\.x\.vim", said, re.M), said
    finally:
        tmux.close()


def test_a_file_a_step_deleted_under_its_buffer_is_said_once(tmp_path: Path, scripted_llm):
    """A step deletes calc.py, open in a buffer: she is told, once, that its buffer keeps the text and `:w` writes it
    again (Bug: nothing said, Neovim's E211 hidden by the plugin's silent reload: the buffer looked like the file)."""
    srv = scripted_llm("openai")
    srv.script(*(Reply.tool_calls(("execute_code", {"steps": [{"code": code, "language": "bash"}]})) for code in
                 ("rm calc.py", "true")), Reply.text("Deleted."))
    with start_nvim(tmp_path, srv.env(approval="auto"), {"calc.py": "def add(a, b):\n    return a - b\n"}) as tmux:
        tmux.wait(lambda s: "return a - b" in s, "nvim to start")
        tmux.keys(":Ollie delete calc.py", "Enter")
        told = tmux.keep("1-deleted", tmux.wait(lambda s: "Deleted." in s and "(end)" in s, "the turn", 60))
        assert "calc.py was deleted: its buffer keeps the text (:w writes it again)" in told, told
        tmux.type(":echo 'said' count(execute('messages'), 'calc.py was deleted')", "Enter")
        said = tmux.wait(lambda s: re.search(r"^said \d+ *$", s, re.M) is not None, "the count of its messages")
        assert re.search(r"^said 1 *$", said, re.M), said


def test_an_inject_the_turn_ended_before_taking_runs_before_the_prompt_queued_after_it(tmp_path: Path, scripted_llm):
    """While the answer streams she injects "also keep it short" (C-j), then queues "then explain"; the answer ends
    with no tool result to take the inject: it runs next, then the queued prompt (Bug: it went to the queue's end,
    after the prompt she sent later, its chat line moving below it)."""
    srv = scripted_llm("openai")
    queued = threading.Event()  # the answer ends once both wait (3.5 s of words raced the keys of a loaded machine)
    srv.script(Reply(text="Reading the code carefully. " * 30, delay=0.02, chunk_size=12, hold=queued),
               Reply.text("Short."), Reply.text("Explained."))
    with start_nvim(tmp_path, srv.env(approval="auto"), {"calc.py": "x = 1\n"}) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie read calc.py", "Enter")
        tmux.wait(lambda s: "Reading the code" in s, "the answer to stream", 60)
        tmux.keys(":OllieChat", "Enter")
        tmux.type("also keep it short", "C-j")
        tmux.wait(lambda s: "↳ injected: also keep it short" in s, "the inject")
        tmux.type("then explain", "Escape", "Enter")
        tmux.keep("1-queued", tmux.wait(lambda s: "⏳ queued: then explain" in s, "the prompt queued"))
        queued.set()
        done = tmux.keep("2-done", tmux.wait(lambda s: "Explained." in s and "(end)" in s and "⏳" not in s, "both", 60))
        assert done.index("also keep it short") < done.index("Short.") < done.index("then explain"), done
    assert [r.body["messages"][-1]["content"] for r in srv.chat_requests[1:]] == ["also keep it short", "then explain"]
