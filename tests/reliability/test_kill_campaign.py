"""kill -9 of the daemon after each kind of session operation, mid-turn, mid-write, at seeded random moments; and of
the editor.

test_chaos_kills kills mid-step and mid-stream; this places the kill after what else a user does to a session (a
turn of edits, parallel calls, a rename, a rewind and its undo, a review undo, a fork, a compaction, /clear), while
a compaction streams, after a turn's first rounds edited, while a file tool writes. After each kill: no process of
the dead daemon is left (its fork server, steps, MCP server), a new daemon resumes the session, its history holds
every completed operation, the files are as it left them, and review and rewind still work. The random placements
take their seed from OLLIE_KILL_SEED and their count from OLLIE_KILL_COUNT (a wider run: set both).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ollie.testing import Reply
from ollie.tools.execute.args import MAX_CALLS
from tests.procs import children_of, new_mark, process_gone, processes_with, wait_until
from tests.reliability.conftest import REPO, daemon_env

# The task state a compaction asks the model for.
SUMMARY = json.dumps({"goal": "edit a and b", "plan": ["a", "b"], "plan_step": "b", "completed": ["a"]})
MCP_SERVER = Path(__file__).parents[1] / "mcp" / "server.py"


def edit(path: str, old: str, new: str) -> tuple[str, dict[str, Any]]:
    """A call_tool call running file_edit on `path`."""
    return ("call_tool", {"calls": [{"tool": "file_edit", "args": [path, old, new]}]})


def descendants(pid: int) -> list[int]:
    """Every process under `pid` (its fork server, steps, MCP servers, spares)."""
    found, todo = [], [pid]
    while todo:
        for child in children_of(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


class Campaign:
    """One session on a daemon that the test kills and restarts, with what it must hold after each kill."""

    def __init__(self, start_daemon: Any, srv: Any, workdir: Path) -> None:
        self.start_daemon, self.srv, self.workdir = start_daemon, srv, workdir
        self.daemon = self.start()
        self.session: str = self.daemon.request("ollie/state", {}, timeout=60)["session"]

    def start(self) -> Any:
        """A new daemon, once the MCP servers the user configured run under it (a kill must take them too)."""
        daemon = self.start_daemon(env=self.srv.env())
        wait_until(lambda: all(s["state"] == "ready" for s in daemon.request("ollie/mcp/list", {})["servers"]),
                   "an MCP server never came up")
        return daemon

    def request(self, method: str, params: dict[str, Any], timeout: float = 60) -> Any:
        """`method` on the live daemon, for this session."""
        return self.daemon.request(method, {"session": self.session, **params}, timeout=timeout)

    def messages(self) -> list[dict[str, Any]]:
        """The session's conversation as the daemon holds it."""
        return self.request("ollie/context", {})["messages"]

    def kill_and_resume(self, what: str, meanwhile: Callable[[], object] = lambda: None) -> list[dict[str, Any]]:
        """SIGKILL the daemon; check that nothing of it is left; `meanwhile`; a new daemon loads the session: its
        messages."""
        left = descendants(self.daemon.pid)
        os.kill(self.daemon.pid, signal.SIGKILL)
        self.daemon.proc.wait(10)
        alive = [pid for pid in left if not process_gone(pid)]
        assert not alive, f"after a kill {what}: {alive} outlived the daemon"
        meanwhile()
        self.daemon = self.start()
        loaded = self.request("ollie/session/load", {})
        assert loaded["session"] == self.session, f"after a kill {what}: {loaded}"
        return self.messages()

    def survives(self, what: str) -> list[dict[str, Any]]:
        """Kill and resume after an operation completed: the new daemon holds the conversation as the dead one did."""
        before = self.messages()
        after = self.kill_and_resume(what)
        assert after == before, f"after a kill {what}"
        return after

    def file(self, name: str) -> str:
        """The text of `name` in the workspace."""
        return (self.workdir / name).read_text()


def _cmdline(pid: int) -> bytes:
    """The command line of `pid` (empty once it is gone)."""
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    return b""


def roles(messages: list[dict[str, Any]]) -> list[str]:
    """The role of each message."""
    return [m["role"] for m in messages]


@pytest.mark.timeout(300)
def test_a_kill_after_each_kind_of_operation_loses_nothing_it_completed(start_daemon, scripted_llm, workdir):
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "ollie"  # an MCP server under the daemon: it dies with it
    config.mkdir(parents=True, exist_ok=True)
    (config / "mcp.json").write_text(json.dumps(
        {"mcpServers": {"t": {"command": sys.executable, "args": [str(MCP_SERVER)]}}}))
    (workdir / "a.txt").write_text("alpha\n")
    (workdir / "b.txt").write_text("beta\n")
    srv = scripted_llm("openai")
    run = Campaign(start_daemon, srv, workdir)
    assert any(str(MCP_SERVER).encode() in _cmdline(pid) for pid in descendants(run.daemon.pid)), "no MCP server runs"

    # A turn of one edit, completed: killed right after its answer.
    srv.script(Reply.tool_calls(edit("a.txt", "alpha", "ALPHA")), Reply.text("edited a"))
    assert run.request("ollie/submit", {"text": "edit a"})["reply"] == "edited a"
    one = run.survives("after a turn")
    assert roles(one) == ["user", "assistant", "tool", "assistant"], one
    assert run.file("a.txt") == "ALPHA\n"

    # Parallel calls in one round: an edit and a step.
    srv.script(Reply.tool_calls(edit("b.txt", "beta", "BETA"),
                                ("execute_code", {"steps": [{"code": "echo parallel-step-ran"}]})),
               Reply.text("edited b"))
    assert run.request("ollie/submit", {"text": "edit b"})["reply"] == "edited b"
    two = run.survives("after parallel calls")
    assert roles(two) == roles(one) + ["user", "assistant", "tool", "tool", "assistant"], two
    assert "parallel-step-ran" in str(two), two
    assert run.file("b.txt") == "BETA\n"

    run.request("ollie/session/rename", {"title": "kill campaign"})
    run.survives("after a rename")
    listed = run.daemon.request("ollie/session/list", {}, timeout=60)["sessions"]
    assert [s.get("title") for s in listed if s["id"] == run.session] == ["kill campaign"], listed

    # A rewind of turn 2, then its undo: each survives a kill, on disk and in the conversation.
    rewound = run.request("ollie/rewind", {"turn": 2})
    assert rewound["files"] == ["b.txt"], rewound
    assert roles(run.survives("after a rewind")) == roles(one)
    assert (run.file("a.txt"), run.file("b.txt")) == ("ALPHA\n", "beta\n")
    run.request("ollie/rewind", {"undo": True})
    assert roles(run.survives("after a rewind's undo")) == roles(two)
    assert run.file("b.txt") == "BETA\n"

    # Review's undo of turn 1's edit, then a kill: the file stays undone, the turn's change still reviewable.
    undone = run.request("ollie/review/undo", {"turn": 1, "path": "a.txt"})
    assert undone["text"] == "alpha\n", undone
    run.survives("after a review undo")
    assert run.file("a.txt") == "alpha\n"
    assert run.request("ollie/changes", {"turn": 1})["files"] == [], "turn 1's change came back after the kill"
    assert [f["path"] for f in run.request("ollie/changes", {"turn": 2})["files"]] == ["b.txt"]

    # A fork, then a kill: both sessions load.
    fork = run.request("ollie/session/fork", {})["session"]
    run.survives("after a fork")
    run.daemon.request("ollie/session/load", {"session": fork}, timeout=60)
    assert roles(run.daemon.request("ollie/context", {"session": fork})["messages"]) == roles(two)

    # Killed while the compaction's summary streams: the conversation is whole, as it was.
    whole = run.messages()
    hold = threading.Event()
    srv.script(Reply(text=SUMMARY, hold=hold))
    asked = len(srv.chat_requests)
    run.daemon.request_async("ollie/command", {"session": run.session, "line": "/compact"})
    deadline = time.monotonic() + 30
    while len(srv.chat_requests) == asked:
        assert time.monotonic() < deadline, "the compaction never asked the model"
        time.sleep(0.02)
    assert run.kill_and_resume("mid-compaction") == whole
    hold.set()

    # A compaction that ended, then /clear: each kept after a kill.
    srv.script(Reply.text(SUMMARY))
    assert run.request("ollie/command", {"line": "/compact"})["output"].startswith("compacted"), srv.chat_requests[-1]
    compacted = run.survives("after a compaction")
    assert compacted != whole and "edit a and b" in compacted[0]["content"], compacted
    run.request("ollie/command", {"line": "/clear"})
    assert run.survives("after /clear") == []
    assert (run.file("a.txt"), run.file("b.txt")) == ("alpha\n", "BETA\n")

    srv.script(Reply.text("still here"))
    assert run.request("ollie/submit", {"text": "are you there"})["reply"] == "still here"


def test_a_kill_mid_turn_leaves_its_completed_rounds_reviewable_undoable_and_rewindable(
        start_daemon, scripted_llm, workdir):
    """Bug: a turn's checkpoint was logged only as the turn ended, so the edits of the rounds a killed turn completed
    could not be listed, undone nor rewound after the restart."""
    (workdir / "a.txt").write_text("alpha\n")
    (workdir / "b.txt").write_text("beta\n")
    srv = scripted_llm("openai")
    run = Campaign(start_daemon, srv, workdir)
    mark = new_mark()
    srv.script(Reply.tool_calls(edit("a.txt", "alpha", "ALPHA")), Reply.tool_calls(edit("b.txt", "beta", "BETA")),
               Reply.tool_calls(("execute_code", {"steps": [{"code": f"exec sleep 60.{mark}"}], "timeout": 120})))
    run.daemon.request_async("ollie/submit", {"session": run.session, "text": "edit both, then wait"})
    wait_until(lambda: processes_with(mark), "the third round's step never ran")
    messages = run.kill_and_resume("mid-step, after two edit rounds")
    assert roles(messages) == ["user"] + ["assistant", "tool"] * 3, messages
    assert (run.file("a.txt"), run.file("b.txt")) == ("ALPHA\n", "BETA\n")
    listed = run.request("ollie/changes", {"turn": 1})["files"]
    assert [f["path"] for f in listed] == ["a.txt", "b.txt"], listed
    assert run.request("ollie/review/undo", {"turn": 1, "path": "b.txt"})["text"] == "beta\n"
    assert run.file("b.txt") == "beta\n"
    rewound = run.request("ollie/rewind", {"turn": 1})
    assert (rewound["files"], rewound["messages"]) == (["a.txt"], 0), rewound
    assert (run.file("a.txt"), run.file("b.txt")) == ("alpha\n", "beta\n")


BIG = "first\n" + ("y" * 99 + "\n") * 500_000  # 50 MB: its write lasts long enough to be caught at it


def write_caught(run: Campaign, where: Path, mine: str, then: tuple[str, ...] = ()) -> None:
    """Submit a file_edit of `where/big.txt` (and after it, in the same call, one of each of `then`); return once its
    temporary file (not `mine`) is seen, mid-write."""
    edits = [{"tool": "file_edit", "args": [path, "first", "FIRST"]} for path in ("big.txt", *then)]
    run.srv.script(Reply.tool_calls(("call_tool", {"calls": edits})))
    pending = run.daemon.request_async("ollie/submit", {"session": run.session, "text": "edit big"})
    temporary = re.compile(r"\.big\.txt\.ollie-[a-z0-9_]{8}\.tmp")
    deadline = time.monotonic() + 60
    while not any(temporary.fullmatch(n) and n != mine for n in os.listdir(where)):  # no pause: its write is brief
        assert time.monotonic() < deadline and not pending.done.is_set(), "the edit was never caught writing"


def test_a_kill_mid_write_leaves_no_half_written_file_beside_the_one_edited(start_daemon, scripted_llm, workdir):
    """Bug: file_edit killed with its daemon mid-write left its temporary file (`.big.txt.ollie-XXXXXXXX.tmp`) in the
    workspace for good; the session's next open removes it (the edited file is whole: the old text or the new)."""
    (workdir / "big.txt").write_text(BIG)
    mine = ".big.txt.ollie-keepmine.tmp"  # named as a temporary file is, but there before the turn: the user's
    (workdir / mine).write_text("not a temporary file of ollie's\n")
    run = Campaign(start_daemon, scripted_llm("openai"), workdir)
    write_caught(run, workdir, mine)
    theirs: list[str] = []

    def another_write() -> None:
        # Round 39 (round 37's left): another program's atomic write of big.txt in progress as the session opens,
        # its temporary file made as Python's mkstemp makes them: the sweep took it for the killed call's.
        fd, name = tempfile.mkstemp(dir=workdir, prefix=".big.txt.", suffix=".tmp")
        os.close(fd)
        theirs.append(os.path.basename(name))

    messages = run.kill_and_resume("mid-write", another_write)
    assert messages[-1]["content"].startswith("[interrupted before this call finished"), messages[-1]
    assert sorted(os.listdir(workdir)) == sorted([mine, *theirs, "big.txt"])
    assert run.file("big.txt") in (old := BIG, "FIRST" + old[5:])


def test_the_sweep_after_a_kill_never_removes_a_file_where_a_link_swapped_for_the_cwd_leads(
        start_daemon, scripted_llm, workdir, tmp_path):
    """Round 37: a session works in `real`; its daemon is killed mid-write; before it is opened again another
    session's step swaps `real` for a link out of the workspace, and the user opens the session from another folder
    (nothing holds `real`): the sweep walked the saved cwd by name and removed the file there named as a temporary
    file is and newer than the session's log (another program's write in progress there)."""
    real, outside, elsewhere = workdir / "real", tmp_path / "outside", tmp_path / "elsewhere"
    for directory in (real, outside, elsewhere):
        directory.mkdir()
    (real / "big.txt").write_text(BIG)
    theirs = outside / ".big.txt.ollie-theirs00.tmp"
    run = Campaign(start_daemon, scripted_llm("openai"), workdir)
    run.session = run.daemon.request("ollie/session/new", {"cwd": str(real)})["session"]
    run.request("ollie/setApproval", {"approval": "auto"})
    write_caught(run, real, "")

    def swapped() -> None:
        run.start_daemon = functools.partial(run.start_daemon, root=elsewhere)
        real.rename(workdir / "aside")
        real.symlink_to(outside)
        theirs.write_text("another program's file, written since the session was saved\n")

    messages = run.kill_and_resume("mid-write", swapped)
    assert messages[-1]["content"].startswith("[interrupted before this call finished"), messages[-1]
    assert theirs.exists()


def test_a_fork_killed_as_it_is_made_is_listed_only_with_its_copy(start_daemon, scripted_llm, workdir):
    """Bug: a fork was recorded (listed, titled) before its copy of the conversation was saved, so a kill between left
    an empty `<title> (fork)` in the session list."""
    srv = scripted_llm("openai")
    run = Campaign(start_daemon, srv, workdir)
    srv.script(Reply(text="answered " * 1_000_000, chunk_size=1 << 16))  # 9 MB: the copy takes a while to save
    run.request("ollie/submit", {"text": "first question"})
    registry = Path(os.environ["XDG_DATA_HOME"]) / "ollie" / "sessions.db"
    run.daemon.request_async("ollie/session/fork", {"session": run.session})

    def forked() -> list[str]:
        """The forks the session list has, read from its database as the daemon writes it."""
        with contextlib.closing(sqlite3.connect(f"file:{registry}?mode=ro", uri=True)) as db:
            return [row[0] for row in db.execute("SELECT id FROM sessions WHERE title LIKE '%(fork)'")]

    deadline = time.monotonic() + 60
    while not forked():  # no pause: killed the moment the list has it
        assert time.monotonic() < deadline, "the fork was never listed"
    run.kill_and_resume("as a fork is made")
    for fork in forked():
        run.daemon.request("ollie/session/load", {"session": fork}, timeout=60)
        copy = run.daemon.request("ollie/context", {"session": fork})["messages"]
        assert roles(copy) == ["user", "assistant"], f"the listed fork {fork} holds {copy}"


def test_the_sweep_after_a_kill_lists_a_huge_dir_once_however_many_writes_named_it(start_daemon, scripted_llm, workdir):
    """Round 37: the killed call was one batch of 500 file writes into `d`, a dir a step filled with 120,000 files:
    the sweep listed `d` once per write (3 minutes), the session's open waiting on it."""
    (workdir / "big.txt").write_text(BIG)
    crowded = workdir / "d"
    crowded.mkdir()
    for i in range(120_000):  # names of two files (ext4 links one 65,000 times): a sixth of the time of 120,000 files
        if i % 60_000:
            os.link(crowded / f"f{i - i % 60_000}", crowded / f"f{i}")
        else:
            os.close(os.open(crowded / f"f{i}", os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC))
    run = Campaign(start_daemon, scripted_llm("openai"), workdir)
    # As many as a batch may hold (500 then; the listings of 255 take over a minute too).
    write_caught(run, workdir, "", tuple(f"d/t{i}.txt" for i in range(MAX_CALLS - 1)))
    messages = run.kill_and_resume("mid-write")  # the open is answered in time (60 s)
    assert messages[-1]["content"].startswith("[interrupted before this call finished"), messages[-1]
    assert sorted(os.listdir(workdir)) == ["big.txt", "d"] and len(os.listdir(crowded)) == 120_000


def random_kill(run: Campaign, rng: random.Random, kill: int, rounds: int = 4) -> None:
    """A turn of edit rounds (each adds a line to log.txt) SIGKILLed after a seeded random delay; then the checks."""
    start = "head\nend-0\n"
    (run.workdir / "log.txt").write_text(start)
    run.srv.reset()
    run.srv.script(*[Reply(text=f"round {n} " * rng.randint(0, 30), delay=0.01, chunk_size=4,
                           tool_calls=[edit("log.txt", f"end-{n}\n", f"line-{n}\nend-{n + 1}\n")])
                     for n in range(rounds)], Reply.text("all rounds done"))
    turns = roles(run.messages()).count("user")
    run.daemon.request_async("ollie/submit", {"session": run.session, "text": f"rounds {kill}"})
    time.sleep(rng.uniform(0.0, 1.5))  # the seeded moment: where this kill falls is the point of it
    messages = run.kill_and_resume(f"at random (kill {kill})")
    done = [m for m in messages if m["role"] == "tool" and not m["content"].startswith("[interrupted")]
    text = run.file("log.txt")
    on_disk = [n for n in range(rounds) if f"line-{n}\n" in text]
    # Every completed round's edit is on disk, whole; at most the round in progress went one further.
    assert on_disk == list(range(len(on_disk))) and len(on_disk) - len(done) in (0, 1), (text, messages)
    assert text.startswith("head\n") and text.endswith(f"end-{len(on_disk)}\n"), text
    if roles(messages).count("user") > turns:
        run.request("ollie/rewind", {})  # the checkpoint before the killed turn holds: the files go back to it
    assert run.file("log.txt") == start


@pytest.mark.timeout(300)
def test_kills_at_seeded_random_moments_keep_every_completed_round(start_daemon, scripted_llm, workdir):
    seed = int(os.environ.get("OLLIE_KILL_SEED", random.randrange(10**6)))
    count = int(os.environ.get("OLLIE_KILL_COUNT", "3"))
    print(f"OLLIE_KILL_SEED={seed} OLLIE_KILL_COUNT={count}")  # shown when it fails: rerun the same placements
    rng = random.Random(seed)
    run = Campaign(start_daemon, scripted_llm("openai"), workdir)
    # A first turn saves the session: killed before its first prompt was read (seed 106442: 6 ms), there is none to load.
    run.srv.script(Reply.text("ready"))
    run.request("ollie/submit", {"text": "hello"})
    for kill in range(count):
        random_kill(run, rng, kill)
        run.srv.reset()  # the rounds the kill cut short stay unasked


# An editor as a process of its own: starts the daemon on its pipes, runs a turn of a long step, says the daemon's
# pid, then idles until it is killed.
EDITOR = """
import sys, threading
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from bench.lspwire import LSPProcess
daemon = LSPProcess([sys.executable, "-m", "ollie_lsp"])
daemon.initialize(Path(sys.argv[2]))
daemon.request_async("ollie/submit", {"text": "run the long step"})
print(daemon.pid, flush=True)
threading.Event().wait()
"""


def test_a_sigkilled_editor_leaves_a_daemon_that_ends_by_itself_with_all_it_started(scripted_llm, workdir):
    srv = scripted_llm("openai")
    mark = new_mark()
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": f"exec sleep 60.{mark}"}], "timeout": 120})))
    editor = subprocess.Popen([sys.executable, "-c", EDITOR, str(REPO), str(workdir)], env=daemon_env(srv.env()),
                              stdout=subprocess.PIPE, text=True)
    try:
        assert editor.stdout is not None
        daemon = int(editor.stdout.readline())
        wait_until(lambda: processes_with(mark), "the step never ran")
        under = descendants(daemon)
        os.kill(editor.pid, signal.SIGKILL)
        editor.wait(10)
        assert process_gone(daemon, within=30), "the daemon outlived its SIGKILLed editor"
        assert [pid for pid in under if not process_gone(pid)] == [], "a process of the daemon outlived it"
    finally:
        for pid in processes_with(mark):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
