"""Review through a real Core: a turn's changes, undo of one hunk, stale undo refused, rewind and its undo."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from agentkit import sent_messages

from ollie.agent.core import Core
from ollie.agent.fork import cut_at_turn
from ollie.agent.review import ReviewError
from ollie.agent.taskstate import PlanEntry, next_unchecked, read_plan
from ollie.agent.undo import undo
from ollie.backend.types import Message, ToolCall
from ollie.sessions import logparse, persist
from ollie.sessions.session import TaskState
from ollie.testing import Reply, ScriptedLLMServer
from ollie.workspace.errors import StaleChange

ORIGINAL_A = "".join(f"line {i}\n" for i in range(1, 21))
ORIGINAL_B = "alpha\nbeta\ngamma\n"


# One Python script edits both files: a.txt in two places (two hunks), b.txt in one.
EDIT_SCRIPT = """
from pathlib import Path
a = Path("a.txt")
a.write_text(a.read_text().replace("line 2\\n", "LINE TWO\\n").replace("line 18\\n", "LINE EIGHTEEN\\n"))
b = Path("b.txt")
b.write_text(b.read_text().replace("beta", "BETA"))
"""


def _edit_two_files() -> list[Reply]:
    """A turn whose Python script edits a.txt (two hunks) and b.txt (one)."""
    return [
        Reply.tool_calls(("execute_code", {"steps": [{"code": EDIT_SCRIPT, "language": "python3"}]})),
        Reply.text("edited"),
    ]


async def _auto(make_core: Callable[..., Awaitable[Core]], srv: object, **options: object) -> Core:
    """A Core whose edits and commands run without asking (no one to ask here)."""
    core = await make_core(srv, **options)
    core.set_approval("auto")
    return core


def _seed(workdir: Path) -> None:
    (workdir / "a.txt").write_text(ORIGINAL_A)
    (workdir / "b.txt").write_text(ORIGINAL_B)


async def test_the_turns_changes_and_undo_of_one_hunk_keeps_the_others(scripted_llm, make_core, workdir):
    _seed(workdir)
    srv = scripted_llm("openai")
    srv.script(*_edit_two_files(), Reply.text("ok"))
    core = await _auto(make_core, srv)
    assert (await core.submit("edit them")).reply == "edited"
    turn = await core.review.changes()
    assert turn.turn == 1
    by_path = {c.path: c for c in turn.changes}
    assert sorted(by_path) == ["a.txt", "b.txt"]
    assert len(by_path["a.txt"].hunks) == 2 and by_path["b.txt"].new_text == "alpha\nBETA\ngamma\n"

    undone = await undo(core.review, "a.txt", 0)
    assert not undone.in_editor
    text = (workdir / "a.txt").read_text()
    assert "line 2\n" in text and "LINE EIGHTEEN\n" in text  # the first hunk went, the second stayed
    # The turn's changes are now net of the undo; the other hunk undoes too (not stale: the record follows).
    left = {c.path: c for c in (await core.review.changes()).changes}
    assert len(left["a.txt"].hunks) == 1
    await undo(core.review, "a.txt", 0)
    assert (workdir / "a.txt").read_text() == ORIGINAL_A
    assert [c.path for c in (await core.review.changes()).changes] == ["b.txt"]

    # The model hears of the undone hunks with the next prompt, even from a Core started after a restart.
    session_id = core.session_id
    await core.close()
    again = await _auto(make_core, srv, session_id=session_id)
    await again.submit("next")
    prompt = sent_messages(srv, 2)[-1]["content"]
    assert "the user undid these changes of yours (turn 1): a.txt lines 2-2" in prompt
    assert prompt.count("the user undid") == 2 and again.session.review_notes == []  # two undos, told once


async def test_undo_is_refused_when_the_user_edited_the_file_since(scripted_llm, make_core, workdir):
    _seed(workdir)
    srv = scripted_llm("openai")
    srv.script(*_edit_two_files())
    core = await _auto(make_core, srv)
    await core.submit("edit them")
    (workdir / "b.txt").write_text("alpha\nBETA mine\ngamma\n")  # the line the turn changed
    with pytest.raises(StaleChange, match="b.txt: the file was edited since"):
        await undo(core.review, "b.txt", None)
    assert (workdir / "b.txt").read_text() == "alpha\nBETA mine\ngamma\n"  # the user's edit is kept
    with pytest.raises(ReviewError, match="no turn 5"):
        await core.review.changes(5)


async def _two_turns(scripted_llm, make_core, workdir: Path) -> tuple[Core, ScriptedLLMServer]:
    """A core that said hello, then edited both files (turns 1 and 2); and its scripted server."""
    _seed(workdir)
    srv = scripted_llm("openai")
    srv.script(Reply.text("hello"), *_edit_two_files())
    core = await _auto(make_core, srv)
    await core.submit("say hello")
    await core.submit("edit them")
    return core, srv


async def test_rewind_restores_files_and_cuts_the_conversation_and_is_undoable(scripted_llm, make_core, workdir,
                                                                               tmp_path):
    core, srv = await _two_turns(scripted_llm, make_core, workdir)
    assert len(core.session.messages) == 2 + 4
    edited = (workdir / "a.txt").read_text()

    done = await core.rewind()
    assert done.turn == 2 and sorted(done.files) == ["a.txt", "b.txt"]
    assert (workdir / "a.txt").read_text() == ORIGINAL_A and (workdir / "b.txt").read_text() == ORIGINAL_B
    assert [m.content for m in core.session.messages] == ["say hello", "hello"]
    session_id = core.session_id
    await core.close()

    # A fresh Core (a restarted process) sees the cut conversation and can undo the rewind.
    again = await _auto(make_core, srv, session_id=session_id)
    assert [m.content for m in again.session.messages] == ["say hello", "hello"]
    back = await again.rewind_undo()
    assert back.turn == 2 and len(again.session.messages) == 6
    assert (workdir / "a.txt").read_text() == edited
    with pytest.raises(ReviewError, match="no rewind to undo"):
        await again.rewind_undo()
    # And rewind to before turn 1 across the restart, by number.
    await again.rewind(1)
    assert again.session.messages == [] and (workdir / "a.txt").read_text() == ORIGINAL_A


async def test_a_rewind_never_tells_the_model_of_undos_in_the_turns_it_cut(scripted_llm, make_core, workdir):
    """She undoes a hunk of turn 2, then rewinds turn 2 and asks again: the new turn 2's prompt told the model "the user
    undid these changes of yours (turn 2)", of a turn it never saw (the cut one), as if of the one it is in."""
    core, srv = await _two_turns(scripted_llm, make_core, workdir)
    await undo(core.review, "a.txt", 0)
    await core.rewind(2)
    srv.script(Reply.text("ok"))
    await core.submit("edit them again")
    assert "the user undid" not in sent_messages(srv, 3)[-1]["content"]


async def test_rewind_and_its_undo_encode_and_read_the_history_off_the_loop(scripted_llm, make_core, workdir,
                                                                             monkeypatch):
    # A rewind encoded the whole history twice on the loop every session shares (its backup, the log's snapshot),
    # its undo read it back there: seconds frozen for a 100,000-message session.
    core, _ = await _two_turns(scripted_llm, make_core, workdir)
    loop_thread = threading.current_thread()
    on_loop: list[str] = []
    to_dict, checked = Message.to_dict, logparse.checked_messages

    def encoded(message: Message) -> dict:
        if threading.current_thread() is loop_thread:
            on_loop.append(f"encoded {message.content!r}")
        return to_dict(message)

    def read(data: object) -> list[Message]:
        if threading.current_thread() is loop_thread:
            on_loop.append("read the backup's messages")
        return checked(data)

    monkeypatch.setattr(Message, "to_dict", encoded)
    monkeypatch.setattr(logparse, "checked_messages", read)  # the backup's reader
    await core.rewind()
    back = await core.rewind_undo()
    assert back.turn == 2 and len(core.session.messages) == 6
    assert on_loop == []
    monkeypatch.undo()
    assert [m.to_dict() for m in persist.load(core.sessions_dir, core.session_id).messages] == \
        [m.to_dict() for m in core.session.messages]


@pytest.mark.parametrize("damage", [
    lambda b: b["messages"][0].update(content=5),
    lambda b: b["messages"][1].update(role="wizard"),
    lambda b: b["messages"][2].update(tool_calls=[{"id": 7, "name": "x"}]),
    lambda b: b["messages"].append("not a message"),
    lambda b: b.update(turn_starts=["x"]),
    lambda b: b.update(turn="two"),
    lambda b: b.pop("messages"),
    lambda b: b.update(undo_checkpoint="--output=injected"),  # an option git would take: it wrote the file
    lambda b: b.update(plan=5),
    lambda b: b.update(plans_before={"1": 5}),
    # The cut turns' buffer edits and the buffers the rewind reverted, which its undo puts back in them.
    lambda b: b.update(buffer_edits={"2": {"a.txt": ["old", 5]}}),
    lambda b: b.update(buffer_edits={"2": {"a.txt": ["old"]}}),
    lambda b: b.update(buffer_edits={"2": ["a.txt"]}),
    lambda b: b.update(buffer_edits={"two": {}}),
    lambda b: b.update(reverted="a.txt"),
    lambda b: b.update(reverted=[5]),
])
async def test_a_damaged_rewind_backup_is_refused_before_anything_changes(scripted_llm, make_core, workdir, damage):
    """A backup whose messages do not build is refused with the files and the conversation left as they are: it
    restored the checkpoint first, then failed on the messages (or built a session that failed every turn)."""
    core, _ = await _two_turns(scripted_llm, make_core, workdir)
    await core.rewind()
    [path] = core.sessions_dir.glob("*.rewind.json")
    backup = json.loads(path.read_text())
    damage(backup)
    path.write_text(json.dumps(backup))

    with pytest.raises(ReviewError, match="damaged"):
        await core.rewind_undo()
    assert (workdir / "a.txt").read_text() == ORIGINAL_A and (workdir / "b.txt").read_text() == ORIGINAL_B
    assert [m.content for m in core.session.messages] == ["say hello", "hello"]
    assert not (workdir / "injected").exists()
    path.write_text("{not json")
    with pytest.raises(ReviewError, match="damaged"):
        await core.rewind_undo()


async def test_the_changes_and_rewind_commands(scripted_llm, make_core, workdir):
    _seed(workdir)
    srv = scripted_llm("openai")
    srv.script(*_edit_two_files())
    core = await _auto(make_core, srv)
    assert (await core.submit("/changes")).reply == "/changes failed: this session has no turns yet"
    await core.submit("edit them")
    assert (await core.submit("/changes 1")).reply.splitlines() == [
        "turn 1: 2 file(s) changed",
        "modified a.txt (+2 -2)", "  [0] @@ -2,1 +2,1 @@", "      -line 2", "      +LINE TWO",
        "  [1] @@ -18,1 +18,1 @@", "      -line 18", "      +LINE EIGHTEEN",
        "modified b.txt (+1 -1)", "  [0] @@ -2,1 +2,1 @@", "      -beta", "      +BETA",
    ]
    assert "/rewind takes a turn number or 'undo' (got 'x')" in (await core.submit("/rewind x")).reply
    assert (await core.submit("/rewind 3")).reply == "/rewind failed: no turn 3: this session has turns 1 to 1"
    out = (await core.submit("/rewind")).reply
    assert out.startswith("rewound to before turn 1: files restored (a.txt, b.txt)")
    assert core.session.messages == [] and (workdir / "b.txt").read_text() == ORIGINAL_B
    assert (await core.submit("/rewind undo")).reply == "rewind undone: turn 1 back: files restored (a.txt, b.txt)"
    assert (workdir / "b.txt").read_text() == "alpha\nBETA\ngamma\n" and len(core.session.messages) == 4


async def test_build_output_is_left_out_of_the_list_but_stays_undoable(scripted_llm, make_core, workdir, monkeypatch):
    """A run that imports a module writes __pycache__/*.pyc; another writes build/ (which only the project's
    .git/info/exclude ignores: the shadow git reads no excludes but the tree's .gitignore). Neither is listed as a
    change by default, both are with `ignored=True`, and undo and rewind still put them back."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(workdir.parent / "no-config"))
    (workdir / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (workdir / ".git" / "info").mkdir(parents=True)
    (workdir / ".git" / "info" / "exclude").write_text("# local\nbuild/\n")
    srv = scripted_llm("openai")
    code = "python3 -c 'import calc' && mkdir -p build && echo out > build/app.bin && echo x > notes.txt"
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": code, "language": "bash"}]})), Reply.text("ran"))
    core = await _auto(make_core, srv)
    await core.submit("run it")
    assert [c.path for c in (await core.review.changes()).changes] == ["notes.txt"]
    everything = [c.path for c in (await core.review.changes(ignored=True)).changes]
    assert "build/app.bin" in everything and any(p.startswith("__pycache__/calc.") for p in everything), everything
    await undo(core.review, "build/app.bin")
    assert not (workdir / "build" / "app.bin").exists()
    # The rewind's files are those listed; the bytecode it removed too is said apart (it said "2 file(s) restored").
    done = await core.rewind()
    assert done.files == ["notes.txt"] and [p.split(".")[0] for p in done.build_output] == ["__pycache__/calc"]
    assert not (workdir / "__pycache__").exists() or not any((workdir / "__pycache__").iterdir())
    # The build output named, as the files are (it said "and 1 build output file(s)": which, the user could not tell).
    pyc = done.build_output[0]
    assert (await core.submit("/rewind undo")).reply == (
        f"rewind undone: turn 1 back: files restored (notes.txt) and build output ({pyc})")
    assert (await core.submit("/rewind")).reply.startswith(
        f"rewound to before turn 1: files restored (notes.txt) and build output ({pyc}); ")


async def test_a_read_only_turn_takes_no_checkpoint_and_a_rewound_numbers_refs_go(scripted_llm, make_core, workdir):
    _seed(workdir)
    srv = scripted_llm("openai")
    srv.script(Reply.text("hello"), *_edit_two_files(), Reply.text("just talk"))
    core = await _auto(make_core, srv)
    cp = core.review.checkpoints()
    await core.submit("say hello")
    # No step that may write: no snapshot, no git process, nothing logged; its changes are none.
    assert not (cp.git.git_dir / "HEAD").exists()
    assert (await core.review.changes(1)).changes == []
    await core.submit("edit them")
    sid = core.session_id
    assert [t.turn for t in await cp.list_turns(sid)] == [2]
    assert [t.turn for t in await cp.list_turns(f"{sid}-after")] == [2]
    assert sorted(c.path for c in (await core.review.changes(2)).changes) == ["a.txt", "b.txt"]
    await core.rewind(2)
    assert (workdir / "a.txt").read_text() == ORIGINAL_A
    # Turn 2 again, read-only this time: the cut turn's refs are not its own.
    await core.submit("talk")
    assert await cp.list_turns(sid) == [] and await cp.list_turns(f"{sid}-after") == []
    assert (await core.review.changes(2)).changes == []


async def test_a_failed_checkpoint_is_said_to_the_user(scripted_llm, make_core, workdir):
    """A snapshot that fails costs its steps their diffs and undo: that was only logged, so a step able to make every
    snapshot fail (a normal user's `chmod 000`, fixed by itself) hid its changes from review unsaid."""
    from ollie.workspace.refs import shadow_dir

    _seed(workdir)
    srv = scripted_llm("openai")
    srv.script(*_edit_two_files(), *_edit_two_files())
    core = await _auto(make_core, srv)
    events = core.bus.subscribe()
    await core.submit("edit them")
    objects = shadow_dir(workdir) / "objects"
    objects.rename(objects.with_name("objects.away"))  # git can store nothing now
    objects.write_text("not a dir")
    await core.submit("edit them again")
    said = []
    while events.pending():
        said.append(events.get_nowait())
    warnings = [e.content for e in said if e.role == "info" and "checkpoint of" in e.content]
    assert len(warnings) == 1 and warnings[0].startswith(f"warning: a checkpoint of {workdir} failed"), warnings


async def test_the_rewind_of_a_history_larger_than_the_workspace_read_cap_is_undone(scripted_llm, make_core, workdir,
                                                                                   monkeypatch):
    """Round 31: the rewind's backup (ollie's own file, the whole history) was read back under the cap of the model's
    workspace reads (16 MiB, or the user's OLLIE_MAX_FILE_BYTES): a long session's rewind (round 30's 100,000 messages
    were 24 MB) could not be undone, the files of its turns out of the user's reach."""
    monkeypatch.setenv("OLLIE_MAX_FILE_BYTES", str(8 * 1024))
    _seed(workdir)
    srv = scripted_llm("openai")
    srv.script(Reply.text("long " * 2_000), *_edit_two_files())
    core = await _auto(make_core, srv)
    await core.submit("say it at length")
    await core.submit("edit them")
    edited, messages = (workdir / "a.txt").read_text(), len(core.session.messages)
    await core.rewind()
    assert (workdir / "a.txt").read_text() == ORIGINAL_A
    back = await core.rewind_undo()
    assert back.turn == 2 and len(core.session.messages) == messages
    assert (workdir / "a.txt").read_text() == edited


# A step writes the task plan (its dir is the sandbox's to write), a different one of 100 KB each turn.
BIG_PLAN = """
import os
open(os.environ["OLLIE_PLAN_FILE"], "w").write("- [ ] step {turn}\\n" + "x" * 100_000)
"""


async def test_the_plans_turns_found_are_saved_once_not_with_every_round(scripted_llm, make_core, workdir,
                                                                        tmp_path):
    """Round 59: each turn that changes the plan records the one it found (for /rewind), and every round's commit
    carried them all: a model writing a 100 KB plan a turn made turn 5's one-line reply append 400 KB to the log
    (and encode it on the event loop), growing with every turn (quadratic in the session's length)."""
    srv = scripted_llm("openai")
    for turn in range(4):
        step = {"code": BIG_PLAN.replace("{turn}", str(turn)), "language": "python3"}
        srv.script(Reply.tool_calls(("execute_code", {"steps": [step]})), Reply.text(f"planned {turn}"))
    srv.script(Reply.text("hello"))
    core = await _auto(make_core, srv)
    for turn in range(4):
        await core.submit(f"plan {turn}")
    log = persist.session_log(tmp_path / "sessions", core.session_id).path
    size = log.stat().st_size
    await core.submit("say hello")
    assert log.stat().st_size - size < 16 * 1024  # the round, not every plan again
    plans = dict(core.session.plans_before)
    assert sorted(plans) == ["1", "2", "3", "4"] and len(plans["4"]) > 100_000
    session_id = core.session_id
    await core.close()
    again = await _auto(make_core, srv, session_id=session_id)
    assert dict(again.session.plans_before) == plans  # and the log still holds each of them
    await again.rewind(3)
    assert (await read_plan(session_id)).startswith("- [ ] step 1\n")  # as turn 3 found it



async def test_the_plan_a_turn_found_is_saved_once_however_many_of_its_rounds_change_the_plan(scripted_llm, make_core,
                                                                                               workdir, tmp_path):
    """The plan a turn found is noted as its first round changes the plan (a fork of the turns before it while it runs),
    and it was noted again at every later change: each round appended the 100 KB plan to the log once more."""
    srv = scripted_llm("openai")
    rounds = [Reply.tool_calls(("execute_code", {"steps": [{"code": BIG_PLAN.replace("{turn}", str(n)),
                                                            "language": "python3"}]})) for n in range(5)]
    srv.script(rounds[0], Reply.text("planned"), *rounds[1:], Reply.text("replanned"))
    core = await _auto(make_core, srv)
    await core.submit("plan")
    log = persist.session_log(tmp_path / "sessions", core.session_id).path
    size = log.stat().st_size
    await core.submit("plan again, four times")
    assert core.session.plans_before["2"].startswith("- [ ] step 0\n")
    # Four new plans go to the plan file, not the log; the one turn 2 found goes there once.
    assert log.stat().st_size - size < 200_000, log.stat().st_size - size


async def test_a_round_that_leaves_the_plan_as_it_was_saves_no_copy_of_it(scripted_llm, make_core, workdir, tmp_path):
    """A round's read of a plan it did not change notes no plan for the turn: each such turn put its 100 KB plan in
    the log (and took it out again at its end)."""
    srv = scripted_llm("openai")
    step = {"code": BIG_PLAN.replace("{turn}", "0"), "language": "python3"}
    srv.script(Reply.tool_calls(("execute_code", {"steps": [step]})), Reply.text("planned"),
               Reply.tool_calls(("execute_code", {"steps": [{"code": "print(1)", "language": "python3"}]})),
               Reply.text("ran"))
    core = await _auto(make_core, srv)
    await core.submit("plan")
    log = persist.session_log(tmp_path / "sessions", core.session_id).path
    size = log.stat().st_size
    assert (await core.submit("run a step")).reply == "ran"
    assert log.stat().st_size - size < 16 * 1024, log.stat().st_size - size
    assert sorted(core.session.plans_before) == ["1"]


async def test_a_compaction_drops_the_plans_of_the_turns_it_leaves_unrewindable(scripted_llm, make_core, workdir):
    """Round 59: a compaction leaves no turn before it to rewind, and the plans they found stayed in the session for
    good (up to 256 KiB a turn: its memory and every snapshot grew with the turns, its history compacted or not)."""
    srv = scripted_llm("openai")
    for turn in range(2):
        step = {"code": BIG_PLAN.replace("{turn}", str(turn)), "language": "python3"}
        srv.script(Reply.tool_calls(("execute_code", {"steps": [step]})), Reply.text(f"planned {turn}"))
    srv.script(Reply.text(json.dumps({"goal": "plan"})))
    core = await _auto(make_core, srv)
    for turn in range(2):
        await core.submit(f"plan {turn}")
    assert sorted(core.session.plans_before) == ["1", "2"]
    assert (await core.compact()).startswith("compacted")
    assert dict(core.session.plans_before) == {}
    with pytest.raises(ReviewError, match="compacted"):
        await core.rewind(2)


async def test_the_plans_next_step_is_read_off_the_event_loop(scripted_llm, make_core, workdir, monkeypatch):
    """Round 59: after each tool round the loop read the plan file (a step's to write, up to 256 KiB) and parsed it on
    the event loop: 256 KiB of line breaks held every session of the daemon ~70 ms a round. Its parse stalls here
    until the test lets it go, which the test can only do while the loop serves."""
    from ollie.agent import taskstate

    parsing, release, held = threading.Event(), threading.Event(), []
    parse = taskstate.checklist

    def stalled(text: str) -> list[tuple[str, bool]]:
        if "stall here" in text:
            parsing.set()
            held.append(release.wait(5))
        return parse(text)

    monkeypatch.setattr(taskstate, "checklist", stalled)
    srv = scripted_llm("openai")
    step = {"code": 'printf -- "- [ ] stall here\\n" > "$OLLIE_PLAN_FILE"', "language": "bash"}
    srv.script(Reply.tool_calls(("execute_code", {"steps": [step]})), Reply.text("planned"))
    core = await _auto(make_core, srv)
    turn = asyncio.ensure_future(core.submit("plan"))
    await asyncio.to_thread(parsing.wait, 30)
    release.set()
    assert (await turn).reply == "planned"
    assert held and all(held), "the loop served nothing while the plan was parsed"


def _task(tool: str, *args: str) -> Reply:
    return Reply.tool_calls(("call_tool", {"calls": [{"tool": tool, "args": list(args)}]}))


async def test_a_rewind_puts_back_the_task_states_step_with_the_plan_and_its_undo_the_step_it_left(
        scripted_llm, make_core, workdir):
    # The plan went back, but compaction's task state kept the cut turn's step: the model's next turn read "working on
    # `run it`" over a plan whose `write it` was open again.
    srv = scripted_llm("openai")
    srv.script(_task("task_add", "write it", "run it"), Reply.text("planned"), _task("task_check", "1"), Reply.text("written"))
    core = await _auto(make_core, srv)
    await core.submit("plan it")
    core.session.task_state = TaskState(goal="ship it")  # as compaction leaves it
    await core.submit("write it")
    assert core.session.task_state.plan_step == "run it"
    assert core.plan == [PlanEntry("write it", "completed"), PlanEntry("run it", "in_progress")]
    await core.rewind(2)
    assert core.session.task_state.plan_step == "write it"
    assert core.plan == [PlanEntry("write it", "in_progress"), PlanEntry("run it", "pending")]
    await core.rewind_undo()
    assert core.session.task_state.plan_step == "run it" and core.plan[1] == PlanEntry("run it", "in_progress")


async def test_a_fork_takes_the_plan_as_the_turn_it_ends_at_left_it(scripted_llm, make_core, workdir):
    # A fork started with no plan: its next turn's `task_add` began a new one, the steps of the work it goes on with lost.
    srv = scripted_llm("openai")
    srv.script(_task("task_add", "write it", "run it"), Reply.text("planned"), _task("task_check", "1"), Reply.text("written"))
    core = await _auto(make_core, srv)
    await core.submit("plan it")
    await core.submit("write it")
    for turn, step in ((1, "write it"), (None, "run it")):
        saved = persist.load(core.sessions_dir, core.session_id)
        cut_at_turn(saved, turn)
        fork = await _auto(make_core, srv)
        await fork.fork_from(saved)
        assert next_unchecked(await read_plan(fork.session_id)) == step
        assert [e.content for e in fork.plan if e.status == "in_progress"] == [step]


async def test_a_rewind_puts_the_plan_back_through_no_link_a_step_left_in_its_place(scripted_llm, make_core, workdir,
                                                                                 tmp_path):
    """The plan file is a step's to write: one that leaves a link there (to the user's ~/.bashrc) has the plan a rewind
    puts back written where it leads, outside every sandbox, unless the write follows no link."""
    victim = tmp_path / "bashrc"
    victim.write_text("alias ls='ls --color'\n")
    srv = scripted_llm("openai")
    first = {"code": 'printf -- "- [ ] first\\n" > "$OLLIE_PLAN_FILE"', "language": "bash"}
    linked = {"code": f'ln -sf {victim} "$OLLIE_PLAN_FILE"', "language": "bash"}
    srv.script(Reply.tool_calls(("execute_code", {"steps": [first]})), Reply.text("planned"),
               Reply.tool_calls(("execute_code", {"steps": [linked]})), Reply.text("linked"))
    core = await _auto(make_core, srv)
    await core.submit("plan")
    await core.submit("link it")
    assert core.session.plans_before.get("2") == "- [ ] first\n"
    await core.rewind(2)
    assert victim.read_text() == "alias ls='ls --color'\n"


async def test_a_plan_past_the_plans_cap_is_never_kept_for_a_rewind(scripted_llm, make_core, workdir):
    """A step writes the plan: one of 2 MiB was read whole (the workspace's 16 MiB cap, not the plan's 256 KiB) and kept
    as the plan the next turn found, in memory and in the session's log, for every turn that wrote one."""
    from ollie.agent.taskstate import PLAN_CAP

    srv = scripted_llm("openai")
    big = {"code": 'import os\nopen(os.environ["OLLIE_PLAN_FILE"], "w").write("- [ ] big\\n" + "x" * (2 << 20))',
           "language": "python3"}
    small = {"code": 'printf -- "- [ ] small\\n" > "$OLLIE_PLAN_FILE"', "language": "bash"}
    srv.script(Reply.tool_calls(("execute_code", {"steps": [big]})), Reply.text("big"),
               Reply.tool_calls(("execute_code", {"steps": [small]})), Reply.text("small"))
    core = await _auto(make_core, srv)
    await core.submit("plan big")
    await core.submit("plan small")
    assert (await read_plan(core.session_id)) == "- [ ] small\n"
    assert all(len(plan) <= PLAN_CAP for plan in core.session.plans_before.values())


async def test_a_logs_plan_of_a_turn_past_any_number_leaves_a_rewind_whole(scripted_llm, make_core, workdir, tmp_path):
    """A teammate's log keys the plans its turns found by turn number: one keyed by 5,000 digits (past what Python reads
    as a number) failed every rewind after it had put the files back, the conversation left uncut ("Exceeds the limit
    (4300 digits)"). Such a key names no turn: passed over."""
    _seed(workdir)
    srv = scripted_llm("openai")
    plan = {"code": 'printf -- "- [ ] first\\n" > "$OLLIE_PLAN_FILE"', "language": "bash"}
    srv.script(Reply.tool_calls(("execute_code", {"steps": [plan]})), Reply.text("planned"), *_edit_two_files())
    core = await _auto(make_core, srv)
    await core.submit("plan")
    await core.submit("edit them")
    session_id = core.session_id
    await core.close()
    log = persist.session_log(tmp_path / "sessions", session_id).path
    lines = log.read_bytes().split(b"\n")
    at = max(n for n, line in enumerate(lines) if b'"meta"' in line)
    commit = json.loads(lines[at])
    commit["meta"]["plans_before"] = {"9" * 5000: "- [ ] hostile\n"}
    lines[at] = json.dumps(commit).encode()
    log.write_bytes(b"\n".join(lines))
    again = await _auto(make_core, srv, session_id=session_id)
    done = await again.rewind(2)
    assert done.files == ["a.txt", "b.txt"] and (workdir / "a.txt").read_text() == ORIGINAL_A
    assert len(again.session.turn_starts) == 1  # the conversation cut with them
    assert (await read_plan(session_id)) == "- [ ] first\n"  # the plan as it is (no turn of the log changed it)


async def test_a_log_of_20000_uncounted_turns_is_looked_back_over_without_a_thread_hop_each(scripted_llm, make_core,
                                                                                             tmp_path):
    """`changes(changed=True)` (VS Code's review) diffs each turn whose count is not known: a log of 20,000 of them
    (each called a tool; none has a checkpoint here: a teammate's, an edited one, a project never checkpointed) took a
    thread hop and a listing each, ~10 s a request. A turn with nothing logged and no buffer edit lists nothing: no
    hop."""
    srv = scripted_llm("openai")
    srv.script(Reply.text("hi"))
    core = await _auto(make_core, srv)
    await core.submit("hi")
    session_id = core.session_id
    await core.close()
    saved = persist.load(tmp_path / "sessions", session_id)
    n = 20_000
    for turn in range(n):
        saved.turn_starts.append(len(saved.messages))
        saved.messages += [Message("user", "x"), Message("assistant", "", tool_calls=[ToolCall(f"c{turn}", "f")])]
    saved.turn_changed = [0] + [-1] * n
    persist.SessionFile(tmp_path / "sessions", session_id, sync=False).save(saved)
    again = await _auto(make_core, srv, session_id=session_id)
    assert again.session.turn_changed.count(-1) == n
    started = time.perf_counter()
    found = await again.review.changes(changed=True)
    assert time.perf_counter() - started < 3  # (~50 ms; a hop each: ~10 s)
    assert found.turn == 1 and found.changes == []


async def _after_step(scripted_llm: Callable[[str], ScriptedLLMServer], make_core: Callable[..., Awaitable[Core]],
                      code: str) -> Core:
    """A Core whose edits run unasked, after one turn whose bash step ran `code`."""
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("execute_code", {"steps": [{"code": code, "language": "bash"}]})), Reply.text("ran"))
    core = await _auto(make_core, srv)
    await core.submit("tidy it")
    return core


async def test_a_step_cannot_hide_its_changes_by_planting_git_info_exclude(scripted_llm, make_core, workdir,
                                                                          monkeypatch):
    """In a folder with no `.git` (no repository, or a session in a repository's subdirectory) nothing makes `.git`
    read-only to tool code: a step made `.git/info/exclude` naming the files it changed, and the daemon took them for
    build output: left out of the turn's list and the step's diffs, where the user reviews what the agent did
    (`.git` is in no checkpoint: the plant itself showed nowhere)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(workdir.parent / "no-config"))
    (workdir / "app.py").write_text("def run():\n    return 1\n")
    code = ("mkdir -p .git/info && printf 'app.py\\nbackdoor.py\\n' > .git/info/exclude"
            " && echo 'import backdoor' >> app.py && echo 'evil = 1' > backdoor.py")
    core = await _after_step(scripted_llm, make_core, code)
    assert (workdir / ".git" / "info" / "exclude").exists()  # the plant took
    assert [c.path for c in (await core.review.changes()).changes] == ["app.py", "backdoor.py"]
    done = await core.rewind()
    assert done.files == ["app.py", "backdoor.py"] and done.build_output == ()


async def test_a_step_cannot_hide_its_edits_by_ignoring_them_in_gitignore(scripted_llm, make_core, workdir,
                                                                         monkeypatch):
    """With a global excludes file (`~/.config/git/ignore`: `.DS_Store`, an editor's backups), the listing asked git's
    `check-ignore`, which reads the tree's `.gitignore` files too: a step that added `app.py` and `.gitignore` itself
    to `.gitignore` and edited `app.py` listed neither change (both checkpointed, both said to be build output)."""
    config = workdir.parent / "config"
    (config / "git").mkdir(parents=True)
    (config / "git" / "ignore").write_text(".DS_Store\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    (workdir / ".gitignore").write_text("node_modules/\n")
    (workdir / "app.py").write_text("def run():\n    return 1\n")
    code = "printf 'app.py\\n.gitignore\\n' >> .gitignore && echo 'import os' >> app.py && touch .DS_Store"
    core = await _after_step(scripted_llm, make_core, code)
    assert [c.path for c in (await core.review.changes()).changes] == [".gitignore", "app.py"]


@pytest.mark.parametrize("global_excludes", [False, True])
async def test_a_sourceless_bytecode_module_a_step_writes_is_listed(scripted_llm, make_core, workdir, monkeypatch,
                                                                    global_excludes):
    """A `json.pyc` beside the sources is a sourceless module, found before the standard library's: `import json`
    runs it. Python 3 writes its bytecode only in `__pycache__`, yet the listing took every `*.pyc` for build output:
    the step's plant was in no list (with a global excludes file too, where git's `check-ignore` matches)."""
    config = workdir.parent / "config"
    if global_excludes:
        (config / "git").mkdir(parents=True)
        (config / "git" / "ignore").write_text(".DS_Store\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    (workdir / "app.py").write_text("import json\n")
    code = ("echo 'evil = 1' > json.py && python3 -c \"import py_compile; py_compile.compile('json.py', 'json.pyc')\""
            " && rm json.py && python3 -c 'import json; assert json.evil == 1' && python3 -c 'import app'")
    core = await _after_step(scripted_llm, make_core, code)
    assert (workdir / "json.pyc").exists()  # the plant took, and `import json` ran it
    assert [c.path for c in (await core.review.changes()).changes] == ["json.pyc"]
    assert any(c.path.startswith("__pycache__/app.") for c in (await core.review.changes(ignored=True)).changes)


async def test_a_gitignore_that_ignores_itself_is_listed_with_the_step_that_wrote_it(scripted_llm, make_core, workdir,
                                                                                   monkeypatch):
    """A step wrote `tests/.gitignore` holding `*` and a new `tests/conftest.py` (which pytest runs, outside any
    sandbox): the `.gitignore` ignored itself, so neither was checkpointed, and the user saw no change at all, nor
    did a rewind remove them. The `.gitignore` is checkpointed whatever ignores it: it is listed, and goes with it."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(workdir.parent / "no-config"))
    (workdir / "tests").mkdir()
    (workdir / "tests" / "test_app.py").write_text("def test_it():\n    pass\n")
    code = "echo '*' > tests/.gitignore && echo 'import os' > tests/conftest.py"
    core = await _after_step(scripted_llm, make_core, code)
    assert [c.path for c in (await core.review.changes()).changes] == ["tests/.gitignore"]
    done = await core.rewind()
    assert done.files == ["tests/.gitignore"] and not (workdir / "tests" / ".gitignore").exists()
