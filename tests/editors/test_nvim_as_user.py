"""Neovim's TUI run by a normal user, not root (`tests/asuser.py`): what root's powers hide, such as a file the user
may not write."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ollie.testing import Reply
from tests.asuser import _as, ollie_lsp_for, os_user
from tests.tools.test_os_users import ALICE, BOB, home_of, shared  # noqa: F401  (the fixture)

from .test_nvim import _nvim
from .test_nvim_tui import NO_PYTHON_PROVIDER, PLUGIN, Tmux, assert_clean, choice


def start_nvim_as_alice(home: Path, env: dict[str, str], edit: str) -> Tmux:
    """Neovim in tmux as ALICE, README's `setup({})`, in her `work` dir editing `edit`; ollie-lsp on her PATH."""
    user = os_user(ALICE)
    again = (home / "work" / ".git").exists()  # (Neovim started again, after a quit)
    (home / "work" / ".git").mkdir(exist_ok=True)
    bin_dir = ollie_lsp_for(ALICE, home).parent
    init = home / "init.lua"
    init.write_text(f'vim.opt.rtp:prepend("{PLUGIN}")\nrequire("ollie").setup({{}})\n')
    for path in (home / "work" / ".git", init):
        os.chown(path, user.pw_uid, user.pw_gid)
    # Her own environment only: none of root's (its PATH, its XDG dirs).
    mine = {"HOME": str(home), "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin", "TERM": "tmux-256color",
            "COLORTERM": "truecolor", "LANG": "C.UTF-8", "TMPDIR": str(home.parent),
            **{f"XDG_{d.upper()}_HOME": str(home / d) for d in ("config", "data", "state")}, **env}
    command = [*_as(user), "env", "-i", *(f"{k}={v}" for k, v in mine.items()),
               _nvim(), *NO_PYTHON_PROVIDER, "-u", str(init), "-i", "NONE", "-n", edit]
    tmux = Tmux(f"ollie-user-{os.getpid()}-{home.parent.name}{'-again' if again else ''}", home / "work",
                dict(os.environ), command)
    tmux.captures = home.parent / "captures"
    tmux.captures.mkdir(exist_ok=True)
    return tmux


def test_the_agent_s_edit_of_an_open_file_she_may_not_write_is_refused_and_said(shared, scripted_llm):  # noqa: F811
    """The agent edits an open file only root may write: the edit is refused (nothing in the buffer, nothing on disk,
    no W10 read-only warning pausing the editor) and the model is told why (before: the edit sat in the buffer,
    the save failed, and the chat showed a ✓ and "1 file changed" with the file unchanged)."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["vendor/lib.py", "VERSION = 1", "VERSION = 2"]}]})), Reply.text("Bumped."))
    home = home_of(ALICE, shared)
    vendor = home / "work" / "vendor"
    vendor.mkdir()  # root's (0755), as the file in it
    (vendor / "lib.py").write_text("VERSION = 1\n")
    with start_nvim_as_alice(home, srv.env(approval="auto"), "vendor/lib.py") as tmux:
        tmux.wait(lambda s: "VERSION = 1" in s, "nvim to start")
        tmux.keys(":Ollie bump the vendored version", "Enter")
        done = tmux.keep("1-refused", tmux.wait(lambda s: "Bumped." in s, "the turn", 60))
        code = [line.split("│")[0].rstrip() for line in done.splitlines()]
        assert "VERSION = 1" in code and "VERSION = 2" not in code and "vendor/lib.py [+]" not in done, done
        assert "✗ Edit vendor/lib.py" in done and "W10" not in done, done
        # The why shows under the failed step, not folded away behind its "exit 1" line.
        assert "read-only" in "".join(line.split("│", 1)[-1].strip() for line in done.splitlines()), done
        assert_clean(tmux.screens)
    assert (vendor / "lib.py").read_text() == "VERSION = 1\n"
    model_saw = srv.chat_requests[-1].body["messages"][-1]["content"]
    assert "read-only (no write permission), not changed" in model_saw, model_saw


def test_her_edit_outside_the_workspace_says_which_file_of_hers_would_allow_it(shared, scripted_llm):  # noqa: F811
    """Under `ask`, her default, the agent edits a file of hers outside the project (~/notes/todo.txt): refused without
    a question, and the chat names the key and the sandbox file to add it in, her own (~/.config/ollie/sandbox.yaml),
    not the installation's (before: only the policy's list of writable paths)."""
    home = home_of(ALICE, shared)
    user = os_user(ALICE)
    todo = home / "notes" / "todo.txt"
    todo.parent.mkdir()
    todo.write_text("one\n")
    for path in (todo.parent, todo):
        os.chown(path, user.pw_uid, user.pw_gid)
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["~/notes/todo.txt", "one", "two"]}]})),
               Reply.text("Left as it is."))
    (home / "work" / "calc.py").write_text("x = 1\n")
    with start_nvim_as_alice(home, srv.env(approval="ask"), "calc.py") as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie tick off my todo", "Enter")
        done = tmux.keep("1-outside", tmux.wait(lambda s: "Left as it is." in s and "(end)" in s, "the turn", 60))
        chat = "".join("".join(line.split("│", 1)[-1] for line in done.splitlines()).split())
        assert f"{todo}isoutsidethewritablepathsofsandboxpolicy'default'" in chat, done
        assert f"filesystem.rwin{home}/config/ollie/sandbox.yaml" in chat, done
        assert_clean(tmux.screens)
    assert todo.read_text() == "one\n"


def test_a_path_entry_she_may_not_reach_leaves_the_agent_s_edits_undoable(shared, scripted_llm):  # noqa: F811
    """Her PATH names a dir she may not reach (root's, as `su` keeps root's PATH): the agent's edit is checkpointed,
    so the chat counts it and `:OllieChanges` lists it (Bug: looking for git raised EACCES on that entry, so every
    checkpoint failed: "a checkpoint ... failed ... Permission denied", the edit shown as no change, not undoable)."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["calc.py", "a - b", "a + b"]}]})),
               Reply.text("Fixed add."))
    home = home_of(ALICE, shared)
    (home / "work" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    user = os_user(ALICE)
    os.chown(home / "work" / "calc.py", user.pw_uid, user.pw_gid)
    private = shared / "root-only"
    (private / "bin").mkdir(parents=True)
    private.chmod(0o700)
    path = f"{ollie_lsp_for(ALICE, home).parent}:{private / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    with start_nvim_as_alice(home, {**srv.env(approval="auto"), "PATH": path}, "calc.py") as tmux:
        tmux.wait(lambda s: "return a - b" in s, "nvim to start")
        tmux.keys(":Ollie fix add", "Enter")
        done = tmux.keep("1-edited", tmux.wait(lambda s: "Fixed add." in s and "(end)" in s and "1 file changed" in s,
                                                       "the turn, its changes line too", 60))
        assert "1 file changed" in done and "checkpoint" not in done, done
        tmux.keys(":OllieChanges", "Enter")
        listed = tmux.keep("2-changes", tmux.wait(lambda s: "M  calc.py" in s, "the turn's changes"))
        assert "turn 1 changed 1 file" in listed, listed


# Run as another user: each file under argv[1] it may read, unpacked when it is a git object, that holds argv[2].
PEEK = """import os, sys, zlib
for top, _, names in os.walk(sys.argv[1]):
    for name in names:
        try:
            data = open(os.path.join(top, name), "rb").read()
        except OSError:
            continue
        try:
            data = zlib.decompress(data)
        except zlib.error:
            pass
        if sys.argv[2].encode() in data:
            print(os.path.join(top, name))
"""


def test_her_daily_loop_edit_of_her_unsaved_buffer_tests_resume_and_undo(shared, scripted_llm):  # noqa: F811
    """As her: a prompt queued while an answer streams; the edit of calc.py, which holds her unsaved line, asked about
    (it says that line is saved with it) and allowed; the tests the agent runs see both; Neovim quit and started
    again, `:OllieSessions` resumes the session, and `:OllieChanges` undoes the edit in her file, her line kept."""
    srv = scripted_llm("openai")
    srv.script(Reply(text="calc.py adds. " * 40, delay=0.05, chunk_size=14),
               Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["calc.py", "a - b", "a + b"]}]})),
               Reply.tool_calls(("execute_code", {"steps": [{"code": "python3 test_calc.py", "language": "bash"}]})),
               Reply.text("Fixed add; the tests pass."))
    home, user = home_of(ALICE, shared), os_user(ALICE)
    calc = home / "work" / "calc.py"
    for path, text in ((calc, "def add(a, b):\n    return a - b\n"),
                       (home / "work" / "test_calc.py", "from calc import add, SUB\n\nassert add(2, 3) == 5 - SUB\n"
                                                        "print('tests passed')\n")):
        path.write_text(text)
        os.chown(path, user.pw_uid, user.pw_gid)
    with start_nvim_as_alice(home, srv.env(approval="ask"), "calc.py") as tmux:
        tmux.wait(lambda s: "return a - b" in s, "nvim to start")
        tmux.keys("G", "o", "SUB = 0", "Escape")
        tmux.keys(":Ollie explain calc.py", "Enter")
        tmux.wait(lambda s: "calc.py adds." in s, "the answer to stream", 60)
        tmux.keys(":OllieChat", "Enter", "fix add and run the tests", "Escape", "Enter")
        tmux.wait(lambda s: "⏳ queued: fix add and run the tests" in s, "the prompt queued")
        asked = tmux.keep("1-asked", tmux.wait(lambda s: "ollie asks to: Edit calc.py" in s and "Allow once" in s,
                                               "the edit's question", 60))
        assert "calc.py has your unsaved changes: allowing saves them with the edit" in asked, asked
        tmux.keys(choice(asked, "Allow once"), "Enter")
        ran = tmux.wait(lambda s: "Allow once" in s and "python3 test_calc.py" in s, "the run's question", 60)
        tmux.keys(choice(ran, "Allow once"), "Enter")
        tmux.keep("2-done", tmux.wait(lambda s: "Fixed add; the tests pass." in s and "(end)" in s, "the turn", 60))
        assert "tests passed" in srv.chat_requests[-1].body["messages"][-1]["content"]
        assert calc.read_text() == "def add(a, b):\n    return a + b\nSUB = 0\n" and calc.stat().st_uid == user.pw_uid
        tmux.keys(":qa", "Enter")
        tmux.wait_exit(":qa")
    with start_nvim_as_alice(home, srv.env(approval="ask"), "calc.py") as tmux:
        tmux.wait(lambda s: "return a + b" in s, "nvim to start again")
        tmux.keys(":OllieSessions", "Enter")
        picker = tmux.wait(lambda s: "Type number" in s and "explain calc.py" in s, "her sessions")
        tmux.keys(next(line.split(":")[0] for line in picker.splitlines() if "explain calc.py" in line), "Enter")
        tmux.keep("3-resumed", tmux.wait(lambda s: "Fixed add; the tests pass." in s and "⏳" not in s, "the resume"))
        tmux.keys("Escape", ":OllieChanges", "Enter")
        tmux.wait(lambda s: "M  calc.py" in s, "the turn's changes")
        tmux.keys(":call search('calc.py')", "Enter", "Enter")
        tmux.wait(lambda s: "before turn 2: calc.py" in s, "the diff")
        tmux.keys("d", "u")
        tmux.keep("4-undone", tmux.wait(lambda s: "undone: hunk 1 of calc.py" in s, "the undo"))
        assert calc.read_text() == "def add(a, b):\n    return a - b\nSUB = 0\n"
        assert_clean(tmux.screens)


def one_turn_as_alice(home, srv, file: str, prompt: str, done) -> None:
    """Alice opens `file` in Neovim, sends `prompt` and waits until the screen shows `done` (its capture kept)."""
    with start_nvim_as_alice(home, srv.env(approval="auto"), file) as tmux:
        tmux.wait(lambda s: file in s, "nvim to start")
        tmux.keys(prompt, "Enter")
        tmux.keep("1-turn", tmux.wait(done, "the turn", 60))


def found_by_bob(where, secret: str) -> str:
    """The files under `where` in which a second user of the machine (Bob) finds `secret` ("" when none)."""
    return subprocess.run([*_as(os_user(BOB)), "/usr/bin/python3", "-I", "-c", PEEK, str(where), secret],
                          capture_output=True, text=True, timeout=60, check=True).stdout


def test_another_user_cannot_read_her_private_file_in_the_checkpoints(shared, scripted_llm):  # noqa: F811
    """Her workspace holds a 0600 `.env`; after a turn that edits another file, a second user of the machine finds
    its secret nowhere under her state dir, which she left traversable as most homes are (Bug: the checkpoints kept
    a copy of every file as a 0444 git object in 0755 dirs: anyone who reached ~/.local/state read her secret)."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["calc.py", "a - b", "a + b"]}]})),
               Reply.text("Fixed add."))
    home = home_of(ALICE, shared)
    user = os_user(ALICE)
    for name, text in (("calc.py", "def add(a, b):\n    return a - b\n"), (".env", "API_KEY=sk-her-secret\n")):
        (home / "work" / name).write_text(text)
        os.chown(home / "work" / name, user.pw_uid, user.pw_gid)
    (home / "work" / ".env").chmod(0o600)
    one_turn_as_alice(home, srv, "calc.py", ":Ollie fix add", lambda s: "Fixed add." in s and "1 file changed" in s)
    assert list((home / "state" / "ollie" / "checkpoints").iterdir()), "no checkpoint was made"
    assert found_by_bob(home / "state", "sk-her-secret") == ""


def test_a_rewind_leaves_her_private_file_private(shared, scripted_llm):  # noqa: F811
    """The agent edits her 0600 `.env`; `:OllieRewind` puts its text back and leaves it 0600 (Bug: the rewind wrote
    every file it put back as 0644, so her secret was anyone's to read)."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [
        {"tool": "file_edit", "args": [".env", "API_KEY=old", "API_KEY=new"]}]})), Reply.text("Rotated the key."))
    home = home_of(ALICE, shared)
    user = os_user(ALICE)
    secret = home / "work" / ".env"
    secret.write_text("API_KEY=old\n")
    os.chown(secret, user.pw_uid, user.pw_gid)
    secret.chmod(0o600)
    (home / "work" / "calc.py").write_text("x = 1\n")
    with start_nvim_as_alice(home, srv.env(approval="auto"), "calc.py") as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie rotate the key", "Enter")
        tmux.wait(lambda s: "Rotated the key." in s and "1 file changed" in s, "the turn", 60)
        assert secret.read_text() == "API_KEY=new\n" and secret.stat().st_mode & 0o777 == 0o600
        tmux.keys(":OllieRewind 1", "Enter")
        tmux.keep("1-asked", tmux.wait(lambda s: "Type number" in s, "the rewind's question"))
        tmux.keys("1", "Enter")
        tmux.keep("2-rewound", tmux.wait(lambda s: "rewound to before turn 1" in s and "Rotated the key." not in s,
                                         "the rewind"))
    assert secret.read_text() == "API_KEY=old\n"
    assert oct(secret.stat().st_mode & 0o777) == oct(0o600)


def test_another_user_cannot_read_the_notes_the_agent_keeps_for_her(shared, scripted_llm):  # noqa: F811
    """The agent remembers a fact of her project (`memory_remember`); a second user of the machine finds it nowhere
    under her data dir, which she left traversable (Bug: the notes dir was 0755 and its file 0644, beside the 0700
    sessions dir whose conversations the notes come from)."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [
        {"tool": "memory_remember", "args": ["The staging password is hunter2-staging"]}]})), Reply.text("Noted."))
    home = home_of(ALICE, shared)
    one_turn_as_alice(home, srv, "notes.txt", ":Ollie remember the staging password",
                      lambda s: "Noted." in s and "(end)" in s)
    assert "hunter2-staging" in "".join(p.read_text() for p in (home / "data").rglob("memories.jsonl"))
    assert found_by_bob(home / "data", "hunter2-staging") == ""
