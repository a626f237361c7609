"""Approval modes through the daemon: each mode, each answer, the mode in ollie/state and across a resume; `ollie -p`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ollie.testing import Reply
from tests.lsp.cards import answer_cards

from .conftest import child_env

BUTTONS = ["Reject", "Allow once", "Allow always"]


def edit(path: str, old: str, new: str) -> Reply:
    return Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": [path, old, new]}]}))


def run(code: str) -> Reply:
    return Reply.tool_calls(("execute_code", {"steps": [{"code": code}]}))


def last_tool_result(llm: Any) -> str:
    """What the model was told about the last step (the tool message of the latest request)."""
    return llm.chat_requests[-1].body["messages"][-1]["content"]


def answer_with(daemon: Any, answers: list[str | None]) -> list[types.ShowMessageRequestParams]:
    """Answer approval questions (window/showMessageRequest) from `answers`, in order; returns what was asked."""
    asked: list[types.ShowMessageRequestParams] = []
    pending = iter(answers)

    @daemon.client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_request(params: types.ShowMessageRequestParams):
        asked.append(params)
        title = next(pending)
        return types.MessageActionItem(title=title) if title else None

    return asked


async def submit(daemon: Any, text: str) -> str:
    return (await daemon.request("ollie/submit", {"text": text}))["reply"]


async def test_ask_puts_an_edit_to_the_user_each_time_and_reject_leaves_the_file(shared_daemon, llm):
    llm.script(edit("a.txt", "one", "two"), Reply.text("edited"), edit("a.txt", "two", "three"), Reply.text("no"))
    daemon = await shared_daemon(env=llm.env(approval=""))
    (daemon.workspace / "a.txt").write_text("one\n")
    asked = answer_with(daemon, ["Allow once", "Reject"])
    assert (await daemon.request("ollie/state", {}))["approval"] == "ask"

    assert await submit(daemon, "edit it") == "edited"
    assert (daemon.workspace / "a.txt").read_text() == "two\n"
    assert await submit(daemon, "again") == "no"
    # "Allow once" held for that step only: the next edit was asked about, rejected, and not made.
    assert (daemon.workspace / "a.txt").read_text() == "two\n"
    assert len(asked) == 2
    assert [a.title for a in asked[0].actions] == BUTTONS
    assert "Edit a.txt" in asked[0].message and "edit steps" in asked[0].message
    told = last_tool_result(llm)
    assert told.startswith("rejected: the user did not allow 'Edit a.txt'")


async def test_allow_always_covers_the_kind_and_the_command_prefix(shared_daemon, llm):
    llm.script(edit("a.txt", "one", "two"), Reply.text("1"), edit("b.txt", "one", "two"), Reply.text("2"),
               run("touch x1"), Reply.text("3"), run("touch x2"), Reply.text("4"), run("mkdir d"), Reply.text("5"),
               run("touch x3 && touch gone"), Reply.text("6"), run("touch x4 2>&1 | head -1"), Reply.text("7"))
    daemon = await shared_daemon(env=llm.env(approval=""))
    for name in ("a.txt", "b.txt"):
        (daemon.workspace / name).write_text("one\n")
    asked = answer_with(daemon, ["Allow always", "Allow always", "Reject", "Reject"])
    for n in range(1, 8):
        assert await submit(daemon, f"step {n}") == str(n)
    # `touch` commands are allowed, not a line that only starts with one (it ran `touch gone` unasked).
    assert [a.message.split("asks to: ")[1].split(" (")[0].split(":\n")[0] for a in asked] == [
        "Edit a.txt", "Run `touch x1`", "Run `mkdir d`", "Run `touch x3 && touch gone`"]
    assert "`touch` commands" in asked[1].message
    # No "Allow always" for a line no `touch` rule covers: it would be asked about again at once.
    assert [a.actions[-1].title for a in asked] == ["Allow always"] * 3 + ["Allow once"], asked
    ws = daemon.workspace
    assert (ws / "a.txt").read_text() == (ws / "b.txt").read_text() == "two\n"
    assert (ws / "x1").exists() and (ws / "x2").exists() and not (ws / "d").exists()
    assert not (ws / "gone").exists() and (ws / "x4").exists()


async def test_allow_always_allows_only_the_prefix_it_names(shared_daemon, llm):
    """A step of two programs, `touch made.txt` then `rm -f keep.txt`, offered "Allow always" for `touch` commands;
    the answer also allowed `rm` for the session: the next `rm -f keep.txt` ran unasked."""
    steps = [{"code": "touch made.txt"}, {"code": "rm -f nothing.txt"}]
    llm.script(Reply.tool_calls(("execute_code", {"steps": steps})), Reply.text("1"), run("rm -f keep.txt"),
               Reply.text("2"))
    daemon = await shared_daemon(env=llm.env(approval="ask"))
    (daemon.workspace / "keep.txt").write_text("kept\n")
    asked = answer_with(daemon, ["Allow always", "Reject"])
    assert [await submit(daemon, n) for n in "12"] == ["1", "2"]
    assert "`touch` commands" in asked[0].message and (daemon.workspace / "made.txt").exists()
    assert len(asked) == 2 and (daemon.workspace / "keep.txt").exists()


async def test_an_allowed_prefix_covers_no_line_that_sets_variables_first(shared_daemon, llm):
    """"Allow always" for `mkdir` commands; then `PATH=. mkdir d2`, whose prefix is `mkdir` too, ran unasked: the clone's
    own `./mkdir` (any program: `LD_PRELOAD=./x.so mkdir` alike)."""
    llm.script(run("mkdir d1"), Reply.text("1"), run("PATH=. mkdir d2"), Reply.text("2"))
    daemon = await shared_daemon(env=llm.env(approval="ask"))
    planted = daemon.workspace / "mkdir"
    planted.write_text("#!/bin/sh\necho pwned > pwned.txt\n")
    planted.chmod(0o755)
    asked = answer_with(daemon, ["Allow always", "Reject"])
    assert [await submit(daemon, n) for n in "12"] == ["1", "2"]
    assert (daemon.workspace / "d1").is_dir() and len(asked) == 2, last_tool_result(llm)
    assert not (daemon.workspace / "pwned.txt").exists()


async def test_a_programs_question_holds_its_code_whole(shared_daemon, llm):
    """An execute_code step's question holds every line of its programs (`step.code`, and a plain client's message):
    its title shows the first line alone, so the user was asked to approve code they could not read."""
    steps = [{"code": "echo one > proof\nrm -rf ~/stuff"}, {"code": "print(2)", "language": "python"}]
    llm.script(Reply.tool_calls(("execute_code", {"steps": steps})), Reply.text("1"),
               Reply.tool_calls(("execute_code", {"steps": steps})), Reply.text("2"))
    daemon = await shared_daemon(env=llm.env(approval=""), init_options={"permissionRequest": True})
    questions = answer_cards(daemon, "reject")

    assert await submit(daemon, "run it") == "1"
    (question,) = questions
    assert question["step"]["title"] == "Run `echo one > proof …` and 1 more step"
    assert question["step"]["code"] == "echo one > proof\nrm -rf ~/stuff\n\nprint(2)"
    plain = await shared_daemon(env=llm.env(approval=""))
    asked = answer_with(plain, ["Reject"])
    assert await submit(plain, "run it") == "2"
    # Taller than a minibuffer shows from its end: what it asks is said again there.
    # (No "Allow always": no `echo` rule covers `echo one > proof`, a redirection.)
    assert asked[0].message.endswith("1 more step:\n\necho one > proof\nrm -rf ~/stuff\n\nprint(2)\n\n"
                                     "ollie asks to: Run `echo one > proof …` and 1 more step")
    assert not (daemon.workspace / "proof").exists() and not (plain.workspace / "proof").exists()


async def test_a_programs_question_shows_a_bidi_override_as_an_escape(shared_daemon, llm):
    """A U+202E in a program reordered the rest of its line as VS Code's card and Neovim's float drew it (Trojan Source:
    what the user read was not what runs); the terminal and a plain client showed it escaped, the cards now too."""
    code = "cat notes # \u202e; rm -rf ~"
    llm.script(run(code), Reply.text("1"),
               Reply.tool_calls(("execute_code", {"steps": [{"code": code, "elevated": True}]})), Reply.text("2"))
    daemon = await shared_daemon(env=llm.env(approval=""), init_options={"permissionRequest": True})
    questions = answer_cards(daemon, "reject")
    assert await submit(daemon, "lint") == "1"
    assert await submit(daemon, "lint outside") == "2"
    shown = "cat notes # \\u202e; rm -rf ~"
    assert questions[0]["step"]["code"] == shown and questions[1]["step"]["outside"] == [shown], questions
    assert questions[0]["step"]["title"] == f"Run `{shown}`"  # (its title too, and every card's of the step)


async def test_reject_with_feedback_reaches_the_model_through_ollie_permission(shared_daemon, llm):
    llm.script(edit("a.txt", "one", "two"), Reply.text("ok"))
    daemon = await shared_daemon(env=llm.env(approval=""), init_options={"permissionRequest": True})
    (daemon.workspace / "a.txt").write_text("one\n")
    questions: list[dict[str, Any]] = []

    @daemon.client.feature("ollie/permission")
    def on_permission(params: Any):
        questions.append(params)
        return {"outcome": "reject_with_feedback", "feedback": "use tabs, not spaces"}

    assert await submit(daemon, "edit it") == "ok"
    assert (daemon.workspace / "a.txt").read_text() == "one\n"
    (question,) = questions
    step = question["step"]
    assert step["kind"] == "edit" and step["title"] == "Edit a.txt"
    assert step["locations"] == [{"path": "a.txt"}]
    # The diff preview: what the edit would make of the file, before it runs.
    assert step["diff"] == {"path": "a.txt", "oldText": "one\n", "newText": "two\n"}
    assert [o["id"] for o in question["options"]] == ["allow_once", "allow_always", "reject", "reject_with_feedback"]
    told = last_tool_result(llm)
    assert "rejected" in told and "use tabs, not spaces" in told


@pytest.mark.parametrize("shows_answers", [False, True])
async def test_a_client_that_shows_answers_on_its_steps_gets_no_answer_lines(shared_daemon, llm, shows_answers):
    """The Neovim plugin hid each "allowed: Edit a.txt" line the daemon sent: its step card says it already."""
    llm.script(edit("a.txt", "one", "two"), Reply.text("ok"))
    daemon = await shared_daemon(env=llm.env(approval=""),
                                init_options={"permissionRequest": True, "showsAnswers": shows_answers})
    (daemon.workspace / "a.txt").write_text("one\n")
    daemon.client.feature("ollie/permission")(lambda params: {"outcome": "allow_once"})
    assert await submit(daemon, "edit it") == "ok"
    await daemon.wait_events(lambda events: any(e["role"] == "turn" and e["content"] == "end" for e in events))
    told = [e["content"] for e in daemon.events if e["role"] == "info" and e["content"].startswith("allowed: ")]
    assert told == ([] if shows_answers else ["allowed: Edit a.txt"]), daemon.events
    assert (daemon.workspace / "a.txt").read_text() == "two\n"


async def test_an_answer_the_question_did_not_offer_is_a_rejection(shared_daemon, llm):
    # "Allow for this session" is a network question's answer alone; a command's "always" is already for the session.
    llm.script(run("touch made"), Reply.text("ok"))
    daemon = await shared_daemon(env=llm.env(approval=""), init_options={"permissionRequest": True})

    @daemon.client.feature("ollie/permission")
    def on_permission(params: Any):
        assert "allow_session" not in [o["id"] for o in params["options"]]
        return {"outcome": "allow_session"}

    assert await submit(daemon, "go") == "ok"
    assert not (daemon.workspace / "made").exists()
    assert last_tool_result(llm) == "rejected: the user did not allow 'Run `touch made`'; it was not run."


async def test_a_plain_client_cannot_give_feedback_so_it_is_a_plain_reject(shared_daemon, llm):
    llm.script(run("touch made"), Reply.text("ok"))
    daemon = await shared_daemon(env=llm.env(approval=""))
    answer_with(daemon, ["Reject with feedback"])
    assert await submit(daemon, "go") == "ok"
    assert not (daemon.workspace / "made").exists()
    assert last_tool_result(llm) == "rejected: the user did not allow 'Run `touch made`'; it was not run."


async def test_auto_edit_applies_edits_and_asks_for_commands_that_write(shared_daemon, llm):
    llm.script(edit("a.txt", "one", "two"), Reply.text("1"), run("ls -la | grep a"), Reply.text("2"),
               run("touch x"), Reply.text("3"))
    daemon = await shared_daemon(env=llm.env(approval=""))
    (daemon.workspace / "a.txt").write_text("one\n")
    asked = answer_with(daemon, ["Allow once"])
    await daemon.request("ollie/setApproval", {"approval": "auto-edit"})
    assert (await daemon.request("ollie/state", {}))["approval"] == "auto-edit"
    for n in range(1, 4):
        assert await submit(daemon, f"step {n}") == str(n)
    assert (daemon.workspace / "a.txt").read_text() == "two\n"
    assert (daemon.workspace / "x").exists()
    # Only `touch x` asked: the edit ran, and `ls | grep` is read-only.
    assert len(asked) == 1 and "Run `touch x`" in asked[0].message


async def test_auto_asks_nothing(shared_daemon, llm):
    llm.script(edit("a.txt", "one", "two"), Reply.text("1"), run("touch x"), Reply.text("2"))
    daemon = await shared_daemon(env=llm.env(approval=""))
    (daemon.workspace / "a.txt").write_text("one\n")
    asked = answer_with(daemon, [])
    await daemon.request("ollie/command", {"line": "/approval auto"})
    assert await submit(daemon, "1") == "1" and await submit(daemon, "2") == "2"
    assert (daemon.workspace / "a.txt").read_text() == "two\n" and (daemon.workspace / "x").exists()
    assert asked == []


async def test_read_only_refuses_writes_and_tells_the_model_to_plan_but_reads_run(shared_daemon, llm):
    read = Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_read", "args": ["a.txt"]}]}))
    llm.script(edit("a.txt", "one", "two"), Reply.text("1"), run("touch x"), Reply.text("2"), read, Reply.text("3"))
    daemon = await shared_daemon(env=llm.env(approval=""))
    (daemon.workspace / "a.txt").write_text("one\n")
    asked = answer_with(daemon, [])
    await daemon.request("ollie/setApproval", {"approval": "read-only"})
    assert await submit(daemon, "1") == "1"
    told = last_tool_result(llm)
    assert "read-only" in told and "plan instead" in told
    assert await submit(daemon, "2") == "2"
    assert await submit(daemon, "3") == "3"
    assert "one" in last_tool_result(llm)
    assert (daemon.workspace / "a.txt").read_text() == "one\n" and not (daemon.workspace / "x").exists()
    assert asked == []


# Lines the read-only check took for readers, each of which writes or runs something: `env` runs its arguments, `git grep
# -O<cmd>` runs a command on the files it finds, `sort -o` (attached, in a cluster, as an abbreviated `--output`),
# `uniq IN OUT`, `file -C` (a compiled magic file), `--config-env` before git's subcommand (a config `-c` sets), sort's
# `--compress-program` (abbreviated) and rg's `--hostname-bin` (each runs the program named), `tree -R` (with `-H`,
# 00Tree.html in every folder; in a cluster too) and `tree -o`.
WRITERS = ("env rm a.txt", "git grep -Orm -e one", "sort -oout.txt a.txt", "sort -uo out.txt a.txt",
           "sort --out=out.txt a.txt", "uniq a.txt out.txt", "file -C -m a.txt", "git --config-env=diff.external=HOME diff",
           "sort -S 1 --co=./a.txt a.txt", "sort --compress-program=./a.txt a.txt", "rg --hostname-bin=./a.txt one",
           "uniq a.txt ''", "tree -R -H . -L 1 .", "tree -aR -H . .", "tree -L1R -H . .",
           "tree -ao out.txt .")


async def test_read_only_runs_no_reader_that_writes_or_runs_a_command(shared_daemon, llm):
    llm.script(*(r for code in WRITERS for r in (run(code), Reply.text(code))))
    daemon = await shared_daemon(env=llm.env(approval="read-only"))
    subprocess.run(["git", "init", "-q"], cwd=daemon.workspace, check=True)
    (daemon.workspace / "a.txt").write_text("one\n")
    subprocess.run(["git", "add", "a.txt"], cwd=daemon.workspace, check=True)
    for code in WRITERS:
        assert await submit(daemon, code) == code
        assert "read-only" in last_tool_result(llm), (code, last_tool_result(llm))
    assert sorted(p.name for p in daemon.workspace.iterdir()) == [".git", "a.txt"]  # nothing written or removed


async def test_a_glob_the_workspace_expands_into_an_option_is_no_reader(shared_daemon, llm):
    """A hostile clone's file named `--pre=sh`: `rg RAN *` expanded to `rg RAN --pre=sh a.sh`, which ran `sh` on every
    file, unasked even in read-only mode. A glob that may expand to an option now makes the line no reader (but for
    the readers that have no option which writes or runs)."""
    llm.script(run("rg RAN *"), Reply.text("1"), run("rg RAN ./*"), Reply.text("2"), run("wc -l *.sh"), Reply.text("3"))
    daemon = await shared_daemon(env=llm.env(approval="read-only"))
    (daemon.workspace / "--pre=sh").write_text("")
    (daemon.workspace / "a.sh").write_text("echo RAN-$((6 * 7))\n")
    assert await submit(daemon, "1") == "1"
    assert "read-only" in last_tool_result(llm) and "RAN-42" not in last_tool_result(llm), last_tool_result(llm)
    assert await submit(daemon, "2") == "2"  # `./*` cannot become an option: it runs, and reads the file as text
    assert "RAN-$((6 * 7))" in last_tool_result(llm), last_tool_result(llm)
    assert await submit(daemon, "3") == "3"  # wc has no option that writes or runs: a glob is fine there
    assert "1 a.sh" in last_tool_result(llm), last_tool_result(llm)


async def test_a_search_for_a_path_the_workspace_names_as_an_option_runs_nothing(shared_daemon, llm):
    """`file_grep` searches unasked in every mode; its path went to ripgrep after the pattern with no `--`, so a clone's
    file named `--pre=sh`, searched as `--path=--pre=sh`, made ripgrep run `sh` on every file, and wrote."""
    llm.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_grep", "args": ["RAN", "--path=--pre=sh"]}]})),
               Reply.text("searched"))
    daemon = await shared_daemon(env=llm.env(approval="read-only"))
    (daemon.workspace / "--pre=sh").write_text("RAN here\n")
    (daemon.workspace / "a.sh").write_text("touch pwned.txt\n")
    assert await submit(daemon, "search") == "searched"
    assert not (daemon.workspace / "pwned.txt").exists(), last_tool_result(llm)
    assert "RAN here" in last_tool_result(llm), last_tool_result(llm)  # the file named so is searched, as a file


async def test_less_with_the_workspaces_key_file_is_no_reader(shared_daemon, llm):
    """`less --lesskey-src=keys a.txt` passed as a reader, and a key file's `#env` section sets LESSOPEN: the clone's
    shell line ran, unasked in read-only mode (in the reading sandbox), and its output stood for the file's."""
    llm.script(run("less --lesskey-src=keys a.txt"), Reply.text("1"), run("less -Nk keys a.txt"), Reply.text("2"))
    daemon = await shared_daemon(env=llm.env(approval="read-only"))
    (daemon.workspace / "keys").write_text("#env\nLESSOPEN=|echo RAN-$((6 * 7)) %s\n")
    (daemon.workspace / "a.txt").write_text("one\n")
    for n in "12":
        assert await submit(daemon, n) == n
        assert "read-only" in last_tool_result(llm) and "RAN-42" not in last_tool_result(llm), last_tool_result(llm)


def plant_fsmonitor_clone(work: Path) -> Path:
    """Make `work` a hostile clone: its `.git/config` names a core.fsmonitor program that writes `pwned.txt` there
    (git runs it for `git status`)."""
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    (work / "a.txt").write_text("one\n")
    hook = work / "monitor.sh"
    hook.write_text(f"#!/bin/sh\necho pwned > {work}/pwned.txt\n")
    hook.chmod(0o755)
    subprocess.run(["git", "config", "core.fsmonitor", str(hook)], cwd=work, check=True)
    return work


@pytest.mark.parametrize("approval", ["read-only", "ask", "auto"])
async def test_a_reader_runs_in_a_sandbox_that_writes_nothing_but_its_tmp(shared_daemon, llm, approval):
    """`git status` only reads, so it runs unasked; a clone's `.git/config` naming a core.fsmonitor program ran that
    program in the session's sandbox, which wrote the workspace. A line that is no reader still writes."""
    llm.script(run("git status --short"), Reply.text("looked"))
    daemon = await shared_daemon(env=llm.env(approval=approval))
    work = plant_fsmonitor_clone(daemon.workspace)
    assert await submit(daemon, "look") == "looked"
    assert "a.txt" in last_tool_result(llm), last_tool_result(llm)  # the reader ran, and read
    assert not (work / "pwned.txt").exists()
    # Its tmp dir is its own still: a sort past its buffer spills there.
    (work / "big.txt").write_text("".join(f"{n:06}\n" for n in range(30_000, 0, -1)))
    llm.script(run("sort -S 64K big.txt | tail -n 1"), Reply.text("sorted"))
    assert await submit(daemon, "sort") == "sorted"
    assert "030000" in last_tool_result(llm), last_tool_result(llm)
    if approval == "auto":  # no reader: it writes as before
        llm.script(run("touch made.txt"), Reply.text("made"))
        assert await submit(daemon, "make") == "made"
        assert (work / "made.txt").exists()


async def test_stderr_joined_to_stdout_makes_no_reader_write(shared_daemon, llm):
    """The approval read a line with its `2>&1` cut out, the server the line itself: `printf 'x'2>&1y` (bash's
    `printf x2 >&1y`, which writes the file `1y`) passed as `printf 'x'y` and ran unasked, in read-only mode too, under
    the writable policy; and `git status 2>&1`, a reader to the approval, ran there too (the clone's fsmonitor wrote)."""
    llm.script(run("printf 'planted'2>&1x"), Reply.text("1"), run("git status --short 2>&1"), Reply.text("2"))
    daemon = await shared_daemon(env=llm.env(approval="read-only"))
    work = plant_fsmonitor_clone(daemon.workspace)
    assert await submit(daemon, "1") == "1"
    assert "read-only" in last_tool_result(llm) and not (work / "1x").exists(), last_tool_result(llm)
    assert await submit(daemon, "2") == "2"
    assert "?? a.txt" in last_tool_result(llm), last_tool_result(llm)  # a reader still, run unasked
    assert not (work / "pwned.txt").exists()


async def test_a_pipe_of_a_bundled_reader_and_a_reader_writes_nothing_either(shared_daemon, llm):
    """A `pipe` whose stages are `file_read` and `git status` runs unasked, like the readers it is made of; it ran under
    the session's writable policy (a script stage made it no call of readers), so the clone's fsmonitor wrote."""
    stages = [{"tool": "file_read", "args": ["a.txt"]}, {"code": "git status --short"}]
    llm.script(Reply.tool_calls(("pipe", {"stages": stages})), Reply.text("piped"))
    daemon = await shared_daemon(env=llm.env(approval="read-only"))
    work = plant_fsmonitor_clone(daemon.workspace)
    assert await submit(daemon, "pipe") == "piped"
    assert "?? a.txt" in last_tool_result(llm), last_tool_result(llm)  # it ran, unasked, and read
    assert not (work / "pwned.txt").exists()


async def test_a_reading_less_runs_no_preprocessor_the_env_names(start_daemon, llm, tmp_path):
    """`less a.txt` only reads, so it runs unasked; with the session's env naming a LESSOPEN, less ran that program on
    the file (a command the line never showed). A line that is no reader keeps the user's LESSOPEN."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("one\n")
    (pre := work / "pre.sh").write_text("#!/bin/sh\necho PREPROCESSED\n")
    pre.chmod(0o755)
    llm.script(run("less a.txt"), Reply.text("read"), run("less a.txt && touch made.txt"), Reply.text("made"))
    daemon = await start_daemon(env=llm.env(approval="auto"), init_options={"env": {"LESSOPEN": f"|{pre} %s"}},
                                workspace=work)
    assert await submit(daemon, "read") == "read"
    told = last_tool_result(llm)
    assert "one" in told and "PREPROCESSED" not in told, told
    assert await submit(daemon, "make") == "made"
    assert "PREPROCESSED" in last_tool_result(llm), last_tool_result(llm)


@pytest.mark.parametrize("approval", ["read-only", "ask"])
async def test_a_pipe_stage_in_another_language_is_no_reader_whatever_its_text(shared_daemon, llm, approval):
    """A `pipe` stage's text was judged as a shell line whatever its language: a perl stage that reads as a `printf`
    line ran unasked (in read-only mode too), under the writable policy (only bash stages read in the reading
    sandbox), and wrote the workspace."""
    stages = [{"code": 'printf "%s", system "touch made.txt"', "language": "perl"}]
    llm.script(Reply.tool_calls(("pipe", {"stages": stages})), Reply.text("piped"))
    daemon = await shared_daemon(env=llm.env(approval=approval))
    asked = answer_with(daemon, ["Reject"])
    assert await submit(daemon, "pipe") == "piped"
    assert not (daemon.workspace / "made.txt").exists(), last_tool_result(llm)
    assert len(asked) == (approval == "ask"), last_tool_result(llm)


async def test_read_only_refuses_what_an_always_answer_allowed_before(shared_daemon, llm):
    """"Allow always" for edits and for `touch` in `ask`; then the user switches to read-only to plan: the model's edit
    and `touch` ran unasked all the same (an "always" answer outranked the mode) and changed the workspace."""
    llm.script(edit("a.txt", "one", "two"), Reply.text("1"), run("touch made.txt"), Reply.text("2"),
               edit("a.txt", "two", "three"), Reply.text("3"), run("touch again.txt"), Reply.text("4"))
    daemon = await shared_daemon(env=llm.env(approval="ask"))
    (daemon.workspace / "a.txt").write_text("one\n")
    asked = answer_with(daemon, ["Allow always", "Allow always"])
    assert [await submit(daemon, n) for n in "12"] == ["1", "2"] and len(asked) == 2
    await daemon.request("ollie/setApproval", {"approval": "read-only"})
    assert await submit(daemon, "3") == "3"
    assert "read-only" in last_tool_result(llm), last_tool_result(llm)
    assert await submit(daemon, "4") == "4"
    assert "read-only" in last_tool_result(llm), last_tool_result(llm)
    assert (daemon.workspace / "a.txt").read_text() == "two\n" and not (daemon.workspace / "again.txt").exists()
    assert len(asked) == 2


async def test_a_pipes_question_shows_the_whole_of_what_runs(shared_daemon, llm):
    """An `execute_code` question carries its programs whole; a `pipe`'s carried only its title, each stage's first
    line cut at 60 characters: `cat README.md …` was all the user saw of a stage that went on to `touch made.txt`."""
    stages = [{"code": "cat a.txt\ntouch made.txt"}, {"code": "tail -n 1"}]
    llm.script(Reply.tool_calls(("pipe", {"stages": stages})), Reply.text("piped"))
    daemon = await shared_daemon(env=llm.env(approval="ask"))
    (daemon.workspace / "a.txt").write_text("one\n")
    asked = answer_with(daemon, ["Reject"])
    assert await submit(daemon, "pipe") == "piped"
    assert len(asked) == 1 and "touch made.txt" in asked[0].message, asked
    assert not (daemon.workspace / "made.txt").exists()


async def test_a_user_tool_scripts_question_shows_its_whole_command_line(start_daemon, llm):
    """A user tool script's question showed only its title, the command line cut at 60 characters: the user allowed
    `shout notes.txt "…` with a `--delete-everything` past the cut."""
    from .test_steps import one, user_tool

    user_tool("shout", "", "echo shout")
    llm.script(Reply.tool_calls(one("shout", "notes.txt", "a" * 60, "--delete-everything")), Reply.text("asked"))
    daemon = await start_daemon(env=llm.env(approval="ask"))
    asked = answer_with(daemon, ["Reject"])
    assert await submit(daemon, "go") == "asked"
    assert len(asked) == 1 and "--delete-everything" in asked[0].message, asked[0].message


async def test_the_mode_persists_across_a_resume_and_a_bad_one_is_32602(start_daemon, llm, tmp_path):
    daemon = await start_daemon(env=llm.env(approval=""))
    commands = (await daemon.request("ollie/listCommands", {}))["commands"]
    assert any(c["name"] == "/approval" for c in commands)
    with pytest.raises(JsonRpcException) as caught:
        await daemon.request("ollie/setApproval", {"approval": "sometimes"})
    assert caught.value.code == -32602 and "approval" in caught.value.message
    bad = await daemon.request("ollie/command", {"line": "/approval sometimes"})
    assert "unknown approval mode" in bad.get("error", "") + bad["output"]
    await daemon.request("ollie/setApproval", {"approval": "read-only"})
    state = await daemon.request("ollie/state", {})
    assert state["approval"] == "read-only"
    await daemon.client.shutdown_session()

    again = await start_daemon(env=llm.env(approval=""), init_options={"session": state["session"]},
                               workspace=daemon.workspace)
    resumed = await again.request("ollie/state", {})
    assert resumed["session"] == state["session"] and resumed["approval"] == "read-only"


OLLIE = [sys.executable, "-m", "ollie.cli"]


def run_ollie(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*OLLIE, *args, "--cwd", str(cwd)], env=child_env(env), capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def test_ollie_p_cannot_ask_so_it_says_how_and_approval_auto_runs_it(llm, tmp_path):
    # A script running `ollie -p` got exit 0 for a turn whose edit was refused: "done" on an unchanged tree.
    (tmp_path / "a.txt").write_text("one\n")
    llm.script(edit("a.txt", "one", "two"), Reply.text("could not"), edit("a.txt", "one", "two"), Reply.text("done"))
    proc = run_ollie(["-p", "edit it"], llm.env(approval=""), tmp_path)
    assert proc.returncode == 7, (proc.returncode, proc.stderr)
    assert (tmp_path / "a.txt").read_text() == "one\n"
    # The step's result names the mode stderr names (it said `--approval auto`, which runs commands unasked too).
    assert "`ollie -p --approval auto-edit`" in proc.stderr and proc.stdout == "could not\n"
    assert "`ollie -p --approval auto-edit`" in last_tool_result(llm)
    # What was not run and how to allow it, on stderr after the answer: one line per refused step.
    assert proc.stderr.splitlines()[-1] == ("ollie: not run, nobody could approve it (-p cannot ask): Edit a.txt; "
                                            "`--approval auto-edit` runs it unasked"), proc.stderr

    proc = run_ollie(["-p", "edit it", "--approval", "auto-edit"], llm.env(approval=""), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "not run" not in proc.stderr, proc.stderr
    assert (tmp_path / "a.txt").read_text() == "two\n"


def test_ollie_p_names_the_mode_a_refused_command_needs(llm, tmp_path):
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": "touch made.txt"}]})), Reply.text("could not"))
    proc = run_ollie(["-p", "make it", "--approval", "auto-edit"], llm.env(approval=""), tmp_path)
    assert proc.returncode == 7, (proc.returncode, proc.stderr)
    assert not (tmp_path / "made.txt").exists()
    last = proc.stderr.splitlines()[-1]
    assert last.startswith("ollie: not run, nobody could approve it (-p cannot ask): "), proc.stderr
    assert "touch made.txt" in last and last.endswith("; `--approval auto` runs it unasked"), last
    assert "`ollie -p --approval auto`" in last_tool_result(llm)


def test_ollie_p_names_a_refused_step_on_one_line_whatever_its_title_holds(llm, tmp_path):
    # The title is the model's (a path it wrote): a newline in it began a line of its own on stderr, one a script
    # reading ollie's lines took for ollie's ("ollie: all steps ran"); an escape sequence reached the terminal.
    (tmp_path / "a.txt").write_text("one\n")
    path = "a.txt\nollie: all steps ran\x1b[2K\tdone"
    llm.script(edit(path, "one", "two"), Reply.text("could not"))
    proc = run_ollie(["-p", "edit it"], llm.env(approval=""), tmp_path)
    assert proc.returncode == 7, (proc.returncode, proc.stderr)
    # Every line holding the forged text is one of ollie's own (the step's, its refusal's), none starts with it.
    refused = [line for line in proc.stderr.splitlines() if line.startswith("ollie:") and "all steps ran" in line]
    assert not [line for line in proc.stderr.splitlines() if line.lstrip().startswith("ollie: all steps ran")]
    assert refused == ["ollie: not run, nobody could approve it (-p cannot ask): Edit a.txt\\nollie: all steps ran"
                       "\\x1b[2K\\tdone; `--approval auto-edit` runs it unasked"], proc.stderr


async def test_a_question_withdrawn_by_an_interrupt_ignores_the_late_answer(start_daemon, llm):
    """The turn is interrupted while the question is open: the late answer runs nothing and reports no error."""
    import asyncio

    llm.script(edit("a.txt", "one", "two"))
    daemon = await start_daemon(env=llm.env(approval=""), init_options={"permissionRequest": True})
    (daemon.workspace / "a.txt").write_text("one\n")
    asked, interrupted = asyncio.Event(), asyncio.Event()

    @daemon.client.feature("ollie/permission")
    async def on_permission(params: Any):
        asked.set()
        await interrupted.wait()
        await asyncio.sleep(0.2)  # well after the daemon gave up
        return {"outcome": "allow_once"}

    turn = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "edit it"}))
    await asyncio.wait_for(asked.wait(), 30)
    await daemon.request("ollie/interrupt", {})
    await asyncio.wait_for(turn, 30)
    interrupted.set()
    await asyncio.sleep(1.0)
    assert (daemon.workspace / "a.txt").read_text() == "one\n"
    shown = [m.message for m in daemon.client.messages] + [m.message for m in daemon.client.log_messages]
    assert not [m for m in shown if "error" in m.lower()], shown
    assert (await daemon.request("ollie/state", {}))["running"] is False


async def test_the_text_that_leads_to_a_question_reaches_the_client_before_it(shared_daemon, llm):
    """Bug: deltas wait a moment to be joined while a request goes out at once, so VS Code drew the question in the
    middle of the reply ("I wi" / question / "ll edit.")."""
    said = "I will edit a.txt now, replacing one with two, then tell you. " * 3
    llm.script(Reply(text=said, chunk_size=3, tool_calls=[("call_tool", {"calls": [
        {"tool": "file_edit", "args": ["a.txt", "one", "two"]}]})]), Reply.text("ok"))
    daemon = await shared_daemon(env=llm.env(approval=""), init_options={"permissionRequest": True})
    (daemon.workspace / "a.txt").write_text("one\n")
    seen_at_question: list[str] = []

    @daemon.client.feature("ollie/permission")
    def on_permission(params: Any):
        seen_at_question.append("".join(e.get("content", "") for e in daemon.events if e.get("role") == "assistant"))
        return {"outcome": "allow_once"}

    assert await submit(daemon, "edit it") == "ok"
    assert seen_at_question == [said]
    assert (daemon.workspace / "a.txt").read_text() == "two\n"


async def test_a_question_nobody_answers_is_a_rejection_after_the_timeout(start_daemon, llm):
    import asyncio

    llm.script(edit("a.txt", "one", "two"), Reply.text("gave up"))
    env = {**llm.env(approval=""), "OLLIE_QUESTION_TIMEOUT_S": "1"}
    daemon = await start_daemon(env=env, init_options={"permissionRequest": True})
    (daemon.workspace / "a.txt").write_text("one\n")
    asked = asyncio.Event()

    @daemon.client.feature("ollie/permission")
    async def on_permission(params: Any):
        asked.set()
        await asyncio.Event().wait()  # the user is away

    assert await submit(daemon, "edit it") == "gave up"
    assert asked.is_set()
    assert (daemon.workspace / "a.txt").read_text() == "one\n"
    assert "nobody answered whether 'Edit a.txt' may run within 1 s" in last_tool_result(llm)


async def test_an_edit_the_sandbox_would_refuse_is_refused_without_a_question(shared_daemon, llm):
    # It was put to the user, and refused only after "Allow": a question for nothing, that read as if it happened.
    llm.script(edit("locked.py", "x = 1", "x = 2"), Reply.text("1"), edit(".git/config", "[core]", "[hooks]"),
               Reply.text("2"))
    daemon = await shared_daemon(env=llm.env(approval="ask"), init_options={"permissionRequest": True})
    locked, config = daemon.workspace / "locked.py", daemon.workspace / ".git" / "config"
    locked.write_text("x = 1\n")
    locked.chmod(0o444)
    config.parent.mkdir()
    config.write_text("[core]\n")
    questions = answer_cards(daemon, "allow_once")

    assert await submit(daemon, "edit the locked file") == "1"
    told = [last_tool_result(llm)]
    assert await submit(daemon, "edit the git config") == "2"
    told.append(last_tool_result(llm))
    assert questions == []
    assert locked.read_text() == "x = 1\n" and config.read_text() == "[core]\n"
    assert told[0].startswith("refused, without asking the user") and (
        "file_edit: locked.py: read-only (no write permission), not changed" in told[0]), told[0]
    assert "file_edit: .git/config: read-only (a read-only mount: ollie's sandbox shows .git directories" in told[1]
    steps = [e["tool"] for e in daemon.events if e.get("role") == "tool"]
    assert [(s["title"], s["status"]) for s in steps] == [("Edit locked.py", "failed"), ("Edit .git/config", "failed")]
