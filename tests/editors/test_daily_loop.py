"""The daily loop in the real editors: a turn edits calc.py, open and unsaved-capable (auto-save off), then runs
`python3 test_calc.py`, which must pass: every step sees the agent's own earlier edits. A user's unsaved text in a
file the agent did not touch stays unsaved."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ollie.testing import Reply

from .test_nvim import run_scenario, workspace  # noqa: F401 (the fixture)
from .test_nvim_daily import chat_of
from .test_nvim_tui import assert_clean, choice, start_nvim

LOOP = (1300, 720)  # a screen's PNG, in pixels
CALC = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\nassert add(2, 3) == 5, f'add(2, 3) is {add(2, 3)}'\nprint('tests passed')\n"
NOTES = "my notes\n"


def script(srv) -> None:
    """The model fixes add in calc.py, then runs the tests."""
    srv.script(
        Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["calc.py", "a - b", "a + b"]}]})),
        Reply.tool_calls(("execute_code", {"steps": [{"code": "python3 test_calc.py", "language": "bash"}]})),
        Reply.text("Fixed add; the tests pass."),
    )


def seed(ws: Path) -> None:
    for name, text in (("calc.py", CALC), ("test_calc.py", TEST), ("notes.txt", NOTES)):
        (ws / name).write_text(text)


def test_neovim_headless_edit_then_test(workspace: Path, scripted_llm):  # noqa: F811
    srv = scripted_llm("openai")
    script(srv)
    seed(workspace)
    result = run_scenario("edit_then_test", workspace, srv)
    ran = srv.chat_requests[2].body["messages"][-1]["content"]
    assert "tests passed" in ran and "AssertionError" not in ran, ran
    assert result["calc_disk"] == FIXED.splitlines()
    assert result["calc_buffer"] == FIXED.splitlines() and not result["calc_modified"], "the buffer was written"
    assert result["notes_modified"] and (workspace / "notes.txt").read_text() == NOTES, "the user's notes were saved"
    assert result["calc_after_undo"] == CALC.splitlines(), "the edit is undoable in the editor"
    # The rewind restored calc.py and removed the test run's __pycache__/calc.*.pyc: the notice counts the file the
    # turn changed (as the chat's "1 file changed" did) and names the build output apart, as the engine's /rewind does.
    assert re.search(r"rewound to before turn 1 \(no turns kept, 1 file restored, and build output "
                     r"\(__pycache__/calc\.cpython-\d+\.pyc\)\)$", result["rewound"]), result["rewound"]
    assert result["calc_after_rewind"] == CALC.splitlines() and not (workspace / "__pycache__").exists()


def test_neovim_tui_edit_then_test(tmp_path: Path, scripted_llm):
    """In the TUI as README sets it up: calc.py on screen, notes.txt in a split with a line the user has not saved;
    the turn's tests pass, calc.py's buffer is written (no `[+]`), notes.txt's is not. The screen is kept as a PNG."""
    srv = scripted_llm("openai")
    script(srv)
    with start_nvim(tmp_path, srv.env(approval="auto"), {"calc.py": CALC, "test_calc.py": TEST, "notes.txt": NOTES}) as tmux:
        ws = tmp_path / "ws"
        tmux.wait(lambda s: "return a - b" in s, "nvim to start")
        tmux.keys(":split notes.txt", "Enter")
        tmux.keys("Go", "the user's unsaved line", "Escape")
        tmux.keys(":wincmd p", "Enter")
        tmux.keys(":Ollie fix add and run the tests", "Enter")
        done = tmux.keep("edit-then-test", tmux.wait(lambda s: "(end)" in s, "the turn", 60), LOOP)
        assert (tmux.captures / "edit-then-test.png").stat().st_size > 0  # type: ignore[operator]
        assert "tests passed" in srv.chat_requests[2].body["messages"][-1]["content"]
        assert "✓ Run python3 test_calc.py" in done and "[step 1 bash] exit 0 · tests passed" in done, done
        assert "return a + b" in done and "calc.py [+]" not in done, done
        # The run wrote __pycache__/calc.*.pyc: build output, not a change of the turn.
        assert "✎ 1 file changed" in done, done
        assert "notes.txt [+]" in done, done
        assert (ws / "calc.py").read_text() == FIXED and (ws / "notes.txt").read_text() == NOTES
        assert_clean(tmux.screens)


def test_neovim_tui_an_asked_edit_of_a_buffer_with_her_unsaved_line_says_so_and_the_tests_see_both(
        tmp_path: Path, scripted_llm):
    """Under `ask`, the user has typed a line into calc.py without saving, a prompt queued as the first answer
    streams: the edit's question says her unsaved changes go to disk with it, as VS Code's does (Bug: only the chat's
    note after the call said so, too late to finish or undo them first); allowed, the tests the agent runs next see
    the fix and her line."""
    srv = scripted_llm("openai")
    srv.script(Reply(text="calc.py adds. " * 40, delay=0.05, chunk_size=14), *(
        Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["calc.py", "a - b", "a + b"]}]})),
        Reply.tool_calls(("execute_code", {"steps": [{"code": "python3 test_calc.py", "language": "bash"}]})),
        Reply.text("Fixed add; the tests pass.")))
    with start_nvim(tmp_path, srv.env(approval="ask"), {"calc.py": CALC, "test_calc.py": TEST}) as tmux:
        tmux.wait(lambda s: "return a - b" in s, "nvim to start")
        tmux.keys("G", "o")
        tmux.type("SUB = 1  # typed, not saved", "Escape")
        tmux.keys(":Ollie explain calc.py", "Enter")
        tmux.wait(lambda s: "calc.py adds." in s, "the answer to stream")
        tmux.keys(":OllieChat", "Enter")
        tmux.type("fix add and run the tests", "Escape", "Enter")
        asked = tmux.keep("1-asked", tmux.wait(lambda s: "Allow once" in s and "ollie asks to: Edit calc.py" in s,
                                               "the edit's question", timeout=60), LOOP)
        assert (tmux.captures / "1-asked.png").stat().st_size > 0  # type: ignore[operator]
        assert "calc.py has your unsaved changes: allowing saves them with the edit" in asked, asked
        tmux.keys(choice(asked, "Allow once"), "Enter")
        ran = tmux.wait(lambda s: "Allow once" in s and "python3 test_calc.py" in s, "the run's question", timeout=60)
        assert "allowing saves them" not in ran, ran  # (a program's question: no file of hers it saves)
        tmux.keys(choice(ran, "Allow once"), "Enter")
        tmux.keep("2-done", tmux.wait(lambda s: "Fixed add; the tests pass." in s and "(end)" in s, "the turn", 60))
        assert "tests passed" in srv.chat_requests[-1].body["messages"][-1]["content"]
        assert (tmp_path / "ws" / "calc.py").read_text() == FIXED + "SUB = 1  # typed, not saved\n"
        assert_clean(tmux.screens)


@pytest.mark.slow
@pytest.mark.timeout(330)
def test_vscode_the_agent_s_edits_against_unsaved_buffers_the_disk_and_the_sandbox(run_e2e):
    """In real VS Code (auto-save off), one window, eight scenarios (agentedits.mjs), each on its own files:
    - editoutside (approval `ask`): the agent's edit of a file outside the workspace is refused without a question,
      and the chat says which file and key would allow it (filesystem.rw in the user's sandbox.yaml). Screenshot:
      edit-outside.
    - outside (approval `ask`, an elevated step): one card, showing exactly what runs outside the sandbox and no
      "Allow always"; Allow once runs it (it was two questions: the card, then a notification about the same code).
      Under `auto` the elevation alone is that card too, the program's lines whole (screenshot outside-auto-question),
      Reject keeps it in.
    Then under `auto`:
    - formatonsave: with files.trimTrailingWhitespace and editor.formatOnSave (trim.txt's language), ollie's save of
      the agent's edit trimmed its line and another: its undo was refused as the user's edit since; now the file goes
      back to before the turn. Screenshot: format-on-save-undone.
    And the user has typed into the file without saving:
    - samebytes: a step's `sed -i` matched nothing but wrote b.py anew (a new mtime, the same bytes), then the agent
      edited b.py: the edit is saved with the user's text (before: refused as changed on disk); the chat tells the
      user their unsaved line was saved with it, and Undo in the editor takes back the edit alone. Screenshots:
      samebytes, samebytes-undone.
    - behind: a step rewrote a.py on disk, then the agent edited a.py: the chat says so when the step ends, the edit is
      refused, the buffer keeps the user's text (unsaved) and the disk the step's change. Screenshot: behind.
    - savesafe: c.py changed on disk outside the agent's steps (a `git checkout` in a terminal) while the extension
      host was too busy to hear of it in time, then the agent edited c.py: the edit stays in the buffer, unsaved, the
      disk keeps the checkout, the chat and a warning (in the Notifications center: its toast hides) say so, the step
      done with a warning that says to merge and save or reload (it was a red failed step). Screenshot: savesafe.
    - dailyloop: the turn edits calc.py in its buffer, the daemon has it saved, the tests run the fix and pass;
      notes.txt, with the user's unsaved line, stays unsaved. Under `ask` each allowed edit's diff shows once, a
      question's diff wraps its lines in a side bar dragged to 175 px (they scrolled sideways, an added line's end out
      of sight), and a program's approval question shows its code whole (it showed the first line), a long line
      wrapped in the card (its end was cut at the card's edge); a batch of 12 edits is one question showing each call
      (it was twelve) and each edit's diff, the 12th's opened from its row (it showed no diff), and says n0.py holds
      the user's unsaved line (it said nothing of it; one edit's question does).
      Screenshots: daily-loop, allowed-diff-once, program-question, batch-question.
    - forgednote: a failed step printed a line that reads as the sandbox's note: under its title it shows as the
      step's line (`[warning] ... (this line is the step's output)`), not as ollie's note. Screenshot:
      forged-sandbox-note."""
    output = run_e2e("agentedits.mjs")
    for scenario, said in (
        ("editoutside", "an edit outside the workspace: refused, the chat says which file and key would allow it"),
        ("outside", "one question showed what runs outside the sandbox, without Allow always, and its answer ran it"),
        ("outside", "under auto the elevation was a card with the program's lines whole, no Allow always, and Reject kept "
                    "it in"),
        ("formatonsave", "an edit trimmed by ollie's save is undone, the file as before the turn and trimmed"),
        ("samebytes", "the agent's edit saved with the user's text"),
        ("samebytes", "the chat told the user their unsaved line was saved with the edit"),
        ("samebytes", "undo in the editor took back the agent's edit alone"),
        ("behind", "the agent's edit refused, the buffer and the disk both kept"),
        ("savesafe", "the agent's edit stays in the buffer, unsaved, and both are told, the step done with a warning"),
        ("dailyloop", "edit then test: calc.py was edited in its buffer and saved"),
        ("dailyloop", "each question's diff wraps its lines in a 175 px side bar"),
        ("dailyloop", "each allowed edit's diff is shown once"),
        ("dailyloop", "a program's question showed its code whole"),
        ("dailyloop", "a batch of 12 edits was one question listing each call and diff and the unsaved file; Allow once "
                      "ran them all"),
        ("forgednote", "a step's line that reads as the sandbox's note is shown as the step's"),
    ):
        assert said in output, f"scenario {scenario}: {said!r} not said\n{output[-3000:]}"


def test_neovim_restart_picks_up_a_configured_model(workspace: Path, scripted_llm):  # noqa: F811
    """:OllieRestart after the user wrote ~/.config/ollie/env: a fresh daemon (the old one gone) reads it; the chat
    keeps its session and the next prompt gets the model's answer."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("Hi from the configured model."))
    configured = srv.env()
    env_text = "\n".join(f"{k}={v}" for k, v in configured.items() if k != "OLLIE_APPROVAL")

    class Unconfigured:
        """No backend in the environment: Ollama's default, with nothing listening at this URL."""

        @staticmethod
        def env() -> dict[str, str]:
            return {"OLLIE_OLLAMA_URL": "http://127.0.0.1:9", "OLLIE_TEST_ENV_TEXT": env_text}

    result = run_scenario("restart", workspace, Unconfigured)
    assert result["first_daemon"] != result["second_daemon"] and result["first_stopped"]
    assert result["session_after"] == result["session_before"]
    assert "ollama" in result["chat_before"].lower(), result["chat_before"]
    # Drawn from the new daemon, the failed turn says it failed (Bug: "the turn was interrupted": the user had
    # stopped nothing; VS Code said it failed).
    assert "this prompt failed before the model replied" in result["chat_after"], result["chat_after"]
    assert "interrupted" not in result["chat_after"], result["chat_after"]
    assert "Hi from the configured model." in result["chat"]
    assert len(srv.chat_requests) == 1


def test_neovim_tui_a_command_changes_a_file_the_user_has_not_saved(tmp_path: Path, scripted_llm):
    """The agent's command appends to notes.txt while its buffer holds the user's unsaved line: the turn shows to its
    end and the buffer keeps the line (before, reloading it put Vim's W12 question up mid-turn, holding the editor,
    its Load dropping the line)."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": "echo agent line >> notes.txt",
                                                             "language": "bash"}]})),
               Reply.text("Appended."))
    with start_nvim(tmp_path, srv.env(approval="auto"), {"notes.txt": NOTES}) as tmux:
        tmux.wait(lambda s: "my notes" in s, "nvim to start")
        tmux.keys("o", "the user's unsaved line", "Escape")
        tmux.wait(lambda s: "notes.txt [+]" in s, "the unsaved line")
        tmux.keys(":Ollie add a line to notes.txt", "Enter")
        done = tmux.keep("command-changed-unsaved", tmux.wait(lambda s: "(end)" in s, "the turn", 60))
        assert "Appended." in done and "W12" not in done, done
        assert "the user's unsaved line" in done and "notes.txt [+]" in done, done
        assert (tmp_path / "ws" / "notes.txt").read_text() == NOTES + "agent line\n"
        assert_clean(tmux.screens)


def test_neovim_tui_an_edit_outside_the_workspace_says_how_to_allow_it(tmp_path: Path, scripted_llm):
    """Under `ask` (a user's default) the agent edits a file outside the workspace: refused without a question, and
    the chat says which file and key would allow it, as a step's refusal does (before: only the sandbox's list of
    writable paths, /dev/zero and ollie's own dirs among them, and nothing on what the user could do). Screenshot:
    edit-outside.png."""
    outside = tmp_path / "elsewhere" / "todo.txt"
    outside.parent.mkdir()
    outside.write_text("one\n")
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": [str(outside), "one", "two"]}]})),
               Reply.text("It is outside the workspace: not changed."))
    with start_nvim(tmp_path, srv.env(approval="ask"), {"calc.py": CALC}) as tmux:
        tmux.wait(lambda s: "def add" in s, "nvim to start")
        tmux.keys(f":Ollie change one to two in {outside}", "Enter")
        done = tmux.keep("edit-outside", tmux.wait(lambda s: "(end)" in s, "the turn", 60), LOOP)
        chat = "".join(chat_of(done).split())
        said = f"{outside}isoutsidethewritablepathsofsandboxpolicy'default';ifthestepneedsit,theusercanaddits"
        assert said in chat, done
        assert "directorytofilesystem.rwin" in chat and "sandbox.yaml" in chat, done
        assert "/dev/zero" not in chat and f"writablepaths({tmp_path.parent}/" in chat, "the paths it lists are directories"
        told = srv.chat_requests[1].body["messages"][-1]["content"]
        assert "filesystem.rw in" in told and outside.read_text() == "one\n", told
        assert_clean(tmux.screens)
