"""The terminal as a person uses it, on a real pseudo-terminal: approvals, diffs, steps, markdown, /sessions,
and two terminals on one session."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from ollie.testing import Reply
from tests.procs import new_mark, processes_with, wait_until

from .conftest import child_env, noted_agent_env
from .test_cli import free_port, run_ollie

OLLIE = [sys.executable, "-m", "ollie.cli"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Terminal:
    """`ollie` with its stdin, stdout and stderr on one pty; what it printed so far, styles removed."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path, *, size: tuple[int, int] = (24, 80),
                 ctty: bool = False, shell: bool = False) -> None:
        """`ctty`: the pty is ollie's controlling terminal, a Ctrl-C typed on it (`\x03`) signals it as a user's does;
        `shell`: an interactive bash instead (prompt `SH$ `), the pty its controlling terminal: Ctrl-Z stops a job."""
        self.master, slave = pty.openpty()
        self.resize(*size)  # before it starts: what it says first is fitted to it
        command, env = (["bash", "--norc", "-i"], {**env, "PS1": "SH$ "}) if shell else (
            [*(["setsid", "--ctty"] if ctty else []), *OLLIE, *args], env)
        self.proc = subprocess.Popen(command, env=child_env({**env, "TERM": "xterm"}), cwd=cwd, stdin=slave,
                                     stdout=slave, stderr=slave, start_new_session=not ctty,
                                     preexec_fn=(lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0)) if shell else None)
        self.slave_name = os.ttyname(slave)
        os.close(slave)
        self.raw = ""

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw).replace("\r\n", "\n")

    def wait_for(self, pattern: str, *, after: int = 0, timeout: float = 60) -> int:
        """Read until `pattern` (a regex) shows in the output past `after`; the end of the match."""
        deadline = time.monotonic() + timeout
        while not (found := re.search(pattern, self.text[after:])):
            left = deadline - time.monotonic()
            assert left > 0, f"{pattern!r} never showed; the terminal shows:\n{self.text[after:]}"
            if select.select([self.master], [], [], min(left, 1.0))[0]:
                try:
                    self.raw += os.read(self.master, 65536).decode("utf-8", "replace")
                except OSError:  # the process ended and the pty closed
                    raise AssertionError(f"{pattern!r} never showed before the end:\n{self.text[after:]}") from None
        return after + found.end()

    def resize(self, rows: int, columns: int) -> None:
        """The terminal's size as the program reads it (TIOCGWINSZ)."""
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def wait_read(self) -> None:
        """Wait until ollie read every line typed (the pty holds none unread)."""
        fd = os.open(self.slave_name, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
        try:
            unread = lambda: struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]  # noqa: E731
            wait_until(lambda: unread() == 0, "ollie never read the lines typed")
        finally:
            os.close(fd)

    def answer(self, line: str, pattern: str, *, after: int) -> int:
        """Type `line`, then read until `pattern` shows past `after` (see wait_for)."""
        self.type(line)
        return self.wait_for(pattern, after=after)

    def streaming(self, prompt: str, words: str = r"word word ") -> int:
        """At the prompt, send `prompt`; read until its answer's `words` stream (where they end)."""
        at = self.wait_for(r"default> ")
        self.type(prompt)
        return self.wait_for(words, after=at)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *_: object) -> None:
        self.proc.kill()  # a test that failed midway leaves no ollie behind

    def close(self) -> int:
        os.write(self.master, b"\x04")  # Ctrl-D at the prompt
        try:
            code = self.proc.wait(timeout=30)
            self._read_rest()
            return code
        finally:
            self.proc.kill()
            os.close(self.master)

    def _read_rest(self) -> None:
        """Take what the ended process wrote last (its goodbye) into `text`."""
        while select.select([self.master], [], [], 0)[0]:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # every byte read: the pty is closed
                return
            if not chunk:
                return
            self.raw += chunk.decode("utf-8", "replace")


BROKEN_ADD = "def add(a, b):\n    return a - b\n"


def test_a_day_at_the_terminal_reads_like_a_conversation(llm, tmp_path):
    (tmp_path / "calc.py").write_text(BROKEN_ADD)
    llm.script(
        Reply.file_edit("calc.py", "return a - b", "return a + b"),
        Reply.text("# Fixed\n\nThe **bug** was in `add`:\n\n```python\nreturn a + b\n```\n- it adds now\n"),
        Reply.file_edit("calc.py", "return a + b", "return b + a"),
        Reply.text("Left it as it was."),
    )
    with Terminal(["--cwd", str(tmp_path)], llm.env(approval="ask"), tmp_path) as term:
        at = term.wait_for(r"default> ")
        term.type("fix the add function")
        # The edit's diff comes before the question, and a person's "Y" says yes.
        at = term.wait_for(r"Allow\? \[y\]es once", after=at)
        asked = term.text
        assert "-    return a - b\n+    return a + b" in asked, asked
        assert asked.index("+    return a + b") < asked.index("ollie asks to: Edit calc.py")
        at = term.answer("Y", r"it adds now\n", after=at)
        assert (tmp_path / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
        turn = term.text
        # The step as a line, the answer's markdown shown, not its markers.
        assert "▸ Edit calc.py" in turn, turn
        assert "Fixed\n\nThe bug was in add:\n\n    return a + b\n• it adds now\n" in turn, turn
        assert "**" not in turn and "```" not in turn and "# Fixed" not in turn
        at = term.wait_for(r"default> ", after=at)
        # "no" (any case) rejects; a word that is no answer asks again instead of rejecting.
        at = term.answer("undo the swap", r"Allow\? ", after=at)
        at = term.answer("maybe", r"not an answer: maybe; type y, a, n or f, or n with words for the model\)\nAllow\? ", after=at)
        at = term.answer("No", r"Left it as it was\.", after=at)
        assert (tmp_path / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
        # /sessions: titles and times, not bare ids.
        at = term.wait_for(r"default> ", after=at)
        at = term.answer("/sessions", r"sessions \(1\):\n(.*)\n(.*)\n", after=at)
        lines = term.text.split("sessions (1):\n", 1)[1].splitlines()[:2]
        assert lines[0] == "* fix the add function", lines
        assert re.fullmatch(r" {4}(just now|\d+ min ago) · 2 turns · \d+-[0-9a-f]{6}", lines[1]), lines
        # /rn names it where /sessions reads (before, in its file alone: the list kept the first prompt's words).
        at = term.answer("/rn calc sign fix", r"session renamed to 'calc sign fix'", after=at)
        at = term.answer("/sessions", r"sessions \(1\):\n(.*)\n", after=at)
        assert term.text.rsplit("sessions (1):\n", 1)[1].splitlines()[0] == "* calc sign fix", term.text
        assert term.close() == 0


def test_a_session_runs_in_one_terminal_at_a_time(llm, tmp_path):
    llm.script(Reply.text("noted"), Reply.text("still here"), Reply.text("resumed"))
    first = run_ollie(["-p", "remember 9", "--cwd", str(tmp_path)], env=llm.env())
    said = re.fullmatch(r"ollie: session (\S+)\n", first.stderr)  # -p says which session it was
    assert said, first.stderr
    session = said.group(1)
    holder = Terminal(["--session", session, "--cwd", str(tmp_path)], llm.env(), tmp_path)
    try:
        at = holder.wait_for(r"default> ")
        second = run_ollie(["-p", "what was it?", "--session", session, "--cwd", str(tmp_path)], env=llm.env())
        assert second.returncode == 5, (second.stdout, second.stderr)
        assert f"ollie: session {session} is open in another editor window or terminal (ollie pid {holder.proc.pid})" \
            in second.stderr, second.stderr
        holder.type("and now?")
        holder.wait_for(r"still here", after=at)
        assert holder.close() == 0
    finally:
        holder.proc.kill()
    third = run_ollie(["-p", "what was it?", "--session", session, "--cwd", str(tmp_path)], env=llm.env())
    assert third.returncode == 0 and "resumed" in third.stdout, third.stderr
    users = [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"]
    assert users == ["remember 9", "and now?", "what was it?"]


def test_ctrl_c_ends_a_running_shell_command_and_the_prompt_comes_back(llm, tmp_path):
    # Ctrl-C only interrupted a model turn: during `!cmd` it said "Ctrl-C again to exit" and the command ran on.
    llm.script(Reply.text("still here"))
    mark = new_mark()
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.wait_for(r"default> ")
        term.type(f"!sleep 100.{mark}; echo never")
        wait_until(lambda: processes_with(mark), "the command never ran")
        term.proc.send_signal(signal.SIGINT)  # what the terminal sends ollie's process group on Ctrl-C
        at = term.wait_for(r"\[stopped; killed\][\s\S]*default> ", after=at, timeout=30)  # not the 100 s
        assert not processes_with(mark) and "Ctrl-C again" not in term.text and "never" not in term.text[at:]
        term.type("and now?")
        term.wait_for(r"still here", after=at)
        assert term.close() == 0


def test_a_turn_that_changed_files_says_so_and_how_to_review_and_undo(llm, tmp_path):
    # The turn ended on the answer alone: nothing said a file had changed, nor that /changes and /rewind exist.
    (tmp_path / "calc.py").write_text(BROKEN_ADD)
    llm.script(
        Reply.file_edit("calc.py", "return a - b", "return a + b"),
        Reply.text("Fixed."),
        Reply.text("Nothing to change."),
    )
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.wait_for(r"default> ")
        term.type("fix add")
        at = term.wait_for(r"Fixed\.\n(.*)\n(?=default> )", after=at)
        summary = term.text[:at].rsplit("Fixed.\n", 1)[1]
        assert summary == "1 file changed: calc.py (+1 -1); /changes to review, /rewind to undo\n", summary
        # /changes shows the hunk's lines, not just where it is.
        end = term.answer("/changes", r"\+    return a \+ b\n", after=at)
        assert term.text[at:end].endswith("turn 1: 1 file(s) changed\nmodified calc.py (+1 -1)\n  [0] @@ -2,1 +2,1 @@\n"
                                          "      -    return a - b\n      +    return a + b\n"), term.text[at:end]
        at = term.answer("/rewind", r"rewound to before turn 1[^\n]*\n", after=end)
        assert (tmp_path / "calc.py").read_text() == BROKEN_ADD
        # A turn that changed nothing says nothing of it.
        at = term.answer("and now?", r"Nothing to change\.\ndefault> ", after=at)
        assert term.close() == 0
    once = run_ollie(["-p", "fix add", "--cwd", str(tmp_path)],
                     env={**llm.script(Reply.file_edit("calc.py", "return a - b", "return a + b"), Reply.text("Fixed.")).env()})
    assert once.returncode == 0 and once.stdout.endswith("Fixed.\n"), (once.stdout, once.stderr)
    session = once.stderr.split()[2]
    again = f"ollie --session {session} -p"
    # On stderr: stdout stays what the model and its steps said.
    assert once.stderr.endswith(f"1 file changed: calc.py (+1 -1); review: {again} /changes, undo: {again} /rewind\n"), \
        once.stderr
    undo = run_ollie(["--session", session, "-p", "/rewind", "--cwd", str(tmp_path)], env=llm.env())
    assert undo.returncode == 0 and (tmp_path / "calc.py").read_text() == BROKEN_ADD, undo


def test_sessions_and_resume_keep_a_session_a_rewind_of_every_turn_emptied_while_it_can_be_undone(llm, tmp_path):
    # Bug: /sessions said "no saved sessions" (and /resume, `ollie -c` had none) after /rewind emptied the only one,
    # where the daemon's list keeps it while that rewind can be undone: the way back to it after a restart.
    llm.script(Reply.text("A haiku."))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.wait_for(r"default> ")
        term.type("write a haiku")
        at = term.wait_for(r"A haiku\.\n", after=at)
        at = term.answer("/rewind", r"rewound to before turn 1[^\n]*\n", after=at)
        at = term.answer("/sessions", r"sessions \(1\):\n(.*)\n(.*)\n", after=at)
        lines = term.text.rsplit("sessions (1):\n", 1)[1].splitlines()[:2]
        assert lines[0].startswith("* ") and " · 0 turns · " in lines[1], lines
        at = term.answer("/resume", r"sessions started in\s+\S+ \(1\):\n 1\. \* .*\n.* 0 turns ", after=at)
        at = term.wait_for(r"resume which\?[^\n]*", after=at)  # (an Enter typed before it answers nothing)
        at = term.answer("", r"^\n+default> ", after=at)
        assert term.close() == 0
    again = run_ollie(["-c", "-p", "/rewind undo", "--cwd", str(tmp_path)], env=llm.env())
    assert again.returncode == 0 and "rewind undone: turn 1 back" in again.stdout + again.stderr, again


def test_a_rewind_of_a_generated_tree_names_ten_files_and_counts_the_rest(llm, tmp_path):
    # A step that generated 1,000 files: /rewind and its undo named every one, 170 rows of a 60-column terminal.
    code = "mkdir gen && cd gen && seq -w 1000 | xargs touch"
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": code, "language": "bash"}]})), Reply.text("Made."))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path, size=(24, 60)) as term:
        at = term.wait_for(r"default> ")
        term.type("generate")
        at = term.wait_for(r"Made\.\n(.*\n)*default> ", after=at)
        for command, said in (("/rewind", "rewound to before turn 1"), ("/rewind undo", "rewind undone: turn 1 back")):
            end = term.answer(command, r"\n(?=default> )", after=at)
            shown = term.text[at:end].split(f"{command}\n", 1)[1]
            named = ", ".join(f"gen/{n:04d}" for n in range(1, 11))
            assert " ".join(shown.split()).startswith(f"{said}: files restored ({named} and 990 more)"), shown
            assert len(shown.splitlines()) <= 4, shown
            at = end
        assert len(list((tmp_path / "gen").iterdir())) == 1000
        assert term.close() == 0


def test_changes_and_rewind_once_the_tree_grew_too_large_to_checkpoint_say_why_without_a_usage_line(llm, tmp_path):
    # They said the reason, then "usage: /changes [n]": as if the line typed were wrong, the user retyped it.
    def run(code: str, said: str) -> tuple[Reply, Reply]:
        return Reply.tool_calls(("execute_code", {"steps": [{"code": code, "language": "bash"}]})), Reply.text(said)

    llm.script(*run("echo a > a.txt", "Wrote a."), *run("mkdir gen && cd gen && seq 10 | xargs touch", "Made."))
    with Terminal(["--cwd", str(tmp_path)], {**llm.env(), "OLLIE_CHECKPOINT_MAX_FILES": "5"}, tmp_path) as term:
        at = term.wait_for(r"default> ")
        term.type("write a")
        at = term.wait_for(r"Wrote a\.\n(.*\n)*default> ", after=at)
        term.type("generate")
        at = term.wait_for(r"Made\.\n(.*\n)*default> ", after=at)
        for command in ("/changes", "/rewind"):
            end = term.answer(command, r"\n(?=default> )", after=at)
            said = " ".join(term.text[at:end].split(f"{command}\n", 1)[1].split())
            assert said == f"error: {command} failed: the workspace has more than 5 files not ignored: too many to " \
                "checkpoint", said
            at = end
        assert term.close() == 0


def test_notices_break_between_words_at_the_terminals_width(llm, tmp_path):
    # The terminal broke ollie's notes wherever a row was full: `... /rewind undo t` / `o undo`; then ollie broke
    # them after the space between two words.
    (tmp_path / "calc.py").write_text(BROKEN_ADD)
    llm.script(Reply.file_edit("calc.py", "return a - b", "return a + b"), Reply.text("Fixed."),
               Reply.text("Nothing."))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        term.resize(24, 30)
        at = term.wait_for(r"default> ")
        term.type("fix add")
        at = term.wait_for(r"Fixed\.\n", after=at)
        end = term.wait_for(r"/rewind to undo\n", after=at)
        changed = term.text[at:end]
        at = term.answer("/rewind", r"to\s+undo\n", after=end)
        rewound = term.text[term.text.index("rewound to", end):at]  # the typed line echoed or not
        at = term.answer("and now?", r"Nothing\.\n", after=at)  # a session to resume
        assert term.close() == 0
        left = term.text[term.text.index("ollie: resume", at):]
    for said, words in ((changed, re.escape("1 file changed: calc.py (+1 -1); /changes to review, /rewind to undo")),
                        (rewound, "rewound to before turn 1: .* /rewind undo to undo"),
                        (left, "ollie: resume this session with `ollie --session .*`")):
        assert max(len(line) for line in said.splitlines()) <= 30, said
        assert not re.search(r" \n", said), said  # no space left before a break (copied with the words)
        assert re.fullmatch(words, " ".join(said.split())), said  # every word whole, in order
        assert len(said.strip().splitlines()) > 1, said


def test_the_opening_fits_80_columns_with_a_local_models_name(llm, tmp_path):
    # One line of ~110 columns: at 80, " /help for commands, Ctrl-D to quit." wrapped onto a line of its own.
    with Terminal(["--cwd", str(tmp_path), "--model", "qwen2.5-coder:14b-instruct"], llm.env(), tmp_path) as term:
        at = term.wait_for(r"default> ")
        opening = term.text[:at].splitlines()[:-1]
        # The server as /model names it, by the host and port the user set (it said `local/`, a name nobody set).
        served = f"qwen2.5-coder:14b-instruct served by {urlsplit(llm.url).netloc}"
        assert opening[0] == f"ollie — agent default, {served}", opening
        term.answer("/model", re.escape(f"model: {served.replace(' served', ' (served')})"), after=at)
        assert re.fullmatch(r"session \d+-[0-9a-f]{6}\. /help for commands, Ctrl-D to quit\.", opening[1]), opening
        assert max(map(len, opening)) <= 80, opening
        assert term.close() == 0
    # A narrower one (a split pane) breaks it between words: the terminal broke `127.0.0.1:39` / `593`, `Ctrl` / `-D`.
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path, size=(24, 50)) as term:
        at = term.wait_for(r"default> ")
        narrow = term.text[:at].splitlines()[:-1]
        assert max(map(len, narrow)) <= 50 and len(narrow) > 2, narrow
        assert re.fullmatch(rf"ollie — agent default, scripted-model served by {re.escape(urlsplit(llm.url).netloc)} "
                            r"session \d+-[0-9a-f]{6}\. /help for commands, Ctrl-D to quit\.", " ".join(narrow)), narrow
        assert term.close() == 0


def test_a_start_up_problem_breaks_between_words_at_the_terminals_width(tmp_path):
    # The backend not running, what a new user meets first: the terminal broke it where a row was full (`OLLI` /
    # `E_OPENAI_URL`).
    url = f"http://127.0.0.1:{free_port()}/v1"
    env = {"OLLIE_BACKEND": "openai", "OLLIE_OPENAI_URL": url, "OLLIE_OPENAI_KEY": "sk-unused"}
    with Terminal(["--cwd", str(tmp_path)], env, tmp_path, size=(24, 50)) as term:
        term.wait_for(r"\(now\s[^)]*\)\n")
        assert term.proc.wait(timeout=30) == 2
    assert max(map(len, term.text.splitlines())) <= 50, term.text
    assert " ".join(term.text.split()) == (f"ollie: cannot reach the openai API at {url}: start the server there, or set "
                                           f"OLLIE_OPENAI_URL to the API's URL (now {url})"), term.text


def test_up_recalls_the_last_prompt_and_left_edits_it_in_place_the_projects_prompts_kept_for_the_next_run(llm, tmp_path):
    # ↑ and Enter (to recall the last prompt, as a shell does) sent `\x1b[A` to the model; ← edited nothing.
    llm.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    state, project = tmp_path / "state", tmp_path / "project"
    project.mkdir()
    env = {**llm.env(), "OLLIE_STATE_DIR": str(state)}
    with Terminal(["--cwd", str(project)], env, project, ctty=True) as term:
        at = term.answer("fix the bug", r"one\n[\s\S]*default> ", after=term.wait_for(r"default> "))
        at = term.answer("\x1b[A" + "\x1b[D" * 3 + "big ", r"two\n[\s\S]*default> ", after=at)
        os.write(term.master, b"half typed\x03")  # Ctrl-C drops the line, as in a shell (and it is no history)
        term.wait_for(r"^half typed\^C\n\(Ctrl-C again to exit\)\ndefault> $", after=at)
        assert term.close() == 0
    # The next run in the project recalls it; the history is in ollie's state dir, never in the workspace.
    with Terminal(["--cwd", str(project)], env, project) as term:
        term.answer("\x1b[A", r"three\n[\s\S]*default> ", after=term.wait_for(r"default> "))
        assert term.close() == 0
    assert [r.body["messages"][-1]["content"] for r in llm.chat_requests] == [
        "fix the bug", "fix the big bug", "fix the big bug"]
    assert [p.name for p in project.iterdir()] == [] and len(list((state / "history").iterdir())) == 1
    assert (state / "history").stat().st_mode & 0o077 == 0  # her words, as private as her sessions


def test_an_arrow_key_typed_during_a_turn_sends_nothing_and_says_why(llm, tmp_path):
    # Typed ahead while a turn runs (the terminal's own line mode: no readline), ← mended nothing: the line is said
    # without their codes, to type again.
    llm.script(Reply.text("word " * 10, delay=0.2), Reply.text("two"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.streaming("first prompt")
        term.type("fix teh\x1b[D\x1b[Dhe bug\x1b[3~")
        at = term.wait_for(r"while\s+a\s+turn\s+runs,\s+they\s+type\s+codes\s+\(\^\[\[A\);\s+type\s+the\s+line\s+again,"
                           r"\s+without\s+them:\s+'fix\s+tehhe\s+bug'\)\ndefault> ", after=at)
        term.answer("second prompt", r"two\n", after=at)
        assert term.close() == 0
    assert [r.body["messages"][-1]["content"] for r in llm.chat_requests] == ["first prompt", "second prompt"]


def test_ctrl_c_at_resumes_question_stays_and_the_next_line_is_a_prompt(llm, tmp_path):
    # Ctrl-C at `resume which?` showed the prompt again but the question still waited: the prompt typed next was taken
    # for its answer ("no saved session has the id fix the tests") and never reached the model.
    llm.script(Reply.text("noted"), Reply.text("on it"))
    assert run_ollie(["-p", "remember 9", "--cwd", str(tmp_path)], env=llm.env()).returncode == 0
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.answer("/resume", r"resume which\? \(number or id; Enter to stay\): ", after=term.wait_for(r"default> "))
        term.proc.send_signal(signal.SIGINT)  # what the terminal sends ollie's process group on Ctrl-C
        at = term.wait_for(r"\ndefault> ", after=at)
        said = term.answer("fix the tests", r"on it\n", after=at)
        assert "/resume:" not in term.text[at:] and "Ctrl-C again" not in term.text[at:], term.text[at:]
        # Why a session cannot be resumed, broken between words (`directory` / `'s`).
        at = term.answer("/resume 1796000000000000000-abcdef", r"directory's\n", after=said)
        assert max(map(len, term.text[said:at].splitlines())) <= 80, term.text[said:at]
        assert term.close() == 0
    assert llm.chat_requests[-1].body["messages"][-1]["content"] == "fix the tests"


def test_resume_tells_sessions_of_one_title_apart_within_80_columns(llm, tmp_path):
    # Three sessions all called "fix the failing test": /resume showed the title and a time to the minute for each,
    # on lines of ~100 columns, and nothing else to tell them apart.
    llm.script(Reply.text("looking"), Reply.text("fixed it"), Reply.text("looking"), Reply.text("looking"))
    first = run_ollie(["-p", "fix the failing test", "--cwd", str(tmp_path)], env=llm.env())
    longer = re.search(r"ollie: session (\S+)", first.stderr)
    assert longer, first.stderr
    assert run_ollie(["--session", longer[1], "-p", "go on", "--cwd", str(tmp_path)], env=llm.env()).returncode == 0
    for _ in range(2):
        assert run_ollie(["-p", "fix the failing test", "--cwd", str(tmp_path)], env=llm.env()).returncode == 0
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.wait_for(r"default> ")
        at = term.answer("/resume", r"resume which\? \(number or id; Enter to stay\): ", after=at)
        listing = term.text[:at].rsplit("(3):\n", 1)[1].splitlines()  # the heading (a long path) broken
        assert max(map(len, listing)) <= 80, listing
        assert listing[0::2][:3] == [f" {n}.   fix the failing test" for n in (1, 2, 3)], listing
        ago = r" {6}(just now|\d+ min ago)"  # (a loaded machine takes its time)
        assert re.fullmatch(ago + r" · 1 turn · \d+-[0-9a-f]{6}", listing[1]), listing
        assert re.fullmatch(ago + rf" · 2 turns · {longer[1]}", listing[5]), listing  # newest first
        assert term.close() == 0


def test_leaving_the_prompt_says_how_to_resume_and_that_command_resumes(llm, tmp_path):
    # Ctrl-D left without a word on how to come back: the id was only in the banner, scrolled away.
    llm.script(Reply.text("noted 9"), Reply.text("it was 9"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.wait_for(r"default> ")
        at = term.answer("remember 9", r"noted 9\ndefault> ", after=at)
        assert term.close() == 0
        said = re.search(r"ollie: resume this session with `ollie (--session \S+)`\n", term.text[at:])
        assert said, term.text[at:]
    with Terminal([*said.group(1).split(), "--cwd", str(tmp_path)], llm.env(), tmp_path) as again:
        at = again.wait_for(r"default> ")
        again.answer("what was it?", r"it was 9\n", after=at)
        assert again.close() == 0
    users = [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"]
    assert users == ["remember 9", "what was it?"]
    # A session never prompted is not saved: no hint that would name nothing.
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as idle:
        idle.wait_for(r"default> ")
        assert idle.close() == 0
        assert "resume" not in idle.text, idle.text


def test_help_fits_a_terminal(llm, tmp_path):
    # The /mcp usage set the column for all: every summary started at column 67, most lines wrapped past 100.
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.wait_for(r"default> ")
        end = term.answer("/help", r"/help \[command\] +this list\n", after=at)
        shown = term.text[at:end].split("commands:\n", 1)[1].splitlines()
        assert max(len(line) for line in shown) <= 80, "\n".join(shown)  # 100 wrapped in an 80-column terminal
        assert "  /model [name]        show or switch the model" in shown, "\n".join(shown)
        assert term.close() == 0


def test_an_edits_question_and_its_diffs_header_fit_an_80x24_terminal(llm, tmp_path):
    # The diff was cut at 60 lines whatever the height: on 24 rows which file it changes scrolled out of sight.
    (tmp_path / "big.txt").write_text("".join(f"line {n}\n" for n in range(100)))
    llm.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_write", "args": [
        "big.txt", "".join(f"new line {n}\n" for n in range(100))]}]})), Reply.text("left as it was"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(approval="ask"), tmp_path) as term:
        term.resize(24, 80)
        at = term.wait_for(r"default> ")
        term.type("rewrite big.txt")
        asked = term.wait_for(r"Allow\? [^\n]*: ", after=at)
        screen = term.text[:asked].split("\n")[-24:]  # what the 24 rows show, the question on the last
        assert screen[0] == "--- a/big.txt", "\n".join(screen)
        assert "ollie asks to: Write big.txt" in screen and re.fullmatch(r"… \(\d+ more diff lines\)", screen[-3])
        term.answer("n", r"left as it was", after=asked)
        assert term.close() == 0


def test_a_long_answer_breaks_between_words_at_the_terminals_width(llm, tmp_path):
    # A paragraph is one line: the terminal broke it wherever a row was full, mid-word ("ipsu" / "m dolor").
    words = [f"word{n}" + "x" * (n % 7) for n in range(120)]
    paragraph = " ".join(words[:60]) + " **bold words** and `some code` " + " ".join(words[60:])
    llm.script(Reply.text(f"{paragraph}\n\n{paragraph}"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        term.resize(24, 80)
        at = term.wait_for(r"default> ")
        term.type("tell me at length")
        end = term.wait_for(rf"{words[-1]}\n\nword0 [\s\S]*{words[-1]}\n", after=at)
        shown = term.text[at:end].split("\n", 1)[1].rstrip("\n").split("\n\n")
        for lines in (part.split("\n") for part in shown):
            assert max(len(line) for line in lines) <= 80, "\n".join(lines)
            assert " ".join(line.strip() for line in lines).split() == paragraph.replace("**", "").replace(
                "`", "").split(), "\n".join(lines)  # every word whole, in order
            assert len(lines) > 10
        assert term.close() == 0


def test_ctrl_c_during_a_streaming_answer_says_the_turn_was_interrupted(llm, tmp_path):
    # The answer stopped mid-word and the prompt came back with no word on why.
    llm.script(Reply(text="word " * 3000, chunk_size=5, delay=0.05), Reply.text("back"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.streaming("talk")
        term.proc.send_signal(signal.SIGINT)
        at = term.wait_for(r"\nollie: interrupted\ndefault> ", after=at, timeout=30)
        term.answer("and now?", r"back\n", after=at)
        assert term.close() == 0


def test_a_line_typed_while_the_answer_streams_goes_to_the_next_prompt_not_into_the_answer(llm, tmp_path):
    # The terminal echoed what was typed between the answer's words ("word word nexword t word").
    llm.script(Reply(text="word " * 300, chunk_size=5, delay=0.01), Reply.text("back"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.streaming("talk")
        term.type("next one")
        end = term.wait_for(r"\ndefault> next one\n", after=at)  # shown at the prompt, as sent
        assert term.text[at:end].count("word") > 200 and "next" not in term.text[at:end - 20], term.text[at:end]
        term.wait_for(r"back\n", after=end)
        assert term.close() == 0
    assert llm.chat_requests[-1].body["messages"][-1]["content"] == "next one"


@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT])
def test_a_terminal_ended_mid_turn_is_left_echoing_what_is_typed(llm, tmp_path, ending):
    # Echo is off while a turn streams (typing stays out of the answer): killed then, ollie left it off for the shell.
    llm.script(Reply(text="word " * 2000, chunk_size=5, delay=0.01))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        term.streaming("talk")
        assert not termios.tcgetattr(term.master)[3] & termios.ECHO  # the pty's modes, as the program set them
        term.proc.send_signal(ending)
        assert term.proc.wait(timeout=30) == -ending
        assert termios.tcgetattr(term.master)[3] & termios.ECHO


def test_a_turn_stopped_by_ctrl_z_and_brought_back_keeps_what_is_typed_out_of_its_answer(llm, tmp_path):
    # bash brings a job back (`fg`) in its own modes: echo was on for the rest of the turn, and a line typed then
    # was drawn between the answer's words ("word wordnext one").
    # The answer's last word waits until ollie has read the line typed (12 s of words made sure the turn ran then).
    typed = threading.Event()
    llm.script(Reply(text="word " * 150, chunk_size=5, delay=0.02, hold=typed), Reply.text("back"))
    with Terminal([], llm.env(), tmp_path, shell=True) as term:
        term.answer(" ".join([*OLLIE, "--cwd", str(tmp_path)]), r"default> ", after=term.wait_for(r"SH\$ "))
        at = term.streaming("talk")
        os.write(term.master, b"\x1a")  # Ctrl-Z
        at = term.answer("fg", r"fg\n(.|\n)*word word ", after=term.wait_for(r"Stopped(.|\n)*SH\$ ", after=at))
        term.type("next one")
        term.wait_read()
        typed.set()
        end = term.wait_for(r"\ndefault> next one\n", after=at)
        assert "next" not in term.text[at:end - 20], term.text[at:end]
        # `/exit`, then the shell's prompt: a bare `exit` was a prompt to the model, whose request could come after the
        # next part scripted its replies and take the first of them.
        term.answer("/exit", r"SH\$ ", after=term.wait_for(r"back\ndefault> ", after=end))
    assert llm.chat_requests[-1].body["messages"][-1]["content"] == "next one"
    # With no shell to bring it back (`exec ollie`, a tmux pane's own program: an orphaned group), Ctrl-Z stops nothing.
    llm.script(Reply(text="word " * 100, chunk_size=5, delay=0.02), Reply.text("back"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.streaming("talk")
        term.proc.send_signal(signal.SIGTSTP)
        term.answer("again", r"back\ndefault> ", after=term.wait_for(r"word\ndefault> ", after=at))
        assert term.close() == 0


def paste_then_type(llm, tmp_path, pasted: str, shown: str, typed: str, answered: str) -> str:  # type: ignore[no-untyped-def]
    """The terminal's text once `pasted` came all at once, as a terminal sends a paste (`shown` after it), then `typed`
    as a line of its own (`answered` after it), and the terminal left."""
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.wait_for(r"default> ")
        os.write(term.master, pasted.encode())
        at = term.wait_for(shown, after=at)
        term.answer(typed, answered, after=at)
        assert term.close() == 0
    return term.text


def test_a_pasted_multi_line_prompt_is_one_prompt(llm, tmp_path):
    # Each pasted line went as a prompt of its own: the model saw "why does this fail:" without its traceback, and
    # two more turns followed.
    pasted = "why does this fail:\nTraceback (most recent call last):\n  File \"app.py\", line 1\n"
    llm.script(Reply.text("read it"), Reply.text("back"))
    # A line typed after the turn is a prompt of its own.
    paste_then_type(llm, tmp_path, pasted, r"read it\ndefault> ", "and now?", r"back\n")
    prompts = [request.body["messages"][-1]["content"] for request in llm.chat_requests]
    assert prompts == [pasted.rstrip("\n"), "and now?"], prompts


@pytest.mark.parametrize("leave", ["/exit", "/quit"])
def test_what_other_tools_call_a_command_points_at_ours_and_exit_leaves(llm, tmp_path, leave):
    # "/undo" said only "unknown command", "/rename" offered /resume, and "/exit" or "/quit" did not leave.
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.wait_for(r"default> ")
        at = term.answer("/undo", r"unknown command /undo: did you mean /rewind\?[^\n]*\ndefault> ", after=at)
        term.answer("/rename x", r"unknown command /rename: did you mean /rn\?[^\n]*\ndefault> ", after=at)
        term.type(leave)
        assert term.proc.wait(timeout=30) == 0
        os.close(term.master)


def test_a_pasted_text_starting_with_a_bang_runs_none_of_its_lines(llm, tmp_path):
    # Red team round 39: a paste is one prompt since this session, so a text copied from a hostile README whose
    # first line starts with `!` went whole to `!cmd`: every line of it ran as a shell script, outside the sandbox,
    # where before its first line alone did (the rest went to the model).
    pasted = "!Important: read the setup notes first\ntouch pwned\n"
    # A command typed as one line still runs.
    text = paste_then_type(llm, tmp_path, pasted, r"default> ", "!echo typed-$((6 * 7))", r"typed-42[\s\S]*default> ")
    assert not (tmp_path / "pwned").exists(), text
    assert "not run" in text and not llm.chat_requests


def test_continue_resumes_the_newest_session_of_this_directory(llm, tmp_path):
    # Claude Code's `claude -c`: ollie had no way back but the id, copied from an old banner.
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    llm.script(Reply.text("old"), Reply.text("noted 9"), Reply.text("other"), Reply.text("it was 9"))
    for cwd, prompt in ((here, "an older one"), (here, "remember 9"), (elsewhere, "another project")):
        assert run_ollie(["-p", prompt, "--cwd", str(cwd)], env=llm.env()).returncode == 0
    with Terminal(["-c", "--cwd", str(here)], llm.env(), here) as term:
        at = term.wait_for(r"default> ")
        term.answer("what was it?", r"it was 9\n", after=at)
        assert term.close() == 0
    users = [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"]
    assert users == ["remember 9", "what was it?"]
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    none = run_ollie(["-c", "-p", "hi", "--cwd", str(fresh)], env=llm.env())
    assert none.returncode == 1 and f"no saved session was started in {fresh}" in none.stderr, none.stderr


def test_resume_at_the_prompt_lists_this_directorys_sessions_and_goes_on_with_the_picked_one(llm, tmp_path):
    # `/resume` answered "unknown command": the way back was a new run with an id copied from an old banner.
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    llm.script(Reply.text("noted 9"), Reply.text("other"), Reply.text("hello"), Reply.text("it was 9"))
    first = run_ollie(["-p", "remember 9", "--cwd", str(here)], env=llm.env())
    saved = re.search(r"ollie: session (\S+)", first.stderr)
    assert first.returncode == 0 and saved, first.stderr
    assert run_ollie(["-p", "another project", "--cwd", str(elsewhere)], env=llm.env()).returncode == 0
    with Terminal(["--cwd", str(here)], llm.env(), here) as term:
        at = term.wait_for(r"default> ")
        at = term.answer("hi", r"hello\ndefault> ", after=at)
        at = term.answer("/help", r"/resume \[n\|id\] .*\n?.*`ollie --session <id>`", after=at)  # (wrapped)
        at = term.answer("/resume 5", r"ollie: /resume: no session 5 in /resume's list \(2 here\)\n", after=at)
        at = term.answer("/resume", r"resume which\? \(number or id; Enter to stay\): ", after=at)
        listing = term.text[:at].rsplit("sessions started in", 1)[1]
        assert "2. " in listing and saved.group(1) in listing.split("2. ")[1], listing  # newest first: ours is 1
        assert "another project" not in listing and "`ollie --session <id>`" in listing, listing
        at = term.answer("2", rf"session {saved.group(1)}\. .*\ndefault> remember 9\nnoted 9\n", after=at)
        term.answer("what was it?", r"it was 9\n", after=at)
        assert term.close() == 0
    users = [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"]
    assert users == ["remember 9", "what was it?"]


@pytest.mark.parametrize("command, prompt", [("/agent plan", "plan> "), ("/clear", "default> ")])
def test_an_agent_switch_or_a_clear_keeps_the_conversation_and_resume_goes_back_to_it(llm, tmp_path, command, prompt):
    # `/agent plan` and `/clear` wiped the conversation, unsaved: there was nothing to /resume.
    llm.script(Reply.text("noted 9"), Reply.text("it was 9"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.wait_for(r"default> ")
        at = term.answer("remember 9", r"noted 9\ndefault> ", after=at)
        at = term.answer(command, r'the previous conversation is saved as "remember 9" \((\S+)\):\s+resume it '
                         rf"with `/resume <n\|id>` \(or a new run: `ollie --session <id>`\)\n.*{prompt}", after=at)
        kept = re.findall(r'saved as "remember 9" \((\S+)\)', term.text)[-1]
        at = term.answer(f"/resume {kept}", rf"session {kept}\. .*\ndefault> remember 9\nnoted 9\n", after=at)
        term.answer("what was it?", r"it was 9\n", after=at)
        assert term.close() == 0
    users = [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"]
    assert users == ["remember 9", "what was it?"]


def test_resume_of_a_session_open_in_another_terminal_is_refused_and_this_one_goes_on(llm, tmp_path):
    # Two processes on one session would lose one's turns: /resume must not take it, nor drop the one open here.
    llm.script(Reply.text("noted"), Reply.text("mine"), Reply.text("still mine"))
    first = run_ollie(["-p", "remember 9", "--cwd", str(tmp_path)], env=llm.env())
    said = re.fullmatch(r"ollie: session (\S+)\n", first.stderr)
    assert said, first.stderr
    session = said.group(1)
    with Terminal(["--session", session, "--cwd", str(tmp_path)], llm.env(), tmp_path) as holder, \
            Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        holder.wait_for(r"default> ")
        at = term.wait_for(r"default> ")
        at = term.answer("hello", r"mine\n", after=at)
        at = term.answer(f"/resume {session}", rf"ollie: /resume: session {session} is open in another editor "
                         rf"window or terminal \(ollie pid {holder.proc.pid}\)", after=at)
        term.answer("and now?", r"still mine\n", after=at)
        assert term.close() == 0 and holder.close() == 0
    users = [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"]
    assert users == ["hello", "and now?"]


def test_a_resumed_long_session_shows_its_last_turns_and_says_how_much_is_above(llm, tmp_path):
    # `/resume` printed the whole history (minutes of scrolling), and `ollie --session` none of it.
    llm.script(*(Reply.text(f"answer {n}") for n in range(12)))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.wait_for(r"default> ")
        for n in range(12):
            at = term.answer(f"question {n}", rf"answer {n}\ndefault> ", after=at)
        assert term.close() == 0
        said = re.search(r"ollie: resume this session with `ollie (--session \S+)`\n", term.text[at:])
        assert said, term.text[at:]
    with Terminal([*said.group(1).split(), "--cwd", str(tmp_path)], llm.env(), tmp_path) as again:
        at = again.wait_for(r"default> question 11\nanswer 11\n")
        shown = again.text[:at].split("Ctrl-D to quit.\n", 1)[1]
        assert shown.startswith("ollie: 2 earlier turns (4 messages) not shown; the last 10 follow. /history <n> "
                                "lists the last n messages\ndefault> question 2\nanswer 2\n"), shown
        assert "question 1\n" not in shown
        assert again.close() == 0


def test_a_resumed_session_shows_its_steps_as_they_were_shown_live(llm, tmp_path):
    # Resumed, a step showed as its call's JSON (`▸ call_tool {"calls": [...]}`), and a result the model had seen
    # as its stand-in (`[cold result of call_tool collapsed: 3 lines, 60 bytes; began: ...]`).
    (tmp_path / "calc.py").write_text(BROKEN_ADD)
    read = ("call_tool", {"calls": [{"tool": "file_read", "args": ["calc.py"]}]})
    llm.script(Reply(text="Reading.", tool_calls=[read]), Reply.text("add subtracts"))
    first = run_ollie(["-p", "why does add fail?", "--cwd", str(tmp_path)], env=llm.env())
    saved = re.search(r"ollie: session (\S+)", first.stderr)
    assert first.returncode == 0 and saved, first.stderr
    assert "▸ Read calc.py\n" in first.stdout + first.stderr, first
    with Terminal(["--session", saved[1], "--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.wait_for(r"add subtracts\n")
        shown = term.text[:at].split("Ctrl-D to quit.\n", 1)[1]
        assert re.search(r"Reading\.\n▸ Read calc\.py\n  \(output seen by the model, then collapsed: \d+ lines\)\n",
                         shown), shown
        assert term.close() == 0


def test_a_resumed_prompt_shows_as_typed_without_ollie_s_notes(llm, tmp_path):
    # Resumed, a prompt showed a preTurn hook's output (and `@environment`'s git status) after it, as if typed; the
    # editors' history already gave the typed text alone.
    env = noted_agent_env(tmp_path, llm)
    first = run_ollie(["-p", "fix calc", "--agent", "noted", "--cwd", str(tmp_path)], env=env)
    saved = re.search(r"ollie: session (\S+)", first.stderr)
    assert first.returncode == 0 and saved, first.stderr
    assert llm.chat_requests[-1].body["messages"][-1]["content"].endswith("run the tests first"), "the model reads it"
    with Terminal(["--session", saved[1], "--cwd", str(tmp_path)], env, tmp_path) as term:
        at = term.wait_for(r"done\n")
        assert "> fix calc\ndone\n" in term.text[:at] and "run the tests first" not in term.text[:at], term.text[:at]
        assert term.close() == 0


def test_a_prompt_typed_during_a_turn_shows_after_the_prompt_sign_when_it_runs(llm, tmp_path):
    # Typed while an answer streamed, a prompt ran after it with the prompt sign bare ("default> Answer ..."): the
    # transcript never said what was asked, its echo lying inside the answer before.
    llm.script(Reply(text="a slow answer, word by word", chunk_size=4, delay=0.3), Reply.text("the second answer"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.answer("first", r"a slow", after=term.wait_for(r"default> "))
        term.type("and a second")
        at = term.wait_for(r"the second answer\n", after=at)
        assert "word by word\ndefault> and a second\nthe second answer\n" in term.text, term.text
        assert term.close() == 0


def test_a_resumed_session_goes_on_with_its_own_agent_unless_another_is_named(llm, tmp_path):
    # `ollie --agent noted`, then the `ollie --session ID` it printed on leaving, went on under `default`: another
    # system prompt, hooks and tools, unsaid but for the prompt sign.
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "noted.json").write_text(json.dumps({"prompt": "You are the noted agent."}))
    env = {**llm.env(), "OLLIE_AGENTS_DIR": str(agents)}
    llm.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    first = run_ollie(["-p", "hi", "--agent", "noted", "--cwd", str(tmp_path)], env=env)
    saved = re.search(r"ollie: session (\S+)", first.stderr)
    assert first.returncode == 0 and saved, first.stderr
    with Terminal(["--session", saved[1], "--cwd", str(tmp_path)], env, tmp_path) as term:
        term.answer("again", r"two\n", after=term.wait_for(r"noted> hi\none\nnoted> "))
        assert term.close() == 0
    assert llm.chat_requests[-1].body["messages"][0]["content"].startswith("You are the noted agent."), "its prompt"
    named = run_ollie(["-p", "more", "--agent", "default", "--session", saved[1], "--cwd", str(tmp_path)], env=env)
    assert named.returncode == 0 and named.stdout == "three\n", named
    assert "noted agent" not in llm.chat_requests[-1].body["messages"][0]["content"], "--agent names another"


def test_a_prompt_typed_before_a_question_is_not_its_answer_and_runs_after_the_turn(llm, tmp_path):
    # A line typed while the answer streamed, then a question (an edit to approve): the line was dropped, said only
    # as "what was typed before this question does not answer it", and never ran.
    (tmp_path / "calc.py").write_text(BROKEN_ADD)
    typed = threading.Event()  # the edit's call ends once ollie has read the line (its frames 0.3 s apart: 10 s)
    llm.script(Reply(text="looking at it, slowly", chunk_size=4, delay=0.02, hold=typed,
                     tool_calls=[Reply.file_edit("calc.py", "return a - b", "return a + b").tool_calls[0]]),
               Reply.text("fixed"), Reply.text("the typed one's answer"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(approval="ask"), tmp_path) as term:
        at = term.answer("fix add", r"looking", after=term.wait_for(r"default> "))
        term.type("and then explain")
        term.wait_read()
        typed.set()
        at = term.answer("y", r"fixed\n", after=term.wait_for(r"Allow\? ", after=at))
        term.wait_for(r"default> and then explain\nthe typed one's answer\n", after=at)
        assert term.close() == 0
    assert (tmp_path / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


def _typed_during_a_slow_turn(term: Terminal, typed: str) -> int:
    """At the prompt, "first" (answered "a slow answer, word by word"), `typed` meanwhile without its Enter: where the
    next prompt shows it."""
    at = term.answer("first", r"a slow", after=term.wait_for(r"default> "))
    os.write(term.master, typed.encode())
    return term.wait_for(rf"word by word\ndefault> {re.escape(typed)}", after=at)


def test_a_prompt_half_typed_when_the_turn_ends_shows_after_the_prompt_sign(llm, tmp_path):
    # Typed unseen while the answer streamed, the start of a prompt was sent with the rest but never shown: the
    # prompt read "default> second" and the model got "and a second".
    llm.script(Reply(text="a slow answer, word by word", chunk_size=4, delay=0.3), Reply.text("the second answer"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = _typed_during_a_slow_turn(term, "and a ")
        term.answer("second", r"the second answer\n", after=at)
        assert "default> and a second\nthe second answer\n" in term.text, term.text
        assert term.close() == 0
    assert llm.chat_requests[-1].body["messages"][-1]["content"] == "and a second"


def test_ctrl_c_at_the_prompt_drops_the_start_of_a_prompt_typed_during_the_turn(llm, tmp_path):
    # Shown after the prompt sign, then Ctrl-C to start the line over (as a shell drops it): the prompt redrawn read
    # "default> hello", and the model got "rm -rf buildhello".
    llm.script(Reply(text="a slow answer, word by word", chunk_size=4, delay=0.3), Reply.text("the second answer"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path, ctty=True) as term:
        at = _typed_during_a_slow_turn(term, "rm -rf build")
        os.write(term.master, b"\x03")  # Ctrl-C, typed (readline edits the line, the signal key off)
        at = term.wait_for(r"\^C\n\(Ctrl-C again to exit\)\ndefault> ", after=at)
        term.answer("hello", r"the second answer\n", after=at)
        assert term.close() == 0
    assert llm.chat_requests[-1].body["messages"][-1]["content"] == "hello"


def test_ctrl_d_typed_right_after_a_prompt_ends_the_terminal_after_its_turn(llm, tmp_path):
    # Read within a paste's gap of the line before it (`printf 'go\n\4'`, a quick hand), the end was dropped: ollie
    # answered and waited at the prompt for good.
    llm.script(Reply.text("gone"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        term.wait_for(r"default> ")
        os.write(term.master, b"go\n\x04")
        term.wait_for(r"gone\n")
        assert term.proc.wait(timeout=30) == 0
    assert llm.chat_requests[-1].body["messages"][-1]["content"] == "go"


def test_ctrl_c_typed_during_a_turn_keeps_the_prompt_half_typed_then(llm, tmp_path):
    # The terminal dropped what was typed without its Enter when its Ctrl-C stopped the turn (it flushes its input with
    # the signal): a whole line typed meanwhile was kept, half of one lost.
    llm.script(Reply(text="word " * 3000, chunk_size=5, delay=0.05), Reply.text("back"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path, ctty=True) as term:
        at = term.streaming("talk")
        os.write(term.master, b"and a \x03")  # typed unseen, then Ctrl-C
        at = term.wait_for(r"\nollie: interrupted\ndefault> and a ", after=at, timeout=30)
        term.answer("second", r"back\n", after=at)
        assert term.close() == 0
    assert llm.chat_requests[-1].body["messages"][-1]["content"] == "and a second"


def test_a_prompt_typed_during_a_turn_ctrl_c_stopped_waits_for_an_enter(llm, tmp_path):
    # Ctrl-C to decide again, and the prompt typed meanwhile ran at once.
    llm.script(Reply(text="word " * 3000, chunk_size=5, delay=0.05), Reply.text("back"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.streaming("talk")
        term.type("then this")
        term.wait_read()
        term.proc.send_signal(signal.SIGINT)
        at = term.wait_for(r"interrupted\n\(not sent: 'then this', typed during the turn; Enter sends it, or type "
                           r"another\s+prompt\)\ndefault> $", after=at)
        assert len(llm.chat_requests) == 1, "nothing sent"
        at = term.answer("", r"^\n> then this\nback\ndefault> ", after=at)  # a bare Enter sends it, shown as sent
        assert llm.chat_requests[-1].body["messages"][-1]["content"] == "then this"
        term.answer("", r"^\ndefault> ", after=at)  # sent once: a bare Enter now is an empty line
        assert term.close() == 0
    assert len(llm.chat_requests) == 2


def test_a_prompt_held_after_a_stop_is_dropped_by_ctrl_c_at_the_prompt(llm, tmp_path):
    # Held ("Enter sends it"), then Ctrl-C to drop it: the bare Enter that follows (as after any Ctrl-C) still sent it,
    # and a `!` one ran outside the sandbox.
    llm.script(Reply(text="word " * 3000, chunk_size=5, delay=0.05))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path, ctty=True) as term:
        at = term.streaming("talk")
        term.type("!touch dropped")
        term.wait_read()
        term.proc.send_signal(signal.SIGINT)
        at = term.wait_for(r"Enter sends it(.|\n)*default> $", after=at)
        os.write(term.master, b"\x03")  # typed at the prompt
        at = term.wait_for(r"\(Ctrl-C again to exit\)\ndefault> $", after=at)  # (an Enter before it echoes above it)
        term.answer("", r"^\ndefault> $", after=at)
        assert term.close() == 0
    assert not (tmp_path / "dropped").exists() and len(llm.chat_requests) == 1
