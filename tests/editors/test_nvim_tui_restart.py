"""Neovim's daemon going away in the real TUI (nvim in tmux, README's `setup({})`): `:OllieRestart` hands over to one
fresh daemon, a restart that fails puts the prompt back, a daemon that dies is restarted once (not in a loop), with
what its turn had shown kept, and a put-back `:'<,'>Ollie` prompt keeps its lines."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from ollie.testing import Reply
from tests.procs import wait_until

from .test_nvim_tui import (
    FLOAT_PICKER,
    Tmux,
    assert_clean,
    back_in_input,
    daemon_pid,
    daemons_gone,
    send_in_chat,
    start_nvim,
)
from .test_nvim_tui_commands import chat_text


def wrap_daemon(tmp_path: Path, body: str) -> Path:
    """Put a shell script in place of the test's ollie-lsp link (`$real`: the real one); its log is returned."""
    link = tmp_path / "bin" / "ollie-lsp"
    real = os.path.realpath(link)
    log = tmp_path / "daemons.log"
    link.unlink()
    link.write_text(f'#!/bin/sh\nreal="{real}"\nlog="{log}"\n{body}\n')
    link.chmod(0o755)
    return log


def unwrapped(screen: str) -> str:
    """The chat's text, its lines joined (a long note wraps)."""
    return " ".join(chat_text(screen).split())


def answered(tmp_path: Path, scripted_llm, *then: Reply, size: tuple[int, int] = (140, 30),
             wrap: str = "") -> tuple[Any, Tmux]:
    """The scripted server (`then`: its replies after the first) and Neovim on notes.txt (three lines), whose chat has
    answered `hello` ("The first answer."); `wrap`: the daemon started through that script (wrap_daemon)."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("The first answer."), *then)
    tmux = start_nvim(tmp_path, srv.env(), {"notes.txt": "alpha line\nbeta line\ngamma line\n"}, size=size)
    if wrap:
        wrap_daemon(tmp_path, wrap)
    try:
        tmux.wait(lambda s: "alpha line" in s, "nvim to start")
        tmux.keys(":Ollie hello", "Enter")
        tmux.wait(lambda s: "The first answer." in s and "(end)" in s, "the first answer")
    except BaseException:
        tmux.close()
        raise
    return srv, tmux


def test_requests_made_while_ollie_restart_is_under_way_wait_for_the_one_fresh_daemon(tmp_path: Path, scripted_llm):
    # Bug: `:Ollie question` typed while :OllieRestart waited for the old daemon to exit started the next one at once,
    # the old one still there (two daemons on one store); the restart then took that early one.
    logged = 'echo "start $$" >> "$log"\n"$real" "$@"\necho "exit $$" >> "$log"'
    _, tmux = answered(tmp_path, scripted_llm, Reply.text("The second answer."), wrap=logged)
    with tmux:
        tmux.keys(":OllieRestart", "Enter", ":Ollie and now", "Enter")
        tmux.keep("1-answered", tmux.wait(lambda s: "The second answer." in s, "the answer sent during the restart"))
        events = [line.split()[0] for line in (tmp_path / "daemons.log").read_text().splitlines()]
        assert events[:3] == ["start", "exit", "start"] and events.count("start") == 2, events
        assert_clean(tmux.screens)


# A wrapper's first lines: a child it leaves holds the daemon's output open until the test lets it go (let_go), and
# Neovim tells the plugin of the daemon's exit only once that output closes (as under load, loop turns later). Once
# the test is done (`$log-done`), a child holds nothing: one of a wrapper that made its fifo after let_go's last look
# waited for good, an orphan (the test ended as a fresh daemon's wrapper was starting).
HOLD = 'mkfifo "$log.$$"\n[ -e "$log-done" ] || read _ < "$log.$$" &\n'


def let_go(log: Path, *, but_started: bool = False, done: bool = False) -> bool:
    """Let the children HOLD left go, each once it waits (but those of `exit 3` daemons; done: any, as Neovim quit);
    False (for a wait's poll)."""
    if done:
        Path(f"{log}-done").touch()  # (before the look: a fifo made after it is never waited on)
    fifos = list(log.parent.glob(log.name + ".*"))
    kept = started(log) if but_started and log.exists() else []  # (read after: a start is logged before its HOLD)
    for fifo in fifos:
        if fifo.suffix[1:] in kept:
            continue
        try:  # (no reader yet: ENXIO, tried again at the next poll)
            os.close(os.open(fifo, (os.O_RDWR if done else os.O_WRONLY) | os.O_NONBLOCK))
            fifo.unlink()
        except OSError:
            pass
    return False


def quit_and_let_go(tmux: Tmux, log: Path, tmp_path: Path) -> None:
    """Neovim gone (its tmux server killed) and every child HOLD left let go; no process of the test's `ollie-lsp` (a
    daemon, a wrapper's child) is left behind."""
    tmux.close()
    let_go(log, done=True)
    assert not (left := daemons_gone(tmp_path)), left


def neovims_daemons(tmux: Tmux) -> list[str]:
    """The process ids of the daemons the Neovim in `tmux` runs now (its UI's --embed child started them)."""
    pane = subprocess.run([*tmux.base, "display", "-p", "-t", "t", "#{pane_pid}"], capture_output=True, text=True,
                          check=True).stdout.strip()
    ps = subprocess.run(["ps", "-ww", "-eo", "pid=,ppid=,args="], capture_output=True, text=True, check=True).stdout
    procs = [(pid, ppid, " ".join(args)) for pid, ppid, *args in (line.split() for line in ps.splitlines())]
    nvims = {pane} | {pid for pid, ppid, _ in procs if ppid == pane}
    return [pid for pid, ppid, args in procs if ppid in nvims and "ollie-lsp" in args]


def started(log: Path) -> list[str]:
    """The process ids of the daemons started through the `exit 3` wrapper, in order."""
    return [line.split()[1] for line in log.read_text().splitlines() if line.startswith("start")]


@pytest.mark.parametrize("broken", ["missing", "exits at once"])
def test_a_restart_that_gets_no_daemon_puts_the_prompt_typed_meanwhile_back(tmp_path: Path, scripted_llm, broken: str):
    # Bug: the prompt typed while :OllieRestart ran was held for the fresh daemon's chat; with ollie-lsp gone from PATH
    # (or exiting at once) there was none, and the prompt was neither sent nor put back: the input empty, a bare error.
    # Bug: a chat opened after the daemon's exit, before Neovim had told the plugin of it, started a second daemon: the
    # exit then restarted that one, and the prompt held for the restart was lost.
    _, tmux = answered(tmp_path, scripted_llm, wrap=HOLD + 'exec "$real" "$@"')
    typed, log = "the prompt typed meanwhile", tmp_path / "daemons.log"
    try:
        if broken == "missing":
            tmux.keys(":let $PATH = '/usr/bin:/bin'", "Enter")  # ollie-lsp uninstalled meanwhile
            said = ["on PATH", "once that is fixed"]  # "not found on PATH", or "in ~/.local/bin, which is not on PATH"
        else:
            wrap_daemon(tmp_path, 'echo "start $$" >> "$log"\n' + HOLD + 'exit 3')
            said = ["error: the ollie daemon stopped (exit code 3) again", "not restarted; :OllieRestart starts it"]
        tmux.keys(":OllieChat", "Enter", "Escape", ":OllieRestart", "Enter", "i")
        tmux.keys(typed, literal=True)
        tmux.wait(lambda s: typed in s, "the prompt typed")
        tmux.keys("Escape", "Enter", ":echo 'input' .. strlen(join(getline(1, '$')))", "Enter")
        tmux.wait(lambda s: "input0" in s and typed not in s,  # (the old one's exit not told)
                  "the prompt held for the fresh daemon")
        if broken != "missing":
            # The old daemon's exit told, the restart starts one, which exits at once.
            wait_until(lambda: let_go(log, but_started=True) or log.exists() and started(log), "the restart's start")
            wait_until(lambda: not Path("/proc", started(log)[0]).exists(), "its exit")
            tmux.keys(":OllieChat", "Enter")  # its exit not told yet
            tmux.wait(lambda s: "-- INSERT --" in s, "the chat's input")
        back = tmux.wait(lambda s: let_go(log) or "(not sent: it is back in the input)" in unwrapped(s)
                         and any(line.rstrip().endswith(typed) for line in s.splitlines()), "the prompt back")
        assert all(words in unwrapped(tmux.keep("1-back", back)) for words in said), back
        if broken != "missing":  # the restart's start and the one after its exit, restarted once
            assert len(started(log)) == 2, log.read_text()
    finally:
        quit_and_let_go(tmux, log, tmp_path)


def test_a_daemon_killed_mid_turn_is_restarted_with_the_session_and_what_the_turn_showed(tmp_path: Path,
                                                                                          scripted_llm):
    # Bug: a daemon that died stayed dead (VS Code's client restarts it) until :OllieRestart, and the chat drawn again
    # then showed nothing of the answer the crash cut short (VS Code keeps it, marked "Cut short"), nor the prompt
    # queued behind it.
    never = threading.Event()
    srv, tmux = answered(tmp_path, scripted_llm, Reply(text="A partial answer that", hold=never),
                         Reply.text("The answer after the restart."), size=(120, 36))
    try:
        tmux.keys(":Ollie tell me more", "Enter")
        tmux.wait(lambda s: "A partial answer that" in s, "the answer streaming")
        send_in_chat(tmux, "and then this")
        tmux.wait(lambda s: "queued: and then this" in s, "the prompt queued behind it")
        os.kill(daemon_pid(tmp_path), signal.SIGKILL)
        shown = ("The first answer.", "tell me more", "A partial answer that",
                 "cut short: the daemon stopped (what it had shown of this turn was not saved)",
                 "the ollie daemon stopped (signal 9) and was restarted; a turn it ran was lost",
                 "1 queued prompt from before the daemon stopped waits", "held: and then this")
        # The whole chat drawn again waited for, not its first sign (a look can catch a redraw half done).
        restarted = unwrapped(tmux.keep("1-restarted", tmux.wait(lambda s: all(x in unwrapped(s) for x in shown),
                                                                 "the restart said, the chat drawn again")))
        for said in shown:
            assert said in restarted, (said, restarted)
        never.set()
        tmux.keys(":OllieChat", "Enter", "Escape", "Enter")  # send on the empty prompt: the held one goes
        tmux.keep("2-after", tmux.wait(lambda s: "The answer after the restart." in s, "the queued prompt's answer"))
        told = [m["content"] for m in srv.chat_requests[-1].body["messages"] if m["role"] == "user"]
        assert "hello" in told[0] and told[-1] == "and then this", told  # in the session resumed
    finally:
        never.set()
        tmux.close()


def test_an_answer_saved_before_its_daemon_died_shows_once_after_the_restart(tmp_path: Path, scripted_llm):
    # Bug: the daemon killed after it had saved the answer, before the turn's end (a postTurn hook ran), and the chat
    # drawn again after the restart showed the answer twice: from the history, then again as a "cut short" copy.
    go = tmp_path / "go"
    os.mkfifo(go)
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "default.json").write_text(json.dumps({"prompt": "You are a test agent.", "commandSandbox": "none",
                                                     "hooks": {"postTurn": f'read line < "{go}"'}}))
    srv = scripted_llm("openai")
    srv.script(Reply.text("The answer saved whole."))
    tmux = start_nvim(tmp_path, {**srv.env(), "OLLIE_AGENTS_DIR": str(agents)}, {"notes.txt": "alpha\n"})
    hook = -1
    try:
        tmux.wait(lambda s: "alpha" in s, "nvim to start")
        tmux.keys(":Ollie hello", "Enter")
        tmux.wait(lambda s: "The answer saved whole." in s, "the answer")

        def hook_runs() -> bool:
            nonlocal hook
            try:  # a writer opens once the hook reads (ENXIO before): held open, the hook waits on
                hook = os.open(go, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                return False
            return True
        wait_until(hook_runs, "the postTurn hook")
        os.kill(daemon_pid(tmp_path), signal.SIGKILL)
        screen = tmux.keep("1-restarted", tmux.wait(lambda s: "was restarted" in unwrapped(s) and "hello" in s
                                                    and "The answer saved whole." in s, "the chat drawn again"))
        assert unwrapped(screen).count("The answer saved whole.") == 1, screen
        assert "cut short" not in screen and "turn it ran was lost" not in unwrapped(screen), screen
    finally:
        if hook >= 0:
            os.close(hook)  # the hook reads its end and exits
        tmux.close()


def test_a_question_of_a_daemon_that_died_is_taken_away_with_it(tmp_path: Path, scripted_llm):
    # Bug: the question float of a daemon that died stayed up after its restart, the statusline "waiting for your
    # answer": an Allow there reached no daemon, and the user took the step for allowed (or a key meant for the
    # next question for this one's).
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": "touch first"}]})]))
    with start_nvim(tmp_path, srv.env(approval="ask"), {"util.py": "a\nb\nc\n"}, size=(100, 30),
                    init_lua=FLOAT_PICKER) as tmux:
        tmux.wait(lambda s: "util.py" in s, "nvim to start")
        tmux.keys(":Ollie touch it", "Enter")
        tmux.keep("1-asked", tmux.wait(lambda s: "touch first" in s and "pick 1: Allow once" in s, "the question"))
        os.kill(daemon_pid(tmp_path), signal.SIGKILL)
        screen = tmux.keep("2-restarted", tmux.wait(lambda s: "was restarted" in unwrapped(s), "the restart said"))
        assert "pick 1: Allow once" not in screen and "waiting for your answer" not in screen, screen
    assert not (tmp_path / "ws" / "first").exists()


def test_a_daemon_that_dies_again_at_once_is_not_restarted_in_a_loop(tmp_path: Path, scripted_llm):
    # Bug: once the plugin had given up, each prompt sent started a daemon, and that one's death was taken for a first
    # crash and restarted: two starts per prompt (and :OllieRestart's the same), the give-up said again each time.
    _, tmux = answered(tmp_path, scripted_llm, Reply.text("The answer once fixed."), Reply.text("Still answering."))
    with tmux:
        real = os.path.realpath(tmp_path / "bin" / "ollie-lsp")
        log = wrap_daemon(tmp_path, 'echo "start $$" >> "$log"\nexit 3')  # a broken install: each start fails
        os.kill(daemon_pid(tmp_path), signal.SIGKILL)
        said = "error: the ollie daemon stopped (exit code 3) again, within a minute of its restart: not restarted; " \
            ":OllieRestart starts it"
        tmux.keep("1-stopped", tmux.wait(lambda s: said in unwrapped(s), "the restart given up"))
        assert len(started(log)) == 1, log.read_text()  # restarted once
        retried = "the ollie daemon stopped (exit code 3) again before it came up: not restarted"
        send_in_chat(tmux, "first try")  # starts one daemon, which dies: not restarted
        tmux.keep("2-prompt", tmux.wait(lambda s: retried in unwrapped(s) and "(not sent: it is back in the input)"
                                        in unwrapped(s), "the prompt's daemon given up"))
        # Its death, the same, is not said again, nor "restarting the daemon…" for each try: they piled up into a
        # hit-enter prompt (the chat says the try).
        tmux.keys("Escape", ":messages", "Enter")
        told = tmux.keep("2-said", tmux.wait(lambda s: "ollie: " in s.splitlines()[-1], "the messages"))
        assert "Press ENTER" not in told and "restarting the daemon" not in told, told
        tmux.keys(":OllieRestart", "Enter")
        tmux.wait(lambda s: "restarting the daemon" in s or retried in s.splitlines()[-1], "the restart under way")
        restarted = tmux.keep("3-restart", tmux.wait(lambda s: len(started(log)) == 3 and retried in s.splitlines()[-1]
                                                     and not Path("/proc", started(log)[2]).exists(), "its daemon's end"))
        assert "Press ENTER" not in restarted, restarted
        assert len(started(log)) == 3, log.read_text()  # the prompt's and the restart's: one each
        wrap_daemon(tmp_path, f'echo "start $$" >> "$log"\nexec "{real}" "$@"')  # fixed
        tmux.keys(":OllieChat", "Enter", "Escape", "Enter")  # the prompt put back, sent again
        tmux.keep("4-fixed", tmux.wait(lambda s: "The answer once fixed." in s and "ollie: idle" in s,
                                       "the fixed daemon's answer"))
        os.kill(int(started(log)[-1]), signal.SIGKILL)  # it came up: a crash now is restarted again
        tmux.keep("5-crash", tmux.wait(lambda s: "(signal 9) and was restarted" in unwrapped(s), "the restart"))
        send_in_chat(tmux, "and now")
        tmux.keep("6-after", tmux.wait(lambda s: "Still answering." in s, "the restarted daemon's answer"))
        assert len(started(log)) == 5, log.read_text()


def test_a_daemon_that_died_is_said_restarted_once_the_fresh_one_has_come_up(tmp_path: Path, scripted_llm):
    # Bug: "restarted it" was said as the fresh daemon's process started: of one still starting (a cold one under load
    # takes seconds), or about to die again.
    gate = tmp_path / "daemons.log.go"
    os.mkfifo(gate)
    hold = '[ "$(grep -c start "$log")" -lt 2 ] || read _ < "$log.go"'  # the second start: the restart's
    _, tmux = answered(tmp_path, scripted_llm, wrap=f'echo "start $$" >> "$log"\n{hold}\nexec "$real" "$@"')
    log = tmp_path / "daemons.log"
    said = "ollie: the ollie daemon stopped (signal 9): restarted it"
    try:
        tmux.keys("Escape")
        os.kill(int(started(log)[0]), signal.SIGKILL)  # (the wrapper's process: it ran the daemon in its place)
        wait_until(lambda: len(started(log)) == 2, "the fresh daemon's start")  # held before it runs
        # Everything said until now: the restart's notice, had it been said as the process started, is among it.
        tmux.keys(":echomsg 'all said' | messages", "Enter")
        held = tmux.keep("1-held", tmux.wait(lambda s: "Press ENTER" in s and "all said" in s, "the messages"))
        assert said not in held, held
        tmux.keys("Enter")
        os.close(os.open(gate, os.O_WRONLY))  # the fresh daemon runs, and comes up
        tmux.keep("2-up", tmux.wait(lambda s: said in s and "was restarted" in unwrapped(s), "the restart said"))
        assert_clean({k: v for k, v in tmux.screens.items() if k != "1-held"})  # (its hit-enter prompt was asked for)
    finally:
        with contextlib.suppress(OSError):  # a wrapper still held: let go (it waits for a writer)
            os.close(os.open(gate, os.O_WRONLY | os.O_NONBLOCK))
        tmux.close()


def test_a_range_prompt_put_back_after_a_refusal_keeps_its_lines(tmp_path: Path, scripted_llm):
    # Bug: `:'<,'>Ollie question` queued behind a turn and refused came back in the input as its text alone: the lines
    # it was asked about were gone, and sent again it asked about nothing.
    story = threading.Event()
    srv, tmux = answered(tmp_path, scripted_llm, Reply(text="Once upon a time", hold=story),
                         Reply.text("About the lines."))
    typed = "what about #mcp:nosuch:note://x"
    try:
        tmux.keys(":Ollie tell me a story", "Enter")
        tmux.wait(lambda s: "Once upon a time" in s, "the answer to stream")
        tmux.keys(":2,3Ollie " + typed, "Enter")  # queued: refused (no such server)
        back = back_in_input(tmux, "1-back", "not queued: it is back in the input, with notes.txt:2-3", typed)
        assert "📎 notes.txt:2-3 goes with it" in back, back
        story.set()
        tmux.wait(lambda s: s.count("(end)") == 2, "the story's end")
        tmux.keys(":OllieChat", "Enter", "Escape", "g", "g", "d", "G", "i")
        tmux.keys("what about these lines", literal=True)
        tmux.keys("Escape", "Enter")
        sent = tmux.keep("2-sent", tmux.wait(lambda s: "About the lines." in s, "the answer"))
        assert "goes with it" not in sent, "the lines go with one prompt only"
        prompt = srv.chat_requests[-1].body["messages"][-1]["content"]
        assert "beta line\ngamma line" in prompt and "what about these lines" in prompt, prompt
    finally:
        story.set()
        tmux.close()


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_a_daemon_killed_while_she_types_says_so_once_and_never_stops_her_at_a_prompt(tmp_path: Path, scripted_llm,
                                                                                       signum: int):
    # Bug: Neovim's own "Client ollie quit with exit code 0 and signal 9" notice came on top of ollie's: the two
    # filled the message area (that one alone is wider than a 100-column line), a "Press ENTER" prompt mid-typing
    # took her next key. Bug: SIGTERM (`kill <pid>`) ended the daemon with status 0, and it was not restarted: the
    # chats were left without one until :OllieRestart, not a word said. Bug: "a turn it ran was lost" was said with no
    # turn running.
    _, tmux = answered(tmp_path, scripted_llm, size=(100, 30))
    with tmux:
        tmux.keys("Escape", ":wincmd t", "Enter", "G", "o")
        tmux.keys("typed before", literal=True)
        tmux.wait(lambda s: "typed before" in s, "her typing")
        os.kill(daemon_pid(tmp_path), signum)
        said = tmux.keep("1-said", tmux.wait(lambda s: "was restarted" in unwrapped(s) or "Press ENTER" in s,
                                                "the notice"))
        tmux.keys(" and after", literal=True)
        typed = tmux.keep("2-typed", tmux.wait(lambda s: "typed before and after" in s, "her typing going on"))
        why = "signal 9" if signum == signal.SIGKILL else "exit code 143"
        assert why in said and "Client ollie quit" not in said + typed, said
        assert "turn it ran was lost" not in unwrapped(said), said  # none ran (it was said all the same)
        daemon_pid(tmp_path)  # one running again
        assert_clean(tmux.screens)


def test_ollie_restart_twice_in_a_row_loads_each_chat_once(tmp_path: Path, scripted_llm):
    # Bug: the second :OllieRestart, pressed while the first waited for the old daemon to exit, loaded the sessions
    # again once the fresh daemon started, and put the prompt queued in the old daemon back in the input twice.
    story = threading.Event()
    _, tmux = answered(tmp_path, scripted_llm, Reply(text="Once upon a time", hold=story))
    try:
        tmux.keys(":Ollie tell me a story", "Enter")
        tmux.wait(lambda s: "Once upon a time" in s, "the answer to stream")
        send_in_chat(tmux, "and then this")
        tmux.wait(lambda s: "queued: and then this" in s, "the prompt queued behind it")
        tmux.keys("Escape", ":OllieRestart", "Enter", ":OllieRestart", "Enter")
        back = back_in_input(tmux, "1-back", "the restart ended the daemon it waited in", "and then this")
        assert unwrapped(back).count("the restart ended the daemon it waited in") == 1, back
        assert not any(line.rstrip().endswith("and then this and then this") for line in back.splitlines()), back
        assert_clean(tmux.screens)
    finally:
        story.set()
        tmux.close()


def test_ollie_restart_says_restarting_at_once_and_never_the_old_daemons_state(tmp_path: Path, scripted_llm):
    # Bug: while :OllieRestart waited for the old daemon (busy in a turn) to exit, the statusline kept saying
    # "thinking", the old daemon's state, for seconds.
    never = threading.Event()
    _, tmux = answered(tmp_path, scripted_llm, Reply(text="A partial answer that", hold=never))
    try:
        tmux.keys(":Ollie tell me more", "Enter")
        busy = tmux.keep("1-busy", tmux.wait(lambda s: "A partial answer that" in s, "the answer streaming"))
        old_state = busy.split("ollie: ")[1].split(" $")[0]
        tmux.keys(":OllieRestart", "Enter")
        tmux.keep("2-restarting", tmux.wait(lambda s: "ollie: restarting $" in s, "the restart said"))
        screens: list[str] = []
        tmux.keep("3-idle", tmux.wait(lambda s: screens.append(s) or "ollie: idle $" in s, "the fresh daemon's state"))
        assert not [s for s in screens if f"ollie: {old_state} " in s], old_state
    finally:
        never.set()
        tmux.close()


def test_ollie_restart_after_the_daemon_died_before_neovim_told_starts_one_daemon(tmp_path: Path, scripted_llm):
    # Bug: :OllieRestart pressed after the daemon's exit, before Neovim had told the plugin of it, started the next at
    # once; the exit, told then, was taken for a crash: that fresh daemon was stopped and a third one started.
    _, tmux = answered(tmp_path, scripted_llm, wrap='echo "start $$" >> "$log"\n' + HOLD + 'exec "$real" "$@"')
    log = tmp_path / "daemons.log"
    try:
        os.kill(int(started(log)[0]), signal.SIGKILL)
        wait_until(lambda: not Path("/proc", started(log)[0]).exists(), "its exit")
        tmux.keys(":OllieRestart", "Enter", ":echo 'after the restart'", "Enter")
        tmux.wait(lambda s: "after the restart" in s, "the restart under way")
        assert not neovims_daemons(tmux)  # it waits for the old one's exit to be told
        done = tmux.keep("1-restarted", tmux.wait(lambda s: let_go(log) or "the daemon restarted" in unwrapped(s),
                                                  "the fresh daemon's chats"))
        assert "was restarted" not in unwrapped(done), done  # (not taken for a crash)
        assert len(started(log)) == 2, log.read_text()  # the first and the restart's
    finally:
        quit_and_let_go(tmux, log, tmp_path)


@pytest.mark.parametrize("broken", ["missing", "exits at once"])
def test_with_no_daemon_each_chat_says_why_at_open_and_a_try_again_says_it_no_twice(tmp_path: Path, broken: str):
    # Bug: with ollie-lsp missing (or exiting at once), each send of the prompt stacked it again with the same error
    # under it (a user pressing <C-s> got a column of copies), and each try of one exiting at once said "restarting the
    # daemon…" and its death again in the command line: leaving insert mode, a hit-enter prompt of them. A named chat
    # (:OllieChat second) opened saying nothing of it (the first chat says it at open), its windows under the bars of
    # their buffers' names, not the chat's (`prompt` and its keys).
    with start_nvim(tmp_path, {}, {"notes.txt": "alpha line\n"}, size=(140, 30)) as tmux:
        if broken == "missing":
            (tmp_path / "bin" / "ollie-lsp").unlink()
            why, died = "on PATH", "Once that is fixed"
        else:
            wrap_daemon(tmp_path, 'echo "start $$" >> "$log"\nexit 3')
            why, died = "(exit code 3)", "not restarted; :OllieRestart starts it"
        tmux.wait(lambda s: "alpha line" in s, "nvim to start")
        tmux.keys(":OllieChat", "Enter")
        tmux.wait(lambda s: died in unwrapped(s) and "-- INSERT --" in s, "the chat saying why")
        tmux.type("hello", "C-s")
        tmux.wait(lambda s: "try 2: not sent" in s, "the first try")
        tmux.keys("C-s")
        # The chat's statusline says there is no daemon, as VS Code's does (it said nothing, as if the chat were idle).
        tried = tmux.keep("1-tried", tmux.wait(lambda s: "try 3: not sent" in s and " ollie: stopped $" in s,
                                               "the second try"), (1300, 560))
        said = unwrapped(tried)
        assert said.count(why) == 1 and "## You" not in said and "try 2" not in said, tried
        assert "hello" in chat_text(tried).splitlines(), tried  # back in the input
        if broken != "missing":  # each try started one
            assert len(started(tmp_path / "daemons.log")) == 4, (tmp_path / "daemons.log").read_text()
        tmux.keys("Escape", ":messages", "Enter")
        # Once, whole (a notice over a line ends in :messages' own Press ENTER).
        told = tmux.keep("2-messages", tmux.wait(lambda s: "ollie: " in s and (
            "Press ENTER" in s or s.splitlines()[-1].startswith("ollie: ")), "the messages"))
        messages = [line for line in told.splitlines() if line.startswith("ollie: ")]
        assert len(messages) == 1 and why in messages[0] and "…" not in told, told
        tmux.keys(":OllieChat second", "Enter")
        second = tmux.keep("3-second", tmux.wait(lambda s: "try 3" not in s and died in unwrapped(s)
                                                 and " prompt " in s, "the named chat saying why at open"), (1300, 560))
        assert unwrapped(second).count(why) == 1 and "ollie://" not in second, second


def test_a_first_prompt_that_failed_still_says_why_after_ollie_restart(tmp_path: Path, scripted_llm):
    # Bug: the chat's first prompt failed (the backend refused the key), said why; after :OllieRestart the chat drew it
    # from the history, which keeps no error: "no answer: ... its error not saved", the why gone.
    srv = scripted_llm("openai")
    srv.script(Reply.error(401))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": "alpha line\n"}, size=(140, 30)) as tmux:
        tmux.wait(lambda s: "alpha line" in s, "nvim to start")
        tmux.keys(":Ollie hello", "Enter")
        said = "the API key was refused: check OLLIE_OPENAI_KEY"
        tmux.keep("1-failed", tmux.wait(lambda s: said in unwrapped(s) and "(error)" in s, "the prompt's error"))
        tmux.keys(":OllieRestart", "Enter")
        tmux.wait(lambda s: "restarting" in s, "the restart")
        again = tmux.keep("2-restarted", tmux.wait(lambda s: "restarting" not in s and "no answer:" in s,
                                                   "the fresh daemon's chat"), (1400, 560))
        assert said in unwrapped(again) and "error not saved" not in again, again
        assert_clean(tmux.screens)


def test_a_chat_opened_as_ollie_restart_comes_gets_the_fresh_daemons_session(tmp_path: Path, scripted_llm):
    # Bug: a chat opened just before :OllieRestart (its session still asked for) said "the ollie daemon stopped:
    # :OllieRestart starts it again" after the restart it was in, and its statusline stayed on "restarting".
    srv = scripted_llm("openai")
    srv.script(Reply(text="Fresh and ready."))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": "alpha line\n"}, size=(140, 30)) as tmux:
        tmux.wait(lambda s: "alpha line" in s, "nvim to start")
        tmux.keys(":exe \"OllieChat\" | exe \"OllieRestart\"", "Enter")
        idle = tmux.keep("1-idle", tmux.wait(lambda s: "ollie: idle $" in s, "the chat's fresh session"))
        assert "daemon stopped" not in unwrapped(idle), idle
        tmux.keys("hello", literal=True)  # the chat's input has the focus, in insert mode, as :OllieChat leaves it
        tmux.keys("Escape", "Enter")
        answered = tmux.keep("2-answered", tmux.wait(lambda s: "Fresh and ready." in s, "the answer in the fresh session"))
        assert "## You\nhello\n" in chat_text(answered), answered
        assert_clean(tmux.screens)
