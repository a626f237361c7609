"""The plugin in the smallest usual terminal (nvim in tmux at 80x24, README's `setup({})`): what a question asks
about stays in view."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from ollie.testing import Reply
from tests.procs import wait_until

from .test_nvim_tui import FLOAT_PICKER, PLUGIN, ask_and_stream, assert_clean, queue_while_streaming, start_nvim

SMALL = (760, 440)  # an 80x24 screen's PNG, in pixels


def test_at_80x24_the_answers_of_a_question_leave_its_diff_in_view(tmp_path: Path, scripted_llm):
    # Bug: with no row free of a statusline under the preview, the answers' float moved up over it and hid the
    # changed lines: the user was asked to allow an edit they could not see.
    srv = scripted_llm("openai")
    edit = ("call_tool", {"calls": [{"tool": "file_edit", "args": ["ops.py", "return a - b", "return a + b"]}]})
    srv.script(Reply(text="Fixing add.", tool_calls=[edit]), Reply.text("Fixed."))
    with start_nvim(tmp_path, srv.env(approval="ask"), {
      "ops.py": '"""Tiny calculator."""\n\n\ndef add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n'},
      size=(80, 24)) as tmux:
        tmux.wait(lambda s: "def mul" in s, "nvim to start")
        tmux.keys(":Ollie fix add", "Enter")
        asked = tmux.keep("1-asked", tmux.wait(lambda s: "Allow once" in s and "Reject with feedback" in s
                                               and "+    return a + b" in s, "the answers and the diff"), SMALL)
        assert "-    return a - b" in asked and "+    return a + b" in asked, asked
        tmux.keys("1", "Enter")
        tmux.wait(lambda s: "Fixed." in s and "(end)" in s, "the turn to end")
        assert "return a + b" in (tmp_path / "ws" / "ops.py").read_text()
        assert_clean(tmux.screens)


def test_the_input_s_key_hints_name_the_keys_of_the_mode_she_types_in(tmp_path: Path, scripted_llm):
    """Bug: the chat opens in insert mode and its statusline said `<CR> send/queue`: a newcomer's <CR> typed a line
    break (insert mode sends with <C-s>, as the chat's empty line said). Now each mode's own keys."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("Hello back."))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"}, size=(80, 24)) as tmux:

        def hints(screen: str) -> list[str]:
            return screen.splitlines()[-2].split("prompt", 1)[-1].split()

        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":OllieChat", "Enter")
        typing = tmux.keep("1-insert", tmux.wait(lambda s: "-- INSERT --" in s and " prompt " in s, "the chat"))
        assert hints(typing) == ["<C-s>", "send/queue,", "<C-j>", "inject"], typing
        tmux.type("hello", "C-s")
        tmux.wait(lambda s: "Hello back." in s and "(end)" in s, "the answer")
        tmux.keys("Escape")
        tmux.keep("2-normal", tmux.wait(lambda s: "-- INSERT --" not in s
                                        and hints(s) == ["<CR>", "send/queue,", "<C-j>", "inject"], "normal mode's keys"),
                  SMALL)
        assert_clean(tmux.screens)


def test_a_chat_with_no_daemon_to_start_says_where_the_whole_fix_is(tmp_path: Path, scripted_llm):
    """Bug: before installing ollie-lsp, :OllieChat's notice was cut to the 80 columns mid-command ("install it with
    `pipx install …"), in :messages too: the fix was nowhere to read. Now the chat says it whole, as
    :checkhealth ollie does."""
    with start_nvim(tmp_path, scripted_llm("openai").env(), {"calc.py": "x = 1\n"}, size=(80, 24)) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":let $PATH = '/usr/bin:/bin'", "Enter")  # (not installed yet)
        tmux.keys(":OllieChat", "Enter")
        told = tmux.keep("1-told", tmux.wait(lambda s: "send a prompt" in s, "the chat saying why"))
        assert "uv tool" in told and "setup({cmd = {...}})" in told, told
        tmux.keys("Escape", ":checkhealth ollie", "Enter")
        health = tmux.keep("2-health", tmux.wait(lambda s: "ollie: daemon" in s and "pipx" in s, "the whole fix"))
        assert health.count("pipx install ollie-") == 1, "the fix is said once (it was, then again as ADVICE)"
        assert_clean({k: v for k, v in tmux.screens.items() if k != "2-health"})  # (its ERROR is the point)


def test_with_no_daemon_to_start_the_chat_opens_and_keeps_what_she_types(tmp_path: Path, scripted_llm):
    """Bug: with ollie-lsp not installed, :OllieChat opened no chat and left her in the code: the `hello` she typed
    next ran there as normal-mode keys, editing it (and :Ollie's prompt was lost). Now the chat opens, says why and the
    fix (:checkhealth ollie's words), keeps what she types, and once ollie-lsp is there, sending it starts the daemon."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("Hello back."))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"}, size=(80, 24)) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":let g:path = $PATH | let $PATH = '/usr/bin:/bin'", "Enter")  # (not installed yet)
        tmux.keys(":OllieChat", "Enter")
        tmux.wait(lambda s: "-- INSERT --" in s and "send a prompt" in s, "the chat, saying why")
        tmux.type("hello", "C-s")
        told = tmux.keep("1-told", tmux.wait(lambda s: "back in the input" in s, "the prompt kept"), SMALL)
        assert "install it with" in told and "pipx install" in told, told
        tmux.keys("Escape", ":echo getbufline('calc.py', 1, '$') getbufvar('calc.py', '&modified')", "Enter")
        tmux.wait(lambda s: "['x = 1'] 0" in s.splitlines()[-1], "the code as it was")
        tmux.keys(":Ollie and you?", "Enter")  # (:Ollie's prompt joins it there)
        # In the input (the typed command line, on the screen until Neovim takes its Enter, holds "and you?" alone).
        tmux.wait(lambda s: "hello and you?" in s, "the second prompt kept")
        tmux.keys(":echo getline(1, '$')", "Enter")
        tmux.wait(lambda s: "['hello and you?']" in s.splitlines()[-1], "what she typed in the input")
        tmux.keys(":let $PATH = g:path", "Enter")  # installed: sent again, it starts the daemon
        tmux.keys("Enter")
        tmux.keep("2-sent", tmux.wait(lambda s: "Hello back." in s and "(end)" in s, "the answer"), SMALL)
        assert srv.chat_requests[-1].body["messages"][-1]["content"] == "hello and you?", srv.chat_requests[-1].body
        assert_clean({k: v for k, v in tmux.screens.items() if k != "1-told"})  # (its error is the point)


def test_closing_a_split_under_the_chat_leaves_the_input_its_five_lines(tmp_path: Path, scripted_llm):
    """Bug: at 80x24, :OllieChanges' list (a split across the bottom) closed with `q` gave its rows to the input area
    (8 lines, the transcript 3 shorter); a plugin's `:botright 10split` closed gave it 13, the transcript down to 8."""
    srv = scripted_llm("openai")
    edit = ("call_tool", {"calls": [{"tool": "file_edit", "args": ["ops.py", "a - b", "a + b"]}]})
    srv.script(Reply(text="Fixing add.", tool_calls=[edit]), Reply.text("Fixed."))
    with start_nvim(tmp_path, srv.env(), {"ops.py": "def add(a, b):\n    return a - b\n"}, size=(80, 24)) as tmux:

        def input_rows(screen: str) -> int:
            """The rows between the transcript's statusline and the input's (-1: not both drawn yet)."""
            rows = [i for i, line in enumerate(screen.splitlines()) if " ollie: " in line or " prompt " in line]
            return rows[1] - rows[0] - 1 if len(rows) == 2 else -1

        tmux.wait(lambda s: "def add" in s, "nvim to start")
        tmux.keys(":Ollie fix add", "Enter")
        before = tmux.wait(lambda s: "Fixed." in s and "(end)" in s, "the turn")
        assert input_rows(before) == 5, before
        tmux.keys(":OllieChat", "Enter", "Escape", ":OllieChanges", "Enter")  # (from the input, where she typed)
        tmux.wait(lambda s: "turn 1 changed 1 file" in s, "the changes list")
        tmux.keys("q")
        # (The whole layout waited for: the input's height comes back a moment after the list's window closed.)
        tmux.keep("1-list-closed", tmux.wait(lambda s: "turn 1 changed" not in s and input_rows(s) == 5,
                                             "the list closed, the input 5 lines"), SMALL)
        tmux.keys("C-w", "h", ":botright 10split | enew", "Enter")
        tmux.wait(lambda s: s.count("[No Name]") == 1, "a plugin's split across the bottom")
        tmux.keys(":close", "Enter")
        tmux.keep("2-split-closed", tmux.wait(lambda s: "[No Name]" not in s and input_rows(s) == 5,
                                              "the split closed, the input 5 lines"))
        assert_clean(tmux.screens)


def test_a_prompt_queued_under_a_paragraph_taller_than_the_chat_shows(tmp_path: Path, scripted_llm):
    """Bug: at 80x24 an answer streamed as one paragraph taller than the transcript showed its last words, and the
    `⏳ queued:` line under it (where README says a queued prompt shows until its turn starts) was below the window's
    foot: she could not tell her prompt was queued."""
    srv = scripted_llm("openai")
    story = threading.Event()
    srv.script(Reply(text="Once upon a time " + "there was a tale " * 60 + "THE END.", hold=story),
               Reply.text("Yes."))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"}, size=(80, 24)) as tmux:
        try:
            shown = queue_while_streaming(tmux, "tell a long story", "THE END.", "is it true?")
            assert "THE END." in shown, shown
            tmux.keep("1-queued", shown, SMALL)
        finally:
            story.set()
        tmux.wait(lambda s: "Yes." in s, "the queued turn")
        assert_clean(tmux.screens)


def test_prompts_a_stop_held_stay_in_sight_when_a_second_tab_adds_the_tabline(tmp_path: Path, scripted_llm):
    """Bug: at 80x24, an answer of paragraphs filling the chat stopped with two prompts queued (held: they show under
    its last line), then `:tabnew` and back: the tabline took a row off the chat, and Neovim kept the cursor's line in
    sight, not what shows under it: the last held prompt was below the window's foot until the next event."""
    srv = scripted_llm("openai")
    story = threading.Event()
    srv.script(Reply(text="\n\n".join(f"Part {i}: " + "there was a tale " * 6 for i in range(8)), hold=story),
               Reply.text("One."), Reply.text("Two."))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"}, size=(80, 24)) as tmux:
        try:
            ask_and_stream(tmux, "tell a long story", "Part 7:")
            tmux.keys(":OllieQueue is it true?", "Enter", ":OllieQueue who told it?", "Enter", ":OllieStop", "Enter")
            tmux.wait(lambda s: "⏸ held: who told it?" in s, "the prompts held by the stop")
            tmux.keys(":tabnew", "Enter", ":tabprev", "Enter")
            tmux.keep("1-tabline", tmux.wait(lambda s: s.startswith(" ") and "⏸ held: who told it?" in s,
                                             "the held prompts under the tabline"), SMALL)
        finally:
            story.set()
        tmux.keys(":OllieChat", "Enter", "C-s")  # (the input empty: the held prompts go on)
        tmux.wait(lambda s: "Two." in s and "⏸" not in s, "the held prompts' turns")
        assert_clean(tmux.screens)


def test_with_the_chat_at_the_bottom_the_code_keeps_half_the_rows(tmp_path: Path, scripted_llm):
    """Bug: with `chat = { position = "bottom" }` at 80x24, the chat opened 20 rows high and the code kept one line;
    after a resize it kept three. Now, as a narrow terminal keeps half its columns for the code, it keeps half."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("Hello back."))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "".join(f"x{i} = {i}\n" for i in range(1, 31))}, size=(80, 24),
                    init_lua='require("ollie").setup({ chat = { position = "bottom" } })') as tmux:

        def code_rows(screen: str) -> int:
            """The code window's rows: those above its statusline."""
            return next(i for i, line in enumerate(screen.splitlines()) if line.startswith("calc.py "))

        tmux.wait(lambda s: "x1 = 1" in s, "nvim to start")
        tmux.keys(":Ollie hi", "Enter")
        opened = tmux.keep("1-bottom", tmux.wait(lambda s: "Hello back." in s and "(end)" in s, "the answer"), SMALL)
        assert code_rows(opened) >= 9, opened
        subprocess.run([*tmux.base, "resize-window", "-t", "t", "-x", "80", "-y", "40"], check=True)
        tmux.wait(lambda s: len(s.splitlines()) == 40, "the taller terminal")
        subprocess.run([*tmux.base, "resize-window", "-t", "t", "-x", "80", "-y", "24"], check=True)
        # (The layout is waited for: the chat's rows come back a moment after the terminal's, as its resize is handled.)
        resized = tmux.keep("2-resized", tmux.wait(lambda s: len(s.splitlines()) == 24 and " prompt " in s
                                                   and any(line.startswith("calc.py ") for line in s.splitlines())
                                                   and code_rows(s) >= 9, "the 80x24 terminal again, the code half"))
        assert code_rows(resized) >= 9, resized
        assert_clean(tmux.screens)


def test_a_fork_says_so_in_the_chat(tmp_path: Path, scripted_llm):
    """Bug: at 80x24 :OllieFork 1 only drew turn 1 again: the statusline cut the title before its "(fork)", and nothing
    said the chat was on a fork now, or where the conversation it left went."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("Answer one."), Reply.text("Answer two."))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"}, size=(80, 24)) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie tell me about the first thing", "Enter")
        tmux.wait(lambda s: "Answer one." in s and "(end)" in s, "turn 1")
        tmux.keys(":Ollie and the second", "Enter")
        tmux.wait(lambda s: "Answer two." in s, "turn 2")

        def said(screen: str) -> str:
            return " ".join(line.split("│")[-1].strip() for line in screen.splitlines())

        tmux.keys(":OllieFork 1", "Enter")
        forked = tmux.keep("1-forked", tmux.wait(lambda s: "Answer two." not in s and "Files were not" in said(s),
                                                 "the fork"), SMALL)
        assert ('this chat is now "tell me about the first thing (fork)", with the conversation up to turn 1; the one '
                "it came from is in :OllieSessions.") in said(forked), forked
        assert_clean(tmux.screens)


def test_a_question_follows_her_to_another_tab(tmp_path: Path, scripted_llm):
    """Bug: a question asked in the chat's tab stayed there when she went to another tab (`:tabnew`, `gt`): the tab she
    was in showed nothing to answer, and back in the chat's tab only "waiting for your answer" (its float had stayed
    in the other). Now its float and its answers come with her, and are answered there."""
    srv = scripted_llm("openai")
    edit = ("call_tool", {"calls": [{"tool": "file_edit", "args": ["ops.py", "a - b", "a + b"]}]})
    srv.script(Reply(text="Fixing add.", tool_calls=[edit]), Reply.text("Fixed."))
    with start_nvim(tmp_path, srv.env(approval="ask"), {"ops.py": "def add(a, b):\n    return a - b\n",
                                                        "notes.txt": "my notes\n"}, size=(80, 24)) as tmux:
        tmux.wait(lambda s: "def add" in s, "nvim to start")
        tmux.keys(":Ollie fix add", "Enter")
        tmux.wait(lambda s: "Allow once" in s and "+    return a + b" in s, "the question in the chat's tab")
        tmux.keys(":tabnew notes.txt", "Enter")
        moved = tmux.keep("1-other-tab", tmux.wait(lambda s: "my notes" in s and "Allow once" in s
                                                   and "+    return a + b" in s, "the question in the other tab"),
                          SMALL)
        assert "Fixing add." not in moved, moved  # (the chat's tab is not the one shown)
        tmux.keys("g", "t")
        # (The answers and the diff above them: a look at the answers alone once saw the diff not yet drawn.)
        tmux.keep("2-back", tmux.wait(lambda s: s.splitlines()[-2].startswith("ops.py ") and "Allow once" in s
                                      and s.count("ollie: approve?") == 1 and "+    return a + b" in s,
                                      "the question and its diff back in the chat's tab"))
        tmux.keys("1", "Enter")
        tmux.keep("3-answered", tmux.wait(lambda s: "Fixed." in s and "(end)" in s, "the turn's end"))
        assert "return a + b" in (tmp_path / "ws" / "ops.py").read_text()
        tmux.keys(":tabnext", "Enter")
        tmux.keep("4-other-tab", tmux.wait(lambda s: "my notes" in s and "approve?" not in s, "no float left behind"))
        assert_clean(tmux.screens)


def test_a_or_o_in_the_transcript_goes_to_the_input_as_i_does(tmp_path: Path, scripted_llm):
    """Bug: in the read-only transcript only `i` went to the input; `a`, `A` or `o`, as a Neovim user starts typing,
    said "E21: Cannot make changes, 'modifiable' is off" and nothing more."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("Hello back."), Reply.text("Again."))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"}, size=(80, 24)) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie hi", "Enter")
        tmux.wait(lambda s: "Hello back." in s and "(end)" in s, "the answer")
        tmux.keys(":OllieChat", "Enter")
        for key in ("a", "A", "o"):
            tmux.keys("Escape", "C-w", "k")
            tmux.wait(lambda s: "-- INSERT --" not in s, "the transcript")
            tmux.keys(key)
            tmux.type(f"<{key}> ")
            tmux.keep(f"typed-{key}", tmux.wait(lambda s, key=key: "-- INSERT --" in s and f"<{key}>" in s,
                                                f"{key} to start typing in the input"))
        tmux.keys("C-s")
        done = tmux.keep("sent", tmux.wait(lambda s: "Again." in s, "the prompt sent"))
        assert "E21" not in done, done
        assert srv.chat_requests[-1].body["messages"][-1]["content"].startswith("<a> <A> <o>")
        assert_clean(tmux.screens)


def test_ollie_mcp_with_no_servers_says_which_file_to_add_them_to(tmp_path: Path, scripted_llm):
    """Bug: at 80 columns `:OllieMcp` said "no MCP servers: add them to mcp.json in ollie's config dire…", in
    :messages too: which directory, it never said."""
    home = Path(os.environ["XDG_CONFIG_HOME"]).parent  # (the config dir under her home: written from ~)
    with start_nvim(tmp_path, {**scripted_llm("openai").env(), "HOME": str(home)}, {"calc.py": "x = 1\n"},
                    size=(80, 24)) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":OllieMcp", "Enter")
        said = tmux.keep("1-said", tmux.wait(lambda s: "no MCP servers" in s, "the answer"))
        assert said.splitlines()[-1].strip() == "ollie: no MCP servers: add them to ~/config/ollie/mcp.json", said
        assert_clean(tmux.screens)


def test_ollie_queue_and_inject_with_no_turn_running_send_the_prompt(tmp_path: Path, scripted_llm):
    """Bug: `:OllieQueue hello` (or `:OllieInject`) in an idle chat showed "⏳ queued: hello" (or "↳ injected: hello")
    and nothing more: no turn ran, and the prompt waited for one that never came. As the input's <C-j> does, it is sent."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("Answer to the queued one."), Reply.text("Answer to the injected one."))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "x = 1\n"}, size=(80, 24)) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":OllieQueue what is x", "Enter")
        tmux.keep("1-queued", tmux.wait(lambda s: "Answer to the queued one." in s and "(end)" in s, "its turn"))
        tmux.keys(":OllieInject and y", "Enter")
        done = tmux.keep("2-injected", tmux.wait(lambda s: "Answer to the injected one." in s and s.count("(end)") == 2,
                                                 "its turn"))
        assert "queued:" not in done and "injected:" not in done, done
        assert [r.body["messages"][-1]["content"] for r in srv.chat_requests][-1].startswith("and y"), srv.chat_requests
        assert_clean(tmux.screens)



# The user's init, noting what of the daemon's the plugin takes in while Neovim exits, and what was said.
WATCH_EXIT = """
local taken = {}
vim.api.nvim_create_autocmd("VimLeavePre", { callback = function()
  local listeners = require("ollie.client").listeners
  for method, fn in pairs(listeners) do
    listeners[method] = function(...) table.insert(taken, method) return fn(...) end
  end
end })
vim.api.nvim_create_autocmd("VimLeave", { callback = function()
  vim.fn.writefile({ "taken: " .. table.concat(taken, " "), vim.fn.execute("messages") }, "OUT")
end })
"""


def test_closing_the_terminal_with_a_question_in_the_users_own_picker_draws_nothing_as_neovim_exits(
        tmp_path: Path, scripted_llm):
    """A question up in the user's own float picker, the terminal closed: Neovim ends, and so does its daemon.
    Bug: the daemon's last events (the turn it ended on `shutdown`) were drawn into the chat while Neovim exited,
    waiting in vim.lsp's VimLeavePre: a terminal's close had freed the buffers' memory, the drawing failed (E315),
    and its error's "-- More --" waited for a key with no terminal left to send it: Neovim and ollie-lsp ran on for
    good (nvimuser26 saw it with a question in another tab). The plugin takes in nothing of the daemon's as Neovim
    exits now."""
    said = tmp_path / "exit.txt"
    srv = scripted_llm("openai", check=False)  # (the question is never answered)
    srv.script(Reply(text="Fixing add.", tool_calls=[("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["ops.py", "a - b", "a + b"]}]})]))
    with start_nvim(tmp_path, srv.env(approval="ask"), {"ops.py": "def add(a, b):\n    return a - b\n"},
                    size=(80, 24), init_lua=FLOAT_PICKER + WATCH_EXIT.replace("OUT", str(said))) as tmux:
        tmux.wait(lambda s: "def add" in s, "nvim to start")
        tmux.keys(":Ollie fix add", "Enter")
        tmux.keep("1-asked", tmux.wait(lambda s: "pick 1: " in s, "the question in her picker"))
    running = _running(tmp_path)
    try:
        wait_until(lambda: not running(), f"Neovim and its daemon to end with the terminal: {running()}", timeout=20)
    finally:
        for line in running():
            os.kill(int(line.split()[0]), signal.SIGKILL)
    exited = said.read_text()
    assert exited.startswith("taken: \n") and "Error" not in exited, exited


def _running(tmp_path: Path) -> Callable[[], list[str]]:
    """Neovim and ollie-lsp of this test (each names its folder), and what they started with their name."""
    def running() -> list[str]:
        ps = subprocess.run(["ps", "-ww", "-eo", "pid=,args="], capture_output=True, text=True, check=True).stdout
        return [line.strip() for line in ps.splitlines() if f" {tmp_path}/" in line or f"={tmp_path}/" in line]
    return running


def test_closing_the_terminal_with_a_question_up_after_tabnew_leaves_no_process(tmp_path: Path, scripted_llm):
    """Bug: a question left in the chat's tab when she went to another (`:tabnew`), then the terminal closed: Neovim
    (`nvim --embed`) and its ollie-lsp ran on for good. The question comes with her now, and both end with the
    terminal."""
    srv = scripted_llm("openai", check=False)  # (the question is never answered)
    srv.script(Reply(text="Fixing add.", tool_calls=[("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["ops.py", "a - b", "a + b"]}]})]))
    with start_nvim(tmp_path, srv.env(approval="ask"), {"ops.py": "def add(a, b):\n    return a - b\n",
                                                        "notes.txt": "my notes\n"}, size=(80, 24)) as tmux:
        tmux.wait(lambda s: "def add" in s, "nvim to start")
        tmux.keys(":Ollie fix add", "Enter")
        tmux.wait(lambda s: "Allow once" in s, "the question")
        tmux.keys(":tabnew notes.txt", "Enter")
        tmux.wait(lambda s: "my notes" in s, "the other tab")

    running = _running(tmp_path)
    try:  # (the tmux server killed: the terminal closed)
        wait_until(lambda: not running(), f"Neovim and its daemon to end with the terminal: {running()}", timeout=20)
    finally:
        for line in running():
            os.kill(int(line.split()[0]), signal.SIGKILL)


def test_at_80x24_the_changes_list_keeps_its_key_hints_once_a_diff_tab_adds_the_tabline(tmp_path: Path, scripted_llm):
    """Bug: the diff's tab brought the tabline, which took its row from the list under the code: back in the first
    tab, the list's line of key hints had scrolled out of its two rows."""
    srv = scripted_llm("openai")
    edit = ("call_tool", {"calls": [{"tool": "file_edit", "args": ["ops.py", "a - b", "a + b"]}]})
    srv.script(Reply(text="Fixing add.", tool_calls=[edit]), Reply.text("Fixed."))
    with start_nvim(tmp_path, srv.env(), {"ops.py": "def add(a, b):\n    return a - b\n"}, size=(80, 24)) as tmux:
        tmux.wait(lambda s: "def add" in s, "nvim to start")
        tmux.keys(":Ollie fix add", "Enter")
        tmux.wait(lambda s: "Fixed." in s and "(end)" in s, "the turn to end")
        tmux.keys("Escape", ":OllieChanges", "Enter")
        tmux.wait(lambda s: "ollie: turn 1 changed 1 file" in s and "M  ops.py" in s, "the changes list")
        tmux.keys("Enter")
        tmux.wait(lambda s: "before turn 1: ops.py" in s, "the diff tab")
        tmux.keys("g", "t")
        back = tmux.keep("1-back", tmux.wait(lambda s: "before turn 1: ops.py" not in s and "M  ops.py" in s,
                                              "the first tab again"), SMALL)
        assert "ollie: turn 1 changed 1 file   (<CR> diff" in back, back


def test_a_prompt_queued_under_a_128_kb_paragraph_shows_at_a_few_counts_of_its_height(tmp_path: Path, scripted_llm):
    """A prompt queued under an answer streamed as one 128 KB line: its `⏳ queued:` line shows under the answer's last
    words, the line's height counted at most 4 times to find where (Bug: ~20 counts an update, each walking the whole
    line: ~33 ms of a frozen editor an update while the prompt waits, docs/SECURITY.md round 63)."""
    srv = scripted_llm("openai")
    story = threading.Event()
    srv.script(Reply(text="Once upon a time " + "there was a tale " * 7700 + "THE END.", chunk_size=4096, hold=story),
               Reply.text("Yes."))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": "notes\n"}, size=(80, 24)) as tmux:
        try:
            tmux.wait(lambda s: "notes" in s, "nvim to start")
            tmux.keys(f':lua dofile("{PLUGIN / "tests" / "reveal_cost.lua"}")', "Enter")
            shown = queue_while_streaming(tmux, "tell a long story", "THE END.", "is it true?")
            assert "THE END." in shown, shown
            tmux.keep("1-queued", shown, (760, 440))
        finally:
            story.set()
        tmux.wait(lambda s: "Yes." in s, "the queued turn")
        tmux.keys(":echo 'counts' g:ollie_reveal_most 'reveals' g:ollie_reveals", "Enter")
        said = tmux.wait(lambda s: re.search(r"counts \d+ reveals \d+", s) is not None, "the counts")
        found = re.search(r"counts (\d+) reveals (\d+)", said)
        assert found, said
        most, reveals = map(int, found.groups())
        assert reveals > 0 and most <= 4, said
        assert_clean(tmux.screens)
