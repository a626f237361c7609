"""Where a fork's copy of a conversation ends (ollie.agent.fork.cut_at_turn): each turn's end, and the turns it cannot
end at named as `turn`'s fault."""

from __future__ import annotations

import pytest

from ollie.agent.fork import ForkTurnError, cut_at_turn
from ollie.backend.types import Message
from ollie.sessions.session import Session


def three_turns() -> Session:
    messages = [Message(role, f"{role} {n}") for n in (1, 2, 3) for role in ("user", "assistant")]
    return Session(messages=messages, turn_starts=[0, 2, 4])


@pytest.mark.parametrize(("turn", "kept"), [(None, 6), (1, 2), (2, 4), (3, 6)])
def test_a_fork_ends_where_the_turn_asked_ends(turn, kept):
    session = three_turns()
    cut_at_turn(session, turn)
    assert [m.content for m in session.messages] == [m.content for m in three_turns().messages[:kept]]


@pytest.mark.parametrize(("turn_starts", "turn", "said"), [
    ([0, 2, 4], 0, "no turn 0: session"), ([0, 2, 4], 4, "has turns 1 to 3"), ([], 1, "has no turns yet"),
    ([-1, -1, 4], 1, "compacted or cleared"),  # where turn 2 began was rewritten: turn 1's end is not known
])
def test_a_turn_it_cannot_end_at_is_the_turn_fields_fault(turn_starts, turn, said):
    session = three_turns()
    session.turn_starts = turn_starts
    with pytest.raises(ForkTurnError, match=said) as caught:
        cut_at_turn(session, turn)
    assert caught.value.field == "turn" and len(session.messages) == 6
