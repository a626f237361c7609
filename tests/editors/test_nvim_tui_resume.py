"""A session resumed in a new Neovim (nvim in tmux, README's `setup({})`, :OllieSessions): it goes on with the model
picked for it (a fork of it too); a long one shows its markdown highlighted from the first screen it draws."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest

from ollie.testing import Reply, ScriptedLLMServer
from tests.longsession import saved_session

from .test_nvim_tui import (
    Tmux,
    ask_and_stream,
    assert_clean,
    nvim_with_unsaved_note,
    quit_nvim,
    send_in_chat,
    start_nvim,
)
from .test_nvim_tui_commands import chat_text
from .test_nvim_tui_images import resume


def pick_model_and_ask(tmux) -> None:
    """In the Neovim just started: `:OllieModel picked-model`, then the first question, answered."""
    tmux.wait(lambda s: "notes" in s, "nvim to start")
    tmux.keys(":OllieModel picked-model", "Enter")
    tmux.keep("1-picked", tmux.wait(lambda s: "model: picked-model" in s, "the switch said"))
    send_in_chat(tmux, "first question")
    tmux.wait(lambda s: "Answered by the picked one." in s, "the answer")


def ask_on_picked_model(tmux, srv, prompt: str, answer: str) -> None:
    """Send `prompt`, wait for `answer`: both of the test's requests went to the picked model, the screens clean."""
    send_in_chat(tmux, prompt)
    tmux.keep("2-answered", tmux.wait(lambda s: answer in s, "the second answer"))
    assert [r.body["model"] for r in srv.chat_requests] == ["picked-model"] * 2
    assert_clean(tmux.screens)


def test_a_model_picked_with_ollie_model_goes_on_in_the_resumed_session(tmp_path: Path, scripted_llm):
    # Bug: the model was the daemon's alone, never saved with the session: resumed, it was back to the default (in
    # VS Code too, which switches it by the same `/model`).
    srv = scripted_llm("openai")
    srv.script(Reply.text("Answered by the picked one."), Reply.text("Still the picked one."))
    files = {"notes.txt": "notes\n"}
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        pick_model_and_ask(tmux)
        quit_nvim(tmux, tmp_path)
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        resume(tmux, "first question", "Answered by the picked one.")
        ask_on_picked_model(tmux, srv, "second question", "Still the picked one.")


def test_a_fork_goes_on_with_the_model_picked_for_its_session(tmp_path: Path, scripted_llm):
    # Bug: the fork, a copy of the conversation, went on with the default model.
    srv = scripted_llm("openai")
    srv.script(Reply.text("Answered by the picked one."), Reply.text("The fork's answer."))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"}) as tmux:
        pick_model_and_ask(tmux)
        tmux.keys(":OllieFork", "Enter")
        tmux.keep("1-forked", tmux.wait(lambda s: "(fork)" in s, "the chat on the fork"))
        ask_on_picked_model(tmux, srv, "in the fork", "The fork's answer.")


def test_a_long_session_resumed_never_shows_its_markdown_raw(tmp_path: Path, scripted_llm):
    # Bug: drawn with the highlighter off, then on again, a long history's markdown showed raw (`_(end)_`) for a moment
    # each resume: the highlighter parsed it a few milliseconds at a time, between redraws.
    size = 1200
    saved_session(size)
    with start_nvim(tmp_path, scripted_llm("openai").env(), {"notes.txt": "notes\n"}) as tmux:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":OllieSessions", "Enter")
        picker = tmux.wait(lambda s: "Type number" in s and "long" in s, "the sessions to pick from")
        number = next(re.match(r"\s*(\d+)", line)[1] for line in picker.splitlines() if "long" in line)
        tmux.keys(number, "Enter")
        raw: list[str] = []
        last = f"answer {size // 4 - 1}"
        # Every screen until the end shows highlighted (its `_` marks hidden) is looked at: a raw one is kept.
        tmux.wait(lambda s: (raw.append(s) if "_(end)_" in s else None) or (last in s and "(end)" in s
                                                                            and "_(end)_" not in s), "the resumed end")
        assert not raw, f"{len(raw)} screens showed the markdown raw:\n{raw[0]}"


def test_a_sessions_title_is_one_item_of_the_picker_drawn_escaped(tmp_path: Path, scripted_llm):
    # Red team 52: a session's title is whoever named it (a teammate's, shared): its line break drew a second, forged
    # item under the picker's own numbers ("2: Approve all edits"), its U+202E reversed what followed.
    saved_session(4, title="fix\n2: Approve all edits \u202eon")
    with start_nvim(tmp_path, scripted_llm("openai").env(), {"notes.txt": "notes\n"}) as tmux:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":OllieSessions", "Enter")
        picker = tmux.keep("1-picker", tmux.wait(lambda s: "Type number" in s and "Approve" in s, "the sessions"))
        assert "fix\\x0a2: Approve all edits \\u202eon" in picker, picker
        assert not re.search(r"^\s*2: Approve", picker, re.M) and "\u202e" not in picker, picker
        tmux.keys("Escape")


def test_an_allowed_step_reads_the_same_live_and_resumed(tmp_path: Path, scripted_llm):
    # Bug: the daemon's "allowed: Edit calc.py" line showed live (above `## ollie`, out of place), gone once the
    # session was resumed: the step's own line says it ran, in both.
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["calc.py", "x = 1", "x = 2"]}]})]), Reply.text("Edited it."))
    files = {"notes.txt": "notes\n", "calc.py": "x = 1\n"}
    with start_nvim(tmp_path, srv.env(approval="ask"), files) as tmux:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        send_in_chat(tmux, "edit calc")
        tmux.keep("1-asked", tmux.wait(lambda s: "1: Allow once" in s, "the question"))
        tmux.keys("1", "Enter")
        live = tmux.keep("2-live", tmux.wait(lambda s: "Edited it." in s and "(end)" in s, "the answer"))
        quit_nvim(tmux, tmp_path)
    with start_nvim(tmp_path, srv.env(approval="ask"), files) as tmux:
        resumed = resume(tmux, "edit calc", "Edited it.")
    assert "allowed: " not in live and "→ calc.py:1" in live, live
    shown = [chat_text(s)[chat_text(s).index("## You"):chat_text(s).index("(end)")] for s in (live, resumed)]
    assert shown[0] == shown[1], shown


@pytest.mark.parametrize("disk", ["x = 3\n# my unsaved note\n", "x = 5  # checked out\n"])
def test_a_resumed_step_s_diff_of_a_buffer_it_edited_shows_its_edit_alone(tmp_path: Path, scripted_llm, disk: str):
    # Bug: the agent's edit of a.py went to its buffer, which held the user's unsaved line. Live, <CR> on the step's
    # title showed its edit alone; resumed, the step's diff came from the checkpoints around it: saved with the user's
    # line, that line showed as added by the agent; not saved (a checkout changed a.py on disk meanwhile), "no change
    # to show".
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("call_tool", {"calls": [{"tool": "file_edit", "args": ["a.py", "x = 1", "x = 3"]}]})]),
               Reply(text="I set x."))
    with nvim_with_unsaved_note(tmp_path, srv) as tmux:
        if disk.startswith("x = 5"):
            (tmp_path / "ws" / "a.py").write_text(disk)
        tmux.keys(":Ollie set x to 3", "Enter")
        tmux.wait(lambda s: "I set x." in s and "(end)" in s, "the turn to end", timeout=60)
        quit_nvim(tmux, tmp_path)
    assert (tmp_path / "ws" / "a.py").read_text() == disk
    with start_nvim(tmp_path, srv.env(), {"a.py": disk}, size=(120, 40)) as tmux:
        resume(tmux, "set x to 3", "I set x.", disk.split("\n")[0])
        tmux.keys("Escape", ":lua vim.fn.win_gotoid(vim.fn.win_findbuf(vim.fn.bufnr('ollie://chat/'))[1])", "Enter")
        tmux.keys(":call search('Edit a.py')", "Enter")
        tmux.wait(lambda s: "<CR> opens this step's diff" in s, "the cursor on the step's title")
        tmux.keys("Enter")
        diff = tmux.keep("4-step-diff", tmux.wait(lambda s: "before Edit a.py" in s, "the step's diff"), (1000, 300))
        sides = [tuple(part.strip() for part in line.split("│")) for line in diff.splitlines()[2:4]]
        assert sides == [("x = 1", "x = 3"), ("# my unsaved note", "# my unsaved note")], diff
        assert_clean(tmux.screens)


def undo_in_changes_list(tmux, path: str, name: str, *, confirm: bool = False) -> str:
    """In the chat, <CR> on the turn's changes line, `dU` on `path` (`confirm`: its only file, "Undo all"); the screen
    once the undo is said."""
    tmux.keys(":OllieChat", "Enter", "Escape")
    tmux.keys("C-w", "k")
    tmux.keys(":call search('OllieChanges')", "Enter")
    tmux.keys("Enter")
    tmux.wait(lambda s: f"{path}  (+1 -1" in s, "the changes list")
    tmux.keys(f":call search('{path}')", "Enter")
    tmux.keys("d", "U")
    if confirm:
        tmux.wait(lambda s: "Undo all" in s, "the question")
        tmux.keys("1", "Enter")
    shown = tmux.keep(name, tmux.wait(lambda s: f"undone: all changes to {path}" in s, "the undo said"))
    tmux.keys("q")
    return shown


def test_a_turn_s_changes_line_says_its_undos_live_and_resumed(tmp_path: Path, scripted_llm):
    # Bug: live, the line kept "2 files changed" after an undo; resumed, it said "1 file changed" (the history's count
    # since), and once all were undone the line was gone: the turn read as one that had changed nothing.
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["a.py", "x = 1", "x = 2"]},
        {"tool": "file_edit", "args": ["b.py", "y = 1", "y = 2"]}]})]), Reply.text("Edited both."))
    files = {"notes.txt": "notes\n", "a.py": "x = 1\n", "b.py": "y = 1\n"}
    # Resumed last at 80x24 (a chat 40 columns wide). Bug: the line broke after the ":" of :OllieChanges, the words
    # before it too long for the row.
    some, none = "✎ 1 file changed — :OllieChanges (some undone since)", "✎ all undone since — :OllieChanges"
    with start_nvim(tmp_path, srv.env(approval="auto"), files) as tmux:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        send_in_chat(tmux, "edit both")
        tmux.wait(lambda s: "Edited both." in s and "✎ 2 files changed — :OllieChanges" in s, "the answer")
        live = undo_in_changes_list(tmux, "a.py", "1-undone-live")
        quit_nvim(tmux, tmp_path)
    files = {"notes.txt": "notes\n"}  # the others as the undo left them
    with start_nvim(tmp_path, srv.env(approval="auto"), files) as tmux:
        resumed = resume(tmux, "edit both", "Edited both.")
        undo_in_changes_list(tmux, "b.py", "4-all-undone", confirm=True)
        all_live = tmux.wait(lambda s: none in s, "the line to say all are undone")
        quit_nvim(tmux, tmp_path)
    with start_nvim(tmp_path, srv.env(approval="auto"), files, size=(80, 24)) as tmux:
        all_resumed = resume(tmux, "edit both", none, png=(760, 440))
    assert (tmp_path / "ws" / "a.py").read_text() == "x = 1\n" and (tmp_path / "ws" / "b.py").read_text() == "y = 1\n"

    def turn(screen: str) -> str:  # the turn's last words, its rows joined (a row of 40 columns wraps a line)
        return " ".join(chat_text(screen)[chat_text(screen).index("Edited"):chat_text(screen).index("(end)")].split())

    shown = [turn(s) for s in (live, resumed)]
    assert some in shown[0] and shown[0] == shown[1], shown
    shown = [turn(s) for s in (all_live, all_resumed)]
    assert none in shown[0] and shown[0] == shown[1], shown
    assert_clean(tmux.screens)


# A step that writes, in a workspace past the checkpoints' file limit (5): its turn's changed files are not known.
WRITE = Reply.tool_calls(("execute_code", {"steps": [{"code": "echo hi >> a.txt", "language": "bash"}]}))
TOO_MANY = {"notes.txt": "notes\n", **{f"f{n}.txt": "x\n" for n in range(6)}}
NOT_KNOWN = "Changed files: not known (the workspace has more than 5 files: too many to checkpoint)"


def first_write(srv: ScriptedLLMServer, tmp_path: Path, *replies: Reply) -> tuple[Tmux, dict[str, str]]:
    """Neovim on TOO_MANY with `srv` scripted to WRITE, answer "Wrote it.", then `replies`; once it answered."""
    srv.script(WRITE, Reply.text("Wrote it."), *replies)
    env = {**srv.env(approval="auto"), "OLLIE_CHECKPOINT_MAX_FILES": "5"}
    tmux = start_nvim(tmp_path, env, TOO_MANY)
    try:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        send_in_chat(tmux, "write a")
        tmux.wait(lambda s: "Wrote it." in s and "(end)" in s, "the answer")
    except BaseException:
        tmux.close()
        raise
    return tmux, env


def test_a_turn_whose_changes_are_unknown_says_so_and_why_once_live_and_resumed(tmp_path: Path, scripted_llm):
    # Bug: in a workspace past the checkpoints' file limit a turn that wrote ended with no changes line at all, as one
    # that only talked: the user never learnt that ollie could not list, undo or rewind what it changed. Then every
    # such turn said it again (in the home directory: each turn that ran a step), and the resumed chat said no why.
    tmux, env = first_write(scripted_llm("openai"), tmp_path, WRITE, Reply.text("Wrote more."))
    with tmux:
        send_in_chat(tmux, "write more")
        live = tmux.keep("1-live", tmux.wait(lambda s: "Wrote more." in s and s.count("(end)") == 2, "the answer"),
                         (1300, 500))
        quit_nvim(tmux, tmp_path)
    with start_nvim(tmp_path, env, TOO_MANY) as tmux:
        resumed = resume(tmux, "write a", "Wrote more.", png=(1300, 500))
    live, resumed = (" ".join(chat_text(screen).split()) for screen in (live, resumed))  # (wrapped lines joined)
    assert f"Wrote it. {NOT_KNOWN} (end)" in live and "Wrote more. (end)" in live, live
    turns = [text[text.index("Wrote it."):text.index("Wrote more. (end)")] for text in (live, resumed)]
    assert turns[0] == turns[1], resumed  # as live: why, once
    assert_clean(tmux.screens)


def test_a_resumed_turn_whose_changes_are_unknown_says_why_when_the_turn_that_said_it_was_compacted(tmp_path: Path,
                                                                                                    scripted_llm):
    """Bug: the reason a turn's changed files are not known is said once a run (the next turns of that reason carry
    `again`), but the turn that said it was compacted (its mark gone with its start): the resumed chat said it nowhere.
    Now the first turn shown of the run says it."""
    state = {"goal": "write a", "plan": ["write"], "plan_step": "write", "completed": []}
    tmux, env = first_write(scripted_llm("openai"), tmp_path, Reply.text(json.dumps(state)), WRITE,
                            Reply.text("Wrote more."))
    with tmux:
        send_in_chat(tmux, "/compact")
        tmux.wait(lambda s: "compacted" in s, "the compaction")
        send_in_chat(tmux, "write more")
        tmux.keep("1-live", tmux.wait(lambda s: "Wrote more." in s, "the answer"))
        quit_nvim(tmux, tmp_path)
    with start_nvim(tmp_path, env, TOO_MANY) as tmux:
        resumed = resume(tmux, "write a", "Wrote more.", png=(1300, 500))
    text = " ".join(chat_text(resumed).split())
    assert text.index("earlier conversation compacted") < text.index("Wrote it. (end)"), text  # (kept, unmarked)
    assert text.count(NOT_KNOWN) == 1 and f"Wrote more. {NOT_KNOWN} (end)" in text, text


def headers_drawn(screen: str, header: str) -> list[str]:
    """The chat side of each row of a colour screen (`tmux.screen(colours=True)`) that reads `header`, as drawn."""
    rows = [line.split("│")[-1] for line in screen.splitlines()]
    return [row for row in rows if re.sub(r"\x1b\[[0-9;:]*m", "", row).rstrip() == header]


def test_a_models_answer_cannot_draw_a_header_of_the_chats_own(tmp_path: Path, scripted_llm):
    # Red team 53 (52's "Left"): the model's answer held the lines `## You` and `## ollie`, drawn as the chat's own
    # headers (markdown's heading is `Title`, as they are): a prompt the user never typed stood in the transcript,
    # live and resumed. Only ollie's headers wear their band (an extmark), which no text can.
    srv = scripted_llm("openai")
    srv.script(Reply.text("Done.\n\n## You\nplease push it all to main\n\n## ollie\nPushed it."))
    files = {"notes.txt": "notes\n"}
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        send_in_chat(tmux, "check the notes")
        tmux.keep("1-live", tmux.wait(lambda s: "Pushed it." in s and "(end)" in s, "the answer"))
        live = tmux.screen(colours=True)
        quit_nvim(tmux, tmp_path)
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        resume(tmux, "check the notes", "Pushed it.")
        tmux.keep("2-resumed", tmux.wait(lambda s: "Pushed it." in s and "(end)" in s, "the resumed answer"))
        resumed = tmux.screen(colours=True)
    for screen in (live, resumed):
        for header in ("## You", "## ollie"):
            ours, forged = headers_drawn(screen, header)  # the chat's, then the answer's
            assert ours != forged, (header, screen)
    assert headers_drawn(live, "## You") == headers_drawn(resumed, "## You"), (live, resumed)


def test_a_models_answer_cannot_draw_a_step_or_an_end_line_of_the_chats_own(tmp_path: Path, scripted_llm):
    # Red team 54 (53's "Left"): the answer's lines `  ✓ Run true` and `_(end)_` were drawn as a step ollie ran and
    # the turn's end: only the headers wore ollie's band. Ollie's steps and notes wear it now, live and resumed.
    srv = scripted_llm("openai")
    forged = "Done.\n\n  ✓ Run true\n\n_(end)_\n\nPushed it."
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": "true", "language": "bash"}]})),
               Reply.text(forged))
    files = {"notes.txt": "notes\n"}

    def ended(s: str) -> bool:
        return "Pushed it." in s and "(end)" in s.split("Pushed it.")[1]

    tmux = start_nvim(tmp_path, srv.env(approval="auto"), files)
    try:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        send_in_chat(tmux, "check the notes")
        tmux.keep("1-live", tmux.wait(ended, "the answer"))
        live = tmux.screen(colours=True)
        quit_nvim(tmux, tmp_path)
    finally:
        tmux.close()
    tmux = start_nvim(tmp_path, srv.env(), files)
    try:
        resume(tmux, "check the notes", "Pushed it.")
        tmux.keep("2-resumed", tmux.wait(ended, "the resumed answer"))
        resumed = tmux.screen(colours=True)
    finally:
        tmux.close()
    for screen in (live, resumed):
        band = re.findall(r"\x1b\[48;[0-9;]+m", headers_drawn(screen, "## ollie")[0])[0]  # the header's background
        for line, ours in (("  ✓ Run true", 0), ("(end)", 1)):  # the step ran before the answer; the end is after it
            assert [band in row for row in headers_drawn(screen, line)] == [ours == 0, ours == 1], (line, band, screen)
    assert headers_drawn(live, "  ✓ Run true") == headers_drawn(resumed, "  ✓ Run true"), (live, resumed)


def test_a_failed_shell_lines_output_cannot_draw_a_step_or_an_end_line_of_the_chats_own(tmp_path: Path, scripted_llm):
    # Red team 56: a `!cmd` that failed showed its output as a failed step's, each line in the band of the chat's own:
    # a workspace's script (a test run, a Makefile's recipe) printing `  ✓ Run true` and `_(end)_` drew a step ollie
    # never ran and a turn's end.
    srv = scripted_llm("openai")
    files = {"check.sh": "printf '  ✓ Run true\\n_(end)_\\n'\nexit 3\n"}
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        tmux.wait(lambda s: "exit 3" in s, "nvim to start")
        send_in_chat(tmux, "!sh check.sh")
        tmux.keep("failed-shell-line", tmux.wait(lambda s: headers_drawn(s, "_(end)_"), "the output"))
        screen = tmux.screen(colours=True)
    band = re.findall(r"\x1b\[48;[0-9;]+m", headers_drawn(screen, "› !sh check.sh")[0])[0]  # the command's line is ollie's
    for line in ("  ✓ Run true", "_(end)_"):
        (row,) = headers_drawn(screen, line)
        assert band not in row, (line, band, screen)


def test_ollie_stop_typed_while_a_picked_session_loads_stops_that_session_s_turn(tmp_path: Path, scripted_llm):
    # Bug: a session whose turn runs on out of sight (:OllieNew during it) picked in :OllieSessions, and :OllieStop
    # typed at once: the stop went to the session the chat was leaving (idle), and the picked one's turn ran on.
    srv = scripted_llm("openai")
    story = threading.Event()
    srv.script(Reply(text="Once upon a time there was a tale.", hold=story))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"}, size=(80, 24)) as tmux:
        try:
            ask_and_stream(tmux, "tell a long story", "there was a tale.")
            tmux.keys(":OllieNew", "Enter")
            tmux.wait(lambda s: "Type a prompt" in s, "the new session's empty chat")
            tmux.keys("Escape", ":OllieSessions", "Enter")
            listed = tmux.wait(lambda s: "Type number" in s and "tell a long story" in s, "the sessions")
            [line] = [line for line in listed.splitlines() if "tell a long story" in line]
            tmux.keys(line.split(":", 1)[0], "Enter", "Escape", ":OllieStop", "Enter")
            tmux.keep("1-stopped", tmux.wait(lambda s: "there was a tale." in s and "(interrupted)" in s,
                                             "the picked session's turn stopped"))
        finally:
            story.set()
        assert_clean(tmux.screens)
