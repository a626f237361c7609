"""The queue through the daemon: held after an interrupt, visible in ollie/state, run or cleared on the user's word."""

from __future__ import annotations

import asyncio
import threading

from ollie.testing import Reply


def turn_log(events: list[dict], session: str) -> list[tuple[str, str]]:
    return [(e["role"], e["content"]) for e in events if e["session"] == session and e["role"] in ("turn", "user")]


async def test_after_an_interrupt_queued_prompts_wait_for_the_users_word(start_daemon, llm):
    hold = threading.Event()  # the first answer streams until the interrupt (set after it, for the server's end)
    llm.script(Reply.text("a slow answer", hold=hold), Reply.text("fresh answer"),
               Reply.text("second answer"), Reply.text("third answer"))
    daemon = await start_daemon(env=llm.env())
    first = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "first"}))
    await daemon.wait_events(lambda evs: any(e["role"] == "assistant" for e in evs))
    assert await daemon.request("ollie/queue", {"text": "second"}) == {"depth": 1}
    assert await daemon.request("ollie/queue", {"text": "third"}) == {"depth": 2}
    assert (await daemon.request("ollie/interrupt", {}))["interrupted"] is True
    hold.set()
    session = (await first)["session"]
    await asyncio.sleep(0.8)  # a while after the interrupt: nothing runs on its own (held)
    state = await daemon.request("ollie/state", {})
    assert (state["queued"], state["queuedPrompts"], state["queueHeld"]) == (2, ["second", "third"], True)
    assert len(llm.chat_requests) == 1

    fresh = await daemon.request("ollie/submit", {"text": "fresh"})  # the user's new prompt runs alone
    assert fresh["reply"] == "fresh answer" and len(llm.chat_requests) == 2
    assert (await daemon.request("ollie/state", {}))["queuedPrompts"] == ["second", "third"]

    daemon.events.clear()
    assert await daemon.request("ollie/queue/run", {}) == {"queued": []}
    assert turn_log(daemon.events, session) == [
        ("turn", "start"), ("user", "second"), ("turn", "end"),
        ("turn", "start"), ("user", "third"), ("turn", "end"),
    ]
    state = await daemon.request("ollie/state", {})
    assert (state["queuedPrompts"], state["queueHeld"]) == ([], False)


async def test_queue_clear_drops_held_prompts(start_daemon, llm):
    hold = threading.Event()
    llm.script(Reply.text("slow", hold=hold))
    daemon = await start_daemon(env=llm.env())
    first = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "first"}))
    await daemon.wait_events(lambda evs: any(e["role"] == "assistant" for e in evs))
    await daemon.request("ollie/queue", {"text": "later"})
    assert (await daemon.request("ollie/interrupt", {}))["interrupted"] is True
    hold.set()
    await first
    assert await daemon.request("ollie/queue/clear", {}) == {"cleared": 1}
    state = await daemon.request("ollie/state", {})
    assert (state["queuedPrompts"], state["queueHeld"]) == ([], False)


async def test_a_prompt_queued_just_as_the_turn_ended_runs(start_daemon, llm):
    llm.script(Reply.text("done"), Reply.text("late answer"))
    daemon = await start_daemon(env=llm.env())
    result = await daemon.request("ollie/submit", {"text": "quick"})
    assert await daemon.request("ollie/queue", {"text": "late"}) == {"depth": 1}
    await daemon.wait_events(lambda evs: ("user", "late") in turn_log(evs, result["session"]))
    await daemon.wait_events(lambda evs: turn_log(evs, result["session"])[-1] == ("turn", "end"))
    assert len(llm.chat_requests) == 2
    assert (await daemon.request("ollie/state", {}))["queuedPrompts"] == []
