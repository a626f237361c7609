"""A big `call_tool` batch under `ask` (the default), through the daemon: one question for the batch, judged from the
steps its `call` event describes, off the loop; a batch too big to run in time refused before anything is asked."""

from __future__ import annotations

import json
import shlex
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ollie.agent.approval import TOGETHER_PAST
from ollie.agent.previews import BATCH_DIFF_BYTES, BATCH_DIFFS
from ollie.agent.toolround import OFF_LOOP_BYTES
from ollie.testing import Reply
from ollie.tools.execute.args import MAX_CALLS
from tests.lsp.cards import answer_cards
from tests.lsp.test_approval import last_tool_result
from tests.lsp.test_steps import user_tool

CALLS = 48  # more than a question previews (BATCH_DIFFS); its arguments past OFF_LOOP_BYTES by the length of `new`
# On the daemon's PYTHONPATH: each step described and each call parsed is logged with the thread that did it (the
# daemon's loop runs on its main thread). Each step of 2,000 was described twice, once on the loop, the batch parsed
# twice, once on the loop, where every session waited for it.
COUNTING = """
import os, threading
from ollie.agent import steps
from ollie.tools.execute import args, parsed

log = open(os.environ["ASKBATCH_LOG"], "a", buffering=1)

def counted(name, real):
    def wrapper(*a):
        log.write(f"{name} {'loop' if threading.current_thread() is threading.main_thread() else 'thread'}\\n")
        return real(*a)
    return wrapper

steps._script_step = counted("describe", steps._script_step)
args.parse_request = parsed.parse_request = counted("parse", args.parse_request)
"""


def edits(count: int, new: str) -> dict[str, list[dict[str, object]]]:
    return {"calls": [{"tool": "file_edit", "args": [f"f{i}.txt", "old", new]} for i in range(count)]}


async def submit(daemon: Any, text: str) -> str:
    """The turn's reply: a batch of sandboxed edits takes a while on a loaded machine."""
    return (await daemon.request("ollie/submit", {"text": text}, timeout=300))["reply"]


async def test_a_big_batch_is_one_question_judged_off_the_loop_and_always_keeps_its_meaning(start_daemon, llm,
                                                                                            tmp_path: Path):
    site, log = tmp_path / "site", tmp_path / "counts"
    site.mkdir()
    (site / "sitecustomize.py").write_text(COUNTING)
    new = "new " * 100
    assert len(json.dumps(edits(CALLS, new))) > OFF_LOOP_BYTES  # (200 short edits were, and took 3 times as long)
    llm.script(Reply.tool_calls(("call_tool", edits(CALLS, new))), Reply.text("edited"),
               Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["f0.txt", new, "again"]}]})),
               Reply.text("unasked"))
    daemon = await start_daemon(env={**llm.env(approval=""), "PYTHONPATH": str(site), "ASKBATCH_LOG": str(log)},
                                init_options={"permissionRequest": True})
    for i in range(CALLS):
        (daemon.workspace / f"f{i}.txt").write_text("old\n")
    questions = answer_cards(daemon, "allow_always")

    assert await submit(daemon, "edit them") == "edited"
    (question,) = questions  # not one for each of its 200 steps
    step = question["step"]
    call = next(e for e in daemon.events if e["role"] == "call")
    assert step["id"] == f"{call['tool']['id']}.1"  # its first step's: a client shows it on that step's card
    assert step["kind"] == "edit" and step["title"] == f"Edit f0.txt and {CALLS - 1} more steps"
    assert step["locations"] == [{"path": f"f{i}.txt"} for i in range(CALLS)]
    # What the user approves is exactly what runs: each call as its command line.
    assert step["code"].split("\n") == [shlex.join(["file_edit", f"f{i}.txt", "old", new]) for i in range(CALLS)]
    assert [o["id"] for o in question["options"]] == ["allow_once", "allow_always", "reject", "reject_with_feedback"]
    assert question["always"] == "edit steps"
    # Its first edits' previews, as many as a question shows; the rest counted.
    assert step["diffs"] == [{"path": f"f{i}.txt", "oldText": "old\n", "newText": f"{new}\n"} for i in range(BATCH_DIFFS)]
    assert step["diffsMore"] == CALLS - BATCH_DIFFS
    assert all((daemon.workspace / f"f{i}.txt").read_text() == f"{new}\n" for i in range(CALLS))
    counts = Counter(log.read_text().split("\n")[:-1])
    # Described once for its `call` event and its question, parsed once for the classifiers, the question and the
    # run: all of it in a thread.
    assert counts == {"describe thread": CALLS, "parse thread": 1}, counts

    # "Allow always" for the batch allowed edit steps, as for one edit: the next edit is not asked.
    assert await submit(daemon, "once more") == "unasked"
    assert len(questions) == 1 and (daemon.workspace / "f0.txt").read_text() == "again\n"


async def test_a_batch_question_previews_each_edit_it_can_and_counts_the_rest(shared_daemon, llm):
    # A batch of 12 edits asked the user with their command lines alone: a single edit's question shows its diff.
    huge = "old\n" + "x" * (10 << 20)  # a 10 MB file: past a preview, as for a single edit
    big = "old\n" + "y" * (BATCH_DIFF_BYTES // 3)  # old and new text: two thirds of the batch's room
    texts = {i: "old\n" for i in range(12)} | {3: huge, 8: big, 9: big, 10: big}
    llm.script(Reply.tool_calls(("call_tool", {"calls": [
        {"tool": "file_edit", "args": [f"f{i}.txt", "old", "new"]} for i in range(12)] + [
        {"tool": "file_write", "args": ["added.txt", "fresh"]}]})),
        Reply.text("asked"))
    daemon = await shared_daemon(env=llm.env(approval=""), init_options={"permissionRequest": True})
    for i, text in texts.items():
        (daemon.workspace / f"f{i}.txt").write_text(text)
    questions = answer_cards(daemon, "reject")
    assert await submit(daemon, "edit them") == "asked"
    (question,) = questions
    diffs = question["step"]["diffs"]
    # Each in the batch's order: the 10 MB file's left out, as the files after the first that passed the room.
    assert [d["path"] for d in diffs] == [f"f{i}.txt" for i in (0, 1, 2, 4, 5, 6, 7, 8)]
    assert diffs[0] == {"path": "f0.txt", "oldText": "old\n", "newText": "new\n"}
    assert diffs[-1] == {"path": "f8.txt", "oldText": big, "newText": big.replace("old", "new", 1)}
    assert question["step"]["diffsMore"] == 5  # f3, f9, f10, f11, added.txt
    assert (daemon.workspace / "f0.txt").read_text() == "old\n"


async def test_a_rejected_batch_runs_none_of_its_steps(shared_daemon, llm):
    steps = TOGETHER_PAST + 1  # (fewer are asked one by one, each with its diff)
    llm.script(Reply.tool_calls(("call_tool", edits(steps, "new"))), Reply.text("stopped"))
    daemon = await shared_daemon(env=llm.env(approval=""), init_options={"permissionRequest": True})
    for i in range(steps):
        (daemon.workspace / f"f{i}.txt").write_text("old\n")
    questions = answer_cards(daemon, "reject")
    assert await submit(daemon, "edit") == "stopped"
    assert len(questions) == 1
    assert all((daemon.workspace / f"f{i}.txt").read_text() == "old\n" for i in range(steps))
    assert last_tool_result(llm) == f"rejected: the user did not allow 'Edit f0.txt and {steps - 1} more steps'; it was not run."


async def test_a_batch_too_big_to_run_in_time_is_refused_unasked(shared_daemon, llm):
    # 2,000 edits (asked 2,000 times first): one sandboxed process each ran out of the call's 30 s after 600 to 1,000
    # on a loaded machine, and the model got a result too big to keep. Any number past the limit is refused so.
    llm.script(Reply.tool_calls(("call_tool", edits(MAX_CALLS + 1, "new"))), Reply.text("split it"))
    daemon = await shared_daemon(env=llm.env(approval=""), init_options={"permissionRequest": True})
    (daemon.workspace / "f0.txt").write_text("old\n")
    questions = answer_cards(daemon, "allow_once")
    assert await submit(daemon, "edit") == "split it"
    assert questions == [] and (daemon.workspace / "f0.txt").read_text() == "old\n"
    assert last_tool_result(llm) == (f"call_tool: calls: must have a length of at most {MAX_CALLS}, "
                                      f"got {MAX_CALLS + 1}")



async def test_a_batch_question_shows_each_call_on_one_line_and_a_bidi_override_escaped(shared_daemon, llm):
    """A new text's line break drew a line of its own in the batch's card, reading as a call the batch does not make,
    and a U+202E reordered the rest of its call's line for the editor that drew it: what the user read was not what
    runs. Each call is one line now, its controls as escapes."""
    calls = edits(TOGETHER_PAST + 1, "new")["calls"]
    calls[-1]["args"] = ["f5.txt", "old", "new\u202e txt.enif\nfile_edit f9.txt old fine"]
    llm.script(Reply.tool_calls(("call_tool", {"calls": calls})), Reply.text("stopped"))
    daemon = await shared_daemon(env=llm.env(approval=""), init_options={"permissionRequest": True})
    questions = answer_cards(daemon, "reject")
    assert await submit(daemon, "edit") == "stopped"
    lines = questions[0]["step"]["code"].split("\n")
    assert [line.split()[:2] for line in lines] == [["file_edit", f"f{i}.txt"] for i in range(len(calls))], lines
    assert lines[-1] == "file_edit f5.txt old 'new\\u202e txt.enif\\nfile_edit f9.txt old fine'"


async def test_a_batch_previews_a_files_second_edit_on_what_its_first_leaves(shared_daemon, llm):
    """Each edit of a batch was previewed on the file as it was before the batch: the second of two edits of one file
    showed the change it would make there (`log = 'off'`), not the one it makes once the first has run
    (`auth = 'off'`), and an edit whose text is found twice was shown done (it fails: the batch stops there)."""
    calls = edits(TOGETHER_PAST + 1, "new")["calls"]
    calls[:3] = [{"tool": "file_write", "args": ["app.py", "log = 'verbose'\nauth = 'on'\n"]},
                 {"tool": "file_edit", "args": ["./app.py", "'on'", "'off'"]},
                 {"tool": "file_edit", "args": ["app.py", "'", '"']}]
    llm.script(Reply.tool_calls(("call_tool", {"calls": calls})), Reply.text("done"))
    daemon = await shared_daemon(env=llm.env(approval=""), init_options={"permissionRequest": True})
    (daemon.workspace / "app.py").write_text("log = 'on'\n")
    questions = answer_cards(daemon, "allow_once")
    assert await submit(daemon, "edit") == "done"
    # One diff of the file: what the batch does to it (two of one path: VS Code's "Open diff" opened the first's).
    (diff,) = questions[0]["step"]["diffs"]
    assert diff == {"path": "app.py", "oldText": "log = 'on'\n", "newText": "log = 'verbose'\nauth = 'off'\n"}
    assert (daemon.workspace / "app.py").read_text() == diff["newText"]
    assert questions[0]["step"]["diffsMore"] == 4  # the edit found twice; f3, f4 and f5 (no such files)


async def test_a_batch_previews_no_edit_of_a_file_it_edits_first_through_a_link(shared_daemon, llm):
    """Red team round 47: round 45's batch with its first write through `alias.py`, a link to `app.py` the model made
    before. The file tools follow links (`realpath`), the preview does not (the write had none): the edit of `app.py`
    was previewed on the disk's text, `log = 'on'` -> `log = 'off'`, while it turned `auth` off."""
    calls = edits(TOGETHER_PAST + 1, "new")["calls"]
    calls[:2] = [{"tool": "file_write", "args": ["alias.py", "log = 'verbose'\nauth = 'on'\n"]},
                 {"tool": "file_edit", "args": ["app.py", "'on'", "'off'"]}]
    llm.script(Reply.tool_calls(("call_tool", {"calls": calls})), Reply.text("done"))
    daemon = await shared_daemon(env=llm.env(approval=""), init_options={"permissionRequest": True})
    (daemon.workspace / "app.py").write_text("log = 'on'\n")
    (daemon.workspace / "alias.py").symlink_to("app.py")
    questions = answer_cards(daemon, "allow_once")
    assert await submit(daemon, "edit") == "done"
    assert (daemon.workspace / "app.py").read_text() == "log = 'verbose'\nauth = 'off'\n"
    assert (questions[0]["step"]["diffs"], questions[0]["step"]["diffsMore"]) == ([], TOGETHER_PAST + 1)


@pytest.mark.parametrize("unasked", [False, True], ids=["asked", "allowed-always"])
async def test_a_batch_previews_no_edit_after_a_program_that_may_write(start_daemon, llm, unasked):
    """Red team round 47 (round 45's "Left"): a batch's user tool script (`retag app.py`, a formatter say) before its
    edit of `app.py` changes what that edit edits, and the preview was of the disk's text: `log = 'on'` -> `log =
    'off'` while the edit turned `auth` off. So too when the script is allowed always and not in the question."""
    user_tool("retag", "", 'sed -i "s/log/auth/" "$1"')
    calls = edits(TOGETHER_PAST + 2, "new")["calls"]  # a batch of questions, the script's or not
    calls[:2] = [{"tool": "retag", "args": ["app.py"]}, {"tool": "file_edit", "args": ["app.py", "'on'", "'off'"]}]
    llm.script(*[Reply.tool_calls(("call_tool", {"calls": [{"tool": "retag", "args": ["none.py"]}]})),
                 Reply.text("retagged")] * unasked, Reply.tool_calls(("call_tool", {"calls": calls})), Reply.text("done"))
    daemon = await start_daemon(env=llm.env(approval=""), init_options={"permissionRequest": True})
    (daemon.workspace / "app.py").write_text("log = 'on'\n")
    questions = answer_cards(daemon, *["allow_always"] * unasked, "allow_once")
    if unasked:
        assert await submit(daemon, "retag") == "retagged"
    assert await submit(daemon, "edit") == "done"
    assert (daemon.workspace / "app.py").read_text() == "auth = 'off'\n"
    step = questions[-1]["step"]
    assert [line.split()[0] for line in step["code"].splitlines()] == ["retag"] * (not unasked) + ["file_edit"] * 6
    assert (step["diffs"], step["diffsMore"]) == ([], TOGETHER_PAST + 1), step["diffs"]


async def test_a_calls_steps_asked_one_by_one_preview_each_edit_on_what_the_steps_before_leave(start_daemon, llm):
    """Red team round 47: round 45's fix held for a batch question only. A call of a few steps asks each before any runs,
    and each edit was previewed on the disk's text: the second of two edits of `app.py` showed `log = 'on'` -> `log =
    'off'` while it turns `auth` off, and an edit after a user's script (which rewrites the file) likewise."""
    user_tool("retag", "", 'sed -i "s/auth/mode/" "$1"')
    calls = [{"tool": "task_add", "args": ["quieter logs"]},  # ollie's own state: no preview is left out after it
             {"tool": "file_write", "args": ["app.py", "log = 'verbose'\nauth = 'on'\n"]},
             {"tool": "file_edit", "args": ["app.py", "'on'", "'off'"]},
             {"tool": "retag", "args": ["app.py"]}, {"tool": "file_edit", "args": ["app.py", "log", "LOG"]}]
    llm.script(Reply.tool_calls(("call_tool", {"calls": calls})), Reply.text("done"))
    daemon = await start_daemon(env=llm.env(approval=""), init_options={"permissionRequest": True})
    (daemon.workspace / "app.py").write_text("log = 'on'\n")
    questions = answer_cards(daemon, "allow_once")
    assert await submit(daemon, "edit") == "done"
    assert (daemon.workspace / "app.py").read_text() == "LOG = 'verbose'\nmode = 'off'\n"
    assert [q["step"].get("diff") for q in questions] == [
        {"path": "app.py", "oldText": "log = 'on'\n", "newText": "log = 'verbose'\nauth = 'on'\n"},
        {"path": "app.py", "oldText": "log = 'verbose'\nauth = 'on'\n", "newText": "log = 'verbose'\nauth = 'off'\n"},
        None, None]


async def test_a_batch_previews_a_second_edit_of_a_file_against_what_the_first_leaves(shared_daemon, llm):
    # Its second edit's old text is the first's new one: previewed against the disk, it had no preview.
    calls = [{"tool": "file_edit", "args": ["a.txt", "one", "two"]},
             {"tool": "file_edit", "args": ["a.txt", "two", "three"]},
             {"tool": "file_write", "args": ["new.txt", "x\n"]}, {"tool": "file_edit", "args": ["new.txt", "x", "y"]},
             *({"tool": "file_edit", "args": [f"f{i}.txt", "old", "new"]} for i in range(TOGETHER_PAST - 3))]
    llm.script(Reply.tool_calls(("call_tool", {"calls": calls})), Reply.text("asked"))
    daemon = await shared_daemon(env=llm.env(approval=""), init_options={"permissionRequest": True})
    for i in range(TOGETHER_PAST - 3):
        (daemon.workspace / f"f{i}.txt").write_text("old\n")
    (daemon.workspace / "a.txt").write_text("one\n")
    questions = answer_cards(daemon, "allow_once")
    assert await submit(daemon, "edit") == "asked"
    (question,) = questions
    assert question["step"]["diffs"][:2] == [  # one a file: what its edits do together
        {"path": "a.txt", "oldText": "one\n", "newText": "three\n"}, {"path": "new.txt", "oldText": None, "newText": "y\n"}]
    assert "diffsMore" not in question["step"]
    # As the executor ran them, in order.
    assert (daemon.workspace / "a.txt").read_text() == "three\n" and (daemon.workspace / "new.txt").read_text() == "y\n"
