"""The terminal client and the demo, run as real subprocesses."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ollie.cli.preflight import backend_problem
from ollie.cli.render import Renderer, compact_result
from ollie.sessions.registry import Registry
from ollie.sessions.types import Scope, os_user
from ollie.testing import Reply
from tests.procs import wait_until

from .conftest import child_env

OLLIE = [sys.executable, "-m", "ollie.cli"]
# A reply that streams for ~5 minutes (3,000 frames, 0.1 s apart): only an interrupt ends it in a test's time.
LONG_TALK = "word " * 3000


def run_ollie(args: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
              timeout: float = 60, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `ollie ARGS` to its end (stdin: `input`, else nothing)."""
    stdin = subprocess.DEVNULL if input is None else None
    return subprocess.run([*OLLIE, *args], env=child_env(env), cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, stdin=stdin, input=input)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_one_turn_with_p_writes_the_answer_alone_on_stdout_its_steps_on_stderr(llm, tmp_path):
    # `git diff | ollie -p "review" > review.md`: each step line and its result went to stdout, into the file.
    (tmp_path / "notes.txt").write_text("the secret is 7\n")
    llm.script(
        Reply(tool_calls=[("call_tool", {"calls": [{"tool": "file_read", "args": ["notes.txt"]}]})]),
        Reply.text("The secret is 7."),
    )
    proc = run_ollie(["-p", "what is the secret?", "--cwd", str(tmp_path)], env=llm.env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "The secret is 7.\n", proc.stdout
    # A step as a line a person reads, its result's first lines under it, after the session id.
    assert re.fullmatch(r"ollie: session \d+-[0-9a-f]{6}\n▸ Read notes.txt\n  \[call 1 file_read\] exit 0\n       1\t"
                        r"the secret is 7\n", proc.stderr), proc.stderr
    assert llm.chat_requests[0].body["messages"][-1]["content"] == "what is the secret?"


def test_p_to_a_pipe_writes_a_retried_reply_once_without_the_failed_attempts_words(llm, tmp_path):
    # A reply cut off and retried: stdout (`ollie -p ... > answer.md`) kept the failed attempt's words before the answer.
    llm.script(Reply(tool_calls=[("call_tool", {"calls": [{"tool": "reasoning_think", "args": ["plan"]}]})],
                     text="Let me think."),
               Reply.drop(after=4, text="Half an answer that never ends", chunk_size=5), Reply.text("The answer."))
    proc = run_ollie(["-p", "answer", "--cwd", str(tmp_path)], env=llm.env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Let me think.\nThe answer.\n", proc.stdout  # the words before a step stay: it was no retry
    assert "retrying: " in proc.stderr and "Half" not in proc.stderr, proc.stderr
    # The cut in words: `RemoteProtocolError('peer closed connection without sending ...')` was the line.
    assert re.search(r"^retrying: the model request failed: \S+: the connection closed mid-answer; retry 1/3 in ",
                     proc.stderr, re.M)
    assert "Error" not in proc.stderr, proc.stderr


def test_p_shows_a_failed_steps_last_lines_where_its_error_is(llm, tmp_path):
    # A failing test's traceback showed its first 6 lines and "… (1 more line)": the AssertionError, its last, hidden.
    (tmp_path / "test_calc.py").write_text("def add(a, b):\n    return a - b\n\n\nassert add(2, 3) == 5\n")
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": "python3 test_calc.py", "language": "bash"}]})),
               Reply.text("The test fails."))
    proc = run_ollie(["-p", "run the tests", "--cwd", str(tmp_path)], env=llm.env())
    assert proc.returncode == 0, proc.stderr
    result = proc.stderr.split("▸ Run `python3 test_calc.py`\n", 1)[1].splitlines()
    assert result[:2] == ["  ✗ [step 1 bash] exit 1", "  … (1 more line)"], proc.stderr
    assert result[2:7] == ["  Traceback (most recent call last):", f'    File "{tmp_path}/test_calc.py", line 5, in <module>',
                           "      assert add(2, 3) == 5", "             ^^^^^^^^^^^^^^", "  AssertionError"], proc.stderr


def test_p_heads_a_batch_whose_second_step_failed_with_that_step(llm, tmp_path):
    # The folded header was the first step's `[step 1 bash] exit 0`: the failure it folded away was said nowhere.
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": "echo built", "language": "bash"},
                                                            {"code": "exit 1", "language": "bash"},
                                                            {"code": "echo never", "language": "bash"}]})),
               Reply.text("The second step fails."))
    proc = run_ollie(["-p", "build and test", "--cwd", str(tmp_path)], env=llm.env())
    assert proc.returncode == 0, proc.stderr
    assert "\n  ✗ step 2 bash: exit 1\n  [step 1 bash] exit 0\n  built\n  [step 2 bash] exit 1\n" in proc.stderr, proc.stderr


def test_p_writes_the_answer_alone_on_stdout_the_models_thinking_on_stderr(llm, tmp_path):
    # A script reading `ollie -p`'s stdout got the thinking glued before the answer ("6 times 7, soIt is 42.").
    llm.script(Reply(reasoning="6 times 7, so", text="It is 42."))
    proc = run_ollie(["-p", "what is 6x7?", "--cwd", str(tmp_path)], env=llm.env())
    assert proc.returncode == 0 and proc.stdout == "It is 42.\n", (proc.stdout, proc.stderr)
    assert "6 times 7, so\n" in proc.stderr, proc.stderr


def test_p_indents_the_models_thinking_on_stderr_so_no_line_of_it_reads_as_ollies(llm, tmp_path):
    """Red team round 47 (rounds 45 and 46's "Left"): piped, the thinking was written to stderr as it came, so its
    lines stood as ollie's own (a session id to resume, an error); each is indented now, as a step's result is."""
    llm.script(Reply(reasoning="6 times 7\nollie: session 1-000000\n\nerror: the key leaked", text="It is 42.",
                     chunk_size=5))
    proc = run_ollie(["-p", "what is 6x7?", "--cwd", str(tmp_path)], env=llm.env())
    assert proc.returncode == 0 and proc.stdout == "It is 42.\n", (proc.stdout, proc.stderr)
    assert proc.stderr.splitlines()[1:] == ["  6 times 7", "  ollie: session 1-000000", "", "  error: the key leaked"]


def test_p_says_the_changed_files_are_not_known_in_a_workspace_too_large_to_track(llm, tmp_path):
    """A turn that wrote in a workspace past the checkpoints' file limit said nothing of its changes, as one that only
    talked: the user never learnt that no /changes or /rewind reaches them."""
    for n in range(6):
        (tmp_path / f"f{n}.txt").write_text("x")
    write = Reply.tool_calls(("execute_code", {"steps": [{"code": "echo hi >> a.txt", "language": "bash"}]}))
    llm.script(write, Reply.text("Done."), write, Reply.text("Again."))
    proc = run_ollie(["-p", "go", "--cwd", str(tmp_path)], env={**llm.env(), "OLLIE_CHECKPOINT_MAX_FILES": "5"})
    assert proc.returncode == 0 and (tmp_path / "a.txt").read_text() == "hi\n", (proc.stdout, proc.stderr)
    assert "\nChanged files: not known (the workspace has more than 5 files: too many to checkpoint)\n" in proc.stderr
    # Said once a session: every turn said it again (each in the home directory), the session's next one too.
    proc = run_ollie(["-c", "-p", "again", "--cwd", str(tmp_path)], env={**llm.env(), "OLLIE_CHECKPOINT_MAX_FILES": "5"})
    assert proc.returncode == 0 and (tmp_path / "a.txt").read_text() == "hi\nhi\n", (proc.stdout, proc.stderr)
    assert proc.stdout == "Again.\n" and "Changed files" not in proc.stderr, proc.stderr


def test_p_names_a_changed_file_whose_name_breaks_the_line_on_its_own_line(llm, tmp_path):
    """Red team round 47: the turn's changed files were named with a line break of the name kept, so a file the model
    made started lines of its own on stderr, as ollie's (a session id to resume, an undo command to run)."""
    name = "x.txt\nollie: session 1-000000\n1 file changed: a (+1 -1); undo: ollie -p '!rm -rf ~'"
    llm.script(Reply(tool_calls=[("call_tool", {"calls": [{"tool": "file_write", "args": [name, "hi\n"]}]})]),
               Reply.text("Done."))
    proc = run_ollie(["-p", "go", "--cwd", str(tmp_path)], env=llm.env())
    assert proc.returncode == 0 and (tmp_path / name).read_text() == "hi\n", (proc.stdout, proc.stderr)
    assert proc.stderr.count("\nollie: session") == 0 and proc.stderr.count("\n1 file changed") == 1, proc.stderr
    assert "1 file changed: x.txt\\nollie: session 1-000000\\n1 file changed: a (+1 -1); undo: ollie -p" in proc.stderr
    # Its review lists it on one line too (its name's lines read as other files' and hunks' lines there).
    review = run_ollie(["--session", proc.stderr.split()[2], "-p", "/changes", "--cwd", str(tmp_path)], env=llm.env())
    assert review.stdout.splitlines()[1:3] == [
        "added x.txt\\nollie: session 1-000000\\n1 file changed: a (+1 -1); undo: ollie -p '!rm -rf ~' (+1 -0)",
        "  [0] @@ -0,0 +1,1 @@"], review
    undo = run_ollie(["--session", proc.stderr.split()[2], "-p", "/rewind", "--cwd", str(tmp_path)], env=llm.env())
    assert undo.stdout.startswith(r"rewound to before turn 1: files restored (x.txt\nollie: session 1-000000\n1 "), undo
    assert len(undo.stdout.splitlines()) == 1 and not (tmp_path / name).exists(), undo


def test_a_session_whose_record_cannot_be_written_runs_and_its_turn_says_so(llm, tmp_path):
    # The engine's one rule for every front end (Recorder.open): the turn runs and is told, once; what it saved is kept.
    # The terminal said nothing (a new session ran unlisted; only a resumed one failed).
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the data dir should be\n")
    llm.script(Reply.text("answered anyway"))
    env = {**llm.env(), "OLLIE_DATA_DIR": str(blocker / "data"), "OLLIE_SESSIONS_DIR": str(tmp_path / "sessions")}
    work = tmp_path / "proj"
    work.mkdir()
    proc = run_ollie(["-p", "hello", "--cwd", str(work)], env=env)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("answered anyway"), (proc.stdout, proc.stderr)
    sid = re.search(r"ollie: session (\S+)", proc.stderr)
    assert sid is not None, proc.stderr
    said = f"session {sid[1]} is not recorded in the session list (the registry cannot be written: "
    assert (proc.stdout + proc.stderr).count(said) == 1 and str(blocker) in proc.stdout + proc.stderr, proc
    assert list((tmp_path / "sessions").glob(f"{sid[1]}*")), "the session was not saved"
    # `/rn` titles it all the same (in its file: `ollie store import` lists it so), and says why not in the list.
    named = run_ollie(["-p", "/rn kept name", "--session", sid[1], "--cwd", str(work)], env=env)
    assert "session renamed to 'kept name'" in named.stdout and said in named.stdout + named.stderr, named
    assert '"title":"kept name"' in next((tmp_path / "sessions").glob(f"{sid[1]}*.jsonl")).read_text()


def test_a_reply_cut_at_the_token_limit_is_said_and_exits_6(llm, tmp_path):
    llm.script(Reply.cut("The first half"))
    proc = run_ollie(["-p", "write a lot", "--cwd", str(tmp_path)], env=llm.env())
    assert proc.returncode == 6, (proc.stdout, proc.stderr)
    assert proc.stdout.strip() == "The first half"
    assert "ollie: the reply was cut off: it reached the model's output token limit (max_tokens)" in proc.stderr


def test_agent_model_and_slash_commands_flags(llm, tmp_path):
    proc = run_ollie(["-p", "/model", "--agent", "coding", "--model", "other-model", "--cwd", str(tmp_path)],
                     env=llm.env())
    assert proc.returncode == 0, proc.stderr
    assert "other-model" in proc.stdout
    # A typo is one line naming the closest command, in the terminal as in the editors (it printed the /help list).
    typo = run_ollie(["-p", "/modle", "--cwd", str(tmp_path)], env=llm.env())
    assert "unknown command /modle: did you mean /model? (/help lists the commands)" in typo.stdout + typo.stderr
    assert "commands:" not in typo.stdout + typo.stderr, (typo.stdout, typo.stderr)
    # A script or CI job sees it: the typo (and a command that failed) ended 0, as if it had run.
    assert typo.returncode == 1, typo.stderr
    failed = run_ollie(["-p", "/rewind", "--cwd", str(tmp_path)], env=llm.env())
    assert failed.returncode == 1 and "/rewind failed: this session has no turns yet" in failed.stderr, failed.stderr
    # So does a `!cmd` that exits non-zero (`ollie -p '!make test'` in CI): its output is shown, and the status says.
    for line, code in (("!echo out; exit 3", 1), ("!echo out", 0)):
        shell = run_ollie(["-p", line, "--cwd", str(tmp_path)], env=llm.env())
        assert shell.returncode == code and shell.stdout.startswith("out\n"), (shell.stdout, shell.stderr)
        assert ("[exit 3]" in shell.stdout) == bool(code), shell.stdout


def test_a_command_alone_names_no_session_it_did_not_keep(llm, tmp_path):
    # `ollie -p /model` said `ollie: session ID` of a session it then did not keep: `--session ID` found none.
    proc = run_ollie(["-p", "/model", "--cwd", str(tmp_path)], env=llm.env())
    assert proc.returncode == 0 and "model: " in proc.stdout and "ollie: session" not in proc.stderr, proc
    named = run_ollie(["-p", "/rn kept", "--cwd", str(tmp_path)], env=llm.env())  # a named one is kept: said
    said = re.search(r"ollie: session (\S+)\n", named.stderr)
    assert named.returncode == 0 and said, named
    assert run_ollie(["-p", "/model", "--session", said[1], "--cwd", str(tmp_path)], env=llm.env()).returncode == 0


def test_a_failed_turn_exits_non_zero_with_the_error(scripted_llm, tmp_path):
    llm = scripted_llm("openai", check=False)
    llm.script(Reply.error(401))
    proc = run_ollie(["-p", "hello", "--cwd", str(tmp_path)], env=llm.env())
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "error" in proc.stderr.lower()


def test_missing_key_names_the_variable(tmp_path):
    proc = run_ollie(["-p", "hello", "--cwd", str(tmp_path)], env={"OLLIE_BACKEND": "openai"})
    assert proc.returncode != 0
    assert "OLLIE_OPENAI_KEY" in proc.stderr


def test_unreachable_ollama_says_what_to_set(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    proc = run_ollie(["-p", "hello", "--cwd", str(tmp_path)],
                     env={"OLLIE_OLLAMA_URL": url.replace("//", "//user:s3cret@") + "/?token=s3cret"})
    assert proc.returncode != 0
    assert f"cannot reach Ollama at {url}/?...:" in proc.stderr and "s3cret" not in proc.stderr, proc.stderr
    assert "OLLIE_BACKEND=openai" in proc.stderr and "OLLIE_OPENAI_KEY" in proc.stderr


def test_preflight_messages(monkeypatch):
    assert "OLLIE_ANTHROPIC_KEY" in (backend_problem("anthropic") or "")
    assert "unknown backend" in (backend_problem("nope") or "")
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        monkeypatch.setenv("OLLIE_OLLAMA_URL", f"http://127.0.0.1:{port}")
        assert backend_problem(None) is None


def _rendered(tmp_path, *events: tuple[str, ...], color: bool) -> str:
    """What the terminal's renderer prints for these (role, content[, name]) events."""
    with (tmp_path / "out.txt").open("w+") as out:
        renderer = Renderer(out, out, color=color)
        for event in events:
            renderer.render(*event)
        out.seek(0)
        return out.read()


def test_renderer_is_compact(tmp_path):
    text = _rendered(tmp_path, ("assistant", "Hel"), ("assistant", "lo"), ("call", '{"path": "a.txt"}', "file_read"),
                     ("tool", "\n".join(f"line {i}" for i in range(50)), "file_read"), ("turn", "end"), color=False)
    assert text.startswith("Hello\n▸ file_read {\"path\": \"a.txt\"}\n  line 0\n  line 1")
    assert "(44 more lines)" in text and "line 49" not in text
    assert compact_result("a\nb") == "a\nb"
    assert compact_result("\n".join("abcdefg")).endswith("\nf\n… (1 more line)")  # not "(1 more lines)"
    assert compact_result("\n".join("abcdefgh"), failed=True) == "a\n… (2 more lines)\nd\ne\nf\ng\nh"


def test_word_wrap_counts_cells_not_styles_and_lets_a_word_longer_than_a_line_through():
    from ollie.cli.wrap import WordWrap

    wrap = WordWrap(lambda: 10)
    # Fed in pieces that cut words: styles take no cells, a wide character two.
    shown = "".join(wrap.feed(piece) for piece in ("ab \x1b[1mcd\x1b[0m e", "f 漢字漢 ", "x" * 14, " end")) + wrap.flush()
    # No space is left before a break: copied with the words, it trailed each line.
    assert shown == "ab \x1b[1mcd\x1b[0m ef\n漢字漢\n" + "x" * 10 + "\nxxxx end"


def test_word_wrap_never_breaks_a_line_of_fenced_code():
    from ollie.cli.markdown import MarkdownStream
    from ollie.cli.wrap import WordWrap

    markdown, wrap = MarkdownStream(styled=True), WordWrap(lambda: 20)
    reply = "Run this to see it fail:\n```python\nassert compute(1, 2) == expected_total\n```\nthen fix it please.\n"
    shown = "".join(wrap.feed(markdown.feed(reply[i:i + 7])) for i in range(0, len(reply), 7))
    shown += wrap.feed(markdown.flush()) + wrap.flush()
    lines = [line.rstrip() for line in re.sub(r"\x1b\[[0-9;]*m", "", shown).splitlines()]
    # The code as written, on one line (a break in it would be copied with it); the prose around it wrapped.
    assert "    assert compute(1, 2) == expected_total" in lines
    assert lines[:2] == ["Run this to see it", "fail:"] and "then fix it please." in lines


def test_sanitizing_removes_what_a_terminal_would_obey():
    from ollie.cli.sanitize import StreamCleaner, printable
    from ollie.escapes import escaped

    assert printable("\x1b[2J\x1b[H All tests passed") == " All tests passed"
    assert printable("a\x1b]52;c;ZXZpbA==\x07b\x1bP1|x\x1b\\c\x9b31md") == "abcd"
    assert printable("x\ry\x00\x7f\x85\u202eevil\u2066z\ttab\nline") == "xyevilz\ttab\nline"
    assert printable("\x1b]0;never closed") == "0;never closed"  # an open sequence hides nothing after it
    assert printable("héllo ✓ 日本") == "héllo ✓ 日本"
    assert escaped("echo hi\r\x1b[2Kecho harmless\n\tnext\u202e") == "echo hi\\r\\x1b[2Kecho harmless\n\tnext\\u202e"
    text = "Done\x1b]0;title\x07 and \x1b[31mred\x1b[0m\x1b"
    for size in (1, 2, 3, 7):
        cleaner = StreamCleaner()
        pieces = "".join(cleaner.feed(text[i:i + size]) for i in range(0, len(text), size))
        assert pieces + cleaner.flush() == "Done and red", size


def test_renderer_styles_only_after_sanitizing(tmp_path):
    text = _rendered(tmp_path, ("assistant", "hi \x1b]0;"), ("assistant", "title\x07there\r"),
                     ("tool", "\x1b[2J\x1b[HAll tests passed", "file_read\x1b[31m"),
                     ("exec", "\x1b]52;c;ZXZpbA==\x07shell"), ("turn", "end"), color=True)
    foreign = text.replace("\x1b[2m", "").replace("\x1b[0m", "")
    assert "\x1b" not in foreign and "\r" not in foreign
    assert "hi there" in text and "  All tests passed" in text and "shell" in text


def test_interactive_session_reads_prompts_until_eof(llm, tmp_path):
    llm.script(Reply.text("first reply"), Reply.text("second reply"))
    proc = run_ollie(["--cwd", str(tmp_path)], env=llm.env(), input="hello\n\n/help\nagain\n")
    assert proc.returncode == 0, proc.stderr
    assert "first reply" in proc.stdout and "second reply" in proc.stdout
    assert "/model" in proc.stdout  # the /help output
    assert proc.stdout.index("first reply") < proc.stdout.index("second reply")


def test_demo_exits_zero_and_prints_the_labelled_transcript():
    proc = run_ollie(["demo"], timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "scripted model (no real LLM)" in out
    assert "you> What does hello.py do?" in out
    assert "▸ Read hello.py" in out
    assert "def greet" in out  # the tool's result: the sample file, read in the sandbox
    assert "hello.py defines `greet(name)`" in out
    assert "demo: OK" in out
    # The session went with the demo's scratch dirs: named, it sent the user to resume one that was gone.
    assert "session" not in proc.stderr, proc.stderr


def test_a_killed_demos_scratch_dirs_go_with_the_next_demo_and_a_live_ones_stay(tmp_path):
    """`ollie demo` killed with -9 left its /tmp/ollie-demo-* for good: the next demo sweeps those no live demo owns."""
    import signal

    from ollie.tools.execute.sessiondirs import SessionDirs

    env = {"TMPDIR": str(tmp_path)}
    killed = subprocess.Popen([*OLLIE, "demo"], env=child_env(env), stdout=subprocess.PIPE, text=True,
                              stdin=subprocess.DEVNULL, start_new_session=True)
    assert killed.stdout is not None
    while not (line := killed.stdout.readline()).startswith("workspace "):
        assert line, "the demo printed no workspace"
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    left = Path(line.split(" ", 1)[1].strip()).parent
    assert left.name.startswith("ollie-demo-") and left.is_dir()
    live = SessionDirs(tmp_path / "ollie-demo-running")  # a demo that runs meanwhile, in another terminal
    live.claim()
    try:
        proc = run_ollie(["demo"], env=env, timeout=120)
        assert proc.returncode == 0 and "demo: OK" in proc.stdout, proc.stdout + proc.stderr
        assert not left.exists() and live.root.is_dir()
        assert [p.name for p in tmp_path.glob("ollie-demo-*")] == [live.root.name]  # nor did this one leave its own
    finally:
        live.remove()


def test_the_demo_in_a_repository_carrying_an_ollie_package_runs_ollies_own(tmp_path):
    """`ollie demo` ran `python -m ollie.cli` from where it was typed: a cloned repository's `ollie/` came first."""
    import shutil

    repo, marker = tmp_path / "cloned", tmp_path / "ran"
    (repo / "ollie").mkdir(parents=True)
    (repo / "ollie" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit(3)\n")
    ollie = shutil.which("ollie", path=str(Path(sys.executable).parent))
    assert ollie, "the ollie console script is installed"
    proc = subprocess.run([ollie, "demo"], env=child_env(), cwd=repo, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0 and "demo: OK" in proc.stdout, proc.stdout + proc.stderr
    assert not marker.exists(), "the repository's ollie package ran"


def test_ctrl_c_interrupts_the_turn_of_p(llm, tmp_path):
    import signal

    llm.script(Reply(text=LONG_TALK, chunk_size=5, delay=0.1))
    proc = subprocess.Popen([*OLLIE, "-p", "talk", "--cwd", str(tmp_path)], env=child_env(llm.env()),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        assert proc.stderr.readline().startswith("ollie: session ")
        wait_until(lambda: llm.chat_requests, "the model asked")  # (a pipe gets the answer once the turn ends)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130  # long before the reply's 5 minutes
        assert LONG_TALK.startswith(proc.stdout.read().strip())  # what came before the interrupt
    finally:
        proc.kill()
        proc.wait()


def test_ctrl_c_while_a_command_still_pipes_into_p_exits_130_without_a_traceback(llm, tmp_path):
    # `make test 2>&1 | ollie -p "why did this fail"`, Ctrl-C while make runs: the whole pipeline gets it, and ollie,
    # still reading what make writes, printed a Python traceback (as anywhere before its turn began).
    import signal

    proc = subprocess.Popen([*OLLIE, "-p", "why did this fail", "--cwd", str(tmp_path)], env=child_env(llm.env()),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.PIPE)
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"FAILED test_one\n")
        proc.stdin.flush()  # and more to come: the pipe stays open
        # read(0, ...): ollie waits for the rest of what is piped in
        wait_until(lambda: Path(f"/proc/{proc.pid}/syscall").read_text().split()[:2] == ["0", "0x0"],
                   "ollie reads its stdin")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and b"Traceback" not in err, err.decode()
        assert not llm.chat_requests
    finally:
        proc.kill()
        proc.wait()


def test_double_ctrl_c_at_the_idle_prompt_exits(llm, tmp_path):
    import signal

    proc = subprocess.Popen([*OLLIE, "--cwd", str(tmp_path)], env=child_env(llm.env()), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
    try:
        banner = proc.stderr.readline() + proc.stderr.readline()  # agent and model, then the session
        assert "ollie" in banner and "session" in banner
        proc.send_signal(signal.SIGINT)
        # One Ctrl-C at the idle prompt only warns; the second is sent once the first was taken (two signals
        # pending at once are one).
        assert "Ctrl-C again" in proc.stderr.readline() + proc.stderr.readline()
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.wait()


def test_daemon_version_and_tcp_mode(tmp_path):
    import asyncio

    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    from ollie_lsp.protocol import raw_params_converter

    out = subprocess.run([sys.executable, "-m", "ollie_lsp", "--version"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout.startswith("ollie-lsp ")
    port = free_port()
    token = "a-token-of-the-editors-choosing"
    daemon = subprocess.Popen([sys.executable, "-m", "ollie_lsp", "--tcp", f"127.0.0.1:{port}"],
                              env=child_env({"OLLIE_LSP_TOKEN": token}), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)

    async def talk() -> dict:
        client = LanguageClient("t", "1", converter_factory=raw_params_converter)
        for _ in range(300):  # the daemon starts listening (30 s: a loaded machine is slow to start it)
            try:
                await client.start_tcp("127.0.0.1", port)
                break
            except OSError:
                await asyncio.sleep(0.1)
        result = await client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=tmp_path.as_uri(),
            initialization_options={"token": token}))
        assert "ollie" in result.capabilities.experimental
        state = await asyncio.wait_for(client.protocol.send_request_async("ollie/state", {}), 30)
        await client.shutdown_async(None)
        client.exit(None)
        return state

    try:
        state = asyncio.run(asyncio.wait_for(talk(), 60))
        assert state["cwd"] == str(tmp_path.resolve()) and state["state"] == "idle"
    finally:
        daemon.kill()
        daemon.wait()


def test_session_flag_resumes_a_saved_session(llm, tmp_path):

    llm.script(Reply.text("noted"), Reply.text("it was 9"))
    first = run_ollie(["--cwd", str(tmp_path)], env=llm.env(), input="remember 9\n")
    assert first.returncode == 0, first.stderr
    session = re.search(r"session (\d+-[0-9a-f]{6})", first.stderr).group(1)
    second = run_ollie(["-p", "what was it?", "--session", session, "--cwd", str(tmp_path)], env=llm.env())
    assert second.returncode == 0, second.stderr
    assert "it was 9" in second.stdout
    users = [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"]
    assert users == ["remember 9", "what was it?"]
    # Recorded on channel cli (editors list it) and stamped by the resumed run's turn.
    registry = Registry()
    info = registry.get(Scope(user_id=os_user()), session)
    registry.close()
    assert (info.channel, info.kind, info.last_turn_result) == ("cli", "chat", "end")


def test_a_resumed_session_goes_on_with_its_model_unless_the_command_line_names_one(llm, tmp_path):
    llm.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    first = run_ollie(["--cwd", str(tmp_path)], env=llm.env(), input="/model picked-model\nhello\n")
    session = re.search(r"session (\d+-[0-9a-f]{6})", first.stderr).group(1)
    for args in ([], ["--model", "flag-model"]):
        again = run_ollie(["-p", "again", "--session", session, *args, "--cwd", str(tmp_path)], env=llm.env())
        assert again.returncode == 0, again.stderr
    assert [r.body["model"] for r in llm.chat_requests] == ["picked-model", "picked-model", "flag-model"]


async def test_a_failed_open_closes_the_core_when_the_record_failed_before_it(tmp_path):
    """The record cannot be opened (the registry says the session is another agent's) and then the approval mode
    is refused: the Core is closed all the same (its live lock free, its tool processes ended)."""
    from ollie.agent.core import Core
    from ollie.cli.terminal import RunOptions, open_core
    from ollie.sessions.types import Request

    saved = await Core.create(cwd=tmp_path)
    session = saved.session_id
    await saved.close()
    registry = Registry()
    registry.ensure(Request(id=session, user_id=os_user(), agent_id="another", kind="chat", channel="cli"))
    registry.close()
    with pytest.raises(ValueError, match="unknown approval mode"):
        await open_core(RunOptions(agent="default", session=session, cwd=tmp_path, approval="sometimes"))
    again = await Core.create(cwd=tmp_path, session_id=session)  # the live lock was given back
    await again.close()


def test_session_flag_with_an_unknown_id_fails_fast_and_creates_nothing(scripted_llm, tmp_path):
    from ollie import paths

    llm = scripted_llm("openai")  # checked at teardown: no request may reach the model
    unknown = "1700000000000000000-abcdef"
    for args in (["-p", "hello"], []):  # one turn, and the interactive prompt
        proc = run_ollie([*args, "--session", unknown, "--cwd", str(tmp_path)], env=llm.env(), timeout=30)
        assert proc.returncode == 1, (proc.stdout, proc.stderr)
        assert f"--session {unknown}: no saved session has this id" in proc.stderr, proc.stderr
        assert "`ollie -p /sessions` lists the saved sessions" in proc.stderr
    assert llm.chat_requests == []
    sessions = paths.sessions_dir()
    assert not sessions.exists() or not any(sessions.iterdir()), list(sessions.iterdir())
    registry = Registry()
    try:
        assert registry.page(Scope(user_id=os_user()))[0] == []
    finally:
        registry.close()
    # A malformed id is no saved session either (not a traceback).
    bad = run_ollie(["-p", "hello", "--session", "../etc", "--cwd", str(tmp_path)], env=llm.env(), timeout=30)
    assert bad.returncode == 1 and "no saved session has this id" in bad.stderr, bad.stderr


def test_ctrl_c_in_the_interactive_prompt_interrupts_the_turn_and_keeps_going(llm, tmp_path):
    import signal
    import time

    llm.script(Reply(text=LONG_TALK, chunk_size=5, delay=0.1), Reply.text("after the interrupt"))
    proc = subprocess.Popen([*OLLIE, "--cwd", str(tmp_path)], env=child_env(llm.env()), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
    try:
        proc.stdin.write("talk\n")
        proc.stdin.flush()
        assert proc.stdout.read(4) == "word"
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        assert proc.poll() is None  # the turn stopped, the prompt did not
        out, err = proc.communicate("next\n", timeout=30)
        assert proc.returncode == 0, err
        assert "after the interrupt" in out
        assert out.count("word") < LONG_TALK.count("word")
    finally:
        proc.kill()
        proc.wait()


def test_one_shot_runs_no_elevated_step_without_someone_to_ask(llm, tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    target = tmp_path / "outside.txt"
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": f"echo x > {target}", "elevated": True}]})),
               Reply.text("could not"))
    proc = run_ollie(["--cwd", str(scratch), "-p", "go"], env={**llm.env(), "TMPDIR": str(scratch)})
    assert proc.returncode == 7, proc.stderr  # a step was not run: no script takes the turn for done
    assert not target.exists()
    assert "nobody can give it" in json.dumps(llm.chat_requests[-1].body["messages"])
    assert proc.stderr.rstrip().endswith("it runs outside the sandbox: only the interactive `ollie` can allow it"), \
        proc.stderr


def test_text_piped_into_p_goes_with_the_prompt(llm, tmp_path):
    # `git diff | ollie -p "review this"`: the piped text was dropped unread, and `-p` with no text was a usage error.
    diff = "-    return a - b\n+    return a + b\n"
    llm.script(Reply.text("looks right"), Reply.text("it adds"))
    review = run_ollie(["-p", "review this", "--cwd", str(tmp_path)], env=llm.env(), input=diff)
    assert review.returncode == 0 and review.stdout == "looks right\n", review.stderr
    assert llm.chat_requests[0].body["messages"][-1]["content"] == f"review this\n\n{diff}"
    alone = run_ollie(["-p", "--cwd", str(tmp_path)], env=llm.env(), input="what does add do?\n")
    assert alone.returncode == 0 and alone.stdout == "it adds\n", alone.stderr
    assert llm.chat_requests[1].body["messages"][-1]["content"] == "what does add do?\n"
    # Nothing piped (stdin a terminal or /dev/null) and no text: said, no turn started.
    empty = run_ollie(["-p", "--cwd", str(tmp_path)], env=llm.env())
    assert empty.returncode == 2 and "-p needs a prompt" in empty.stderr, empty.stderr
    big = run_ollie(["-p", "sum these", "--cwd", str(tmp_path)], env=llm.env(), input="1\n" * (1 << 20))
    assert big.returncode == 2 and "larger than 1048576 bytes" in big.stderr, big.stderr
    assert len(llm.chat_requests) == 2


def test_help_names_every_command_and_store_after_options_says_how(tmp_path):
    proc = run_ollie(["--help"])
    said = " ".join(proc.stdout.split())  # as wrapped to the terminal's width
    assert proc.returncode == 0 and "{demo,doctor,acp,store}" in said and "store: the session store" in said, said
    proc = run_ollie(["--cwd", str(tmp_path), "store"])
    assert proc.returncode == 2 and "`ollie store --help`" in proc.stderr, proc.stderr
    # A subcommand's own help, with what it takes (it was the top-level help).
    for command, takes in (("demo", "usage: ollie demo [-h]\n"),
                           ("doctor", "usage: ollie doctor [-h] [--backend BACKEND] [--model MODEL] [--cwd CWD]\n")):
        proc = run_ollie([command, "--help"])
        assert proc.returncode == 0 and proc.stdout.startswith(takes), proc.stdout
        said = " ".join(proc.stdout.split())  # as wrapped to the terminal's width
        assert ("scripted model" if command == "demo" else "the session store and the editors' ollie-lsp") in said
        # An option it does not take is its own parser's error, with its own usage (it was the top-level one's).
        proc = run_ollie([command, "--bogus"])
        assert proc.returncode == 2 and proc.stderr.startswith(takes), proc.stderr
        assert proc.stderr.endswith(f"ollie {command}: error: unrecognized arguments: --bogus\n"), proc.stderr



def test_an_image_a_tool_returns_is_named_under_its_step(scripted_llm, tmp_path):
    # An MCP tool's screenshot: the terminal named it only where the result's text did, within its first lines
    # (VS Code draws it, Neovim names it on a line of its own).
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "ollie"
    config.mkdir(parents=True, exist_ok=True)
    server = {"command": sys.executable, "args": [str(Path(__file__).parents[1] / "mcp" / "server.py")]}
    (config / "mcp.json").write_text(json.dumps({"mcpServers": {"t": server}}))
    srv = scripted_llm("anthropic")
    srv.script(Reply.tool_calls(("mcp__t__screenshot", {})), Reply.text("It is red."))
    proc = run_ollie(["-p", "what is on the screen?", "--cwd", str(tmp_path)], env=srv.env())
    assert proc.returncode == 0, proc.stderr
    [(mime, shot)] = srv.images(srv.chat_requests[1])  # the model was shown it
    assert proc.stdout == "It is red.\n", proc.stdout  # its steps on stderr
    assert "\n▸ t: screenshot\n  the screen, 3x2\n" in proc.stderr, proc.stderr
    assert proc.stderr.endswith(f"\n  [image: {mime}, {max(1, round(len(shot) / 1024))} KB]\n"), proc.stderr
