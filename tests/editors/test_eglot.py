"""Emacs eglot with no ollie package: `Ollie: Refactor...` from the code action list runs a turn; its edit lands."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ollie.testing import Reply

from .test_nvim import file_edit
from .test_nvim_tui import Tmux

HERE = Path(__file__).resolve().parent


@functools.cache  # (an Emacs start of 0.2 CPU-s: once per run)
def emacs_with_eglot() -> str:
    """The path of Emacs, failing the test when Emacs or its eglot is missing."""
    emacs = shutil.which("emacs")
    if not emacs or subprocess.run([emacs, "--batch", "--eval", "(require 'eglot)"], capture_output=True).returncode:
        pytest.fail("Emacs with eglot is not installed: scripts/setup.d/26-emacs.sh installs it")
    return emacs


def run_emacs(script: str, ws: Path, env: dict[str, str], out: Path, typed: str = "") -> dict:
    """Run `script` in a batch Emacs in `ws` with `env` and `typed` on stdin; the result it wrote to `out`."""
    proc = subprocess.run([emacs_with_eglot(), "--batch", "-l", str(HERE / script)], cwd=ws, input=typed,
                          env={**os.environ, **env, "OLLIE_TEST_OUT": str(out),
                               "OLLIE_TEST_SERVER_CMD": json.dumps([sys.executable, "-m", "ollie_lsp"])},
                          capture_output=True, text=True, timeout=120)
    assert out.exists(), f"emacs wrote no result (rc={proc.returncode})\n{proc.stderr[-3000:]}"
    result = json.loads(out.read_text())
    assert "failure" not in result, (result, proc.stderr[-3000:])
    return result


def workspace_with_code(tmp_path: Path, code: str) -> Path:
    """The workspace Emacs runs in, holding code.py with `code`."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "code.py").write_text(code)
    return ws


def test_eglot_runs_a_refactor_and_gets_the_edit(tmp_path, scripted_llm):
    ws = workspace_with_code(tmp_path, "# ollie: make mul multiply\ndef mul(a, b):\n    return a + b\n")
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(file_edit("code.py", "return a + b", "return a * b")), Reply.text("Done."))
    result = run_emacs("eglot_refactor.el", ws, srv.env(), tmp_path / "eglot.json")
    assert "Ollie: Ask about this..." in result["titles"] and "Ollie: Explain" in result["titles"]
    assert result["buffer"].endswith("    return a * b\n")
    assert "make mul multiply" in srv.chat_requests[0].body["messages"][-1]["content"]


def test_a_turn_slower_than_eglot_waits_is_answered_in_time_and_its_answer_shows(tmp_path, scripted_llm):
    """eglot freezes Emacs on executeCommand and fails it after 10 s: a slow turn was `Timed out`, Emacs stuck."""
    ws = workspace_with_code(tmp_path, "def add(a, b):\n    return a + b\n")
    srv = scripted_llm("openai")
    from ollie_lsp.codeactions import DETACH_AFTER

    assert DETACH_AFTER < 10  # the daemon answers before eglot gives up (here after 1 s: the test sat out 5)
    # A slow model: its frames 0.5 s apart, 2 s and more in all (4 s apart: 16-20 s of the test's time)
    srv.script(Reply.text("It adds.", delay=0.5))
    env = {**srv.env(), "OLLIE_TEST_ACTION": "Ollie: Explain", "OLLIE_TEST_UNTIL": "ollie: It adds.",
           "OLLIE_DETACH_AFTER_S": "1"}
    result = run_emacs("eglot_action.el", ws, env, tmp_path / "eglot.json")
    assert "Timed out" not in result["answer"], result
    assert json.loads(result["answer"])["stop"] == "running", result
    assert result["waited"] < 9, result
    assert any("still working (explain); its answer shows when it ends" in m for m in result["messages"]), result
    assert any("ollie: It adds." in m for m in result["messages"]), result


def test_a_prompt_sent_as_ollie_submit_is_answered_in_time_and_its_answer_shows(tmp_path, scripted_llm):
    """README's `ollie-ask` (`ollie.submit`) from eglot: Emacs froze until the turn ended, a turn over 10 s was
    `Timed out`, and the answer was only the command's result (the echo area of `M-:`; nothing from a key bound to
    it). The prompt's words in the message come escaped (a pasted escape reached the echo area)."""
    ws = workspace_with_code(tmp_path, "def add(a, b):\n    return a + b\n")
    srv = scripted_llm("openai")
    srv.script(Reply.text("It adds.", delay=0.5))  # 2 s and more: past the 1 s the daemon waits here
    readme = (HERE.parents[1] / "README.md").read_text()
    [snippet] = re.findall(r"```elisp\n(\(defun ollie-ask .*?)```", readme, re.S)
    env = {**srv.env(), "OLLIE_TEST_PROMPT": "what does \x1b[7madd do?", "OLLIE_TEST_UNTIL": "ollie: It adds.",
           "OLLIE_TEST_ELISP": snippet, "OLLIE_DETACH_AFTER_S": "1"}
    result = run_emacs("eglot_action.el", ws, env, tmp_path / "eglot.json")
    assert json.loads(result["answer"])["stop"] == "running", result
    assert result["waited"] < 9, result
    assert any("still working (what does \\x1b[7madd do?); its answer shows when it ends" in m for m in result["messages"])
    assert any("ollie: It adds." in m for m in result["messages"]), result
    assert srv.chat_requests[0].body["messages"][-1]["content"] == "what does \x1b[7madd do?"


def refactor_asked(tmp_path, scripted_llm, said: str, typed: str) -> dict:
    """`Ollie: Refactor...` on `mul`, whose model asks to edit `+` to `*` and then says `said`; `typed` answers."""
    ws = workspace_with_code(tmp_path, "def mul(a, b):\n    return a + b\n")
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(file_edit("code.py", "return a + b", "return a * b")), Reply.text(said))
    env = {**srv.env(approval="ask"), "OLLIE_TEST_ACTION": "Ollie: Refactor...", "OLLIE_TEST_UNTIL": f"ollie: {said}"}
    return run_emacs("eglot_action.el", ws, env, tmp_path / "eglot.json", typed=typed)


def test_a_step_asked_about_after_the_command_is_answered_reaches_the_user(tmp_path, scripted_llm):
    """Emacs' jsonrpc left a question that came right behind the command's answer unread: the turn hung on it."""
    result = refactor_asked(tmp_path, scripted_llm, "Changed + to *.", typed="Allow once\n")
    assert json.loads(result["answer"])["stop"] == "running", result  # answered before the question: eglot asks inside
    assert "Server reports (type=3): ollie: Changed + to *." in result["messages"], result
    assert result["buffer"] == "def mul(a, b):\n    return a * b\n"


def test_an_edit_asked_about_in_eglot_shows_its_change_and_offers_only_what_eglot_can_answer(tmp_path, scripted_llm):
    """eglot's question said `Edit code.py` alone (yes to an unseen change) and offered a feedback it cannot type."""
    result = refactor_asked(tmp_path, scripted_llm, "Not changed.", typed="Reject\n")
    [question] = result["questions"]
    # Short and readable: the one session eglot has is not named (`ollie (session 1796…-e2520e) asks to:` led it).
    assert question["prompt"].startswith("[eglot] Server reports (type=2): ollie asks to: Edit code.py ("), question
    assert "-    return a + b\n+    return a * b" in question["prompt"], question
    assert question["choices"] == ["Reject", "Allow once", "Allow always"], question
    assert result["buffer"] == "def mul(a, b):\n    return a + b\n"


def eglot_in_tmux(ws: Path, env: dict[str, str]) -> Tmux:
    """Emacs in a terminal with README's snippet, eglot connected in code.py, its edits applied unasked."""
    init = ws.parent / "init.el"
    init.write_text(f"""(require 'eglot)
(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs '((python-mode python-ts-mode) . ("{Path(sys.executable).parent / "ollie-lsp"}"))))
(setq eglot-confirm-server-initiated-edits nil)
(add-hook 'python-mode-hook #'eglot-ensure)""")
    emacs = Tmux(f"ollie-eglot-{os.getpid()}", ws, {**os.environ, **env, "TERM": "xterm-256color"},
                 [emacs_with_eglot(), "-nw", "-q", "-l", str(init), "code.py"], size=(120, 30))
    emacs.wait(lambda s: "[eglot:ws]" in s and "Connected" in s, "eglot connected", timeout=60)
    return emacs


def refactor_in_tmux(emacs: Tmux) -> str:
    """`Ollie: Refactor...` on the whole buffer from eglot's code actions; the screen once its question shows."""
    emacs.keys("C-x", "h", "M-x")
    emacs.type("eglot-code-actions", "Enter")
    emacs.wait(lambda s: "Pick an action" in s, "the code actions")
    emacs.type("Ollie: Refactor...", "Enter")
    return emacs.wait(lambda s: "Choose an option:" in s, "the question")


def test_a_return_typed_as_eglot_asks_about_a_step_rejects_it(tmp_path, scripted_llm):
    """eglot fills its question's first button in: it was "Allow once", and a RET typed in the buffer said yes."""
    ws = workspace_with_code(tmp_path, "def mul(a, b):\n    return a + b\n")
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(file_edit("code.py", "return a + b", "return a * b")), Reply.text("Not changed."))
    with eglot_in_tmux(ws, srv.env(approval="ask")) as emacs:
        asked = refactor_in_tmux(emacs)
        emacs.keys("Enter")  # the user, typing on, pressed RET as the question came up
        answered = emacs.wait(lambda s: "ollie: Not changed." in s, "the answer")
    assert asked.rstrip().endswith("Choose an option: Reject"), asked
    assert "return a + b" in answered and "a * b" not in answered, answered  # the buffer as it was
    assert "rejected" in srv.chat_requests[-1].body["messages"][-1]["content"]


def test_a_tall_question_still_says_what_it_asks_and_how_much_of_the_diff_is_left_out(tmp_path, scripted_llm):
    """The minibuffer shows a tall prompt's end: `asks to: Edit code.py` had scrolled out above the diff."""
    old = "".join(f"x{n} = {n}\n" for n in range(40))
    ws = workspace_with_code(tmp_path, old)
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(file_edit("code.py", old, old.replace(" = ", " == "))), Reply.text("Not changed."))
    with eglot_in_tmux(ws, srv.env(approval="ask")) as emacs:
        refactor_in_tmux(emacs)  # (its screen may be the minibuffer's first line alone, the prompt still growing)
        asked = emacs.keep("eglot-tall-question", emacs.wait(
            lambda s: "asks to: Edit code.py" in s and "more diff lines" in s, "the whole question"))
        emacs.keys("Enter")
        emacs.wait(lambda s: "ollie: Not changed." in s, "the answer")
    assert "asks to: Edit code.py" in asked and "more diff lines" in asked, asked


def test_a_long_answers_file_local_variables_do_nothing_in_emacs(tmp_path, scripted_llm):
    """Red team round 24: Emacs applies a `-*- ... -*-` first line and a `Local Variables:` list at a file's end when
    it opens it, as eglot (1.12 and later) opens a long answer: `mode: server` called `server-mode` unasked, which
    starts Emacs' server (any `*-mode` function runs so); `eval:` is put to the user as a question."""
    ws = workspace_with_code(tmp_path, "def add(a, b):\n    return a + b\n")
    srv = scripted_llm("openai")
    answer = ("It adds. -*- mode: server -*-\nThat is all.\n\n"
              "Local Variables:\nmode: server\neval: (write-region \"x\" nil \"evaluated\")\nEnd:")
    srv.script(Reply.text(answer))
    result = run_emacs("eglot_answer.el", ws, srv.env(), tmp_path / "eglot.json", typed="n\n" * 5)
    assert (result["mode"], result["server"]) == ("text-mode", False), result
    assert result["text"] == answer.replace("-*-", "-* -").replace("Variables:", "Variables :") + "\n"
    assert not (ws / "evaluated").exists()


def test_a_reconnect_goes_on_with_the_session(tmp_path, scripted_llm):
    """eglot keeps no session id: after `eglot-reconnect` (a new daemon) its next action ran in a fresh session."""
    ws = workspace_with_code(tmp_path, "def add(a, b):\n    return a + b\n")
    srv = scripted_llm("openai")
    srv.script(Reply.text("It adds."), Reply.text("It still adds."))
    env = {**srv.env(), "OLLIE_TEST_ACTION": "Ollie: Explain", "OLLIE_TEST_UNTIL": "adds.",
           "OLLIE_TEST_RECONNECT": "1", "OLLIE_TEST_INIT": json.dumps({"continueSession": True})}
    result = run_emacs("eglot_action.el", ws, env, tmp_path / "eglot.json")
    assert any("ollie: It still adds." in m for m in result["messages"]), result
    second = srv.chat_requests[1].body["messages"]
    assert [m["content"] for m in second if m["role"] == "assistant"] == ["It adds."], second
