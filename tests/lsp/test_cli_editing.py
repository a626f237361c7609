"""The terminal's prompt edited as a shell's (readline) on a real pty: Ctrl-C owned by it, the moment it shows."""

from __future__ import annotations

import os

from ollie.testing import Reply

from .test_cli_pty import Terminal


def test_ctrl_c_typed_the_moment_a_prompt_shows_drops_its_line_and_the_prompt_comes_back(llm, tmp_path):
    # Readline turned the terminal's interrupt key off only after it showed the prompt: a Ctrl-C typed at once was the
    # signal, which the loop cannot take to readline reading in its thread, and no prompt came back (a held one too).
    llm.script(*(Reply.text(f"answer {n}") for n in range(3)), Reply(text="word " * 3000, chunk_size=5, delay=0.05))
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path, ctty=True) as term:
        at = term.wait_for(r"default> $")
        for n in range(3):  # at the first prompt, then at each after an answer
            os.write(term.master, b"\x03")
            at = term.wait_for(r"\^C\n\(Ctrl-C again to exit\)\ndefault> $", after=at)
            at = term.answer(f"prompt {n}", rf"answer {n}\n[\s\S]*default> $", after=at)
        term.type("talk")
        at = term.wait_for(r"word word ", after=at)
        term.type("then this")  # typed during the turn, then Ctrl-C stops it: held, for a bare Enter
        term.wait_read()
        os.write(term.master, b"\x03")
        at = term.wait_for(r"Enter sends it[\s\S]*default> $", after=at)
        os.write(term.master, b"\x03")  # at the held prompt: drops it
        at = term.wait_for(r"\^C\n\(Ctrl-C again to exit\)\ndefault> $", after=at)
        os.write(term.master, b"\x03")  # twice in a row: the end
        assert term.proc.wait(timeout=30) == 0
    assert [r.body["messages"][-1]["content"] for r in llm.chat_requests] == [
        "prompt 0", "prompt 1", "prompt 2", "talk"]


def test_down_goes_back_toward_the_newest_prompt_and_ctrl_d_with_words_typed_ends_nothing(llm, tmp_path):
    # ↓ typed ^[[B; Ctrl-D after words handed them over unfinished (the terminal's line mode), not as a shell does.
    llm.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    env = {**llm.env(), "OLLIE_STATE_DIR": str(tmp_path / "state")}
    with Terminal(["--cwd", str(tmp_path)], env, tmp_path) as term:
        at = term.answer("first", r"one\n[\s\S]*default> $", after=term.wait_for(r"default> $"))
        at = term.answer("second", r"two\n[\s\S]*default> $", after=at)
        os.write(term.master, b"\x1b[A\x1b[A\x1b[B \x04again\r")  # ↑↑↓: "second"; Ctrl-D at the line's end: nothing
        term.wait_for(r"three\n[\s\S]*default> $", after=at)
        assert term.close() == 0
    assert [r.body["messages"][-1]["content"] for r in llm.chat_requests] == ["first", "second", "second again"]
