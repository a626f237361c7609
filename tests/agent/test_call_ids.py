"""What a long history costs the loop: a reply's call ids each checked by a lookup, /context counted in a thread."""

from __future__ import annotations

import threading

from agentkit import ToyServer, sent_messages

from ollie.backend.types import Message, ToolCall
from ollie.testing import Reply


class _Unwalked(set):
    """The session's call ids, which a check of a new call's id must not walk."""

    def __iter__(self):
        raise AssertionError("a call's id was checked by walking every id of the session")


async def test_a_replys_ids_are_checked_without_walking_the_sessions_ids(scripted_llm, make_core):
    # Each new call's id was compared with every id of the history for one of its batch steps (`<id>.<n>`): ~14 ms a
    # call at 100,000 messages, ~1 s of the daemon's loop for one reply of 64 calls.
    srv = scripted_llm("openai")
    read = ("slow_read", {"delay": 0})
    ids = ["old", "fresh", "fresh", "c5.1", "x", "y.2", "y"]
    srv.script(Reply.tool_calls(read, call_ids=["x.3"]), Reply.text("first"),
               Reply.tool_calls(*[read] * len(ids), call_ids=ids), Reply.text("done"))
    core = await make_core(srv, toy=ToyServer())
    for n in range(100):  # a resumed history: its ids are the first turn's to gather
        core.session.messages += [Message("assistant", "", tool_calls=[ToolCall(f"c{n}", "slow_read", "{}")]),
                                  Message("tool", "ok", tool_call_id=f"c{n}", name="slow_read")]
    core.session.messages += [Message("assistant", "", tool_calls=[ToolCall("old", "slow_read", "{}")]),
                              Message("tool", "ok", tool_call_id="old", name="slow_read")]
    assert (await core.submit("first")).reply == "first"
    assert core.session.call_ids is not None and {"c99", "old", "x.3"} <= core.session.call_ids
    core.session.call_ids = _Unwalked(core.session.call_ids)
    assert (await core.submit("again")).reply == "done"
    sent = [c["id"] for c in sent_messages(srv)[-len(ids) - 1]["tool_calls"]]
    # Kept: a fresh id, a step's id of no earlier call, then that call's own (its step y.2 was taken). Renamed: an
    # earlier call's id, a repeat, a step of an earlier call, a call whose step x.3 is an earlier call's id.
    assert [sent[1], sent[5]] == ["fresh", "y.2"], sent
    assert sent[6] != "y" and len(set(sent) | {"old", "x.3", "c5"}) == len(ids) + 3, sent
    assert not {sent[0], sent[2], sent[3], sent[4]} & {"old", "fresh", "c5.1", "x"}, sent


class _NotOnTheLoop(list):
    """A history that must not be walked on the event loop's thread once `armed`."""

    armed = False

    def __iter__(self):
        assert not self.armed or threading.current_thread() is not threading.main_thread(), "walked on the loop"
        return super().__iter__()


async def test_context_counts_the_history_off_the_loop(scripted_llm, make_core):
    # /context counted every message's role and calls on the loop every session shares (~17 ms at 100k messages).
    core = await make_core(scripted_llm("openai"), toy=ToyServer())
    core.session.messages = _NotOnTheLoop([Message("user", "hi"), Message("assistant", "", tool_calls=[
        ToolCall("a", "slow_read", "{}"), ToolCall("b", "slow_read", "{}")]),
        Message("tool", "ok", tool_call_id="a", name="slow_read"), Message("tool", "ok", tool_call_id="b",
                                                                           name="slow_read")])
    core.context_info()  # the size of a history that is new to the session is counted once (then kept up to date)
    core.session.messages.armed = True
    lines = (await core.submit("/context")).reply.splitlines()
    core.session.messages.armed = False  # (the save at close writes it on the loop: a 4-message round)
    assert lines[1:3] == ["messages: 4 (assistant 1, tool 2, user 1)", "tool calls this session: 2"], lines
