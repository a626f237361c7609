"""Questions in the interactive terminal, on a real pty: answered only by what is typed after they are shown."""

from __future__ import annotations

import os

import pytest

from ollie.testing import Reply

from .test_approval import edit, last_tool_result
from .test_cli_pty import Terminal

QUESTION = r"ollie asks to: Edit a\.txt\nAllow\? "


def test_the_terminal_asks_and_feedback_reaches_the_model(llm, tmp_path):
    (tmp_path / "a.txt").write_text("one\n")
    llm.script(edit("a.txt", "one", "two"), Reply.text("first done"), edit("a.txt", "two", "three"),
               Reply.text("second done"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(approval=""), tmp_path) as term:
        at = term.wait_for(r"default> ")
        term.type("edit it")
        at = term.wait_for(QUESTION, after=at)
        assert "[y]es once, [a]lways (edit steps)" in term.text and "-one\n+two" in term.text
        term.type("yes")
        at = term.wait_for(r"first done", after=at)
        term.type("again")
        at = term.wait_for(QUESTION, after=at)
        term.type("f")
        at = term.wait_for(r"feedback for the model: ", after=at)
        term.type("keep it")
        term.wait_for(r"second done", after=at)
        assert term.close() == 0
    assert (tmp_path / "a.txt").read_text() == "two\n"
    assert "The user's feedback: keep it" in last_tool_result(llm)


def test_input_typed_before_a_question_never_answers_it(llm, tmp_path):
    (tmp_path / "a.txt").write_text("one\n")
    llm.script(edit("a.txt", "one", "two"), Reply.text("left alone"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(approval=""), tmp_path) as term:
        at = term.wait_for(r"default> ")
        # "y" (allow once) is typed with the prompt, long before the question exists; then half a line, "y" again.
        os.write(term.master, b"edit it\ny\ny")
        at = term.wait_for(QUESTION, after=at)
        at = term.wait_for(r"does not answer it", after=at)  # said once the terminal's unread input was flushed
        assert (tmp_path / "a.txt").read_text() == "one\n"
        # Enter now ends an empty line (the half "y" was flushed): no answer, asked again.
        term.type("")
        at = term.wait_for(r"not an answer: ; type y, a, n or f\)\nAllow\? ", after=at)
        term.type("n")
        term.wait_for(r"left alone", after=at)
        assert term.close() == 0
    assert (tmp_path / "a.txt").read_text() == "one\n"
    assert "rejected: the user did not allow 'Edit a.txt'" in last_tool_result(llm)


def test_a_question_nobody_answers_is_a_rejection_after_the_timeout(llm, tmp_path):
    (tmp_path / "a.txt").write_text("one\n")
    llm.script(edit("a.txt", "one", "two"), Reply.text("gave up"))
    with Terminal(["--cwd", str(tmp_path)], {**llm.env(approval=""), "OLLIE_QUESTION_TIMEOUT_S": "1"}, tmp_path) as term:
        at = term.wait_for(r"default> ")
        term.type("edit it")
        at = term.wait_for(QUESTION, after=at)
        term.wait_for(r"gave up", after=at)  # nobody typed anything
        assert term.close() == 0
    assert (tmp_path / "a.txt").read_text() == "one\n"
    assert "nobody answered whether 'Edit a.txt' may run within 1 s" in last_tool_result(llm)


def test_the_terminal_asks_before_an_elevated_step(llm, tmp_path):
    scratch, outside = tmp_path / "scratch", tmp_path / "outside"
    scratch.mkdir()
    outside.mkdir()
    yes, no = outside / "yes.txt", outside / "no.txt"
    step = {"code": "", "elevated": True}
    llm.script(
        Reply.tool_calls(("execute_code", {"steps": [{**step, "code": f"echo x > {yes}"}]})), Reply.text("wrote it"),
        Reply.tool_calls(("execute_code", {"steps": [{**step, "code": f"echo x > {no}"}]})), Reply.text("skipped it"),
    )
    with Terminal(["--cwd", str(tmp_path)], {**llm.env(), "TMPDIR": str(scratch)}, tmp_path) as term:
        at = term.wait_for(r"default> ")
        term.type("first")
        at = term.wait_for(r"Allow once\? \[y/N\]", after=at)
        assert f"echo x > {yes}" in term.text
        term.type("y")
        at = term.wait_for(r"wrote it", after=at)
        term.type("second")
        at = term.wait_for(r"Allow once\? \[y/N\]", after=at)
        term.type("n")
        term.wait_for(r"skipped it", after=at)
        assert term.close() == 0
    assert yes.read_text() == "x\n" and not no.exists()


def test_the_terminal_asks_before_switching_to_an_unsandboxed_agent(llm, tmp_path):
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = term.wait_for(r"default> ")
        term.type("/agent yolo")
        at = term.wait_for(r"switch to agent yolo: it runs WITHOUT a sandbox[\s\S]*Allow once\? \[y/N\]", after=at)
        term.type("n")
        at = term.wait_for(r"agent: default \(agent not switched: yolo runs without a sandbox", after=at)
        term.type("/agent yolo")
        at = term.wait_for(r"Allow once\? \[y/N\]", after=at)
        term.type("y")
        term.wait_for(r"agent: yolo \(session cleared", after=at)
        assert term.close() == 0


def test_the_terminal_asks_about_a_host_outside_the_allow_list(llm, tmp_path):
    from ollie.sandbox import landlock_abi
    from tests.netserver import Listener

    if landlock_abi() < 1:
        pytest.skip("needs Landlock")
    server = Listener()
    server.start()
    fetch = Reply.tool_calls(("execute_code", {"steps": [
        {"code": f"curl -s -w ' status %{{http_code}}' http://other.test:{server.port}/x"}]}))
    llm.script(fetch, Reply.text("refused one"), fetch, Reply.text("fetched one"))
    # `auto`: the step runs unasked; its connection to a host the policy does not list is still asked.
    env = {**llm.env(approval="auto"), "OLLIE_TEST_NET_HOSTS": "other.test=127.0.0.1"}
    term = Terminal(["--cwd", str(tmp_path)], env, tmp_path)
    question = rf"ollie asks to: connect to other\.test:{server.port} \(network; step: Run `curl -s[^\n]*\nAllow\? "
    try:
        at = term.wait_for(r"default> ")
        term.type("fetch it")
        at = term.wait_for(question, after=at)
        assert f"[a]lways (connections to other.test:{server.port} in this and later sessions), [n]o: " in term.text
        term.type("n")
        at = term.wait_for(r"refused one", after=at)
        assert "status 403" in last_tool_result(llm) and not server.received
        term.type("again")
        at = term.wait_for(question, after=at)
        term.type("y")
        term.wait_for(r"fetched one", after=at)
        assert term.close() == 0
    finally:
        term.proc.kill()
        server.sock.close()
    told = last_tool_result(llm)
    assert "hello status 200" in told and f"[network] other.test:{server.port} allowed (once)" in told
    assert server.received.startswith(b"GET /x HTTP/1.1\r\n")
