"""The history's steps from the saved messages alone: statuses, edit lines, pairing, cut-off replies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from ollie.agent.history import (
    INTERRUPTED_REPLY,
    cut_off,
    is_cut_off,
    outcome_marks,
    page_records,
    wire_messages,
)
from ollie.agent.steps import Location, ToolState
from ollie.backend.types import Message, ToolCall


def wire(messages: list[Message], start: int, end: int, **options: Any) -> list[dict[str, Any]]:
    """`wire_messages` with the CWD /ws, as plain JSON for the assertions."""
    return cast(list[dict[str, Any]], wire_messages(messages, start, end, cwd=Path("/ws"), **options))


def batch(call_id: str, *calls: tuple[str, list[str]]) -> ToolCall:
    return ToolCall(call_id, "call_tool", json.dumps({"calls": [{"tool": t, "args": a} for t, a in calls]}))


HISTORY = [
    Message("user", "fix it"),
    Message("assistant", "", tool_calls=[batch("c1", ("file_edit", ["a.py", "x", "y", "--all"]),
                                               ("file_read", ["gone.py"]))]),
    Message("tool", "[call 1 file_edit] exit 0\nreplaced 2 occurrences in a.py (original lines 7, 9)\n"
                    "[call 2 file_read] exit 1\nerror: gone.py: no such file", tool_call_id="c1", name="call_tool"),
    Message("assistant", "", tool_calls=[batch("c2", ("file_edit", ["b.py", "p", "q"]))]),
    Message("tool", "[cold result of call_tool collapsed: 3 lines, 80 bytes; began: [call 1 file_edit] exit 0]",
            tool_call_id="c2", name="call_tool"),
    Message("assistant", cut_off("half an ans")),
]


def test_steps_come_from_the_results_sections_with_the_edits_first_line():
    out = wire(HISTORY, 0, len(HISTORY))
    call = out[1]["tool_calls"][0]
    assert call["tool"]["status"] == "failed" and out[2]["tool"] == call["tool"]
    assert [(s["status"], s["locations"]) for s in call["steps"]] == [
        ("completed", [{"path": "a.py", "line": 7}]), ("failed", [{"path": "gone.py"}])]
    assert out[5]["interrupted"] is True and out[5]["content"].endswith(INTERRUPTED_REPLY)
    assert "interrupted" not in out[0] and "tool" not in out[0]


def test_kept_outcomes_win_over_a_collapsed_result_and_pages_pair_across_the_history():
    # The collapsed summary lost the line; the session kept how the step ended.
    bare = wire(HISTORY, 4, 5)[0]
    assert bare["tool"]["locations"] == [{"path": "b.py"}]
    kept = wire(HISTORY, 4, 5, outcomes={"c2": ["failed:3"]})[0]
    assert kept["tool"]["status"] == "failed" and kept["tool"]["locations"] == [{"path": "b.py", "line": 3}]
    # A call whose result is not in yet (its turn runs) is pending.
    running = wire(HISTORY[:4], 3, 4)[0]
    assert running["tool_calls"][0]["tool"]["status"] == "pending"


def test_a_pages_records_are_taken_once_and_a_running_turn_changes_them_no_more():
    """ollie/context takes the page's step records on the loop and builds the page in a thread: what a turn (or a
    /clear) then does to the session's maps does not reach the page. The thread read the live maps."""
    outcomes = {"c1": ["completed:7", "failed"], "c2": ["failed:3"], "elsewhere": ["completed"]}
    network = {"c2": [{"host": "example.com", "port": 443, "allowed": True}]}
    taken_outcomes, taken_network = page_records(HISTORY[3:5], outcomes, network)
    assert taken_outcomes == {"c2": ("failed:3",)} and taken_network == {"c2": (network["c2"][0],)}  # the page's
    expected = wire(HISTORY, 3, 5, outcomes=outcomes, network=network)
    outcomes["c2"] = ["completed"]  # the loop goes on: a new outcome, then a /clear
    outcomes.clear()
    network.clear()
    assert wire(HISTORY, 3, 5, outcomes=taken_outcomes, network=taken_network) == expected


def test_a_collapsed_results_images_are_named_from_the_sessions_marks_and_a_hostile_mark_is_left_out():
    marks = ["image/png 12345", "image/svg+xml 10", "image/png " + "9" * 5000, "image/png -1", 7, None, "image/gif 7"]
    assert wire(HISTORY, 4, 5, images={"c2": marks})[0]["images"] == [{"mime": "image/png", "bytes": 12345},
                                                                      {"mime": "image/gif", "bytes": 7}]
    for hostile in (7, "image/png 5", {"image/png": 5}):  # not a list of marks: nothing named, the page still served
        assert wire(HISTORY, 4, 5, images={"c2": hostile})[0].get("images", []) == []


def test_marks_and_cut_off_round_trip():
    out = wire(HISTORY, 1, 2)[0]["tool_calls"][0]
    assert out["steps"][0]["locations"][0]["line"] == 7
    assert cut_off("") == INTERRUPTED_REPLY and is_cut_off(Message("assistant", cut_off("x")))
    assert not is_cut_off(Message("user", cut_off("x")))
    ended = [ToolState("c.1", "edit", "Edit a.py", "completed", (Location("a.py", 7),)),
             ToolState("c.2", "read", "Read gone.py", "failed", (Location("gone.py"),))]
    assert outcome_marks(ended) == ["completed:7", "failed"]
