"""A Neovim user's day in the real TUI (nvim in tmux, README's `setup({})`): what she types stays hers."""

from __future__ import annotations

import subprocess

from ollie.testing import Reply
from tests.procs import wait_until

from .test_nvim import _nvim
from .test_nvim_tui import send_in_chat, start_nvim


def test_her_typing_in_a_buffer_a_rewind_put_back_survives_the_model_s_next_whole_file_write(tmp_path, scripted_llm):
    """Bug: :OllieRewind put calc.py's buffer back and forgot what the model had seen of it; she typed a line there,
    and the model's next `file_write` of calc.py (it never read her line) replaced the whole buffer and saved it: her
    line gone from the buffer and the file, and the chat said the edit was "made on top of" her changes. Now a
    whole-file write of a buffer with unsaved text the model has not read is refused until it reads it."""
    srv = scripted_llm("openai")
    fix = Reply(text="Fixing add.", tool_calls=[("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["calc.py", "return a - b", "return a + b"]}]})])
    rewrite = Reply(text="Rewriting.", tool_calls=[("call_tool", {"calls": [
        {"tool": "file_write", "args": ["calc.py", "def add(a, b):\n    return a + b\n"]}]})])
    srv.script(fix, Reply.text("Fixed."), rewrite, Reply.text("Rewritten."))
    code = "def add(a, b):\n    return a - b\n"
    with start_nvim(tmp_path, srv.env(approval="auto"), {"calc.py": code}, size=(100, 30)) as tmux:
        tmux.wait(lambda s: "return a - b" in s, "nvim to start")
        tmux.keys(":Ollie fix add", "Enter")
        tmux.wait(lambda s: "Fixed." in s and "(end)" in s and "return a + b" in s, "turn 1's edit in the buffer")
        tmux.keys(":OllieRewind 1", "Enter")
        tmux.wait(lambda s: "Type number" in s and "Rewind to before turn 1?" in s, "the confirmation")
        tmux.keys("1", "Enter")
        tmux.wait(lambda s: "rewound to before turn 1" in s and "return a - b" in s, "the buffer put back")
        tmux.keys("Escape", "C-w", "h", "G", "o")
        tmux.type("# her note: keep the sign", "Escape")
        tmux.wait(lambda s: "# her note: keep the sign" in s, "her line in calc.py")
        send_in_chat(tmux, "rewrite calc.py")
        done = tmux.keep("1-rewritten", tmux.wait(lambda s: "Rewritten." in s and "(end)" in s, "turn 1 again"), (1000, 560))
        code_side = [line.split("│")[0].rstrip() for line in done.splitlines()]
        assert "# her note: keep the sign" in code_side and "    return a - b" in code_side, done
        chat = "".join("".join(line.split("│")[-1].split()) for line in done.splitlines())
        assert "".join("calc.py: not written: the file has the user's unsaved changes".split()) in chat, done
        assert "made on top of them" not in chat, done
    assert (tmp_path / "ws" / "calc.py").read_text() == code


def test_a_function_the_agent_adds_at_the_end_of_her_open_file_leaves_no_blank_line_and_can_be_edited_again(
        tmp_path, scripted_llm):
    """Bug: the agent's edit adding lines at the end of calc.py (open in Neovim) was put at the line past the last one,
    which Neovim appended as lines with a blank one too many: saved so, and the buffer no longer the model's text, its
    next edit of calc.py was refused, "the file changed in the editor since you read it"."""
    srv = scripted_llm("openai")

    def add(after: str, name: str, op: str) -> Reply:
        new = f"{after}\n\ndef {name}(a, b):\n    return a {op} b\n"
        return Reply(text=f"Adding {name}.", tool_calls=[("call_tool", {"calls": [
            {"tool": "file_edit", "args": ["calc.py", after, new]}]})])

    srv.script(add("    return a + b\n", "mul", "*"), Reply.text("mul added."),
               add("    return a * b\n", "div", "/"), Reply.text("div added."))
    with start_nvim(tmp_path, srv.env(), {"calc.py": "def add(a, b):\n    return a + b\n"}, size=(100, 30)) as tmux:
        tmux.wait(lambda s: "return a + b" in s, "nvim to start")
        tmux.keys(":Ollie add mul", "Enter")
        tmux.wait(lambda s: "mul added." in s and "(end)" in s, "turn 1")
        send_in_chat(tmux, "and div")
        done = tmux.keep("1-added", tmux.wait(lambda s: "div added." in s and "(end)" in s, "turn 2"), (1000, 560))
        assert "read it again" not in done and "✓ Edit calc.py" in done, done
        code = [line.split("│")[0].rstrip() for line in done.splitlines()]
        assert code[code.index("    return a / b") + 1] == "~", "a blank line at the end of the buffer"
    assert (tmp_path / "ws" / "calc.py").read_text() == (
        "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n\n\ndef div(a, b):\n    return a / b\n")


def test_a_turn_ending_while_she_types_a_command_under_messages_leaves_them_on_screen(tmp_path, scripted_llm):
    """Bug: she read :messages and typed `:` at its prompt to run a command, the messages still above; a turn's events
    meanwhile redrew the screen (the chat's step, its statusline, its end) and wiped them, and a notice (a file a step
    deleted) drew over them. Now they stay until her command ends; the chat and the notice show then."""
    srv = scripted_llm("openai")
    srv.script(Reply(text="Cleaning.", tool_calls=[("execute_code", {"steps": [
        {"code": "while [ ! -e go ]; do sleep 0.05; done; rm old.py"}]})]), Reply.text("Cleaned up."))
    sock = tmp_path / "nvim.sock"
    init = f"vim.fn.serverstart({str(sock)!r})"
    with start_nvim(tmp_path, srv.env(), {"old.py": "x = 1\n"}, size=(100, 30), init_lua=init) as tmux:
        tmux.wait(lambda s: "x = 1" in s, "nvim to start")
        tmux.keys(":Ollie clean up", "Enter")
        tmux.wait(lambda s: "ollie: Run while" in s, "the step running, in the chat's statusline")
        tmux.keys("Escape", ":echomsg 'first' | echomsg 'second' | echomsg 'third'", "Enter", "Enter", ":messages", "Enter")
        tmux.wait(lambda s: "third\nPress ENTER" in s, "the messages")
        tmux.keys(":")
        tmux.wait(lambda s: s.rstrip().endswith("third\n:"), "her command line under the messages")
        (tmp_path / "ws" / "go").touch()

        def running() -> str:
            return subprocess.run([_nvim(), "--headless", "--server", str(sock), "--remote-expr",
                                   "luaeval('tostring(require(\"ollie.chat\").get(false).running)')"],
                                  capture_output=True, text=True, timeout=30).stdout

        wait_until(lambda: running() == "false", "the turn's end in Neovim")
        typing = tmux.keep("1-typing", tmux.screen())
        assert typing.rstrip().endswith("first\nsecond\nthird\n:"), typing
        tmux.keys("echo 'mine'", "Enter")
        tmux.keep("2-ran", tmux.wait(lambda s: "third\nmine\nPress ENTER" in s, "her command's output under them"))
        tmux.keys("Enter")
        done = tmux.keep("3-after", tmux.wait(lambda s: "Cleaned up." in s and "old.py was deleted" in s,
                                              "the chat and the notice"), (1000, 560))
        assert "ollie: idle" in done, done


def test_an_undo_of_the_agent_s_hunk_says_it_saved_her_unsaved_typing_with_it(tmp_path, scripted_llm):
    """Bug: she typed a line in notes.txt after the agent's edit, unsaved, and undid the agent's hunk in its diff: the
    undo reached the disk by the buffer's save, her half-typed line with it, and Neovim said only "undone: hunk 1"."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["notes.txt", "line 3\n", "line three\n"]}]})), Reply.text("Edited three."))
    notes = "".join(f"line {i}\n" for i in range(1, 13))
    with start_nvim(tmp_path, srv.env(), {"notes.txt": notes}, size=(120, 30)) as tmux:
        tmux.wait(lambda s: "line 1" in s, "nvim to start")
        tmux.keys(":Ollie edit line 3", "Enter")
        tmux.wait(lambda s: "Edited three." in s and "(end)" in s, "the turn")
        tmux.keys("Escape", "C-w", "h", "G", "o")
        tmux.type("half typed", "Escape", ":OllieChanges", "Enter")
        tmux.wait(lambda s: "turn 1 changed 1 file" in s, "the changes")
        tmux.keys("Enter")
        tmux.wait(lambda s: "(du undo hunk" in s, "the diff")
        tmux.keys("d", "u")
        undone = tmux.keep("1-undone", tmux.wait(lambda s: "ollie: undone: hunk 1 of notes.txt" in s, "the undo"), (1200, 560))
        assert "ollie: undone: hunk 1 of notes.txt (saved, with your unsaved changes)" in undone, undone
    assert (tmp_path / "ws" / "notes.txt").read_text() == notes + "half typed\n"
