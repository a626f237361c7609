"""Questions in the interactive terminal, on a real pty: answered only by what is typed after they are shown."""

from __future__ import annotations

import os
import re
import signal
import threading

import pytest

from ollie.testing import Reply
from tests.procs import wait_until

from .test_approval import edit, last_tool_result, run
from .test_cli_pty import Terminal

QUESTION = r"ollie asks to: Edit a\.txt\nAllow\? "


def editing(llm, tmp_path, *then: Reply, env: dict[str, str] | None = None) -> Terminal:
    """The terminal (approval: ask) in `tmp_path`, whose model edits a.txt from "one" to "two", then replies `then`."""
    (tmp_path / "a.txt").write_text("one\n")
    llm.script(edit("a.txt", "one", "two"), *then)
    return Terminal(["--cwd", str(tmp_path)], {**llm.env(approval=""), **(env or {})}, tmp_path)


def asked(term: Terminal, text: str, question: str) -> int:
    """Type `text` at the terminal's first prompt; where `question` then shows."""
    return term.answer(text, question, after=term.wait_for(r"default> "))


def test_the_terminal_asks_and_feedback_reaches_the_model(llm, tmp_path):
    with editing(llm, tmp_path, Reply.text("first done"), edit("a.txt", "two", "three"),
                 Reply.text("second done")) as term:
        at = asked(term, "edit it", QUESTION)
        assert "[y]es once, [a]lways (edit steps)" in term.text and "-one\n+two" in term.text
        at = term.answer("yes", r"first done", after=at)
        at = term.answer("again", QUESTION, after=at)
        at = term.answer("f", r"feedback for the model: ", after=at)
        term.answer("keep it", r"second done", after=at)
        assert term.close() == 0
    # The answers typed during the turn are echoed where they are typed (the turn's input is not: it is no answer).
    assert re.search(r"\[n\]o, \[f\]eedback: yes\n", term.text) and "feedback for the model: keep it\n" in term.text
    assert (tmp_path / "a.txt").read_text() == "two\n"
    assert "The user's feedback: keep it" in last_tool_result(llm)


def test_a_no_with_words_after_it_is_a_rejection_with_that_feedback(llm, tmp_path):
    # `n, keep it without a comment` was refused as no answer: feedback went only after pressing `f` first.
    with editing(llm, tmp_path, Reply.text("left it"), edit("a.txt", "one", "three"), Reply.text("done")) as term:
        at = asked(term, "edit it", QUESTION)
        at = term.answer("n, keep it without a comment", r"left it", after=at)
        assert "not an answer" not in term.text[at:], term.text
        assert "The user's feedback: keep it without a comment" in last_tool_result(llm)
        at = term.answer("again", QUESTION, after=at)
        # A yes takes no words: the line says what does.
        at = term.answer("y but add a comment", r"\(not an answer: [^\n]*, or n with words for the\smodel\)", after=at)
        term.answer("y", r"done", after=at)
        assert term.close() == 0
    assert (tmp_path / "a.txt").read_text() == "three\n"


def test_a_no_to_one_edit_of_a_batch_says_the_edits_allowed_before_it_did_not_run_either(llm, tmp_path):
    # A call's steps run together or not at all: after "allowed: Edit a.txt" and a no to the next edit, neither ran, but
    # the result said only that the rejected one did not (the model took the first edit for made, the user too).
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "b.txt").write_text("one\n")
    edits = [{"tool": "file_edit", "args": [name, "one", "two"]} for name in ("a.txt", "b.txt")]
    llm.script(Reply.tool_calls(("call_tool", {"calls": edits})), Reply.text("left both"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(approval=""), tmp_path) as term:
        at = asked(term, "edit both", QUESTION)
        at = term.answer("y", r"allowed: Edit a\.txt\n[\s\S]*ollie asks to: Edit b\.txt\nAllow\? ", after=at)
        term.answer("n, leave b", r"left both", after=at)
        assert "None of this call's 2 steps ran: a call runs whole or not at all." in term.text[at:], term.text[at:]
        assert term.close() == 0
    assert last_tool_result(llm) == ("rejected: the user did not allow 'Edit b.txt'; it was not run.\nNone of this "
                                     "call's 2 steps ran: a call runs whole or not at all.\nThe user's feedback: leave b")
    assert (tmp_path / "a.txt").read_text() == (tmp_path / "b.txt").read_text() == "one\n"


def test_a_question_breaks_between_words_on_a_narrow_terminal(llm, tmp_path):
    # A split pane of 50 columns broke the question where a row was full: `[n]o, [f` / `]eedback: `, `n wit` / `h words`.
    (tmp_path / "a.txt").write_text("one\n")
    code = "touch made && echo these words are the program, kept whole on one line"
    llm.script(edit("a.txt", "one", "two"), Reply.text("done"), run(code), Reply.text("ran"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(approval=""), tmp_path, size=(24, 50)) as term:
        at = asked(term, "edit it", r"ollie asks to: Edit a\.txt\n")
        asking = term.wait_for(r"\[f\]eedback: ", after=at)
        end = term.answer("maybe", r"for the model\)\n[\s\S]*\[f\]eedback: ", after=asking)
        said = term.text[at:end]
        assert max(map(len, said.splitlines())) <= 50, said
        assert " ".join(said.split()) == ("Allow? [y]es once, [a]lways (edit steps), [n]o, [f]eedback: maybe (not an answer: "
                                          "maybe; type y, a, n or f, or n with words for the model) Allow? [y]es once, "
                                          "[a]lways (edit steps), [n]o, [f]eedback:"), said
        at = term.answer("y", r"done\n[\s\S]*default> ", after=end)
        # A command's title too (`echo thes` / `e words`); the program itself stays whole, on its line.
        end = term.answer("run it", r"\[f\]eedback: ", after=at)
        said = term.text[at:end]
        assert f"\n    {code}\n" in said and max(len(line) for line in said.splitlines() if code not in line) <= 50, said
        assert " ".join(said.split()).startswith(f"run it ollie asks to: Run `{code[:59]}…`"), said  # (a title is cut)
        term.answer("y", r"ran", after=end)
        assert term.close() == 0
    assert (tmp_path / "a.txt").read_text() == "two\n"


def test_input_typed_before_a_question_never_answers_it(llm, tmp_path):
    (tmp_path / "a.txt").write_text("one\n")
    asking = edit("a.txt", "one", "two")
    asking.hold = typed = threading.Event()  # the model answers once "y" was typed
    llm.script(asking, Reply.text("left alone"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(approval=""), tmp_path) as term:
        at = term.wait_for(r"default> ")
        # "y" (allow once) is typed after the prompt, before the question exists; then half a line, "y" again.
        term.type("edit it")
        wait_until(lambda: llm.chat_requests, "the prompt never reached the model")
        os.write(term.master, b"y\ny")
        typed.set()
        at = term.wait_for(QUESTION, after=at)
        at = term.wait_for(r"does not answer it", after=at)  # said once the terminal's unread input was flushed
        assert (tmp_path / "a.txt").read_text() == "one\n"
        # Enter now ends an empty line (the half "y" was flushed): no answer, asked again.
        at = term.answer("", r"not an answer: ; type y, a, n or f, or n with words for the model\)\nAllow\? ", after=at)
        term.answer("n", r"left alone", after=at)
        assert term.close() == 0
    assert (tmp_path / "a.txt").read_text() == "one\n"
    assert "rejected: the user did not allow 'Edit a.txt'" in last_tool_result(llm)


def test_a_question_nobody_answers_is_a_rejection_after_the_timeout(llm, tmp_path):
    with editing(llm, tmp_path, Reply.text("gave up"), env={"OLLIE_QUESTION_TIMEOUT_S": "1"}) as term:
        at = asked(term, "edit it", QUESTION)
        term.wait_for(r"gave up", after=at)  # nobody typed anything
        assert term.close() == 0
    assert (tmp_path / "a.txt").read_text() == "one\n"
    assert "nobody answered whether 'Edit a.txt' may run within 1 s" in last_tool_result(llm)


def test_the_terminal_asks_before_an_elevated_step(llm, tmp_path):
    # Under `auto` the elevation alone is asked as its step's question, as under `ask` (it was `ollie asks to run this
    # outside the sandbox: ... Allow once? [y/N]`); a rejection's feedback reaches the model.
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
        at = asked(term, "first", r"Allow\? \[y\]es once, \[n\]o, \[f\]eedback: ")
        # The question shows the code; an info line said it once more above it.
        assert f"outside the sandbox\n  it runs this outside the sandbox:\n    echo x > {yes}\n" in term.text
        assert "asking to run" not in term.text
        at = term.answer("y", r"wrote it", after=at)
        at = term.answer("second", r"\[f\]eedback: ", after=at)
        at = term.answer("f", r"feedback for the model: ", after=at)
        term.answer("not outside, please", r"skipped it", after=at)
        assert term.close() == 0
    assert yes.read_text() == "x\n" and not no.exists()
    assert "The user's feedback: not outside, please" in last_tool_result(llm)


def test_the_terminal_asks_before_switching_to_an_unsandboxed_agent(llm, tmp_path):
    with Terminal(["--cwd", str(tmp_path)], llm.env(), tmp_path) as term:
        at = asked(term, "/agent yolo", r"switch to agent yolo: it runs WITHOUT a sandbox\n  it runs this outside the "
                   r"sandbox:\n    everything agent yolo runs[\s\S]*Allow\? \[y\]es once, \[n\]o: ")
        at = term.answer("n", r"agent: default \(agent not switched: yolo runs without a sandbox", after=at)
        at = term.answer("/agent yolo", r"Allow\? \[y\]es once, \[n\]o: ", after=at)
        term.answer("y", r"agent: yolo \(session cleared", after=at)
        assert term.close() == 0


def test_the_terminal_asks_about_a_host_outside_the_allow_list(llm, tmp_path):
    from ollie.sandbox.rules import landlock_abi
    from ollie.testing import nethosts
    from tests.netserver import Listener

    if landlock_abi() < 1:
        pytest.skip("needs Landlock")
    server = Listener()
    server.start()
    fetch = Reply.tool_calls(("execute_code", {"steps": [
        {"code": f"curl -s -w ' status %{{http_code}}' http://other.test:{server.port}/x"}]}))
    llm.script(fetch, Reply.text("refused one"), fetch, Reply.text("fetched one"), fetch, Reply.text("fetched two"),
               fetch, Reply.text("fetched three"))
    # `auto`: the step runs unasked; its connection to a host the policy does not list is still asked.
    env = {**llm.env(approval="auto"), **nethosts.env({"other.test": "127.0.0.1"})}
    term = Terminal(["--cwd", str(tmp_path)], env, tmp_path)
    question = rf"ollie asks to: connect to other\.test:{server.port} \(network; step: Run `curl -s[\s\S]*?\nAllow\? "
    try:
        at = asked(term, "fetch it", question)
        assert (f"Allow? [y]es once, for this [s]ession, [a]lways (connections to other.test:{server.port} in this "
                "and later sessions), [n]o, [f]eedback:") in " ".join(term.text.split())
        at = term.answer("n, it must work offline", r"refused one", after=at)
        assert "status 403" in last_tool_result(llm) and not server.received
        # The words with the no reach the model (they were dropped: a network question took no feedback).
        assert (f"[network] other.test:{server.port} denied (you said no), sent 0 B, received 0 B; the user's feedback: "
                "it must work offline\n") in last_tool_result(llm), last_tool_result(llm)
        # What the step read says why in words, not the wire's "(deny)", and no network.allow for her "no".
        refused = f"ollie: the network connection to other.test:{server.port} was denied: the user said no\n"
        assert refused in last_tool_result(llm) and "network.allow" not in last_tool_result(llm), last_tool_result(llm)
        at = term.answer("again", question, after=at)
        at = term.answer("y", r"fetched one", after=at)
        told = last_tool_result(llm)
        assert "hello status 200" in told and f"[network] other.test:{server.port} allowed once" in told
        assert server.received.startswith(b"GET /x HTTP/1.1\r\n")
        at = term.answer("again", question, after=at)
        at = term.answer("s", r"fetched two", after=at)
        # "For this session": the session's later steps go unasked.
        term.answer("once more", r"fetched three", after=at)
        assert term.text.count("Allow? ") == 3
        assert term.close() == 0
    finally:
        term.proc.kill()
        server.sock.close()
    told = last_tool_result(llm)
    assert "hello status 200" in told and f"[network] other.test:{server.port} allowed for this session" in told
    assert server.received.count(b"GET /x ") == 3


def test_a_withdrawn_question_says_so_and_its_late_answer_is_no_prompt(llm, tmp_path):
    """A question that goes away unanswered (here Ctrl-C stops its turn; a step that ends while its connection's
    question waits does the same) ends its line saying so, and the "n" the user then types is not sent to the model."""
    with editing(llm, tmp_path, Reply.text("the next turn")) as term:
        at = asked(term, "edit it", QUESTION)
        term.proc.send_signal(signal.SIGINT)  # what the terminal sends ollie's process group on Ctrl-C
        at = term.wait_for(r"\n\(withdrawn: nothing waits for this answer any more\)\n", after=at)
        at = term.wait_for(r"default> ", after=at)
        at = term.answer("n", r"\(not sent: 'n' came after its question was withdrawn; type it again", after=at)
        term.answer("go on", r"the next turn", after=at)
        assert term.close() == 0
    assert (tmp_path / "a.txt").read_text() == "one\n"
    prompts = [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"]
    assert "go on" in str(prompts) and not any(p == "n" or p == [{"type": "text", "text": "n"}] for p in prompts), prompts


def test_under_ask_the_terminal_asks_an_elevated_step_once_showing_its_code(llm, tmp_path):
    # It asked twice: `Allow? [y]es once, [a]lways ...` for the step, then `Allow once? [y/N]` for its elevation.
    scratch, outside = tmp_path / "scratch", tmp_path / "outside"
    scratch.mkdir()
    outside.mkdir()
    target = outside / "yes.txt"
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": f"echo x > {target}", "elevated": True}]})),
               Reply.text("wrote it"))
    with Terminal(["--cwd", str(tmp_path)], {**llm.env(approval="ask"), "TMPDIR": str(scratch)}, tmp_path) as term:
        at = term.wait_for(r"default> ")
        at = term.answer("go", r"Allow\? \[y\]es once, \[n\]o, \[f\]eedback: ", after=at)
        assert f"outside the sandbox\n  it runs this outside the sandbox:\n    echo x > {target}\n" in term.text
        term.answer("y", r"wrote it", after=at)
        assert term.close() == 0
    assert target.read_text() == "x\n" and term.text.count("Allow? ") == 1


def test_the_terminal_shows_a_steps_whole_program_when_it_asks(llm, tmp_path):
    """It showed the step's title only, `Run `cat a.txt …``: the user allowed a program whose next line, `touch
    made.txt`, they never saw (the editors show the question's code)."""
    (tmp_path / "a.txt").write_text("one\n")
    llm.script(run("cat a.txt\ntouch made.txt"), Reply.text("left alone"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(approval="ask"), tmp_path) as term:
        at = asked(term, "go", r"Allow\? \[y\]es once")
        assert "ollie asks to: Run `cat a.txt …`\n    cat a.txt\n    touch made.txt\n" in term.text, term.text
        term.answer("n", r"left alone", after=at)
        assert term.close() == 0
    assert not (tmp_path / "made.txt").exists()


def test_the_terminal_shows_each_diff_of_a_batch_it_asks_about_at_once(llm, tmp_path):
    """A batch of 6 edits was asked with their command lines alone: a single edit's question shows its diff."""
    names = [f"f{i}.txt" for i in range(6)]
    for name in names:
        (tmp_path / name).write_text(f"{name} one\n")
    llm.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": [n, "one", "two"]}
                                                         for n in names]})), Reply.text("left alone"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(approval="ask"), tmp_path) as term:
        at = asked(term, "go", r"Allow\? \[y\]es once")
        for name in names:
            assert f"+++ b/{name}\n@@ -1 +1 @@\n-{name} one\n+{name} two\n" in term.text, term.text
        assert "ollie asks to: Edit f0.txt and 5 more steps\n    file_edit f0.txt one two\n" in term.text, term.text
        term.answer("n", r"left alone", after=at)
        assert term.close() == 0
    assert (tmp_path / "f5.txt").read_text() == "f5.txt one\n"


def test_a_workspace_servers_question_shows_under_what_came_before_it(llm, tmp_path):
    """The terminal prints what the session said before a question (the warnings that the workspace's MCP servers wait
    for approval, the answer to the question before) above it, never after its `Allow?` (they landed there, where the
    user types her answer)."""
    import json

    from .test_mcp import test_server

    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"planted": test_server(), "other": test_server()}}))
    llm.script(Reply.tool_calls(("mcp__planted__create_issue", {"title": "hi"})), Reply.text("filed it"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(approval=""), tmp_path) as term:
        at = asked(term, "file an issue", r"ollie asks to: start MCP server 'planted' of\s[\s\S]*?\nAllow\? [^:]*\[n\]o: ")
        assert term.text.count("warning: MCP server 'planted'") == 1, term.text
        assert term.text.index("warning: MCP server 'other'") < term.text.index("ollie asks to: start"), term.text
        at = term.answer("y", r"ollie asks to: start MCP server 'other'\s[\s\S]*?\nAllow\? [^:]*\[n\]o: ", after=at)
        # The answer's line came before the next question, not after that question's prompt.
        assert re.search(r"\nallowed MCP server 'planted' [\s\S]*?for\s+this\s+session\nollie asks to: start MCP server 'other'",
                         term.text), term.text
        at = term.answer("n", r"ollie asks to: planted: create_issue", after=at)
        at = term.answer("y", r"filed it", after=at)
        # Allowed, it waits no more: /mcp lists it ready without its warning (the one refused keeps its own).
        term.answer("/mcp", r"other \(stdio\): needs approval", after=at)
        assert "warning: MCP server 'planted'" not in term.text[at:], term.text[at:]
        assert "warning: MCP server 'other'" in term.text[at:], term.text[at:]
        assert term.close() == 0


def test_an_edits_question_names_a_file_whose_name_breaks_the_line_escaped_in_its_diff(llm, tmp_path):
    """The diff's header lines printed the model's file name as it is: `x.txt<LF>--- a/README.md<LF>+++ b/README.md`
    stood as a diff of README.md under the question (its title escaped the name already)."""
    name = "x.txt\n--- a/README.md\n+++ b/README.md"
    llm.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_write", "args": [name, "hello\n"]}]})),
               Reply.text("left alone"))
    with Terminal(["--cwd", str(tmp_path)], llm.env(approval="ask"), tmp_path) as term:
        at = asked(term, "go", r"Allow\? \[y\]es once")
        assert "+++ b/x.txt\\n--- a/README.md\\n+++ b/README.md\n@@ -0,0 +1 @@\n+hello\n" in term.text, term.text
        assert "+++ b/README.md" not in term.text.splitlines(), term.text
        term.answer("n", r"left alone", after=at)
        assert term.close() == 0
