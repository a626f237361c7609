"""The running token estimate behind `ollie/state`: always equal to a full recount of what the next request carries."""

from __future__ import annotations

import json

from agentkit import ToyServer

from ollie.agent.context import HistorySize
from ollie.agent.tiers import message_chars
from ollie.backend.types import Message, ToolCall, Usage
from ollie.sessions.session import Session
from ollie.testing import Reply

STATE = {"goal": "read everything", "plan": ["read"], "decisions": ["read twice"]}


def recount(core) -> int:
    """What the estimate must be: the whole request counted again."""
    chars = len(core.system_prompt()) + sum(message_chars(m) for m in core.context())
    return max(core.session.last_input_tokens, chars // 4)


def _tool_turn(n: int) -> list[Reply]:
    # Cold and warm results collapse in place as turns go by: edits the estimate must follow.
    return [Reply.tool_calls(("cold_read", {"path": f"c{n}.txt", "size": 4000}),
                             ("warm_read", {"path": f"w{n}.txt", "size": 3000}), usage=Usage(input_tokens=10)),
            Reply.tool_calls(("slow_read", {"tag": str(n)}), usage=Usage(input_tokens=10)),
            Reply.text(f"turn {n} done", usage=Usage(input_tokens=10))]


async def test_the_estimate_equals_a_recount_after_appends_collapses_compaction_rewind_and_resume(
        scripted_llm, make_core):
    srv = scripted_llm("openai")
    core = await make_core(srv, toy=ToyServer())
    core.set_approval("auto")
    seen = [core.context_info()["tokens"]]
    assert seen[0] == recount(core)
    for n in range(4):
        srv.script(*_tool_turn(n))
        await core.submit(f"turn {n} " + "x" * 400)
        tokens = core.context_info()["tokens"]
        assert tokens == recount(core) > core.session.last_input_tokens  # characters, not the usage, decide
        seen.append(tokens)
    assert "collapsed" in " ".join(m.content for m in core.session.messages)  # in-place edits happened
    assert seen == sorted(seen)

    srv.script(Reply.text("```json\n" + json.dumps(STATE) + "\n```"))
    assert (await core.submit("/compact")).reply.startswith("compacted:")
    assert core.context_info()["tokens"] == recount(core) < seen[-1]

    srv.script(*_tool_turn(9))
    await core.submit("after compaction")
    assert core.context_info()["tokens"] == recount(core)
    done = await core.rewind()
    assert done.turn >= 1 and core.context_info()["tokens"] == recount(core)
    await core.rewind_undo()
    assert core.context_info()["tokens"] == recount(core)
    session_id, tokens = core.session_id, core.context_info()["tokens"]
    await core.close()

    again = await make_core(srv, toy=ToyServer(), session_id=session_id)
    assert again.context_info()["tokens"] == recount(again) == tokens
    srv.script(*_tool_turn(10))
    await again.submit("resumed")
    assert again.context_info()["tokens"] == recount(again)
    await again.submit("/clear")
    assert again.context_info()["tokens"] == recount(again)


def _count(session: Session) -> int:
    return sum(message_chars(m) for m in session.messages)


def test_history_size_follows_every_kind_of_change():
    session = Session(agent="t")
    size = HistorySize()
    assert size.chars(session) == 0
    session.messages += [Message("user", "hello"), Message("assistant", "hi", reasoning="think",
                                                           tool_calls=[ToolCall("c1", "file_read", '{"p": 1}')])]
    session.messages.append(Message("tool", "x" * 100, tool_call_id="c1", name="file_read"))
    assert size.chars(session) == _count(session)
    session.messages[2].content = "short"
    session.mark_edited(2)
    session.messages.append(Message("user", "more"))
    assert size.chars(session) == _count(session)
    del session.messages[-2:]  # cut back in place
    assert size.chars(session) == _count(session)
    session.messages[-1] = Message("assistant", "replaced at the edge")  # same length, new last object
    assert size.chars(session) == _count(session)
    session.replace_messages(session.messages[:1])
    assert size.chars(session) == _count(session)
    session.messages = [Message("user", "a whole new list")]
    assert size.chars(session) == _count(session)
    session.clear()
    assert size.chars(session) == 0
