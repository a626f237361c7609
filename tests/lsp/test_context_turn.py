"""`ollie/context` says how the session's turn stood when its messages were read: a client draws from one answer."""

from __future__ import annotations

import asyncio
import threading

from ollie.testing import Reply
from tests.longsession import saved_session


async def test_context_says_whether_the_running_turn_is_in_its_messages(start_daemon, llm):
    # A client that asked `ollie/state` and then `ollie/context` could see "idle" and a queued turn's prompt
    # already in the history (the turn began between the two): it drew that prompt as never answered.
    sid = saved_session(4)
    # A resumed session's first turn waits for the model's context length before its prompt is saved: held here.
    llm.models_gate.clear()
    # The reply's first word comes only after 30 s: the test interrupts it before.
    llm.script(Reply(text="ab", chunk_size=1, delay=30))
    daemon = await start_daemon(env=llm.env())
    await daemon.request("ollie/session/load", {"session": sid})
    submit = asyncio.ensure_future(daemon.request("ollie/submit", {"session": sid, "text": "new prompt"}, timeout=60))
    try:
        await daemon.wait_events(lambda events: any(e["role"] == "turn" and e["content"] == "start" for e in events))
        starting = await daemon.request("ollie/context", {"session": sid})
    finally:
        llm.models_gate.set()
    assert starting["running"] is True and starting["answering"] is False
    assert starting["messages"][-1] == {"role": "assistant", "content": "answer 0"}

    while not llm.chat_requests:  # the model asked (with the prompt): the reply on its way
        await asyncio.sleep(0.01)
    answering = await daemon.request("ollie/context", {"session": sid})
    assert answering["running"] is True and answering["answering"] is True
    # Its number: the session's first numbered turn (the saved one has none of its own).
    assert answering["messages"][-1] == {"role": "user", "content": "new prompt", "turn": 1}
    # The page asked need not hold the prompt: the fields are the session's, not the page's.
    first = await daemon.request("ollie/context", {"session": sid, "limit": 1})
    assert first["running"] is True and first["answering"] is True

    await daemon.request("ollie/interrupt", {"session": sid})
    assert (await submit)["stop"] == "interrupted"
    ended = await daemon.request("ollie/context", {"session": sid})
    assert ended["running"] is False and ended["answering"] is False
    # Cut off before its first word: the prompt stays unanswered, and no turn runs (a client says so).
    assert ended["messages"][-1] == {"role": "user", "content": "new prompt", "turn": 1}


async def test_context_seq_parts_the_events_the_history_holds_from_those_it_does_not(start_daemon, llm):
    # A client redrawing from the history holds the events that come meanwhile: it must know which of them the
    # history holds. Before, it guessed by the prompt's text (two queued "continue" looked like one).
    llm.script(*[Reply(text=f"answer {n} " * 8, chunk_size=3, delay=0.005) for n in range(4)])
    daemon = await start_daemon(env=llm.env())
    sid = (await daemon.request("ollie/state", {}))["session"]
    for _ in range(3):
        await daemon.request("ollie/queue", {"text": "continue"})
    submit = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "continue"}, timeout=60))
    answers = []
    while not submit.done():
        answers.append(await daemon.request("ollie/context", {}))
    answers.append(await daemon.request("ollie/context", {}))
    events = daemon.session_events(sid)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    for answer in answers:
        # The history holds the prompt of each turn whose `turn` start is at or before `seq`, and no other.
        starts = sum(e["role"] == "turn" and e["content"] == "start" and e["seq"] <= answer["seq"] for e in events)
        assert sum(m["role"] == "user" for m in answer["messages"]) == starts, (answer, events)
    assert answers[-1]["seq"] == events[-1]["seq"] and not answers[-1]["running"]
    assert any(a["running"] for a in answers), "no history was read during the turns"


async def test_context_gives_the_reply_so_far_of_the_answering_turn(start_daemon, llm):
    # A chat switched back to a session mid-answer (its events went by while it showed another) drew "…" alone: the
    # history holds no reply until the turn's end. `reply` is what the events up to `seq` streamed of it.
    story = threading.Event()
    llm.script(Reply(text="A long story, told slowly.", reasoning="Which story?", chunk_size=4, hold=story))
    daemon = await start_daemon(env=llm.env())
    submit = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "tell a story"}, timeout=60))
    try:
        said = lambda role, seq: "".join(e["content"] for e in daemon.events if e["role"] == role and e["seq"] <= seq)  # noqa: E731
        await daemon.wait_events(lambda _: said("assistant", 10**9) == "A long story, told slowly.")
        answering = await daemon.request("ollie/context", {})
        assert answering["answering"] is True and answering["messages"][-1]["content"] == "tell a story"
        assert answering["reply"] == {"content": "A long story, told slowly.", "reasoning": "Which story?"}
        assert said("assistant", answering["seq"]) == answering["reply"]["content"]
    finally:
        story.set()
    await submit
    ended = await daemon.request("ollie/context", {})
    assert "reply" not in ended and ended["messages"][-1]["content"] == "A long story, told slowly."
