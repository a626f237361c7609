"""After a request the cold results it carried collapse: found from the end, every one of them, nothing else."""

from __future__ import annotations

from ollie.agent.tiers import COLD_WINDOW, COLLAPSED, collapse_consumed
from ollie.backend.types import Message, ToolCall
from ollie.sessions.session import Session


def test_cold_results_collapse_and_the_rest_stay_as_they_are() -> None:
    session = Session()
    for n, tier in enumerate(["hot", "cold", "warm", "cold", COLLAPSED]):
        session.messages += [Message("assistant", "", tool_calls=[ToolCall(f"c{n}", "file_read", "{}")]),
                             Message("tool", f"output {n}\nline two", tool_call_id=f"c{n}", name="file_read")]
        session.result_tiers[f"c{n}"] = tier
    session.messages.append(Message("user", "and now?"))
    session.result_tiers["gone"] = "cold"  # its result was compacted away since
    assert collapse_consumed(session) == 2
    contents = [m.content for m in session.messages if m.role == "tool"]
    assert contents[0] == "output 0\nline two" and contents[2] == "output 2\nline two"
    assert contents[1].startswith("[cold result of file_read collapsed: 2 lines") and "began: output 1" in contents[1]
    assert contents[3].startswith("[cold result of file_read collapsed: ") and contents[4] == "output 4\nline two"
    assert {k: v for k, v in session.result_tiers.items() if v == COLLAPSED} == {
        "c1": COLLAPSED, "c3": COLLAPSED, "c4": COLLAPSED, "gone": COLLAPSED}
    assert collapse_consumed(session) == 0  # nothing cold is left


def test_the_walk_stops_cold_window_messages_back() -> None:
    """A cold id whose result is gone no longer walks the whole history (it ran on the loop after every request)."""
    session = Session()
    session.messages += [Message("assistant", "", tool_calls=[ToolCall("old", "file_read", "{}")]),
                         Message("tool", "old output", tool_call_id="old", name="file_read")]
    session.messages += [Message("user", f"note {n}") for n in range(COLD_WINDOW)]
    session.messages += [Message("assistant", "", tool_calls=[ToolCall("new", "file_read", "{}")]),
                         Message("tool", "new output", tool_call_id="new", name="file_read")]
    session.result_tiers.update({"old": "cold", "new": "cold", "gone": "cold"})
    assert collapse_consumed(session) == 1
    assert session.messages[1].content == "old output"  # beyond the window: not looked for
    assert session.messages[-1].content.startswith("[cold result of file_read collapsed")
    assert set(session.result_tiers.values()) == {COLLAPSED}
