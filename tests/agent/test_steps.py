"""Readable tool steps: kinds, titles and locations from a call's arguments (ollie.agent.steps)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from ollie.agent.changes import ChangeTracker
from ollie.agent.steps import (
    Diff,
    Location,
    PlanChange,
    ToolStep,
    attribute,
    batch_state,
    describe,
    inner_statuses,
    script_kinds,
    section_texts,
    step_states,
)
from ollie.tools.execute.args import MAX_CALLS
from ollie.workspace.errors import CheckpointUnavailable
from ollie.workspace.types import FileChange

CWD = Path("/work/project")


def calls(*pairs: tuple[str, list[str]]) -> dict[str, object]:
    return {"calls": [{"tool": tool, "args": args} for tool, args in pairs]}


def test_a_call_tool_batch_is_one_step_per_inner_call_with_acp_kinds() -> None:
    steps = describe("call_tool", calls(
        ("file_read", ["hello.py"]),
        ("file_write", ["notes/a.md", "text"]),
        ("file_edit", ["/work/project/src/app.py", "old", "new"]),
        ("file_grep", ["TODO", "src"]),
        ("file_glob", ["**/*.py"]),
        ("reasoning_think", ["hmm"]),
    ), CWD)
    assert [(s.kind, s.title) for s in steps] == [
        ("read", "Read hello.py"),
        ("edit", "Write notes/a.md"),
        ("edit", "Edit src/app.py"),
        ("search", "Search for `TODO` in src/"),
        ("search", "Find files matching `**/*.py`"),
        ("think", "Think"),
    ]
    # Paths are relative to the CWD, an absolute one inside it included.
    assert steps[2].locations == (Location("src/app.py"),)
    assert steps[0].locations == (Location("hello.py"),)


def test_a_read_from_an_offset_points_at_that_line() -> None:
    (step,) = describe("call_tool", calls(("file_read", ["a.py", "--offset=40"])), CWD)
    assert step == ToolStep("read", "Read a.py from line 40", (Location("a.py", 40),))


def test_execute_code_and_pipe_are_run_steps_titled_by_their_command() -> None:
    (run,) = describe("execute_code", json.dumps({"steps": [{"code": "python3 hello.py\n"}]}), CWD)
    assert run == ToolStep("execute", "Run `python3 hello.py`")
    (two,) = describe("execute_code", {"steps": [{"code": "ls"}, {"code": "pwd"}, {"code": "id"}]}, CWD)
    assert two.title == "Run `ls` and 2 more steps"
    (pipe,) = describe("pipe", {"stages": [{"tool": "file_read", "args": ["a.txt"]}, {"code": "wc -l"}]}, CWD)
    assert pipe == ToolStep("execute", "Run `file_read a.txt | wc -l`")


def test_a_plan_step_says_what_it_does_to_the_plan() -> None:
    steps = describe("call_tool", calls(("task_add", ["lex", "parse"]), ("task_add", ["lex"]), ("task_check", ["2"]),
                                        ("task_check", ["the `parser`"]), ("task_check", []), ("task_clear", ["--done"]),
                                        ("task_clear", [])), CWD)
    assert [s.title for s in steps] == ["Add 2 steps to the plan", "Add 1 step to the plan", "Check off step 2",
                                        "Check off `the 'parser'`", "Check off the next step",
                                        "Clear the plan's finished steps", "Clear the plan"]
    # The terminal shows the checklist such a step leaves instead of its result: each is flagged as made, not known
    # by its title. A user's `task_deploy` was titled "Update the plan", and its output was left out as a plan step's.
    others = describe("call_tool", calls(("file_read", ["plan.md"]), ("file_grep", ["Add 2 steps to the plan"]),
                                         ("task_deploy", ["prod"])), CWD)
    assert [bool(s.plan) for s in steps + others] == [True] * len(steps) + [False] * 3
    assert steps[0].plan == PlanChange("task_add", ("lex", "parse")) and steps[5].plan == PlanChange("task_clear", done=True)
    assert others[2].title == "Run `task_deploy prod`"


def test_a_plan_batch_title_says_each_change_once() -> None:
    # A batch of one add and 50 check-offs read "Add 139 steps to the plan and 50 more": as 189 steps added.
    adds = describe("call_tool", calls(("task_add", [f"s{n}" for n in range(139)]),
                                        *[("task_check", [str(n)]) for n in range(50)]), CWD)
    assert batch_state("c", step_states("c", adds)).title == "Add 139 steps to the plan, check off 50 steps"
    mixed = describe("call_tool", calls(("task_check", ["2"]), ("task_add", ["a"]), ("task_add", ["b"]),
                                        ("file_read", ["a.py"]), ("task_clear", ["--done"])), CWD)
    assert batch_state("c", step_states("c", mixed)).title == (
        "Check off step 2, add 2 steps to the plan, clear the plan's finished steps and 1 more")
    assert batch_state("c", step_states("c", mixed[3:])).title == "Read a.py and 1 more"


def test_a_batch_of_two_clears_is_titled_as_the_last_one_not_as_check_offs() -> None:
    clears = describe("call_tool", calls(("task_clear", ["--done"]), ("task_clear", [])), CWD)
    assert batch_state("c", step_states("c", clears)).title == "Clear the plan"


def test_titles_are_one_short_line_never_raw_json() -> None:
    code = "for f in *; do\n  echo \"$f\"\ndone\n" + "x" * 500
    (step,) = describe("execute_code", {"steps": [{"code": code, "elevated": True}]}, CWD)
    assert "\n" not in step.title and "{" not in step.title
    assert step.title.startswith("Run `for f in *; do …`") and step.title.endswith("outside the sandbox")
    (long,) = describe("execute_code", {"steps": [{"code": "echo " + "y" * 300}]}, CWD)
    assert len(long.title) < 80


def test_bad_arguments_still_give_a_readable_step() -> None:
    assert describe("execute_code", "{not json", CWD) == [ToolStep("execute", "Run code")]
    assert describe("call_tool", {"calls": []}, CWD) == [ToolStep("other", "Call a tool")]
    assert describe("pipe", {"stages": "x"}, CWD) == [ToolStep("execute", "Run a pipeline")]


def test_a_user_tool_declares_its_kind_in_its_header_else_other(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "rm_file").write_text("#!/bin/sh\n# description: delete a file\n# ollie:kind delete\nrm -- \"$1\"\n")
    (tools / "plain").write_text("#!/bin/sh\n# description: something\necho hi\n")
    kinds = script_kinds([tools])
    deleted, plain, missing = describe("call_tool", calls(("rm_file", ["old.txt"]), ("plain", ["a b", "c"]),
                                                          ("nosuch", [])), CWD, kind_of=kinds)
    assert deleted == ToolStep("delete", "Delete old.txt (rm_file)", (Location("old.txt"),))
    assert plain == ToolStep("other", 'Run `plain "a b" c`')
    assert missing.kind == "other"


def test_a_tool_called_by_name_is_described_too() -> None:
    (step,) = describe("file_read", {"path": "src/x.py"}, CWD)
    assert step == ToolStep("read", "Read src/x.py", (Location("src/x.py"),))


def test_step_states_give_a_batch_inner_ids_and_the_wire_shape() -> None:
    steps = describe("call_tool", calls(("file_read", ["a.py"]), ("file_write", ["b.py", "x"])), CWD)
    inner = step_states("call_7", steps)
    assert [s.id for s in inner] == ["call_7.1", "call_7.2"] and {s.status for s in inner} == {"pending"}
    (single,) = step_states("call_8", steps[:1])
    assert single.id == "call_8"
    assert single.to_wire() == {"id": "call_8", "kind": "read", "title": "Read a.py", "status": "pending",
                                "locations": [{"path": "a.py"}]}
    done = [inner[0].with_status("completed"), inner[1].with_status("failed", (Diff.of(FileChange("b.py", "added", None, "x")),))]
    whole = batch_state("call_7", done)
    assert (whole.kind, whole.title, whole.status) == ("edit", "Read a.py and 1 more", "failed")
    assert whole.to_wire()["diffs"] == [{"path": "b.py", "oldText": None, "newText": "x"}]


def test_inner_statuses_read_the_execute_servers_sections() -> None:
    result = "[call 1 file_read] exit 0\nok\n[call 2 file_read] exit 1\nno\n[call 3 file_write] skipped: an earlier call failed"
    assert inner_statuses(result, 3) == ["completed", "failed", "failed"]
    assert inner_statuses("plain output", 1) == ["completed"]
    assert inner_statuses("plain output", 1, is_error=True) == ["failed"]
    assert inner_statuses("[interrupted by the user before this call finished]", 2) == ["failed", "failed"]


def test_a_section_header_is_one_line() -> None:
    result = "[call 1 file_read\n] exit 0\n[call 2 file_read] exit 0\nok"
    assert inner_statuses(result, 2) == ["failed", "completed"]
    assert section_texts(result, 2) == ["", "\nok"]


def _parse_seconds(result: str) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.thread_time()  # the CPU the parse spent: a loaded machine's pauses are not counted
        inner_statuses(result, 2)
        section_texts(result, 2)
        best = min(best, time.thread_time() - started)
    return best


def test_a_step_output_of_unclosed_section_headers_parses_in_linear_time() -> None:
    # A step prints these; each line's header scan ran to the end of the output (quadratic: 128 KiB held the loop
    # 2.5 s). Measured against output of the same size whose headers close.
    crafted, closed = "[call 1 \n" * 7000, "[call 1 ] \n" * 6300
    assert _parse_seconds(crafted) < 10 * _parse_seconds(closed) + 0.01


def test_diffs_go_to_the_inner_step_naming_the_file_else_the_last_writer() -> None:
    inner = step_states("c", describe("call_tool", calls(
        ("file_read", ["a.py"]), ("file_edit", ["b.py", "o", "n"]), ("file_write", ["c.py", "x"])), CWD))
    b, other = Diff("b.py", "o", "n"), Diff("made.txt", None, "y")
    assert attribute([b, other], inner) == [(), (b,), (other,)]


def test_a_big_batchs_diffs_are_attributed_in_one_pass_over_its_steps() -> None:
    """2,000 diffs over 2,000 steps were matched diff by diff, each scanning the steps: 4,000,000 checks on the loop."""

    class Walked(list):
        walks = 0

        def __iter__(self):
            Walked.walks += 1
            return super().__iter__()

    n = 200
    inner = Walked(step_states("c", describe("call_tool", calls(*(("file_edit", [f"f{i}.py", "o", "n"])
                                                                   for i in range(n))), CWD)))
    diffs = [Diff(f"f{i}.py", "o", "n") for i in reversed(range(n))] + [Diff("made.txt", None, "y")]
    shares = attribute(diffs, inner)
    assert shares[:3] == [(diffs[n - 1],), (diffs[n - 2],), (diffs[n - 3],)] and shares[-1] == (diffs[0], diffs[-1])
    assert Walked.walks <= 3, f"the steps walked {Walked.walks} times for {len(diffs)} diffs"


async def test_the_change_tracker_checkpoints_turns_and_finds_what_a_step_changed(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("alpha\n")
    tracker = ChangeTracker(project, "1700000000000000000-abcdef")
    await tracker.begin_turn(1)
    token = await tracker.before_step()
    assert token is not None and tracker.turn_begin == token and tracker.unavailable is None
    assert tracker.checkpoints is not None
    # Any writer counts: here a real subprocess, as `sed -i` in execute_code would be.
    proc = await asyncio.create_subprocess_exec("sed", "-i", "s/alpha/beta/", "notes.txt", cwd=project)
    await proc.wait()
    (change,) = (await tracker.after_step(token))[1].changes
    assert Diff.of(change).to_wire() == {"path": "notes.txt", "oldText": "alpha\n", "newText": "beta\n"}
    assert (await tracker.after_step(await tracker.before_step()))[1].changes == []


async def test_no_checkpoints_for_the_root_says_why_once_and_tracks_nothing() -> None:
    told: list[str] = []
    tracker = ChangeTracker(Path("/"), "1700000000000000000-abcdef", on_unavailable=told.append)
    await tracker.begin_turn(1)
    assert (await tracker.after_step(await tracker.before_step()))[1].changes == []
    with pytest.raises(CheckpointUnavailable):  # a step that may write ran: what the turn changed is not known
        await tracker.end_turn()
    assert tracker.checkpoints is None and tracker.unavailable and len(told) == 1


def test_a_batch_of_file_edits_builds_each_file_tools_grammar_once(monkeypatch, tmp_path):
    """A 2,000-write `call_tool` was parsed on the loop (its preview, its approval, its run) building an argparse
    grammar per call, gettext look-ups and all: 1 ms each, seconds before its first write, every session frozen."""
    import argparse

    built = []
    init = argparse.ArgumentParser.__init__

    def counted(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        built.append(kwargs.get("prog"))
        init(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(argparse.ArgumentParser, "__init__", counted)
    half = MAX_CALLS // 2  # (a batch holds that many at most now)
    calls = [{"tool": tool, "args": [f"f{i}.txt", "old", "new"]} for i in range(half)
             for tool in ("file_edit", "file_write")]
    steps = describe("call_tool", {"calls": calls}, tmp_path)
    assert "f0.txt" in steps[0].title and f"f{half - 1}.txt" in steps[-1].title, (steps[0], steps[-1])
    assert len(steps) == MAX_CALLS and len(built) <= 2, f"{len(built)} grammars built for {len(steps)} calls"
