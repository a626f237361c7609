"""How a step's end shows in the chat (nvim in tmux, README's `setup({})`): its exit status is its mark, and a
command's folded output says what it ended with, as VS Code's step outcome does."""

from __future__ import annotations

import contextlib
import http.server
import re
import threading
from collections.abc import Iterator
from pathlib import Path

from ollie.testing import Reply

from .test_nvim_tui import Tmux, assert_clean, auto_env_reaching_other_test, choice, start_nvim


class Forbidden(http.server.BaseHTTPRequestHandler):
    """Answers every GET 403, with an error body."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = b'{"message": "Forbidden"}\n'
        self.send_response(403)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_curl_on_a_403_exits_0_and_its_folded_output_shows_the_error_body(tmp_path: Path, scripted_llm):
    # Bug: the step showed "✓ Run curl ..." over "[step 1 bash] exit 0 … +2 lines": the 403 was a fold away, where VS
    # Code shows the output's last line under the step. The ✓ stays (curl exited 0: the exit status is the truth).
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Forbidden)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    srv = scripted_llm("openai")
    url = f"http://other.test:{server.server_address[1]}/x"
    srv.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": f"curl -s {url}"}]})]),
               Reply(tool_calls=[("execute_code", {"steps": [{"code": "echo 'no token' >&2; exit 22"}]})]),
               Reply.text("Fetched it."))
    tmux = start_nvim(tmp_path, auto_env_reaching_other_test(srv), {"app.py": "print('hi')\n"}, size=(160, 30))
    try:
        tmux.wait(lambda s: "print('hi')" in s, "nvim to start")
        tmux.keys(":Ollie fetch it", "Enter")
        asked = tmux.wait(lambda s: "Allow network access to other.test" in s and "Allow once" in s, "the question")
        tmux.keys(choice(asked, "Allow once"), "Enter")
        tmux.keys("Escape")  # (normal mode: Neovim makes no fold in insert mode)
        done = tmux.keep("1-ended", tmux.wait(lambda s: "Fetched it." in s and "(end)" in s and "… +" in s,
                                              "the turn's end, its output folded", timeout=60), (1300, 560))
        assert "✓ Run curl -s" in done, done
        assert re.search(r'│ \[step 1 bash\] exit 0 · {"message": "Forbidden"} … \+\d+ lines$', done, re.M), done
        # A failed one's short output stays open, unchanged: its ✗ and its error.
        assert "✗ Run echo 'no token' >&2; exit 22" in done, done
        assert re.search(r"│ \[step 1 bash\] exit 22\n.*│ \[stderr\]\n.*│ no token$", done, re.M), done
        assert_clean(tmux.screens)
    finally:
        tmux.close()
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def after_one_step(tmp_path: Path, scripted_llm, code: str, answer: str, shot: str,  # type: ignore[no-untyped-def]
                   rows: int, *more: str) -> Iterator[tuple[Tmux, str]]:
    """Neovim (160 columns) once a turn of one auto-approved `code` step (and `more` in its batch) and `answer` ended,
    in normal mode (Neovim makes no fold in insert mode) with the step's output folded: the screen then, kept and drawn
    as `shot`.png."""
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": c} for c in (code, *more)]})]), Reply.text(answer))
    with start_nvim(tmp_path, srv.env(approval="auto"), {"app.py": "print('hi')\n"}, size=(160, rows)) as tmux:
        tmux.wait(lambda s: "print('hi')" in s, "nvim to start")
        tmux.keys(":Ollie run it", "Enter")
        tmux.keys("Escape")
        done = tmux.keep(shot, tmux.wait(lambda s: answer in s and "(end)" in s and "… +" in s,
                                         "the turn's end, its output folded", timeout=60), (1300, 560))
        yield tmux, done


def test_a_commands_last_line_of_60000_spaces_folds_without_holding_neovim(tmp_path: Path, scripted_llm):
    # Round 38: the fold line's outcome stripped a banner's trailing `=`s with `%s*=+$`, which Lua tried from each
    # character: a step's (a hostile test's) last line `a`, 60,000 spaces, `b` held Neovim minutes at every redraw of
    # the fold (foldtext), every key waiting.
    with after_one_step(tmp_path, scripted_llm, "printf 'a%60000sb\\n' ''", "Printed it.", "1-ended", 30) as (tmux, done):
        assert re.search(r"│ \[step 1 bash\] exit 0 · a +… \+\d+", done, re.M), done
        # Neovim answers a key at once (each redraw draws the fold line again).
        tmux.keys(":echo 'still here'", "Enter")
        tmux.wait(lambda s: "still here" in s, "Neovim to answer a key", timeout=20)
        assert_clean(tmux.screens)


def test_a_failed_step_s_long_output_shows_its_last_lines_unfolded(tmp_path: Path, scripted_llm):
    # Bug: a failed step's output of more than 8 lines stayed folded behind its exit line: why it failed a fold away.
    code = "seq 1 12; echo 'AssertionError: 2 != 3'; exit 1"
    with after_one_step(tmp_path, scripted_llm, code, "It failed.", "1-failed", 40) as (_, done):
        assert re.search(r"│ \[step 1 bash\] exit 1 … \+7 lines\n.*│ 8\n.*│ 9\n.*│ 10\n.*│ 11\n.*│ 12\n"
                         r".*│ AssertionError: 2 != 3\n", done), done


def test_a_batch_whose_second_step_failed_folds_under_that_step_s_failure(tmp_path: Path, scripted_llm):
    # Bug: the fold said the first step's `[step 1 bash] exit 0 … +14 lines`, the batch's failure a fold away.
    with after_one_step(tmp_path, scripted_llm, "seq 1 12", "It failed.", "batch-failed", 40, "exit 2") as (_, done):
        assert re.search(r"│ step 2 bash: exit 2 … \+\d+ lines\n", done), done


def test_on_a_step_s_title_the_statusline_names_its_diff_key_and_a_binary_file_says_so(tmp_path: Path, scripted_llm):
    # Bugs: nothing said that <CR> on a step's title opens its diff; and a step's diff of a binary file (the daemon
    # sends both texts null) opened two empty sides, as if the file were empty before and after.
    code = "printf 'a\\0b' > blob.bin; seq 1 12"
    with after_one_step(tmp_path, scripted_llm, code, "Wrote it.", "1-ended", 30) as (tmux, _):
        tmux.keys(":lua vim.fn.win_gotoid(vim.fn.win_findbuf(vim.fn.bufnr('ollie://chat/'))[1])", "Enter")
        tmux.keys(":call search('printf')", "Enter")  # (the title's `printf ...` is code)
        on_step = tmux.keep("2-on-step", tmux.wait(lambda s: "<CR> opens this step's diff" in s, "the hint"),
                            (1300, 560))
        assert "│ ollie: idle $0.00 · <CR> opens this step's diff" in on_step, on_step
        tmux.keys("Enter")
        told = tmux.keep("3-binary", tmux.wait(lambda s: "is binary" in s.splitlines()[-1], "the notice"))
        assert told.splitlines()[-1].strip() == "ollie: blob.bin is binary: no diff", told
        assert "before Run printf" not in told and tmux.screen().count("Wrote it.") == 1, told  # (no diff tab)
        tmux.keys("G")  # off the step: the session's title again
        tmux.keep("4-off", tmux.wait(lambda s: "opens this step's diff" not in s and "ollie: idle" in s, "no hint"))
        assert_clean(tmux.screens)


def _task(tool: str, *args: str) -> Reply:
    return Reply.tool_calls(("call_tool", {"calls": [{"tool": tool, "args": list(args)}]}))


def test_the_agents_plan_shows_over_the_chat_as_it_changes_and_after_a_rewind_a_clear_and_a_resume(tmp_path: Path,
                                                                                                  scripted_llm):
    # Bug: Neovim never showed the agent's plan (the daemon did not send it): the user could not see what the agent
    # meant to do next, nor how far it was.
    srv = scripted_llm("openai")
    srv.script(_task("task_add", "write the parser", "test it"), Reply.text("Planned."), _task("task_check", "1"),
               Reply.text("Written."))
    tmux = start_nvim(tmp_path, srv.env(), {"app.py": "print('hi')\n"}, size=(160, 30))




    try:
        tmux.wait(lambda s: "print('hi')" in s, "nvim to start")
        tmux.keys(":OllieChat", "Enter")
        tmux.type("plan it", "C-s")
        planned = tmux.keep("1-planned", tmux.wait(lambda s: "Planned." in s and "▸ write the parser" in s,
                                                   "the plan with the turn's answer"))
        assert "plan 0/2" in planned and "○ test it" in planned, planned
        tmux.type("write it", "C-s")
        written = tmux.keep("2-written", tmux.wait(lambda s: "Written." in s and "✓ write the parser" in s,
                                                   "the first step done"), (1640, 560))
        assert "plan 1/2" in written and "▸ test it" in written, written
        # Bug: the float covered up to a quarter of the transcript, and nothing folded it. `gp` in the transcript
        # folds it to the step in progress, for the tab page: it stays folded as the plan changes and the chat reopens.
        tmux.keys("Escape", "C-w", "k", "g", "p")
        tmux.keep("2-folded", tmux.wait(lambda s: "plan 1/2" in s and "▸ test it" in s and "✓ write the parser" not in s,
                                        "the plan folded to its step in progress"))
        tmux.keys("i")
        tmux.type("/rewind 2", "C-s")
        tmux.keep("3-rewound", tmux.wait(lambda s: "Written." not in s and "▸ write the parser" in s and "plan 0/2" in s
                                         and "○ test it" not in s, "the plan the rewound turn found, still folded"))
        tmux.type("/clear", "C-s")
        tmux.keep("4-cleared", tmux.wait(lambda s: "saved as" in s and "plan 0/2" not in s and "○ test it" not in s,
                                         "no plan in the new conversation"))
        tmux.keys("Escape", ":OllieSessions", "Enter")
        picker = tmux.wait(lambda s: "Type number" in s and bool(re.findall(r"(\d+): plan it", s)), "the sessions to pick from")
        tmux.keys(re.findall(r"(\d+): plan it", picker)[0], "Enter")
        resumed = tmux.keep("5-resumed", tmux.wait(lambda s: "Planned." in s and "plan 0/2" in s, "the kept copy"))
        assert "▸ write the parser" in resumed, resumed
        # `:q` in the chat takes the float with its windows (a float left behind stayed over the code); :OllieChat
        # shows both again.
        tmux.keys("Escape", ":q", "Enter")
        tmux.keep("6-closed", tmux.wait(lambda s: "Planned." not in s and "plan 0/2" not in s, "the chat closed"))
        tmux.keys(":OllieChat", "Enter")
        shown = tmux.keep("7-shown", tmux.wait(lambda s: "Planned." in s and "plan 0/2" in s, "the chat and its plan"))
        assert "○ test it" not in shown, shown
        tmux.keys("Escape", "C-w", "k", "g", "p")
        tmux.keep("8-unfolded", tmux.wait(lambda s: "▸ write the parser" in s and "○ test it" in s, "the plan whole"))
        assert_clean(tmux.screens)
    finally:
        tmux.close()


def test_a_plan_of_20000_steps_a_step_wrote_shows_as_its_first_100_its_overrides_drawn_as_codes(tmp_path: Path,
                                                                                                  scripted_llm):
    # Round 60: a step wrote 20,000 steps to the plan file: the float drew them all ("plan 0/20002"), again at each
    # state change of the turn. Held: Neovim draws a U+202E, U+200B or C1 control as its code (`<202e>`), a C0 one
    # as a space.
    code = ("import os; open(os.environ['OLLIE_PLAN_FILE'], 'w').write('- [ ] ship \\u202egnp.tset\\n"
            "- [ ] \\x1b]0;pwned\\x07 title\\u200b\\u009b2J\\n' + '- [ ] s\\n' * 20000)")
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": code, "language": "python3"}]})]),
               Reply.text("Planned."))
    tmux = start_nvim(tmp_path, srv.env(approval="auto"), {"app.py": "print('hi')\n"}, size=(160, 30))
    try:
        tmux.wait(lambda s: "print('hi')" in s, "nvim to start")
        tmux.keys(":Ollie plan it", "Enter")
        planned = tmux.keep("1-planned", tmux.wait(lambda s: "Planned." in s and "(end)" in s, "the turn's end"),
                            (1640, 560))
        # 100 drawn, all 20,002 counted (it read "plan 0/100": the daemon's `… 19902 more steps` counted as one).
        assert "plan 0/20002" in planned and "▸ ship <202e>gnp.tset" in planned, planned
        assert "○  ]0;pwned  title<200b><9b>2J" in planned and "\u202e" not in planned, planned
        assert_clean(tmux.screens)
    finally:
        tmux.close()
