"""After a request the cold results it carried collapse: found from the end, every one of them, nothing else."""

from __future__ import annotations

from ollie.agent.tiers import COLD_WINDOW, COLLAPSED, collapse, collapse_consumed
from ollie.backend.types import Image, Message, ToolCall
from ollie.sessions.session import Session, TierMap


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


class _NoWalk(TierMap):
    """Tiers that refuse to be walked: collapse_consumed must find the cold ones without it."""

    def items(self):  # type: ignore[override]
        raise AssertionError("walked every tier")

    def __iter__(self):  # type: ignore[override]
        raise AssertionError("walked every tier")


def test_the_cold_results_are_found_without_walking_every_tier() -> None:
    """After each request, on the event loop: the tiers hold an entry per tool result of the whole history."""
    session = Session()
    session.result_tiers = _NoWalk({f"c{n}": COLLAPSED for n in range(1000)})
    session.messages += [Message("assistant", "", tool_calls=[ToolCall("new", "file_read", "{}")]),
                         Message("tool", "new output", tool_call_id="new", name="file_read")]
    session.result_tiers["new"] = "cold"
    session.result_tiers["gone"] = "cold"
    assert collapse_consumed(session) == 1
    assert session.messages[-1].content.startswith("[cold result of file_read collapsed")
    assert session.cold_results() == set() and dict.get(session.result_tiers, "gone") == COLLAPSED


def test_the_cold_set_follows_every_change_of_the_tiers() -> None:
    session = Session(result_tiers={"a": "cold", "b": "warm"})  # a plain dict becomes a TierMap
    tiers = session.result_tiers
    assert isinstance(tiers, TierMap) and session.cold_results() == {"a"}
    tiers["b"] = "cold"
    tiers.update({"c": "cold"})
    tiers.setdefault("d", "cold")
    assert session.cold_results() == {"a", "b", "c", "d"}
    tiers["a"] = COLLAPSED
    del tiers["b"]
    tiers.pop("c")
    assert session.cold_results() == {"d"}
    tiers.clear()
    assert session.cold_results() == set()
    session.result_tiers = {"e": "cold"}  # assigned anew (compaction keeps what it kept)
    assert session.cold_results() == {"e"}


def test_a_collapsed_result_takes_its_images_with_it() -> None:
    """An MCP server's screenshot collapses with its text: left in place, it would go with every later request. What
    they were (type and bytes) stays with the session: the history names them under the step."""
    session = Session()
    shot = Image("image/png", "iVBORw0KGgo=")
    session.messages += [Message("assistant", "", tool_calls=[ToolCall("s", "mcp__t__screenshot", "{}")]),
                         Message("tool", "the screen", tool_call_id="s", name="mcp__t__screenshot", images=[shot, shot])]
    session.result_tiers["s"] = "warm"
    assert collapse(session, ("warm",)) == 1
    result = session.messages[-1]
    assert result.images == [] and result.content.startswith("[warm result of mcp__t__screenshot collapsed: ")
    assert ", 2 images; began: the screen]" in result.content
    assert session.step_images == {"s": ["image/png 8"] * 2}
