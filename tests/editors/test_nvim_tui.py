"""The Neovim plugin in the real TUI (nvim in tmux, README's `setup({})`): typing while a turn streams; at 80 columns a
turn with steps, an approval question, the changes line, the changes list and the diff."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ollie.testing import Reply
from tests.procs import wait_until

from . import screens
from .test_nvim import _nvim

if TYPE_CHECKING:
    from ollie.testing import ScriptedLLMServer
    from tests.netserver import Listener

PLUGIN = Path(__file__).resolve().parents[2] / "editors" / "nvim"
# Neovim's python3 provider check (asked by its ftplugin of the first Python file opened) runs python3, python3.13,
# python3.12, ... each through pyenv's shims where they are on PATH: ~1 s of CPU and 5 s of each start, for nothing
# ollie uses.
NO_PYTHON_PROVIDER = ["--cmd", "let g:loaded_python3_provider = 0"]


class Tmux:
    """One tmux server of its own (its own socket), one window running a command, and a control-mode client of it
    (`tmux -C`) that asks for the screen without a tmux process per look (0.1 s apart: looks at each draw caught
    Neovim's screens half drawn) and tells when the command quit."""

    def __init__(self, socket: str, cwd: Path, env: dict[str, str], command: list[str],
                 size: tuple[int, int] = (160, 40)) -> None:
        tmux = shutil.which("tmux")
        if not tmux:
            pytest.fail("tmux not found: scripts/setup.d/25-tmux.sh installs it")
        # No user config; a 256-colour, true-colour terminal inside, as a user's terminal is (tmux's default
        # `screen` has 8 colours, and the colorscheme's greys, reasoning's among them, show as plain text).
        self.screens: dict[str, str] = {}
        self.captures: Path | None = None
        self.base = [tmux, "-L", socket, "-f", os.devnull]
        subprocess.run([*self.base, "start-server", ";", "set-option", "-g", "default-terminal", "tmux-256color", ";",
                        "new-session", "-d", "-s", "t", "-x", str(size[0]), "-y", str(size[1]),
                        "-e", "COLORTERM=truecolor", *command], cwd=cwd, env=env, check=True)
        # (A control client takes no part in the window's size.)
        self._control = subprocess.Popen([*self.base, "-C", "attach", "-t", "t"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, encoding="utf-8",
                                         errors="replace")
        self._answers: queue.Queue[tuple[bool, str]] = queue.Queue()
        self._ended = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        """Take the control client's lines: our commands' answers (a block flagged 1), until the session ends."""
        assert self._control.stdout
        block: list[str] | None = None
        for line in self._control.stdout:
            if block is not None and line.startswith(("%end ", "%error ")):
                self._answers.put((line.startswith("%end "), "".join(block)))
                block = None
            elif block is not None:
                block.append(line)
            elif line.startswith("%begin ") and line.split()[3] == "1":
                block = []
        self._ended.set()  # the command quit (its session with it), or the server was killed
        self._answers.put((False, "the tmux session ended"))

    def _command(self, *commands: str) -> list[str]:
        """The outputs of tmux commands run as one (no output of the pane is read between them), through the control
        client."""
        assert self._control.stdin
        if not self._ended.is_set():
            with contextlib.suppress(OSError):
                self._control.stdin.write(" ; ".join(commands) + "\n")
                self._control.stdin.flush()
        outs = []
        for _ in commands:
            ok, out = self._answers.get(timeout=30)
            if not ok:
                self._answers.put((ok, out))  # (an ended session answers every later command so)
                raise RuntimeError(f"tmux {commands}: {out}")
            outs.append(out)
        return outs

    def keys(self, *keys: str, literal: bool = False) -> None:
        """Send keys (tmux names: Enter, Escape, C-j) or, literal, text as typed."""
        subprocess.run([*self.base, "send-keys", "-t", "t", *(["-l"] if literal else []), *keys], check=True)

    def type(self, text: str, *then: str) -> None:
        """Type `text` as a user does, then press keys `then` (Enter, C-s: the line sent)."""
        self.keys(text, literal=True)
        self.keys(*then)

    def screen(self, *, colours: bool = False) -> str:
        """The visible screen as text (with colours: its SGR escape sequences kept), drawn whole: Neovim's TUI hides
        the cursor while it writes a frame, and the terminal reads a long one in pieces (a look between them saw a
        question's answers drawn and its diff above them not yet). A screen with the cursor hidden is taken only once
        it stays so for half a second (Neovim busy: a shell command, a job waited on)."""
        capture = f"capture-pane -p{' -e' if colours else ''} -t t"
        screen, shown = self._command(capture, "display -p -t t '#{cursor_flag}'")
        since = time.monotonic()
        while shown.strip() != "1" and time.monotonic() - since < 0.5:
            self._ended.wait(0.02)
            again, shown = self._command(capture, "display -p -t t '#{cursor_flag}'")
            if again != screen:
                screen, since = again, time.monotonic()
        return screen

    def wait(self, cond: Callable[[str], bool], what: str, timeout: float = 30) -> str:
        """Poll the screen until `cond(screen)`; fail with the screen otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if cond(screen):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what}; screen:\n{screen}")
            self._ended.wait(0.1)

    def keep(self, name: str, screen: str, png: tuple[int, int] | None = None) -> str:
        """Keep a screen (text and colours) under the captures folder, and for the checks at the end; with `png` (a
        size in pixels), its colours as `name`.png too, to look at."""
        self.screens[name] = screen
        if self.captures:
            ansi = self.screen(colours=True)
            (self.captures / f"{name}.txt").write_text(screen)
            (self.captures / f"{name}.ansi").write_text(ansi)
            if png:
                screens.png(ansi, self.captures / f"{name}.png", png)
        return screen

    def alive(self) -> bool:
        """Whether the command still runs (its tmux session ends with it)."""
        return not self._ended.is_set()

    def wait_exit(self, command: str, timeout: float = 30) -> None:
        """Wait until the command (Neovim) has quit; fail with the screen otherwise."""
        assert self._ended.wait(timeout), f"nvim did not quit on {command}:\n{self.screen()}"

    def __enter__(self) -> Tmux:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill the tmux server (the command with it); again is harmless (`quit_nvim` closed it)."""
        subprocess.run([*self.base, "kill-server"], capture_output=True)
        self._control.wait(timeout=30)
        self._ended.wait(timeout=30)  # (its reader has read to the end)
        assert self._control.stdin and self._control.stdout
        self._control.stdin.close()
        self._control.stdout.close()


def start_nvim(tmp_path: Path, env: dict[str, str], files: Mapping[str, str | bytes],
               size: tuple[int, int] = (160, 40), *, window: str = "", init_lua: str = "") -> Tmux:
    """Neovim in tmux with README's install as written (the plugin on the runtimepath and `setup({})`), in a
    workspace of `files` (bytes written as they are, text as UTF-8), editing the first; ollie-lsp on PATH as pipx
    puts it there (a link in a bin folder of its own: with the venv's bin first on PATH, the tools' python3 would be
    the venv's, which the sandbox cannot read). `window` names a second Neovim on the same workspace (a tmux server
    of its own); `init_lua` is more of the user's init (their own picker)."""
    ws = tmp_path / "ws"
    again = ws.exists()  # Neovim started again (after a quit) in the same workspace
    (ws / ".git").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    init = tmp_path / "init.lua"
    init.write_text(f'vim.opt.rtp:prepend("{PLUGIN}")\nrequire("ollie").setup({{}})\n{init_lua}')
    bin_dir = tmp_path / "bin"
    if not again:
        bin_dir.mkdir()
        (bin_dir / "ollie-lsp").symlink_to(Path(sys.executable).parent / "ollie-lsp")
    env = {**os.environ, **env, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TERM": "xterm-256color"}
    # A socket per test: one test's server ending must not race the next one's start on the same socket.
    tmux = Tmux(f"ollie-tui-{os.getpid()}-{tmp_path.name}{window}", ws, env,
                [_nvim(), *NO_PYTHON_PROVIDER, "-u", str(init), "-i", "NONE", "-n", next(iter(files))], size=size)
    tmux.captures = tmp_path / f"captures{window}"
    tmux.captures.mkdir(exist_ok=True)
    return tmux


def daemons_of(tmp_path: Path) -> list[str]:
    """The process ids and command lines of the ollie-lsp processes started from the test's bin folder (start_nvim's
    link)."""
    ps = subprocess.run(["ps", "-ww", "-eo", "pid=,args="], capture_output=True, text=True, check=True).stdout
    return [line.strip() for line in ps.splitlines() if str(tmp_path / "bin" / "ollie-lsp") in line]


def daemon_pid(tmp_path: Path) -> int:
    """The running ollie-lsp's process id (the one started from the test's bin folder): not a wrapper script, nor a
    child it started that has not run its program yet (its command line is still the daemon's)."""
    ps = subprocess.run(["ps", "-ww", "-eo", "pid=,ppid=,args="], capture_output=True, text=True, check=True).stdout
    procs = {int(pid): int(ppid) for pid, ppid, args in (line.split(None, 2) for line in ps.splitlines())
             if str(tmp_path / "bin" / "ollie-lsp") in args and "/bin/sh" not in args}
    [pid] = [pid for pid, ppid in procs.items() if ppid not in procs]
    return pid


def daemons_gone(tmp_path: Path, timeout: float = 30) -> list[str]:
    """Wait for the daemons running now (daemons_of) to exit, each told by its pidfd; those left after `timeout`."""
    deadline = time.monotonic() + timeout
    for line in daemons_of(tmp_path):
        with contextlib.suppress(ProcessLookupError):  # (gone already)
            pidfd = os.pidfd_open(int(line.split()[0]))
            try:
                select.select([pidfd], [], [], max(0, deadline - time.monotonic()))
            finally:
                os.close(pidfd)
    return daemons_of(tmp_path)


def quit_nvim(tmux: Tmux, tmp_path: Path) -> None:
    """`:qa!` (mid-turn too), and wait for its daemon to end with it."""
    tmux.keys(":qa!", "Enter")
    tmux.wait_exit(":qa!")
    tmux.close()
    daemons_gone(tmp_path)


def kill_nvim(tmux: Tmux, tmp_path: Path) -> None:
    """`kill -9` of Neovim (a crash: no VimLeavePre runs), and wait for its daemon to end with it."""
    pane = subprocess.run([*tmux.base, "display", "-p", "-t", "t", "#{pane_pid}"], capture_output=True,
                          text=True, check=True).stdout.strip()
    # Neovim's own process (the one the TUI in the pane started), then the TUI.
    pids = [*subprocess.run(["pgrep", "-P", pane, "nvim"], capture_output=True, text=True).stdout.split(), pane]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # (the TUI may have gone with its server already)
            os.kill(int(pid), signal.SIGKILL)
    tmux.wait_exit("kill -9")
    tmux.close()
    wait_until(lambda: not any(Path(f"/proc/{pid}").exists() for pid in pids), "Neovim's processes reaped")
    assert not daemons_gone(tmp_path)


def resume(tmux: Tmux, title: str, last: str, started: str = "notes", png: tuple[int, int] | None = None) -> str:
    """Once Neovim shows `started`, pick the session titled `title` in :OllieSessions; the screen once it shows its
    `last` line (kept, as a `png` too if given)."""
    tmux.wait(lambda s: started in s, "nvim to start again")
    tmux.keys(":OllieSessions", "Enter")
    picker = tmux.wait(lambda s: "Type number" in s and title in s, "the sessions to pick from")
    # (Neovim's list says `1: title`: the line's first digits, not all before a "." the title may not have.)
    number = next(re.match(r"\s*(\d+)", line)[1] for line in picker.splitlines() if title in line)
    tmux.keys(number, "Enter")
    return tmux.keep("3-resumed", tmux.wait(lambda s: last in s, "the session"), png)


def choice(screen: str, name: str) -> str:
    """The number of the question picker's choice `name` (`3: Deny`)."""
    found = re.search(rf"(\d+): {re.escape(name)}", screen)
    assert found, screen
    return found[1]


def assert_clean(screens: dict[str, str]) -> None:
    """No screen shows a hit-enter prompt, an error or a warning."""
    for name, screen in screens.items():
        assert "Press ENTER" not in screen, f"{name}: a hit-enter prompt froze the screen:\n{screen}"
        assert "E5108" not in screen and "Error" not in screen, f"{name}: an error shows:\n{screen}"
        assert "initializationOptions" not in screen and "WARN" not in screen, f"{name}: a warning:\n{screen}"


def test_typing_into_the_input_while_a_turn_streams(tmp_path: Path, scripted_llm):
    srv = scripted_llm("openai")
    story = threading.Event()  # the story ends once the follow-up is queued behind it, however slow the machine
    # (~3.5 s of frames: twice the typing below on an idle machine; at 0.12 s apart the test sat out 7 s of them.)
    srv.script(
        Reply(text="Once upon a time " + "there was a tale " * 40, delay=0.06, chunk_size=12, hold=story),
        Reply(text="The follow-up answer."),
        Reply(text="A last story " + "that goes on " * 200, delay=0.2, chunk_size=8),
    )
    tmux = start_nvim(tmp_path, srv.env(), {"calc.py": "def add(a, b):\n    return a + b\n"})
    keep = tmux.keep
    try:
        tmux.wait(lambda s: "calc.py" in s, "nvim to start")
        tmux.keys(":Ollie tell me a long story", "Enter")
        first = keep("1-streaming", tmux.wait(lambda s: "Once upon a time" in s, "the answer to stream"))
        # The user goes to the input area and types a follow-up while the answer streams on.
        # It opens in insert mode, ready to type (as avante and CopilotChat do); the turn's output, streaming into
        # the chat, never started insert mode in the code. Bug: it opened in normal mode, the typing taken for
        # commands.
        assert "-- INSERT --" not in first, first
        tmux.keys(":OllieChat", "Enter")
        keep("2-insert", tmux.wait(lambda s: "-- INSERT --" in s, "insert mode in the input"))
        tmux.keys("and a follow-up on #file:calc.py", literal=True)
        # The answer streams on under the typing, which stays in the input.
        keep("2-typing", tmux.wait(
            lambda s: s.count("there was a tale") > first.count("there was a tale")
            and any(line.rstrip().endswith("and a follow-up on #file:calc.py") for line in s.splitlines()[-10:]),
            "the answer to stream on under the typed text"))
        # Enter (in normal mode) queues it with its context; the input is empty again, the transcript shows it as
        # queued with the context's 📎 line.
        tmux.keys("Escape", "Enter")
        queued = keep("3-queued", tmux.wait(lambda s: "⏳ queued: and a follow-up on calc.py  📎 calc.py:1-2" in s,
                                            "the queued prompt"))
        assert not any(line.rstrip().endswith("#file:calc.py") and "queued" not in line
                       for line in queued.splitlines()), "the typed text left the input once queued"
        story.set()
        # Slash-command completion pops up with descriptions while typing.
        tmux.keys("i")
        tmux.keys("/mo", literal=True)
        keep("4-completion", tmux.wait(lambda s: "show or switch the model" in s, "the completion menu"))
        tmux.keys("Escape", "Escape")
        tmux.keys("d", "d")
        done = keep("5-done", tmux.wait(lambda s: "The follow-up answer." in s and s.count("(end)") >= 2,
                                        "the queued turn to answer", timeout=40))
        assert "## You" in done and "and a follow-up on calc.py\n📎 calc.py:1-2" in "\n".join(
            line.split("│")[-1].rstrip() for line in done.splitlines()), done
        assert "def add(a, b)" in json.dumps(srv.chat_requests[1].body["messages"][-1]), "the file went with it"
        # The terminal shrinks to 80×24 (by way of 8 lines, which squeezed the input area): the chat takes half of it
        # again (it kept 1 column when the code kept 79), its key hints drop whole, the input has its 5 lines again.
        subprocess.run([*tmux.base, "resize-window", "-t", "t", "-x", "80", "-y", "8"], check=True)
        tmux.wait(lambda s: len(s.splitlines()) == 8, "the 8-line terminal")
        subprocess.run([*tmux.base, "resize-window", "-t", "t", "-x", "80", "-y", "24"], check=True)
        small = keep("6-80x24", tmux.wait(lambda s: len(s.splitlines()) == 24
                                          and 38 <= s.splitlines()[1].find("│") <= 41
                                          and " prompt " in s.splitlines()[22],
                                          "the chat to take half of the smaller terminal"))
        assert len(small.splitlines()) == 24
        bars = [i for i, line in enumerate(small.splitlines()) if " ollie: " in line or " prompt " in line]
        assert len(bars) == 2 and bars[1] - bars[0] - 1 == 5, small
        assert small.splitlines()[-2].split("prompt", 1)[1].split() == ["<CR>", "send/queue,", "<C-j>", "inject"]
        # Quitting while a turn streams: the chat's windows go together, and the editor quits with no daemon left.
        tmux.keys("C-w", "h")
        tmux.keys(":Ollie one last story", "Enter")
        keep("7-last-story", tmux.wait(lambda s: "A last story" in s, "the last answer to stream"))
        assert daemons_of(tmp_path), "the daemon runs under its link's name"
        # Bug: `:q!` in a chat window closed it alone (half a chat stayed) and unloaded its buffer: the transcript
        # (or the prompt being typed) was gone when the chat came back.
        tmux.keys(":OllieChat", "Enter")
        tmux.keys("half typed", literal=True)
        tmux.keys("Escape", "C-w", "k", ":q!", "Enter")
        # (The code's statusline drawn across the screen: the chat's windows closed, not a screen not drawn yet.)
        closed = keep("8-chat-closed", tmux.wait(
            lambda s: "│" not in s and any(line.startswith("calc.py") and line.rstrip().endswith("All")
                                           and len(line.rstrip()) > 60 for line in s.splitlines()),
            "both chat windows to close"))
        assert "def add(a, b):" in closed and "A last story" not in closed
        # The code has unsaved changes: `:q` in its window (the chat open, a turn streaming) is refused as stock
        # Neovim refuses it, naming the code; the chat's own buffers (the input holds text) never block.
        tmux.keys(":OllieChat", "Enter", "Escape", "C-w", "h", "o")
        tmux.keys("x = 1", literal=True)
        tmux.keys("Escape", ":q", "Enter")
        # The whole screen waited for, not its first sign: a look can catch Neovim's redraw half done (CI).
        refused = keep("9-quit-refused", tmux.wait(
            lambda s: "E37: No write since last change" in s and "half typed" in s and "one last story" in s,
            "the refusal, the code and the chat (its prompt and transcript) still there"))
        assert "│" in refused and "x = 1" in refused, "the code and the chat stay"
        assert "half typed" in refused and "one last story" in refused, "the chat kept its prompt and transcript"
        assert "E162" not in refused, "ollie's buffers are not unsaved files"
        # `:qa` from the input is refused for the code alone; the chat stays as it was (Bug: the transcript was
        # closed before the refused quit, and came back in a third column).
        tmux.keys(":OllieChat", "Enter", "Escape", ":qa", "Enter")
        # (Stock Neovim's two-line refusal waits for Enter: not kept with the screens that must have no such wait.)
        tmux.wait(lambda s: 'E162: No write since last change for buffer "calc.py"' in s, "the :qa refusal")
        tmux.keys("Enter")
        after_qa = keep("11-after-qa", tmux.wait(lambda s: "Press ENTER" not in s and "half typed" in s,
                                                  "the chat as it was"))
        assert "one last story" in after_qa
        assert all(line.count("│") == 1 for line in after_qa.splitlines()[:-2]), "two columns: the code, the chat"
        tmux.keys("C-w", "h")
        # `:q!` quits the editor at once: no second `:q` for the chat left alone on the screen.
        tmux.keys(":q!", "Enter")
        tmux.wait_exit(":q!")
        assert not (daemons := daemons_gone(tmp_path)), daemons
        assert_clean(tmux.screens)
    finally:
        story.set()
        tmux.close()


def test_an_80_column_terminal_shows_steps_approval_changes_and_the_diff(tmp_path: Path, scripted_llm):
    srv = scripted_llm("openai")
    srv.script(
        Reply(reasoning="The helper should double its input.", text="I will edit util.py for you now.", delay=0.05,
              tool_calls=[("call_tool", {"calls": [
                  {"tool": "file_edit", "args": ["util.py", "return x", "return x * 2"]},
                  {"tool": "file_read", "args": ["calc.py"]}]})]),
        Reply(text="Done: `double` doubles now, and calc.py needs no change: see values[0].", delay=0.05),
    )
    with start_nvim(tmp_path, srv.env(approval="ask"), {
      "calc.py": "from util import double\n\nprint(double(21))\n", "util.py": "def double(x):\n    return x\n"},
      size=(80, 30)) as tmux:
        keep = tmux.keep
        tmux.wait(lambda s: "double(21)" in s, "nvim to start")
        tmux.keys(":Ollie make double double", "Enter")
        # The user goes on typing a note in the input area while the question comes. Bug: the stock picker took
        # the keyboard at once, so `:OllieChat` answered it (a rejection) and the note went into calc.py.
        tmux.keys(":OllieChat", "Enter")
        note = "keep the tests green"
        tmux.keys(note, literal=True)
        tmux.wait(lambda s: "ollie: approve?" in s, "the question", timeout=40)
        # Keys typed once it is up still go into the note.
        tmux.keys(" too", literal=True)
        typing = keep("1-typing-while-asked", tmux.wait(
            lambda s: any(line.split("│")[-1].startswith(note + " too") for line in s.splitlines()),
            "the keys typed after the question to reach the note"))
        assert "ollie: approve? (once you stop typing: <Esc>)" in typing, typing
        assert "Type number" not in typing and "Allow once" not in typing, typing
        assert "keep the" not in typing.splitlines()[0], "the note stays out of the code"
        # Once the user stops (normal mode, a moment without keys), the four answers come up.
        tmux.keys("Escape")
        # The question: a float with the step and its diff, the four answers under it (stock vim.ui.select).
        asked = keep("1-permission", tmux.wait(
            lambda s: "Allow once" in s and "return x * 2" in s and "ollie asks to: Edit util.py" in s
            and "then <CR> · q: reject" in s and "│ ollie: waiting for your answer $" in s,
            "the question, its float and the chat's statusline"))
        assert "ollie: approve?" in asked and "ollie asks to: Edit util.py" in asked
        assert "at util.py:2 " in asked, "the float names the line the edit changes"
        assert "-    return x" in asked and "Reject with feedback" in asked
        # It says how it is answered: a number alone only moves its cursor (a new user typed `1` and waited); `q`
        # rejects (it said "dismiss", read as "ask me later").
        assert "number or j/k, then <CR> · q: reject" in asked, asked
        # The answers' float keeps off the chat's statusline, which says what the session waits for (it hid it).
        assert any(line.endswith("│ ollie: waiting for your answer $0.00") for line in asked.splitlines()), asked
        tmux.keys("1", "Enter")
        done = keep("2-changes-line", tmux.wait(lambda s: "(end)" in s and "✎ 1 file changed — :OllieChanges" in s,
                                                "the turn to end, its changes line too", timeout=30))
        assert "✎ 1 file changed — :OllieChanges" in done
        assert "→ util.py:2" in done and "✓ Read calc.py" in done
        # The code keeps half of the 80 columns (its first line unwrapped); the input keeps its label.
        assert done.splitlines()[0].startswith("from util import double ")
        assert " prompt " in done.splitlines()[-2]
        # The step's output is not markdown: its brackets and underscores stay. Nor are the answer's brackets taken
        # for a link's (Bug: `values[0]` showed as `values0`).
        assert "[call 1 file_edit] exit 0" in done and "values[0]" in done
        # <CR> on the changes line opens the turn's list; <CR> on a file, the diff tab.
        tmux.keys(":OllieChat", "Enter", "Escape")
        tmux.keys("C-w", "k")
        tmux.keys(":call search('OllieChanges')", "Enter")
        tmux.keys("Enter")
        keep("3-changes-list", tmux.wait(lambda s: "M  util.py  (+1 -1, 1 hunk)" in s, "the changes list"))
        tmux.keys("Enter")
        diff = keep("4-diff", tmux.wait(lambda s: "before turn 1: util.py" in s and "now: util.py" in s,
                                        "the diff tab, both its winbars"))
        assert "now: util.py" in diff, "a narrow winbar cuts the key hints, not the file's name"
        # The user changes the line, then asks to undo the hunk: refused, said on one line. Bug: the daemon's
        # message, wider than 80 columns, stopped the editor at a "Press ENTER" prompt.
        tmux.keys("A", "  # mine", "Escape")
        tmux.keys("d", "u")
        keep("5-stale", tmux.wait(lambda s: "ollie: stale: util.py" in s, "the refusal"))
        # `:wqa` with the chat, the changes list and the diff open: the user's file is written and the editor quits
        # (ollie's buffers, the diff's "before" side among them, are never files to write).
        tmux.keys(":wqa", "Enter")
        tmux.wait_exit(":wqa")
        assert "return x * 2  # mine" in (tmp_path / "ws" / "util.py").read_text()
        assert_clean(tmux.screens)


def other_test_listener() -> Listener:
    """A listener that stands for other.test, a host no policy lists (skips where there is no Landlock)."""
    from ollie.sandbox.rules import landlock_abi
    from tests.netserver import Listener

    if landlock_abi() < 1:
        pytest.skip("needs Landlock")
    server = Listener()
    server.start()
    return server


def auto_env_reaching_other_test(srv) -> dict[str, str]:
    """The scripted model's env, approval `auto` (a step runs unasked; its connections are still asked about),
    other.test resolving to this machine."""
    from ollie.testing import nethosts

    return {**srv.env(approval="auto"), **nethosts.env({"other.test": "127.0.0.1"})}


def test_a_network_question_names_the_host_and_deny_sends_it_nothing(tmp_path: Path, scripted_llm):
    server = other_test_listener()
    srv = scripted_llm("openai")

    def fetch(path: str) -> Reply:
        return Reply(tool_calls=[("execute_code", {"steps": [
            {"code": f"curl -s -w ' status %{{http_code}}' http://other.test:{server.port}/{path}"}]})])

    srv.script(fetch("x"), Reply(text="The host said no."), fetch("s"), Reply(text="Fetched for the session."),
               fetch("u"), Reply(text="Fetched unasked."))
    env = auto_env_reaching_other_test(srv)
    tmux = start_nvim(tmp_path, env, {"app.py": "print('hi')\n"}, size=(100, 30))
    target = f"other.test:{server.port}"
    try:
        tmux.wait(lambda s: "print('hi')" in s, "nvim to start")
        tmux.keys(":Ollie fetch it", "Enter")
        asked = tmux.keep("1-network-question", tmux.wait(
            lambda s: f"Allow network access to {target}?" in s and "Always allow" in s and "Deny" in s
            and "in this and later sessions" in s and "step: Run" in s, "the network question, its float whole"))
        assert "Deny" in asked and "Allow once" in asked and "q: deny" in asked, asked
        # The float names the host once, then the step that asked, its lines all shown (the third was cut off below a
        # wrapped second line, which repeated the host: "asked by: connect to <host> (network; step: ...)").
        assert f"step: Run `curl -s -w ' status %{{http_code}}' http://{target}/x`" in asked, asked
        assert '"Always allow" covers connections there in this and later sessions' in asked, asked
        assert "connect to" not in asked and "network; step" not in asked, asked
        assert "in this and later sessions" in asked and "5: Deny with feedback" in asked, asked  # the model hears it
        deny = choice(asked, "Deny")
        tmux.keys(deny, "Enter")
        denied = tmux.keep("2-denied", tmux.wait(
            lambda s: "The host said no." in s and f"⇄ {target} denied" in s and re.search(r"│ .+ … \+\d+ lines?$", s, re.M),
            "the turn to end, its step's connection and fold", timeout=30), (1000, 560))
        # The step's connection shows under it, its output still folded (`tool.network`, not the result's text).
        assert f"⇄ {target} denied (you said no), sent" in denied and "0 B, received 0 B" in denied, denied  # wrapped
        assert "[network]" not in denied, denied
        # The fold says how much it holds (before, its first line alone looked like all of the output).
        assert re.search(r"│ .+ … \+\d+ lines?$", denied, re.M), denied
        # Drawn again from the session's history (`ollie/context`, as a resume draws it): the connection still shows.
        tmux.keys(':lua vim.cmd("bwipeout! " .. require("ollie").current().transcript.buf)', "Enter")
        tmux.keys(":OllieChat", "Enter")
        tmux.wait(lambda s: "The host said no." in s and "⇄" in s and "-- INSERT --" in s, "the redraw")
        # Drawn while the user is in insert mode (Neovim makes no fold then), the step's output folds once they stop.
        # Bug: it stayed open.
        tmux.keys("Escape")
        redrawn = tmux.keep("3-redrawn", tmux.wait(lambda s: "The host said no." in s and "[network]" not in s
                                                   and "INSERT" not in s and "(end)" in s and "⇄" in s,
                                                   "the step's output folded"))
        assert f"⇄ {target} denied (you said no), sent" in redrawn and "[network]" not in redrawn, redrawn
        assert "(end)" in redrawn, redrawn  # the turn's end line, as the live turn drew it
        assert not server.received and server.accepted == 0
        told = srv.chat_requests[-1].body["messages"][-1]["content"]
        assert "status 403" in told and f"[network] {target} denied (you said no)" in told

        # "Allow for this session": this step's request goes through, and the session's later steps' unasked.
        tmux.keys(":Ollie fetch it again", "Enter")
        asked = tmux.keep("4-asked-again", tmux.wait(
            lambda s: f"Allow network access to {target}?" in s and "Allow for this session" in s, "the question again"))
        session = choice(asked, "Allow for this session")
        tmux.keys(session, "Enter")
        tmux.keep("5-allowed", tmux.wait(lambda s: "Fetched for the session." in s, "the allowed turn to end"))
        tmux.keys(":Ollie and once more", "Enter")
        unasked = tmux.keep("6-unasked", tmux.wait(lambda s: "Fetched unasked." in s, "the unasked turn to end"))
        assert f"⇄ {target} allowed for this session" in unasked, unasked
        assert_clean(tmux.screens)
    finally:
        tmux.close()
        server.sock.close()
    assert server.received.count(b"GET /") == 2 and b"GET /u " in server.received


def test_a_steps_connections_to_many_hosts_at_once_are_asked_one_by_one_and_stop_after_three_refusals(
        tmp_path: Path, scripted_llm):
    """A step reaching four unlisted hosts at once: the user sees one question at a time, and once three are refused
    the fourth host is denied unasked (before, each connection asked as it came: four questions to answer)."""
    server = other_test_listener()
    srv = scripted_llm("openai")
    hosts = [f"h{n}.test:{server.port}" for n in range(4)]
    code = " ".join(f"curl -s http://{host}/ &" for host in hosts) + " wait; echo all tried"
    srv.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": code}]})]), Reply(text="Every host said no."))
    tmux = start_nvim(tmp_path, auto_env_reaching_other_test(srv), {"app.py": "print('hi')\n"}, size=(100, 30))
    asked: list[str] = []
    try:
        tmux.wait(lambda s: "print('hi')" in s, "nvim to start")
        tmux.keys(":Ollie fetch them", "Enter")

        def new_question(screen: str) -> set[str]:
            """The one host a question on `screen` asks about, when it is one not asked about before."""
            shown = {h for h in hosts if f"Allow network access to {h}?" in screen}
            return shown if len(shown) == 1 and not shown & set(asked) and "Deny" in screen else set()

        for n in range(3):  # one host asked about at a time, each a new one
            screen = tmux.keep(f"{n + 1}-question", tmux.wait(lambda s: bool(new_question(s)), f"question {n + 1}"))
            asked += new_question(screen)
            deny = choice(screen, "Deny")
            tmux.keys(deny, "Enter")
        ended = tmux.keep("4-ended", tmux.wait(lambda s: "Every host said no." in s, "the turn to end", timeout=30),
                          (1000, 560))
        assert "Allow network access" not in ended, ended
        assert_clean(tmux.screens)
    finally:
        tmux.close()
        server.sock.close()
    (unasked,) = set(hosts) - set(asked)
    told = srv.chat_requests[-1].body["messages"][-1]["content"]
    assert f"[network] {unasked} denied (no more questions: 3 refused in this step)" in told, told
    assert not server.received and server.accepted == 0


def test_a_network_question_whose_step_ended_goes_away_while_the_turn_goes_on(tmp_path: Path, scripted_llm):
    """A step's connection asks; the step ends before the user answers (its program gave up): the question float
    goes at once with a line in the chat, while the turn still runs (it stayed until the turn's end, and an answer
    to it did nothing)."""
    server = other_test_listener()
    srv = scripted_llm("openai")
    # The step's request goes in the background; the step ends once the test creates `release`.
    code = (f"(curl -s http://other.test:{server.port}/x &) ; while [ ! -e release ]; do sleep 0.05; done; "
            "echo gave up")
    going_on = threading.Event()
    srv.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": code}]})]),
               Reply(text="The step gave up; thinking on.", hold=going_on))
    tmux = start_nvim(tmp_path, auto_env_reaching_other_test(srv), {"app.py": "print('hi')\n"}, size=(100, 30))
    target = f"other.test:{server.port}"
    try:
        tmux.wait(lambda s: "print('hi')" in s, "nvim to start")
        tmux.keys(":Ollie fetch it", "Enter")
        tmux.keep("1-asked", tmux.wait(lambda s: f"Allow network access to {target}?" in s, "the network question"))
        (tmp_path / "ws" / "release").write_text("")
        gone = tmux.keep("2-withdrawn", tmux.wait(
            lambda s: "thinking on" in s and f"Allow network access to {target}?" not in s
            and "question withdrawn (nothing waits for its answer" in s, "the question gone mid-turn"), (1000, 560))
        assert "(end)" not in gone, gone  # the turn still runs: its reply is held
        going_on.set()
        tmux.wait(lambda s: "(end)" in s, "the turn's end")
        assert_clean(tmux.screens)
    finally:
        going_on.set()
        tmux.close()
    assert not server.received and server.accepted == 0


def test_a_question_given_up_while_its_feedback_is_typed_takes_the_prompt_away(tmp_path: Path, scripted_llm):
    """The user picks "Reject with feedback", and the daemon gives the question up before they say why (nobody
    answered within $OLLIE_QUESTION_TIMEOUT_S): Neovim's own input prompt goes, and the chat says why. Bug: the
    prompt stayed, the keyboard in it, and what the user typed there went nowhere."""
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("call_tool", {"calls": [
                   {"tool": "file_edit", "args": ["util.py", "return x", "return x * 2"]}]})]),
               Reply(text="Left util.py as it was."))
    # Long enough for the keys below on a loaded machine (the feedback prompt came 0.03-0.11 s after the question
    # showed, under a load of 14 on 2 cores); the test waits for the prompt to go, then sat out the rest of 10 s.
    env = {**srv.env(approval="ask"), "OLLIE_QUESTION_TIMEOUT_S": "5"}
    with start_nvim(tmp_path, env, {"util.py": "def double(x):\n    return x\n"}, size=(100, 30)) as tmux:
        tmux.wait(lambda s: "def double(x):" in s, "nvim to start")
        tmux.keys(":Ollie make double double", "Enter")
        asked = tmux.keep("1-asked", tmux.wait(lambda s: "Reject with feedback" in s, "the question"))
        feedback = choice(asked, "Reject with feedback")
        tmux.keys(feedback, "Enter")
        tmux.keep("2-feedback", tmux.wait(lambda s: "Tell the model why" in s, "the feedback prompt"))
        tmux.keys("because", literal=True)
        gone = tmux.keep("3-withdrawn", tmux.wait(
            lambda s: "Tell the model why" not in s and "question withdrawn (nothing waits for its answer" in s
            and "Edit util.py" in s,
            "the prompt gone, said in the chat", timeout=60), (1000, 560))
        assert "ollie: approve?" not in gone, gone  # the step's float went with it
        done = tmux.keep("4-end", tmux.wait(lambda s: "Left util.py as it was." in s and "(end)" in s, "the turn's end"))
        # The keyboard is the user's again: the keys they type now go where they are, not into a gone prompt.
        tmux.keys(":echo 'keys reach the editor'", "Enter")
        tmux.keep("5-keys", tmux.wait(lambda s: "keys reach the editor" in s, "the editor to take keys"))
        assert "because" not in done, done
        assert_clean(tmux.screens)
    assert (tmp_path / "ws" / "util.py").read_text() == "def double(x):\n    return x\n"
    told = srv.chat_requests[-1].body["messages"][-1]["content"]
    assert "nobody answered" in told and "because" not in told, told


# A picker in a float that takes the focus, as dressing.nvim's, snacks' or telescope's: <CR> picks the line under the
# cursor (the first, at first), so a `1<CR>` picks it too.
FLOAT_PICKER = """
vim.ui.select = function(items, opts, on_choice)
  local lines = {}
  for i, item in ipairs(items) do
    lines[i] = "pick " .. i .. ": " .. (opts.format_item or tostring)(item)
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  local win = vim.api.nvim_open_win(buf, true, { relative = "editor", row = 14, col = 4, width = 60,
    height = #lines, border = "single" })
  vim.keymap.set("n", "<CR>", function()
    local picked = vim.api.nvim_win_get_cursor(win)[1]
    vim.api.nvim_win_close(win, true)
    on_choice(items[picked], picked)
  end, { buffer = buf })
end
"""


def test_keys_meant_for_a_withdrawn_question_never_answer_the_next_one(tmp_path: Path, scripted_llm):
    """Two commands asked in turn, in the user's own float picker; the first is given up (nobody answered in time)
    and the second asked at once: the `1<CR>` she types as the first goes lands in the editor, not on the second,
    whose buttons come only after a pause (Bug: the second's picker took the keyboard at once, and `1<CR>` allowed
    its step unseen)."""
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": "touch first"}]}),
                                 ("execute_code", {"steps": [{"code": "touch second"}]})]),
               Reply(text="Asked both."))
    env = {**srv.env(approval="ask"), "OLLIE_QUESTION_TIMEOUT_S": "4"}
    with start_nvim(tmp_path, env, {"util.py": "a\nb\nc\n"}, size=(100, 30), init_lua=FLOAT_PICKER) as tmux:
        tmux.wait(lambda s: "util.py" in s, "nvim to start")
        tmux.keys(":Ollie touch both", "Enter")
        tmux.keep("1-first", tmux.wait(lambda s: "touch first" in s and "pick 1: Allow once" in s, "the first"))
        tmux.keep("2-second", tmux.wait(lambda s: "touch second" in s, "the second question", timeout=60))
        tmux.keys("1", "Enter")  # meant for the first, as it goes
        tmux.keep("3-buttons", tmux.wait(lambda s: "touch second" in s and "pick 1: Allow once" in s, "its buttons"))
        assert not (tmp_path / "ws" / "second").exists()
        tmux.keys("j", "j", "Enter")  # Reject, seen
        tmux.keep("4-end", tmux.wait(lambda s: "Asked both." in s and "(end)" in s, "the turn's end"))
        assert_clean(tmux.screens)
    assert not (tmp_path / "ws" / "first").exists() and not (tmp_path / "ws" / "second").exists()
    told = srv.chat_requests[-1].body["messages"][-1]["content"]
    assert "rejected: the user did not allow 'Run `touch second`'" in told, told


def test_a_workspace_mcp_server_is_asked_about_in_the_question_float(tmp_path: Path, scripted_llm):
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("mcp__planted__add", {"a": 20, "b": 22})]),
               Reply(tool_calls=[("mcp__planted__create_issue", {"note": "harmless", "title": "rm -rf the repo"})]),
               Reply(text="It is 42."))
    server = Path(__file__).parents[1] / "mcp" / "server.py"
    planted = json.dumps({"mcpServers": {"planted": {"command": sys.executable, "args": [str(server)]}}})
    with start_nvim(tmp_path, srv.env(approval="ask"), {"calc.py": "print(20 + 22)\n", ".mcp.json": planted},
                    size=(100, 30)) as tmux:
        tmux.wait(lambda s: "print(20 + 22)" in s, "nvim to start")
        tmux.keys(":Ollie add them", "Enter")
        # Under `auto` too: the workspace's server is the user's question, with the program it would run, whole.
        asked = tmux.keep("mcp-question", tmux.wait(lambda s: "Allow once" in s and "start MCP server 'planted'" in s
                                                    and "… ╮" in s, "the question, its float whole", timeout=60),
                          (1000, 560))
        flat = "".join(line.strip("│ ") for line in asked.splitlines())
        assert "start MCP server 'planted'" in asked and "server.py" in flat, asked
        # The picker's title, too long for it, says it is cut (Neovim cut it mid-path at the border, silently).
        [title] = [line for line in asked.splitlines() if "╭ ollie asks to:" in line]
        assert "… ╮" in title, asked
        tmux.keys("1", "Enter")
        # Its `add` says it only reads (readOnlyHint): the repo's word, so it is asked about as any call.
        add = tmux.wait(lambda s: "Allow once" in s and "planted: add" in s and '"b": 22' in s,
                        "the read-only-hinted call's question", timeout=60)
        tmux.keys(choice(add, "Allow once"), "Enter")
        # A call's question shows every argument, not only the first text one (a decoy, which the server ignores).
        call = tmux.keep("mcp-call", tmux.wait(lambda s: "Allow once" in s and '"title": "rm -rf the repo"' in s,
                                               "the call's question, its arguments whole", timeout=60), (1000, 560))
        assert 'planted: create_issue "harmless"' in call, call
        tmux.keys(choice(call, "Reject"), "Enter")
        done = tmux.keep("mcp-answer", tmux.wait(lambda s: "It is 42." in s, "the answer", timeout=60))
        assert "planted: add" in done, done
        assert_clean(tmux.screens)
    told = [m["content"] for m in srv.chat_requests[-1].body["messages"] if m["role"] == "tool"]
    assert told[0] == "42" and "rejected" in told[1], told


def ask_and_stream(tmux: Tmux, prompt: str, answer: str) -> None:
    """In Neovim editing notes.txt: `prompt` sent (`:Ollie`), its answer streaming (`answer` shown)."""
    tmux.wait(lambda s: "notes" in s, "nvim to start")
    tmux.keys(f":Ollie {prompt}", "Enter")
    tmux.wait(lambda s: answer in s, "the answer to stream")


def queue_while_streaming(tmux: Tmux, prompt: str, answer: str, queued: str) -> str:
    """In Neovim editing notes.txt: `prompt` sent, and `queued` typed in the chat's input and queued (Enter) while
    its answer (starting with `answer`) streams; the screen showing it queued."""
    ask_and_stream(tmux, prompt, answer)
    tmux.keys(":OllieChat", "Enter")
    tmux.keys(queued, literal=True)
    tmux.keys("Escape", "Enter")  # queued behind the running turn
    return tmux.wait(lambda s: f"⏳ queued: {queued}" in s, "the queued prompt")


def send_in_chat(tmux: Tmux, typed: str) -> None:
    """`typed` typed in the chat's input and sent (Enter in normal mode)."""
    tmux.keys(":OllieChat", "Enter")
    tmux.keys(typed, literal=True)
    tmux.keys("Escape", "Enter")


def back_in_input(tmux: Tmux, name: str, said: str, typed: str, png: tuple[int, int] | None = None) -> str:
    """The screen (kept as `name`, as a `png` too if given) once the chat says `said` and the input holds `typed`
    again."""
    return tmux.keep(name, tmux.wait(lambda s: said in s and any(line.rstrip().endswith(typed) for line in s.splitlines()),
                                     "the prompt back in the input"), png)


def test_a_queued_prompt_the_daemon_refuses_goes_back_in_the_input_with_its_tags(tmp_path: Path, scripted_llm):
    # Bug: the input was emptied as it went, and the daemon's refusal (a context it could not read) said only its
    # error: the prompt and its `#` tags were gone.
    srv = scripted_llm("openai")
    srv.script(Reply(text="Once upon a time " + "there was a tale " * 300, delay=0.1, chunk_size=8))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"}, size=(120, 30)) as tmux:
        typed = "and see #file:notes.txt #mcp:nosuch:note://x"
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie tell me a long story", "Enter")
        tmux.wait(lambda s: "Once upon a time" in s, "the answer to stream")
        send_in_chat(tmux, typed)  # queued behind the running turn: refused (no such MCP server)
        back = back_in_input(tmux, "refused-back", "not queued: it is back in the input", typed)
        assert "⏳ queued" not in back, back


def test_a_prompt_whose_daemon_dies_before_its_turn_goes_back_in_the_input_and_the_chat_stops_waiting(
        tmp_path: Path, scripted_llm):
    # Bug: Neovim drops the answers a dead daemon owed: the chat waited for the prompt's answer forever ("sending"),
    # the prompt and its `#` tags gone from the input.
    srv = scripted_llm("openai")
    srv.script(Reply(text="The first answer."))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"}, size=(120, 30)) as tmux:
        typed = "and see #file:notes.txt"
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie hello", "Enter")
        tmux.wait(lambda s: "The first answer." in s and "(end)" in s, "the first answer")
        pid = daemon_pid(tmp_path)
        os.kill(pid, signal.SIGSTOP)  # it reads the prompt only once it runs again: never
        send_in_chat(tmux, typed)
        tmux.wait(lambda s: "sending" in s, "the prompt on its way")
        os.kill(pid, signal.SIGKILL)
        back = back_in_input(tmux, "died-back", "not sent: it is back in", typed)
        assert "sending" not in back, back
        assert_clean(tmux.screens)  # ollie says the exit, not Neovim at a "Press ENTER"


def test_a_second_continue_queued_across_a_redraw_shows_under_its_own_heading(tmp_path: Path, scripted_llm):
    # Bug: the chat drawn again from the history while a queued prompt's turn began matched the held events to the
    # history by the prompt's text: a second "continue" was taken as the first, its `## You` and first words lost.
    srv = scripted_llm("openai")
    srv.script(Reply(text="The first answer " + "goes on " * 300, delay=0.1, chunk_size=8),
               Reply(text="The second answer, under its own heading."))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"}, size=(100, 30)) as tmux:
        queue_while_streaming(tmux, "continue", "The first answer", "continue")
        tmux.keys("C-c")  # Stop: the queued prompt is held
        tmux.keep("1-held", tmux.wait(lambda s: "(interrupted)" in s and "the stop holds" in s, "the held prompt"))
        # Drawn again from the history as the held prompt is sent on: its turn begins before the answer is drawn.
        crossing = PLUGIN / "tests" / "crossing.lua"
        tmux.keys(f':lua dofile("{crossing}").turn_begins_before_the_answer()', "Enter")
        done = tmux.keep("2-second-continue", tmux.wait(
            lambda s: "The second answer, under its own heading." in s and s.count("(end)") == 1, "the second answer",
            timeout=30), (1000, 560))
        chat = [line.split("│")[-1].rstrip() for line in done.splitlines()]
        at = chat.index("The second answer, under its own heading.")
        assert chat[at - 4:at] == ["## You", "continue", "", "## ollie"], "\n".join(chat)
        assert chat.count("continue") == 2 and chat.count("## You") == 2, "\n".join(chat)
        assert_clean(tmux.screens)


def test_ctrl_c_while_typing_stops_the_turn_and_the_typing_goes_on(tmp_path: Path, scripted_llm):
    """`:OllieChat` leaves the user typing in insert mode: <C-c> there stops the streaming turn and keeps the typed
    text and insert mode; with no turn running it leaves insert mode as usual (Bug: it only left insert mode, the turn
    streamed on)."""
    srv = scripted_llm("openai")
    srv.script(Reply(text="The first answer " + "goes on " * 400, delay=0.1, chunk_size=8))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"}, size=(100, 30)) as tmux:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie talk a lot", "Enter")
        tmux.wait(lambda s: "The first answer" in s, "the answer to stream")
        tmux.keys(":OllieChat", "Enter")
        tmux.wait(lambda s: "-- INSERT --" in s, "insert mode in the input")
        tmux.type("my next question", "C-c")
        stopped = tmux.keep("1-stopped", tmux.wait(lambda s: "(interrupted)" in s and "-- INSERT --" in s
                                                   and "my next question" in s, "the turn stopped, the input kept"))
        assert "-- INSERT --" in stopped and "my next question" in stopped, stopped
        tmux.keys(" goes on", literal=True)
        tmux.wait(lambda s: "my next question goes on" in s, "the typing to go on")
        tmux.keys("C-c")
        # (In insert mode still, the command would be typed into the input: "mode n" shows only in normal mode.)
        tmux.keys(":echo 'mode' mode()", "Enter")
        left = tmux.keep("2-normal", tmux.wait(lambda s: "mode n" in s and "-- INSERT --" not in s, "insert mode left"))
        assert "my next question goes on" in left and left.count("(interrupted)") == 1, left
        assert_clean(tmux.screens)


def test_sending_the_held_prompts_on_says_the_stop_held_them_once_and_runs_each(tmp_path: Path, scripted_llm):
    """A prompt queued and one injected while the answer streams, <C-c>, then <C-s> on an empty input: each runs as a
    turn of its own, and the chat said once that the stop held them (Bug: the state asked for as they were sent on
    came back still held, the daemon not yet past its lock: the note showed a second time, and the last prompt stayed
    marked held though it ran). The inject no tool result took is held, not shown as read in the stopped turn (Bug:
    the turn's end wrote "↳ injected" under it, and it ran as a turn of its own after)."""
    srv = scripted_llm("openai")
    srv.script(Reply(text="Once upon a time " + "there was a tale " * 300, delay=0.1, chunk_size=8),
               Reply.text("The queued one's answer."), Reply.text("The injected one's answer."))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"}, size=(100, 40)) as tmux:
        queue_while_streaming(tmux, "tell me a long story", "Once upon a time", "queued one")
        tmux.keys("i")
        tmux.type("injected one", "C-j")
        tmux.wait(lambda s: "↳ injected: injected one" in s, "the injected prompt")
        tmux.keys("C-c")
        # (The stopped turn's end drawn first: it is what wrote "↳ injected" under it.)
        held = tmux.keep("1-held", tmux.wait(lambda s: "⏸ held: injected one" in s and "(interrupted)" in s,
                                             "the held prompts"))
        assert "↳ injected: injected one" not in held, "the chat says the model read it in the stopped turn"
        # Still typing (<C-c> in insert mode), so the note names insert mode's send key (Bug: only <CR>, a line break).
        said = " ".join(" ".join(line.split("│")[-1].split()) for line in held.splitlines())
        assert "holds the queued prompts: <C-s> or <CR> on an empty prompt sends them" in said, held
        tmux.keys("C-s")
        done = tmux.keep("2-sent-on", tmux.wait(lambda s: "The injected one's answer." in s and s.count("(end)") == 2
                                                and s.count("## You") == 3, "both held prompts' answers", timeout=60))
        chat = " ".join(line.split("│")[-1].strip() for line in done.splitlines())
        assert chat.count("the stop holds the queued prompts") == 1 and "⏸ held" not in chat, done
        assert "↳ injected" not in chat and chat.count("## You") == 3, done
        assert_clean(tmux.screens)


@pytest.mark.parametrize(("end", "said"), [(quit_nvim, "the editor quit"), (kill_nvim, "the editor crashed")])
def test_a_prompt_queued_when_nvim_quit_mid_turn_waits_in_the_resumed_session_and_runs_first(
        tmp_path: Path, scripted_llm, end: Callable[[Tmux, Path], None], said: str):
    # Bug: the daemon Neovim starts ends with it, and its queue with it: a prompt queued as a turn streamed, then
    # `:qa!`, was gone when the session was resumed in the next Neovim. Killed, it said "before the editor quit".
    srv = scripted_llm("openai")
    srv.script(Reply(text="Once upon a time " + "there was a tale " * 200, delay=0.1, chunk_size=8),
               Reply(text="The answer to the queued prompt."),
               Reply(text="The answer to the next prompt."))
    files = {"notes.txt": "notes\n"}
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        tmux.keep("1-queued", queue_while_streaming(tmux, "tell me a long story", "Once upon a time",
                                                    "and the queued one"))
        end(tmux, tmp_path)  # mid-turn: the daemon, and the queue it held, end with the editor
    assert not daemons_of(tmp_path)
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        tmux.wait(lambda s: "notes" in s, "nvim to start again")
        tmux.keys(":OllieSessions", "Enter")
        picker = tmux.wait(lambda s: "Type number" in s and "tell me a long story" in s, "the sessions to pick from")
        number = next(line.split(".")[0].strip() for line in picker.splitlines() if "tell me a long story" in line)
        tmux.keys(number, "Enter")
        held = tmux.keep("2-resumed", tmux.wait(lambda s: "⏸ held: and the queued one" in s
                                                and f"from before {said}" in s, "the prompt waiting"))
        assert "The answer to the queued prompt." not in held, "it waits for the next prompt"
        assert len(srv.chat_requests) == 1
        tmux.keys(":OllieChat", "Enter")
        tmux.keys("the next prompt", literal=True)
        tmux.keys("Escape", "Enter")
        tmux.keep("3-both-ran", tmux.wait(lambda s: "The answer to the next prompt." in s, "the next prompt's answer"))
        asked = [[m["content"] for m in r.body["messages"] if m["role"] == "user"][-1] for r in srv.chat_requests[1:]]
        assert asked == ["and the queued one", "the next prompt"], asked
        assert_clean(tmux.screens)


def test_a_prompt_queued_with_a_file_before_nvim_quit_is_taken_back_with_it(tmp_path: Path, scripted_llm):
    # Bug: queued before Neovim quit and taken back (<Up>) in the next one, it came back as its text alone: the file it
    # was about was dropped (only the Neovim that queued it knew), and sent again it asked about nothing.
    srv = scripted_llm("openai")
    srv.script(Reply(text="Once upon a time " + "there was a tale " * 200, delay=0.1, chunk_size=8),
               Reply(text="It adds."))
    files = {"notes.txt": "notes\n", "calc.py": "def add(a, b):\n    return a + b\n"}
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie tell me a long story", "Enter")
        tmux.wait(lambda s: "Once upon a time" in s, "the answer to stream")
        send_in_chat(tmux, "what does #file:calc.py do")
        tmux.keep("1-queued", tmux.wait(lambda s: "⏳ queued: what does calc.py do  📎 calc.py" in s, "it queued"))
        quit_nvim(tmux, tmp_path)
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        resume(tmux, "tell me a long story", "⏸ held: what does calc.py do")
        tmux.wait(lambda s: "⏸ held: what does calc.py do" in s and "from before the editor quit" in s, "it held")
        tmux.keys(":OllieChat", "Enter", "Escape", "Up")
        back = tmux.keep("2-taken-back", tmux.wait(lambda s: "held: what does" not in s and "what does calc.py do" in s,
                                                   "it taken back into the input"))
        assert any(line.split("│")[-1].split() == ["what", "does", "calc.py", "do", "📎", "calc.py:1-2", "goes", "with", "it"]
                   for line in back.splitlines()), back
        tmux.keys("Enter")
        tmux.keep("3-sent", tmux.wait(lambda s: "It adds." in s, "its answer"))
        assert_clean(tmux.screens)
    told = srv.chat_requests[-1].body["messages"][-1]["content"]
    assert "return a + b" in told and told.endswith("what does calc.py do"), told


def test_a_prompt_typed_and_not_sent_when_she_quits_is_back_in_the_input_when_the_session_is(tmp_path: Path,
                                                                                             scripted_llm):
    """Bug: `:qa` with a prompt typed in the input and not sent quit without a word, and the prompt was gone. Now it is
    kept as the session's draft: back in the input (said so) when the session is resumed, once."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("Hello back."), Reply.text("Half answered."))
    files = {"notes.txt": "notes\n"}
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie hello", "Enter")
        tmux.wait(lambda s: "Hello back." in s and "(end)" in s, "the answer")
        tmux.keys(":OllieChat", "Enter")
        tmux.keys("half a thought", literal=True)
        tmux.keep("1-typed", tmux.wait(lambda s: s.count("half a thought") == 1, "the typing"))
        tmux.keys("Escape", ":qa", "Enter")
        tmux.wait_exit(":qa")
        tmux.close()
        daemons_gone(tmp_path)
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        back = resume(tmux, "hello", "not sent before the editor quit: it is back in the input", png=(1300, 740))
        assert any(line.split("│")[-1].strip() == "half a thought" for line in back.splitlines()), back
        tmux.keys(":OllieChat", "Enter", "Escape", "Enter")
        tmux.keep("4-sent", tmux.wait(lambda s: "Half answered." in s, "its answer"))
        assert srv.chat_requests[-1].body["messages"][-1]["content"] == "half a thought"
        assert_clean(tmux.screens)
    assert not daemons_gone(tmp_path)  # (its lease gone too: the next one resumes the session, not "live elsewhere")
    with start_nvim(tmp_path, srv.env(), files) as tmux:  # sent: no draft left to come back
        again = resume(tmux, "hello", "Half answered.")
        assert "back in the input" not in again, again


def test_a_prompt_typed_and_not_sent_survives_a_kill_of_nvim_even_in_a_session_with_no_turn(tmp_path: Path,
                                                                                            scripted_llm):
    """Bug: the draft was saved only at `:qa`: a `kill -9` of Neovim (a terminal closed) lost it; and one typed in a
    session that never had a turn never came back (no sessions list shows that session). Now it is saved as it is
    typed: back in the input when its session is resumed, or, its session never used, when the next chat opens in
    that workspace. And it said "not sent before the editor quit": she had quit nothing, it was killed; now "crashed"."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("Hello back."), Reply.text("Sent now."))
    files = {"notes.txt": "notes\n"}
    saved = Path(os.environ["XDG_STATE_HOME"]) / "nvim" / "ollie" / "queued.json"

    def typed_then_killed(tmux: Tmux, text: str) -> None:
        tmux.keys(":OllieChat", "Enter")
        tmux.keys(text, literal=True)  # (in insert mode: no :qa, no InsertLeave)
        tmux.keep("1-typed", tmux.wait(lambda s: s.count(text) == 1, "the typing"))
        wait_until(lambda: saved.exists() and text in saved.read_text(), f"the draft saved:\n{tmux.screen()}")
        kill_nvim(tmux, tmp_path)

    def back_in_input(screen: str, text: str) -> None:
        assert "not sent before the editor crashed: it is back in the input" in screen, screen
        assert any(line.split("│")[-1].strip() == text for line in screen.splitlines()), screen

    with start_nvim(tmp_path, srv.env(), files) as tmux:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie hello", "Enter")
        tmux.wait(lambda s: "Hello back." in s and "(end)" in s, "the answer")
        typed_then_killed(tmux, "half a thought")
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        back_in_input(resume(tmux, "hello", "not sent before the editor crashed", png=(1300, 740)), "half a thought")
        tmux.keys(":OllieChat", "Enter", "Escape", "Enter")
        tmux.wait(lambda s: "Sent now." in s, "its answer")
        tmux.keys(":OllieNew", "Enter")  # a session of its own, no turn in it
        typed_then_killed(tmux, "a first thought")
    with start_nvim(tmp_path, srv.env(), files) as tmux:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":OllieChat", "Enter")
        back = tmux.keep("4-fresh-back", tmux.wait(lambda s: "back in the input" in s, "the draft"), (1300, 740))
        back_in_input(back, "a first thought")
        assert_clean(tmux.screens)


def test_the_chat_statusline_names_the_session_as_the_daemon_does(tmp_path: Path, scripted_llm):
    """The transcript's statusline and the public component in the user's own statusline show the session's title:
    the first prompt's words while its answer streams, the new name at once after `/rn` or `:OllieRename` (which asks
    for a new title, the old one named in its prompt), a long one cut to fit."""
    srv = scripted_llm("openai")
    haiku = threading.Event()  # the answer ends once the title was seen while it streams, however slow the machine
    srv.script(Reply(text="The sea rolls in slowly, wave after wave. " * 8, chunk_size=4, delay=0.01, hold=haiku))
    tmux = start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"})
    keep = tmux.keep

    def bar(screen: str) -> str:
        return next((line.split("│")[-1] for line in screen.splitlines() if "│ ollie: " in line), "")

    def user_bar(screen: str) -> str:
        # The code window's statusline, on the last row before the command line; the input's follows it on that row.
        line = next((line for line in screen.splitlines() if line.startswith("ollie: ")), "")
        return re.split(r"\s{2,}prompt ", line)[0]

    def both(screen: str, title: str) -> bool:
        return bar(screen).rstrip().endswith(f" · {title}") and user_bar(screen).rstrip().endswith(f" · {title}")

    try:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":lua vim.o.statusline = \"%!v:lua.require'ollie'.statusline()\"", "Enter")
        tmux.keys(":Ollie Write a haiku about the sea", "Enter")
        streaming = keep("1-title-while-streaming", tmux.wait(
            lambda s: "The sea rolls in" in s and both(s, "Write a haiku about the sea"),
            "the title on the chat's statusline and the user's while the answer streams"))
        assert "(end)" not in streaming, "the turn still streams"
        haiku.set()
        tmux.wait(lambda s: "(end)" in s, "the turn's end", timeout=40)
        tmux.keys(":OllieChat", "Enter")
        tmux.keys("/rn Sea haiku", literal=True)
        tmux.keys("Escape", "Enter")
        keep("2-renamed", tmux.wait(lambda s: both(s, "Sea haiku"), "the new name"))
        # Bug: the old title was the input's text, and what the user typed was added to it ("Sea haikuSea poem").
        tmux.keys(":OllieRename", "Enter")
        tmux.wait(lambda s: "Type number" in s, "the sessions to pick from")
        tmux.keys("1", "Enter")
        asked = keep("3-rename-asks", tmux.wait(lambda s: "Rename “Sea haiku” to:" in s, "the new title's prompt"))
        assert asked.splitlines()[-1].rstrip() == "Rename “Sea haiku” to:", asked
        tmux.type("Sea poem", "Enter")
        keep("4-renamed-again", tmux.wait(lambda s: both(s, "Sea poem"), "the title typed at :OllieRename"))
        tmux.keys(":OllieRename " + "A title far too long for the statusline of either window " * 3, "Enter")
        cut = keep("5-long-title", tmux.wait(lambda s: user_bar(s).rstrip().endswith("…") and bar(s).rstrip().endswith("…"),
                                             "the long title cut to fit"))
        assert " · A title far too long" in user_bar(cut), user_bar(cut)
        assert_clean(tmux.screens)
    finally:
        haiku.set()
        tmux.close()


def test_a_steps_title_in_the_users_own_statusline_runs_nothing(tmp_path: Path, scripted_llm):
    """The public component in a `%!` statusline (as lualine draws one, re-read as a format) while a step the model
    titled `%{writefile(...)}` runs unasked: the title shows as text and Neovim, unsandboxed, writes nothing."""
    srv = scripted_llm("openai")
    payload = '%{writefile([],"pwned")}'
    # The step runs until the test has seen its title drawn (it slept 3 s: each run waited them out).
    step = f": '{payload}'; while [ ! -e go ]; do sleep 0.05; done"
    srv.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": step}]})]), Reply(text="Done."))
    with start_nvim(tmp_path, srv.env(approval="auto"), {"notes.txt": "notes\n"}) as tmux:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":lua vim.o.statusline = \"%!v:lua.require'ollie'.statusline()\"", "Enter")
        tmux.keys(":Ollie run it", "Enter")
        shown = tmux.keep("1-step-running", tmux.wait(
            lambda s: any(line.startswith("ollie: Run : ") for line in s.splitlines()), "the step's title"))
        assert f"\nollie: Run : '{payload}'" in shown, shown
        (tmp_path / "ws" / "go").touch()
        tmux.wait(lambda s: "Done." in s, "the turn's end")
        assert not (tmp_path / "ws" / "pwned").exists(), "the statusline ran the model's expression"


def test_an_editor_tool_naming_a_fifo_a_step_made_leaves_neovim_usable(tmp_path: Path, scripted_llm):
    """`editor_definition` (or `editor_references`) of a FIFO a step made in the workspace: Neovim loaded the file
    into a buffer to ask its language servers, and a FIFO's open waits on a writer for good (SIGTERM included)."""
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": "mkfifo pipe.py"}]})]),
               Reply(tool_calls=[("call_tool", {"calls": [{"tool": "editor_definition", "args": ["pipe.py", "1", "1"]},
                                                          {"tool": "editor_references", "args": ["pipe.py", "1", "1"]}]})]),
               Reply(text="Done."))
    tmux = start_nvim(tmp_path, {**srv.env(approval="auto"), "OLLIE_EDITOR_TIMEOUT_MS": "2000"}, {"notes.txt": "notes\n"})
    try:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie look it up", "Enter")
        tmux.keep("1-answered", tmux.wait(lambda s: "Done." in s, "the turn's end (a frozen Neovim draws nothing)"))
        told = json.dumps(srv.chat_requests[2].body["messages"][-1])
        assert "not a regular file" in told, told
        tmux.keys(":echo 'still' .. ' here'", "Enter")
        tmux.keep("2-usable", tmux.wait(lambda s: "still here" in s, "Neovim to answer the user"))
    finally:
        close_even_if_frozen(tmux, tmp_path)


# A language server (in Neovim's process, as `vim.lsp.start` allows) whose every answer is a location in pipe.py.
POINTS_AT_PIPE = """
vim.api.nvim_create_autocmd("FileType", { pattern = "python", callback = function(ev)
  vim.lsp.start({ name = "pointer", cmd = function()
    return { request = function(method, _, cb)
      local here = { uri = vim.uri_from_fname(vim.fn.getcwd() .. "/pipe.py"),
                     range = { start = { line = 0, character = 0 }, ["end"] = { line = 0, character = 1 } } }
      vim.schedule(function()
        cb(nil, method == "initialize" and { capabilities = { definitionProvider = true, referencesProvider = true } }
          or { here })
      end)
      return true, 1
    end, notify = function() return true end, is_closing = function() return false end, terminate = function() end }
  end }, { bufnr = ev.buf })
end })
"""


def test_a_language_server_pointing_into_a_fifo_a_step_made_leaves_neovim_usable(tmp_path: Path, scripted_llm):
    """A definition a language server placed in a FIFO a step made: Neovim read that line (for its column) with
    readfile, whose open waits on a writer for good."""
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": "mkfifo pipe.py"}]})]),
               Reply(tool_calls=[("call_tool", {"calls": [{"tool": "editor_definition", "args": ["a.py", "1", "1"]}]})]),
               Reply(text="Done."))
    env = {**srv.env(approval="auto"), "OLLIE_EDITOR_TIMEOUT_MS": "2000"}
    tmux = start_nvim(tmp_path, env, {"a.py": "x = 1\n"}, init_lua=POINTS_AT_PIPE)
    try:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie look it up", "Enter")
        tmux.keep("1-answered", tmux.wait(lambda s: "Done." in s, "the turn's end (a frozen Neovim draws nothing)"))
        told = json.dumps(srv.chat_requests[2].body["messages"][-1])
        assert "editor_definition] exit 0\\npipe.py:1:1" in told, told  # the location, its line unread
        tmux.keys(":echo 'still' .. ' here'", "Enter")
        tmux.keep("2-usable", tmux.wait(lambda s: "still here" in s, "Neovim to answer the user"))
    finally:
        close_even_if_frozen(tmux, tmp_path)


def close_even_if_frozen(tmux: Tmux, tmp_path: Path) -> None:
    """Close the tmux; a Neovim waiting on a FIFO (the old plugin) is deaf to its SIGHUP: it and its daemon go by
    their ids."""
    tmux.close()
    ps = subprocess.run(["ps", "-ww", "-eo", "pid=,args="], capture_output=True, text=True, check=True).stdout
    for pid in [int(line.split()[0]) for line in ps.splitlines() if str(tmp_path) in line]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def nvim_with_unsaved_note(tmp_path: Path, srv, name: str = "a.py") -> Tmux:
    """Neovim editing `name` (`x = 1` on disk) with a line the user typed and did not save."""
    tmux = start_nvim(tmp_path, srv.env(approval="auto"), {name: "x = 1\n"}, size=(120, 40))
    try:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys("o")
        tmux.type("# my unsaved note", "Escape")
    except BaseException:
        tmux.close()
        raise
    return tmux


def test_a_step_that_changes_a_file_under_unsaved_edits_loses_neither_side(tmp_path: Path, scripted_llm):
    """The user types in a.py without saving; a step rewrites a.py on disk: the chat says so at once, naming the file,
    and the agent's edit of the buffer after it is refused (before: it went into the buffer and `write!` saved the
    stale buffer over the step's change, with no word to the user)."""
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": "sed -i 's/x = 1/x = 2/' a.py"}]})]),
               Reply(tool_calls=[("call_tool", {"calls": [{"tool": "file_edit", "args": ["a.py", "x = 1", "x = 3"]}]})]),
               Reply(text="I left a.py to you."))
    with nvim_with_unsaved_note(tmp_path, srv) as tmux:
        a_py = tmp_path / "ws" / "a.py"
        tmux.keys(":Ollie bump x, then set it to 3", "Enter")
        done = tmux.keep("1-behind", tmux.wait(lambda s: "I left a.py to you." in s, "the turn to end", timeout=60))
        # The chat's text without its wrapping (a long path wraps mid-word).
        chat = "".join("".join(line.split("│")[-1].split()) for line in done.splitlines())
        for said in ("warning: a.py has unsaved changes in the editor, and this step changed the file on disk",
                     "not edited: the buffer of a.py has the user's unsaved changes and a step changed the file"):
            assert "".join(said.split()) in chat, done
        code = [line.split("│")[0].rstrip() for line in done.splitlines()]
        assert "x = 1" in code and "# my unsaved note" in code, "the user's buffer is as they left it"
        assert_clean(tmux.screens)
    assert a_py.read_text() == "x = 2\n", "the step's change on disk was overwritten"


def test_the_agent_s_save_never_writes_over_a_change_made_on_disk_outside_its_steps(tmp_path: Path, scripted_llm):
    """The user types in a.py without saving, then a `git checkout` in a terminal changes a.py on disk; the agent's edit
    goes into the buffer, but the save refuses (the file changed since Neovim read it): the disk keeps the checkout,
    the model is told, and the user is too (before: `write!` saved the buffer over the checkout, silently)."""
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("call_tool", {"calls": [{"tool": "file_edit", "args": ["a.py", "x = 1", "x = 3"]}]})]),
               Reply(text="I set x."))
    with nvim_with_unsaved_note(tmp_path, srv) as tmux:
        a_py = tmp_path / "ws" / "a.py"
        a_py.write_text("x = 5  # checked out\n")
        tmux.keys(":Ollie set x to 3", "Enter")
        notice = "ollie: a.py changed on disk since the editor read it, so the agent's edit of it was not saved"
        done = tmux.keep("1-edited", tmux.wait(lambda s: "I set x." in s and notice in s, "the turn to end, told",
                                               timeout=60))
        code = [line.split("│")[0].rstrip() for line in done.splitlines()]
        assert "x = 3" in code and "# my unsaved note" in code, "the edit is in the buffer, on the user's text"
        chat = "".join("".join(line.split("│")[-1].split()) for line in done.splitlines())
        assert "".join("a.py: your edit is in the editor's buffer only, not saved: a.py changed on disk".split()) in chat
        assert_clean(tmux.screens)
    assert a_py.read_text() == "x = 5  # checked out\n", "the agent's save wrote over the change made on disk"


SAVED_WITH_YOURS = "__init__.py had your unsaved changes in the editor: the agent's edit was made"


def test_a_step_that_rewrites_a_file_with_its_own_bytes_leaves_the_agent_s_save_alone(tmp_path: Path, scripted_llm):
    """The user types in __init__.py without saving; a step's `sed -i` matches nothing but still writes it anew (new
    inode and mtime, same bytes): the agent's edit after it is saved, with the user's note (before: refused as changed
    on disk since Neovim read it, though nothing on disk would be lost). The chat tells the user their unsaved line was
    saved with it, naming the file as it is (before: only the model was told; then as a bold "init.py", the note read
    as markdown), and `u` in the code takes back the agent's edit alone."""
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": "sed -i 's/no such text/y/' __init__.py"}]})]),
               Reply.file_edit("__init__.py", "x = 1", "x = 3"),
               Reply(text="I set x."))
    with nvim_with_unsaved_note(tmp_path, srv, "__init__.py") as tmux:
        init_py = tmp_path / "ws" / "__init__.py"
        tmux.keys(":Ollie set x to 3", "Enter")
        done = tmux.keep("1-saved", tmux.wait(lambda s: "I set x." in s, "the turn to end", timeout=60))
        assert "changed on disk" not in done, done
        # The user is told their unsaved line was saved with the edit (under the call, in the chat).
        chat = "".join("".join(line.split("│")[-1].split()) for line in done.splitlines())
        assert "".join(SAVED_WITH_YOURS.split()) in chat, done
        assert init_py.read_text() == "x = 3\n# my unsaved note\n", "the agent's edit was not saved"
        # Undo in the code window takes back the agent's edit alone: the user's line stays.
        tmux.keys("C-w", "h", "u")
        undone = tmux.keep("2-undone", tmux.wait(lambda s: "x = 1" in [ln.split("│")[0].rstrip() for ln in s.splitlines()],
                                                 "the undo"))
        assert "# my unsaved note" in [line.split("│")[0].rstrip() for line in undone.splitlines()], undone
        assert_clean(tmux.screens)
        quit_nvim(tmux, tmp_path)
    # Bug: resumed, the chat no longer said so (the live note is an `info` event, which no history keeps).
    with start_nvim(tmp_path, srv.env(approval="auto"), {"__init__.py": "x = 3\n# my unsaved note\n"},
                    size=(120, 40)) as tmux:
        resumed = resume(tmux, "set x to 3", "I set x.", "x = 3")
        chat = "".join("".join(line.split("│")[-1].split()) for line in resumed.splitlines())
        assert "".join(SAVED_WITH_YOURS.split()) in chat, chat
        tmux.wait(lambda s: "(end)" in s and "_(end)_" not in s, "the turn's end line, in italics")  # its `_` hidden

def test_a_file_a_step_replaced_by_a_fifo_is_not_reloaded_and_neovim_stays_usable(tmp_path: Path, scripted_llm):
    """notes.txt is open; a step replaces it by a FIFO. Reading a FIFO waits on its writer for good: the reload after
    the tool round skips it and says so, and Neovim's own reload (`:checktime`, autoread when it regains focus) is
    held off too (before: the reload was skipped without a word, and the user's `:checktime` froze Neovim), as is the
    user's `:edit`, `:edit!` or `:write` of it (each froze Neovim for good), until it is a file again."""
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": "rm notes.txt && mkfifo notes.txt"}]})]),
               Reply(text="Made a pipe."))
    with start_nvim(tmp_path, srv.env(approval="auto"), {"notes.txt": "my notes\n"}, size=(120, 40)) as tmux:
        tmux.wait(lambda s: "my notes" in s, "nvim to start")
        tmux.keys(":Ollie make notes.txt a pipe", "Enter")
        notice = "ollie: notes.txt is a FIFO now, not a file: its buffer is not reloaded"
        told = tmux.keep("1-told", tmux.wait(lambda s: "Made a pipe." in s and notice in s, "the turn's end, told",
                                             timeout=60))
        assert "my notes" in told, "the buffer keeps its text"
        tmux.keys("Escape")
        # What regaining focus does, with 'autoread' on; the answer is one the typed command does not show.
        tmux.keys(":checktime | echo 'still' .. ' here'", "Enter")
        tmux.keep("2-checktime", tmux.wait(lambda s: "still here" in s, "Neovim to answer after :checktime"))
        assert_clean(tmux.screens)
        # The user's own `:edit` and `:edit!` (Neovim opens the file before any BufReadPre: it hung there for good).
        refused = "ollie: notes.txt is a FIFO now, not a file: not read (Neovim would wait on it)"
        for n, edit in enumerate(("edit", "edit!")):
            tmux.keys(f":{edit} | echo 'answer' .. ' {n}'", "Enter")
            shown = tmux.keep(f"3-{edit}", tmux.wait(lambda s, n=n: f"answer {n}" in s,
                                                     f"Neovim to answer after :{edit}"))
            tmux.keys(":messages", "Enter")
            tmux.wait(lambda s: refused in s, f"the refusal of :{edit}")
            assert "my notes" in shown and "[+]" not in shown, "the buffer keeps its text, unchanged"
            tmux.keys("Enter")
            tmux.keys(":messages clear", "Enter")
        # Writing it opens it too (Neovim waited on a reader for good).
        tmux.keys("A", " and more", "Escape")
        tmux.keys(":write | echo 'answer' .. ' w'", "Enter")
        tmux.keep("4-write", tmux.wait(lambda s: "answer w" in s, "Neovim to answer after :write"))
        tmux.keys(":messages", "Enter")
        tmux.wait(lambda s: "ollie: notes.txt is a FIFO now, not a file: not written" in s, "the refusal of :write")
        tmux.keys("Enter")
        # A file again: `:write` and `:edit` as Neovim always does them.
        notes = tmp_path / "ws" / "notes.txt"
        notes.unlink()
        notes.write_text("new notes\n")
        tmux.keys(":write!", "Enter")
        # (The file, not the screen alone: a screen with no "[+]" on it came before the write, too.)
        tmux.wait(lambda s: "[+]" not in s and notes.read_text() == "my notes and more\n", "the buffer written")
        notes.write_text("new notes\n")
        tmux.keys(":edit", "Enter")
        tmux.keep("5-file-again", tmux.wait(lambda s: "new notes" in s and "my notes" not in s, "the file read again"))
        tmux.keys(":echo &filetype .. '/' .. &autoread", "Enter")
        tmux.wait(lambda s: "text/1" in s, "the buffer a text file again, autoread as the user set it")


def test_a_file_a_step_swapped_for_a_link_to_a_key_never_reaches_the_model_through_its_buffer(tmp_path: Path,
                                                                                               scripted_llm):
    """notes.txt is open; a step swaps it for a link to the user's key (any step may make a link, wherever it leads).
    The reload after the tool round read the key into notes.txt's buffer as the user; the next step put a file back
    with the key's mtime and mode (stat of the link's target: Landlock does not mediate it), so no reload undid that,
    and the model's file_read of notes.txt, answered from the editor's text, got the key. Now the buffer is not
    reloaded through the link, the user is told, and it is reloaded once a file is back."""
    key = tmp_path / "id_rsa"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n")
    key.chmod(0o600)
    os.utime(key, (1_000_000_000, 1_000_000_000))
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": f"rm notes.txt && ln -s {key} notes.txt"}]})]),
               Reply(tool_calls=[("execute_code", {"steps": [{"code": "echo decoy > new && chmod 600 new && "
                                                               "touch -r notes.txt new && mv new notes.txt"}]})]),
               Reply(tool_calls=[("call_tool", {"calls": [{"tool": "file_read", "args": ["notes.txt"]}]})]),
               Reply(text="Read it."))
    with start_nvim(tmp_path, srv.env(approval="auto"), {"notes.txt": "my notes\n"}, size=(160, 40)) as tmux:
        tmux.wait(lambda s: "my notes" in s, "nvim to start")
        tmux.keys(":Ollie tidy notes.txt", "Enter")
        tmux.wait(lambda s: "Read it." in s, "the turn's end", timeout=90)
        read = json.dumps(srv.chat_requests[3].body["messages"][-1])
        assert "PRIVATE KEY" not in json.dumps([r.body for r in srv.chat_requests]), read
        # The file put back, reloaded; or, on a loaded machine, the read came before that reload: the text before.
        assert "decoy" in read or "my notes" in read, read
        notice = f"ollie: notes.txt is a link to {key} now: its buffer is not reloaded"
        tmux.keep("1-told", tmux.wait(lambda s: notice in s, "the user told"))
        tmux.keep("2-reloaded", tmux.wait(lambda s: "decoy" in s, "the buffer reloaded once a file is back"))
        assert_clean(tmux.screens)


def test_a_paragraph_taller_than_the_chat_shows_its_end_as_it_streams_and_at_the_end(tmp_path: Path, scripted_llm):
    """One paragraph of thousands of characters, wrapped in a 40-column chat: its last words show as they stream and
    once the turn has ended (before: the cursor at the line's start kept its first words in view, and the turn's end
    line, coming after it, showed alone: "(end)" and nothing else)."""
    words = " ".join(f"w{i}" for i in range(1, 700)) + " LASTWORD."
    held = threading.Event()
    srv = scripted_llm("openai")
    srv.script(Reply(text=words, chunk_size=60, hold=held))
    tmux = start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"}, size=(80, 24))

    def chat(screen: str) -> str:
        return "\n".join(line.split("│")[-1].rstrip() for line in screen.splitlines())

    try:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie write a long paragraph", "Enter")
        streaming = chat(tmux.keep("1-streaming", tmux.wait(lambda s: "LASTWORD." in s, "the last words, streamed")))
        assert "(end)" not in streaming and "w698 w699" in streaming, streaming
        held.set()
        ended = chat(tmux.keep("2-ended", tmux.wait(lambda s: "(end)" in s, "the turn's end")))
        assert "w698 w699" in ended and "LASTWORD." in ended, ended
        # The chat closed and opened again shows the same end.
        tmux.keys(":lua require('ollie').current():close()", "Enter", ":echo 'layout' winlayout()[0]", "Enter")
        tmux.wait(lambda s: "layout leaf" in s and "(end)" not in s, "the chat to close")
        tmux.keys(":OllieChat", "Enter")
        again = chat(tmux.keep("3-reopened", tmux.wait(lambda s: "(end)" in s, "the chat again")))
        assert "w698 w699" in again and "LASTWORD." in again, again
        assert_clean(tmux.screens)
    finally:
        held.set()
        tmux.close()


def test_a_step_s_change_under_unsaved_edits_is_notified_when_the_chat_is_closed(tmp_path: Path, scripted_llm):
    """The chat is closed while a turn runs a step that changes a.py under the user's unsaved edits: the notice shows
    in the command line (before: only in the closed chat)."""
    srv = scripted_llm("openai")
    srv.script(Reply(text="Hello."),
               Reply(tool_calls=[("execute_code", {"steps": [{"code": "sed -i 's/x = 1/x = 2/' a.py"}]})]),
               Reply(text="I left a.py to you."))
    with nvim_with_unsaved_note(tmp_path, srv) as tmux:
        tmux.keys(":Ollie hi", "Enter")
        tmux.wait(lambda s: "Hello." in s, "the first turn to end", timeout=60)
        tmux.keys("Escape")  # out of the chat's input
        tmux.keys(":lua require('ollie').current():close()", "Enter", ":echo 'layout' winlayout()[0]", "Enter")
        tmux.wait(lambda s: "layout leaf" in s and "Hello." not in s, "the chat to close")
        tmux.keys(":lua require('ollie').current():submit('bump x', {})", "Enter")
        told = tmux.keep("1-notified", tmux.wait(lambda s: "ollie: a.py has unsaved changes in the editor" in s,
                                                "the notice in the command line", timeout=60))
        assert "# my unsaved note" in told and "Hello." not in told, "the chat is closed, the buffer as the user left it"
        tmux.keys(":Ollie", "Enter")
        tmux.keep("2-chat", tmux.wait(lambda s: "I left a.py to you." in s, "the turn to end", timeout=60))
        assert_clean(tmux.screens)


def show_code_actions(tmux: Tmux, *keys: str) -> None:
    """Type `keys` (which ask for the code actions) until ollie's show: the daemon reads the document's didOpen only
    after its start-up."""
    for _ in range(10):
        tmux.keys(*keys)
        try:
            tmux.wait(lambda s: "Ollie: Explain" in s, "the code actions", timeout=5)
            return
        except pytest.fail.Exception:
            tmux.keys("Escape")
    pytest.fail("ollie's code actions never showed")


def test_a_code_action_runs_in_the_chat_with_its_prompt(tmp_path: Path, scripted_llm):
    """The chat open, no prompt sent yet: ollie's Explain from the code action menu shows in it as a turn of its own,
    its prompt with the lines it is about, then the answer (Bug: it showed nothing; once the chat had a session, the
    answer came under no prompt)."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("It adds two numbers."))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "def add(a, b):\n    return a + b\n"}) as tmux:
        tmux.wait(lambda s: "calc.py" in s, "nvim to start")
        tmux.keys(":OllieChat", "Enter")
        tmux.wait(lambda s: "ollie: idle" in s, "the chat")
        tmux.keys("Escape", "C-w", "h")
        show_code_actions(tmux, ':lua vim.lsp.buf.code_action({ range = { start = { 1, 0 }, ["end"] = { 2, 12 } } })',
                          "Enter")
        tmux.keys("1", "Enter")
        done = tmux.keep("code-action", tmux.wait(lambda s: "It adds two numbers." in s and "(end)" in s, "the answer"))
        chat = "\n".join(line.split("│")[-1].rstrip() for line in done.splitlines())
        assert "## You\nExplain what this code does" in chat and "📎 calc.py:1-2" in chat, chat


def test_a_code_action_picked_in_the_stock_select_leaves_no_prompt_behind(tmp_path: Path, scripted_llm):
    """Lines selected, `gra`, ollie's Explain picked in the stock vim.ui.select (inputlist): the answer shows in the
    command line and Neovim takes the next key (before: the list stayed on the screen, Neovim at a "Press ENTER"
    prompt that took the next key, and "-- VISUAL LINE --" hid the answer)."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("It adds two numbers."))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "def add(a, b):\n    return a + b\n"}, size=(80, 24)) as tmux:
        tmux.wait(lambda s: "calc.py" in s, "nvim to start")
        tmux.keys(":OllieChat", "Enter")  # the daemon started; the chat closed again: the answer is a message
        tmux.wait(lambda s: "ollie: idle" in s, "the chat")
        tmux.keys("Escape", "C-w", "l")
        tmux.keys(":close", "Enter")
        show_code_actions(tmux, "g", "g", "V", "j", "g", "r", "a")
        tmux.keys("1", "Enter")
        tmux.keep("answered", tmux.wait(lambda s: "ollie: It adds two numbers." in s and "Code actions:" not in s,
                                        "the answer, the list gone", timeout=60))
        tmux.keys(":echo 'taken' .. ' at once'", "Enter")
        tmux.keep("next-key", tmux.wait(lambda s: "taken at once" in s, "the next command"))
        assert_clean(tmux.screens)


def test_an_empty_chat_shows_how_to_start_until_the_first_prompt(tmp_path: Path, scripted_llm):
    """A new user opened the chat and saw an empty pane with no hint how to start (codecompanion shows one)."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("Hello back."))
    # At 80x24, the chat 40 columns wide (Bug: one line, cut to "Type a prompt, <C-s> to send · :help oll").
    with start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"}, size=(80, 24)) as tmux:
        hint = "Type a prompt, <C-s> to send"
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":OllieChat", "Enter")
        empty = tmux.keep("1-empty", tmux.wait(lambda s: hint in s and "-- INSERT --" in s, "the hint"), (760, 440))
        chat = [line.split("│")[-1].strip() for line in empty.splitlines()]
        assert chat[:2] == [hint, ":help ollie for the rest"], empty  # the chat's first lines
        tmux.type("hello", "C-s")
        answered = tmux.keep("2-answered", tmux.wait(lambda s: "Hello back." in s and "(end)" in s, "the answer"))
        assert hint not in answered and ":help ollie" not in answered, answered
        assert_clean(tmux.screens)


def test_a_prompt_shows_as_typed_and_the_answer_as_markdown(tmp_path: Path, scripted_llm):
    """The user's prompt is plain text, live and drawn again from the history (Bug: read as markdown, `__init__.py`
    showed as a bold "init.py" and `a*b*c` as "abc"), and so are a step's title and location (the same bug: "✓ Read
    init.py", "→ init.py", after an answer's line or not); the model's answer stays markdown."""
    srv = scripted_llm("openai")
    read = ("call_tool", {"calls": [{"tool": "file_read", "args": ["__init__.py"]}]})
    srv.script(Reply(text="Reading it.", tool_calls=[read]), Reply.text("Use **bold** and `__init__.py` here."))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n", "__init__.py": "y = 2\n"}) as tmux:
        typed = "rename __init__.py and compute a*b*c with [x]"

        def chat(screen: str) -> list[str]:
            return [line.split("│")[-1].rstrip() for line in screen.splitlines()]

        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(f":Ollie {typed}", "Enter")
        live = tmux.keep("1-typed", tmux.wait(lambda s: "(end)" in s, "the answer"))
        assert chat(live)[chat(live).index("## You") + 1] == typed, live
        assert "Use bold and __init__.py here." in chat(live), live
        assert "  ✓ Read __init__.py" in chat(live) and "    → __init__.py" in chat(live), live
        # Drawn again from the session's history (`ollie/context`, as a resume draws it).
        tmux.keys(':lua vim.cmd("bwipeout! " .. require("ollie").current().transcript.buf)', "Enter")
        tmux.keys(":OllieChat", "Enter")
        redrawn = tmux.keep("2-redrawn", tmux.wait(lambda s: "(end)" in s and "## You" in s, "the redraw"))
        assert chat(redrawn)[chat(redrawn).index("## You") + 1] == typed, redrawn
        assert "Use bold and __init__.py here." in chat(redrawn), redrawn
        assert "  ✓ Read __init__.py" in chat(redrawn) and "    → __init__.py" in chat(redrawn), redrawn
        assert_clean(tmux.screens)


def test_a_streaming_answer_leaves_the_chat_above_it_highlighted_and_is_highlighted_once_in(tmp_path: Path,
                                                                                             scripted_llm):
    """The chat's markdown parser is told of a streamed answer once it is in, not at each delta: while it streams,
    the answers above it keep their markdown (bold, code, their marks hidden) and it has its own, parsed apart; once
    in, the chat's highlighter has it."""
    held = threading.Event()
    srv = scripted_llm("openai")
    srv.script(Reply.text("First with **bold** and `code.py` here."),
               Reply(text="Second with **strong** and `other.py` there.", chunk_size=6, hold=held))
    tmux = start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"})
    try:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie first", "Enter")
        tmux.wait(lambda s: "(end)" in s, "the first answer")
        tmux.keys(":Ollie second", "Enter")
        streaming = tmux.keep("1-streaming", tmux.wait(lambda s: "there." in s, "the second answer, streamed"))
        assert "First with bold and code.py here." in streaming, streaming
        assert "Second with strong and other.py there." in streaming, "highlighted on its own as it streams"
        held.set()
        done = tmux.keep("2-done", tmux.wait(lambda s: "Second with strong and other.py there." in s,
                                             "the second answer highlighted"))
        assert "First with bold and code.py here." in done, done
        assert_clean(tmux.screens)
    finally:
        held.set()
        tmux.close()


def test_a_notice_of_two_lines_shows_on_one(tmp_path: Path, scripted_llm):
    """ollie's notice with a line break shows on one line (Bug: an `echomsg` of it ended at the break, E115, and the
    request that sent it failed with an error on screen)."""
    with start_nvim(tmp_path, scripted_llm("openai").env(), {"calc.py": "x = 1\n"}) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(""":lua require("ollie.requests").notify("it's the first line\\nand the second", 3)""", "Enter")
        tmux.keep("1-notice", tmux.wait(lambda s: "ollie: it's the first line and the second" in s, "the notice"))
        assert_clean(tmux.screens)


def test_a_prompt_sent_right_after_ollie_restart_is_sent_every_time(tmp_path: Path, scripted_llm):
    # Bug: a prompt typed at once after :OllieRestart vanished, the input cleared and nothing sent: it reached a fresh
    # daemon that had not loaded the chat's session yet ("session not found"), and the chat drawn again wiped the error.
    # Each round restarts and types at once (no pause): it failed in the first.
    srv = scripted_llm("openai")
    rounds = 5
    srv.script(Reply.text("The first answer."), *(Reply.text(f"Answer number {n}.") for n in range(rounds)))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"}, size=(120, 30)) as tmux:
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie hello", "Enter")
        tmux.wait(lambda s: "The first answer." in s and "(end)" in s, "the first answer")
        for n in range(rounds):
            tmux.keys(":OllieChat", "Enter", "Escape", ":OllieRestart", "Enter", "i")
            tmux.keys(f"prompt number {n}", literal=True)
            tmux.keys("Escape", "Enter")
            # Its answer means the restart had ended: the prompt was held until the fresh daemon's chat was drawn (its
            # "restarted" notice may be gone from the message line by then: not waited for).
            tmux.keep(f"{n}-answered", tmux.wait(lambda s, n=n: f"Answer number {n}." in s, f"the answer to prompt {n}"))
        assert [r.body["messages"][-1]["content"] for r in srv.chat_requests][1:] == [
            f"prompt number {n}" for n in range(rounds)]


def test_gx_in_the_transcript_opens_a_web_address_once_the_user_says_yes_and_nothing_else(tmp_path: Path,
                                                                                         scripted_llm):
    """gx on the model's `file:///etc/passwd` in the transcript: Neovim's own ran the system's opener (xdg-open) on
    it, as on any scheme; ollie's names it and opens nothing. On a web address it asks, showing the address whole, and
    opens it once the user says yes (an opener stands in for xdg-open on PATH and says what it was given)."""
    srv = scripted_llm("openai")
    srv.script(Reply(text="Local: file:///etc/passwd\n\nWeb: http://127.0.0.1:9/page"))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"}) as tmux:
        opened = tmp_path / "opened"
        opener = tmp_path / "bin" / "xdg-open"
        opener.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {opened}\n')
        opener.chmod(0o755)
        tmux.wait(lambda s: "notes" in s, "nvim to start")
        tmux.keys(":Ollie where are the docs?", "Enter")
        tmux.wait(lambda s: "Web: http" in s, "the answer")
        tmux.keys("Escape", ":lua vim.fn.win_gotoid(vim.fn.win_findbuf(vim.fn.bufnr('ollie://chat/'))[1])", "Enter")
        tmux.keys("/file:", "Enter", "gx")
        tmux.keep("1-file-refused", tmux.wait(lambda s: "not a web address: not opened" in s, "gx to refuse a file:"))
        tmux.keys("/http:", "Enter", "gx")
        tmux.keep("2-asked", tmux.wait(lambda s: "Open http://127.0.0.1:9/page in the browser?" in s, "gx to ask"))
        tmux.keys("o")
        # (The file exists from the shell's `>>` on, before printf wrote to it: waited for the whole line.)
        tmux.wait(lambda s: opened.exists() and opened.read_text().endswith("\n"), "the opener to run")
        assert opened.read_text() == "http://127.0.0.1:9/page\n"


def test_a_command_typed_while_the_plain_picker_asks_never_answers_it(tmp_path: Path, scripted_llm):
    # Bug: Neovim's own vim.ui.select (inputlist) took every key: `:OllieRestart` typed while a question was up ended
    # it on <CR> with no number, a Reject the user never meant. Only the picker's own keys answer now.
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": "touch first"}]})]), Reply(text="Touched."))
    with start_nvim(tmp_path, srv.env(approval="ask"), {"util.py": "a\nb\nc\n"}, size=(100, 30)) as tmux:
        tmux.wait(lambda s: "util.py" in s, "nvim to start")
        tmux.keys(":Ollie touch it", "Enter")
        tmux.keep("1-asked", tmux.wait(lambda s: "touch first" in s and "Allow once" in s, "the question"))
        tmux.keys(":let g:typed = 'the command ran'", "Enter", ":echo g:typed", "Enter")
        still = tmux.keep("2-typed", tmux.wait(lambda s: "the command ran" in s and "1: Allow once" in s
                                               and "touch first" in s, "the command to run, the question still asked"))
        assert "1: Allow once" in still and "touch first" in still, still  # still asked
        tmux.keys("1", "Enter")
        tmux.keep("3-allowed", tmux.wait(lambda s: "Touched." in s, "the turn to end"))
        assert_clean(tmux.screens)
    assert (tmp_path / "ws" / "first").exists()


def test_a_question_taller_than_half_the_screen_says_so_and_scrolls_from_the_picker(tmp_path: Path, scripted_llm):
    # Bug: in an 80x24 terminal a batch of 12 edits' question was cut at half the screen, silently: its last file and
    # every call's command line were never seen, and "Allow once" ran them all.
    srv = scripted_llm("openai")
    names = [f"m{i}.py" for i in range(12)]
    batch = ("call_tool", {"calls": [{"tool": "file_edit", "args": [name, "a - b", "a + b"]} for name in names]})
    srv.script(Reply(tool_calls=[batch]), Reply.text("Left them."))
    with start_nvim(tmp_path, srv.env(approval="ask"), {name: "def f(a, b):\n    return a - b\n" for name in names},
                    size=(80, 24)) as tmux:
        tmux.wait(lambda s: "return a - b" in s, "nvim to start")
        tmux.keys(":Ollie fix them", "Enter")
        asked = tmux.wait(lambda s: "Allow once" in s and "lines do not fit: <C-d>/<C-u> scroll" in s, "the cut question")
        assert "file_edit m11.py" not in asked, asked
        tmux.keys("C-d", "C-d", "C-d")  # from the picker, which keeps the focus
        tmux.keep("1-scrolled", tmux.wait(lambda s: "file_edit m11.py 'a - b' 'a + b'" in s,
                                          "the question's last call, scrolled to"), (800, 480))
        # Each edit's diff follows (the batch was asked with its command lines alone), the 12th's last.
        tmux.keys(*["C-d"] * 20)
        scrolled = tmux.keep("2-last-diff", tmux.wait(
            lambda s: re.search(r"\+\+\+ b/m11\.py.*\n.*@@ -1,2 \+1,2 @@.*\n.* def f\(a, b\):.*\n.*-    return a - b.*\n"
                                r".*\+    return a \+ b", s) is not None, "the 12th file's diff, scrolled to"),
                             (800, 480))
        tmux.keys(choice(scrolled, "Reject"), "Enter")
        tmux.wait(lambda s: "Left them." in s, "the turn to end")
        assert all((tmp_path / "ws" / name).read_text().endswith("a - b\n") for name in names)
        assert_clean(tmux.screens)


BATCH_FILES = [f"m{i}.py" for i in range(6)]  # more than TOGETHER_PAST: asked together


def batch_asked(tmp_path: Path, scripted_llm: Callable[[str], ScriptedLLMServer], reply: Reply, then: str,
                width: int) -> tuple[Tmux, str]:
    """Neovim in ask mode over BATCH_FILES (each `return a - b`), the model's `reply` (a batch of their edits, then
    `then`) asked about: (the nvim, the question's screen, captured as 1-asked.png `width` pixels wide); the nvim is
    closed when it goes wrong before that."""
    srv = scripted_llm("openai")
    srv.script(reply, Reply.text(then))
    tmux = start_nvim(tmp_path, srv.env(approval="ask"), {name: "def f(a, b):\n    return a - b\n"
                                                          for name in BATCH_FILES})
    try:
        tmux.wait(lambda s: "return a - b" in s, "nvim to start")
        tmux.keys(":Ollie fix them", "Enter")
        asked = tmux.keep("1-asked", tmux.wait(lambda s: "Allow once" in s and "file_edit m5.py" in s, "the question"),
                          (width, 560))
    except BaseException:
        tmux.close()
        raise
    return tmux, asked


def test_a_batch_of_edits_is_one_question_that_shows_each_call(tmp_path: Path, scripted_llm):
    # A model's batch of edits asked one question each: the user answered as many questions as the batch had files.
    names = BATCH_FILES
    batch = ("call_tool", {"calls": [{"tool": "file_edit", "args": [name, "a - b", "a + b"]} for name in names]})
    tmux, asked = batch_asked(tmp_path, scripted_llm, Reply(text="Fixing them all.", tool_calls=[batch]), "Fixed all.",
                              1000)
    with tmux:
        assert "ollie asks to: Edit m0.py and 5 more steps" in asked, asked
        tmux.keys("1", "Enter")  # Allow once: for the whole batch, asked once
        tmux.wait(lambda s: "Fixed all." in s and "(end)" in s, "the turn to end")
        assert all((tmp_path / "ws" / name).read_text().endswith("a + b\n") for name in names)
        assert_clean(tmux.screens)


def test_a_batch_question_draws_each_call_on_its_own_line_and_a_bidi_override_as_an_escape(tmp_path: Path,
                                                                                             scripted_llm):
    # The last call's new text drew a line of its own that read as a call the batch does not make (`file_edit
    # m9.py ...`), and its U+202E went to the float as it was (a terminal that does bidi reorders the line).
    names = BATCH_FILES
    calls = [{"tool": "file_edit", "args": [name, "a - b", "a + b"]} for name in names]
    calls[-1]["args"][2] = "a + b \u202e# fine\nfile_edit m9.py 'a - b' 'a + b'"
    tmux, asked = batch_asked(tmp_path, scripted_llm, Reply(tool_calls=[("call_tool", {"calls": calls})]), "Left them.",
                              1500)
    with tmux:
        assert "\\u202e# fine\\nfile_edit m9.py" in "".join(line.strip() for line in asked.splitlines()), asked
        assert not any(line.strip().startswith("file_edit m9.py") for line in asked.splitlines()), asked
        tmux.keys(choice(asked, "Reject"), "Enter")
        tmux.wait(lambda s: "Left them." in s and "(end)" in s, "the turn to end")
        assert all((tmp_path / "ws" / name).read_text().endswith("a - b\n") for name in names)


def test_a_batch_question_says_a_file_has_unsaved_changes_and_draws_a_bidi_override_in_a_path_as_an_escape(
        tmp_path: Path, scripted_llm):
    # A batch's edit of her open m0.py, which held her unsaved line, said nothing of it (one edit's question does), and
    # a file named with a U+202E was drawn as it is in the question's file list (the terminal reorders the line).
    srv = scripted_llm("openai")
    names = [f"m{i}.py" for i in range(5)] + ["x\u202eyp.py"]
    calls = [{"tool": "file_edit", "args": [name, "a - b", "a + b"]} for name in names]
    srv.script(Reply(tool_calls=[("call_tool", {"calls": calls})]), Reply.text("Left them."))
    with start_nvim(tmp_path, srv.env(approval="ask"), {name: "def f(a, b):\n    return a - b\n" for name in names}) as tmux:
        tmux.wait(lambda s: "return a - b" in s, "nvim to start")
        tmux.keys("G", "o", "# mine", "Escape")
        tmux.keys(":Ollie fix them", "Enter")
        asked = tmux.keep("1-asked", tmux.wait(lambda s: "Allow once" in s and "m4.py" in s, "the question"),
                          (1200, 560))
        assert "m0.py has your unsaved changes: allowing saves them with the edit" in asked, asked
        assert "at x\\u202eyp.py" in asked and "\u202e" not in asked, asked
        tmux.keys(choice(asked, "Reject"), "Enter")
        tmux.wait(lambda s: "Left them." in s and "(end)" in s, "the turn to end")
        assert all((tmp_path / "ws" / name).read_text() == "def f(a, b):\n    return a - b\n" for name in names)
