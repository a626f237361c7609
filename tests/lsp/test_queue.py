"""The queue through the daemon: held after an interrupt, visible in ollie/state, run or cleared on the user's word."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from ollie.agent.inbox import MAX_QUEUED
from ollie.testing import Reply
from tests.pictures import png


def turn_log(events: list[dict], session: str) -> list[tuple[str, str]]:
    return [(e["role"], e["content"]) for e in events if e["session"] == session and e["role"] in ("turn", "user")]


async def test_after_an_interrupt_queued_prompts_wait_for_the_users_word(shared_daemon, llm):
    hold = threading.Event()  # the first answer streams until the interrupt (set after it, for the server's end)
    llm.script(Reply.text("a slow answer", hold=hold), Reply.text("fresh answer"),
               Reply.text("second answer"), Reply.text("third answer"))
    daemon = await shared_daemon(env=llm.env())
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


async def test_queue_clear_drops_held_prompts(shared_daemon, llm):
    hold = threading.Event()
    llm.script(Reply.text("slow", hold=hold))
    daemon = await shared_daemon(env=llm.env())
    first = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "first"}))
    await daemon.wait_events(lambda evs: any(e["role"] == "assistant" for e in evs))
    await daemon.request("ollie/queue", {"text": "later"})
    assert (await daemon.request("ollie/interrupt", {}))["interrupted"] is True
    hold.set()
    await first
    assert await daemon.request("ollie/queue/clear", {}) == {"cleared": 1}
    state = await daemon.request("ollie/state", {})
    assert (state["queuedPrompts"], state["queueHeld"]) == ([], False)


def last_end(events: list[dict], session: str) -> int:
    """The `seq` of the session's last `turn` end event received."""
    return [e["seq"] for e in events if e["session"] == session and e["role"] == "turn" and e["content"] != "start"][-1]


async def test_a_prompt_queued_before_the_client_saw_the_turns_end_runs_however_late_it_comes(shared_daemon, llm):
    """Its `seen` is before the `turn` end: the client queued it for the turn it saw running. It reaches the daemon
    after the client has the end and the session is idle (as late as a loaded machine makes it), and runs at once."""
    llm.script(Reply.text("done"), Reply.text("late answer"))
    daemon = await shared_daemon(env=llm.env())
    session = (await daemon.request("ollie/submit", {"text": "quick"}))["session"]
    state = await daemon.request("ollie/state", {})
    assert (state["running"], state["queuedPrompts"]) == (False, [])
    assert await daemon.request("ollie/queue", {"text": "late", "seen": last_end(daemon.events, session) - 1}) == {
        "depth": 1}
    await daemon.wait_events(lambda evs: turn_log(evs, session)[-3:] == [("turn", "start"), ("user", "late"),
                                                                         ("turn", "end")])
    assert len(llm.chat_requests) == 2
    assert (await daemon.request("ollie/state", {}))["queuedPrompts"] == []


async def test_a_prompt_queued_before_the_client_saw_a_stop_end_the_turn_waits_for_the_next_turn(shared_daemon, llm):
    """Its `seen` is before the `turn` end, but a Stop ended that turn: it does not run on its own (a Stop starts
    nothing after it), and runs after the next prompt's turn."""
    hold = threading.Event()  # the first answer streams until the interrupt (set after it, for the server's end)
    llm.script(Reply.text("a slow answer", hold=hold), Reply.text("next answer"), Reply.text("queued answer"))
    daemon = await shared_daemon(env=llm.env())
    first = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "first"}))
    await daemon.wait_events(lambda evs: any(e["role"] == "assistant" for e in evs))
    assert (await daemon.request("ollie/interrupt", {}))["interrupted"] is True
    hold.set()
    session = (await first)["session"]
    seen = last_end(daemon.events, session) - 1
    assert await daemon.request("ollie/queue", {"text": "late", "seen": seen}) == {"depth": 1}
    state = await daemon.request("ollie/state", {})
    assert (state["running"], state["queuedPrompts"], state["queueHeld"]) == (False, ["late"], False)
    daemon.events.clear()
    assert (await daemon.request("ollie/submit", {"text": "next"}))["reply"] == "next answer"
    assert turn_log(daemon.events, session) == [
        ("turn", "start"), ("turn", "end"), ("turn", "start"), ("user", "late"), ("turn", "end"),
    ]


@pytest.mark.parametrize("saw", ["the end", "nothing said"])
async def test_a_prompt_queued_once_the_client_saw_the_turns_end_waits_for_the_next_turn(shared_daemon, llm, saw):
    """Its `seen` is the `turn` end (or, from a client that does not send `seen`, taken as such): queued while idle,
    it waits for the next turn's end, however soon after the end it comes."""
    llm.script(Reply.text("done"), Reply.text("next answer"), Reply.text("queued answer"))
    daemon = await shared_daemon(env=llm.env())
    session = (await daemon.request("ollie/submit", {"text": "quick"}))["session"]
    seen = {"seen": last_end(daemon.events, session)} if saw == "the end" else {}
    assert await daemon.request("ollie/queue", {"text": "for later", **seen}) == {"depth": 1}
    state = await daemon.request("ollie/state", {})
    assert (state["running"], state["queuedPrompts"]) == (False, ["for later"])
    assert len(llm.chat_requests) == 1
    daemon.events.clear()
    assert (await daemon.request("ollie/submit", {"text": "next"}))["reply"] == "next answer"
    assert turn_log(daemon.events, session) == [
        ("turn", "start"), ("turn", "end"), ("turn", "start"), ("user", "for later"), ("turn", "end"),
    ]
    assert (await daemon.request("ollie/state", {}))["queuedPrompts"] == []


async def test_a_bad_seen_is_refused_naming_it(shared_daemon):
    daemon = await shared_daemon()
    for seen in (-1, 1.5, "3", True):
        with pytest.raises(JsonRpcException) as caught:
            await daemon.request("ollie/queue", {"text": "x", "seen": seen})
        assert caught.value.code == -32602 and "seen" in caught.value.message, (seen, caught.value)
    assert (await daemon.request("ollie/state", {}))["queuedPrompts"] == []


async def test_a_full_queue_refuses_the_next_prompt_and_keeps_what_waits(shared_daemon, llm):
    """Bug: the queue had no bound: each prompt up to 40 MiB of images, any number of them, all in the daemon's memory.
    Past MAX_QUEUED prompts, or two prompts of images at the cap, one more is -32010 saying what to do, and what
    waits stays queued."""
    hold = threading.Event()
    llm.script(Reply.text("slow", hold=hold))
    daemon = await shared_daemon(env={**llm.env(), "OLLIE_MAX_IMAGE_BYTES": "1000"})  # the queue holds 16,000 bytes
    picture = png(5, 3) + b"\0" * 800
    (daemon.workspace / "shot.png").write_bytes(picture)
    first = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "first"}))
    await daemon.wait_events(lambda evs: any(e["role"] == "assistant" for e in evs))
    eight = [{"path": "shot.png"}] * 8
    for text in ("one", "two"):
        await daemon.request("ollie/queue", {"text": text, "images": eight})
    # Sizes a person reads (they said "0.0 MiB" of kilobytes).
    for method, params, size in (("ollie/queue", {"text": "three", "images": eight}, "6.8 KiB"),
                                 ("ollie/inject", {"text": "x" * 4000}, "3.9 KiB")):
        with pytest.raises(JsonRpcException) as caught:
            await daemon.request(method, params)
        assert caught.value.code == -32010 and caught.value.message == (
            f"queue full: this prompt's {size} and the 13.6 KiB waiting in this session are over the 15.6 KiB it"
            " queues: let them run first, or send fewer or smaller images"), caught.value
    for n in range(2, MAX_QUEUED):
        await daemon.request("ollie/queue", {"text": f"p{n}"})
    with pytest.raises(JsonRpcException) as caught:
        await daemon.request("ollie/queue", {"text": "one too many"})
    assert caught.value.code == -32010 and caught.value.message == (
        f"queue full: {MAX_QUEUED} prompts wait in this session, the most it queues: let them run first, or drop"
        " them (/queued clear)")
    state = await daemon.request("ollie/state", {})
    assert state["queuedPrompts"] == ["one", "two", *(f"p{n}" for n in range(2, MAX_QUEUED))]
    assert (await daemon.request("ollie/interrupt", {}))["interrupted"] is True
    hold.set()
    await first
    assert await daemon.request("ollie/queue/clear", {}) == {"cleared": MAX_QUEUED}


async def test_a_queued_prompts_context_items_count_in_the_queues_bound(shared_daemon, llm):
    """A queued prompt keeps its context items as the client sent them (ollie/popQueue hands them back) besides their
    blocks in its text: a selection was held twice but counted once, so twice the bound could wait."""
    hold = threading.Event()
    llm.script(Reply.text("slow", hold=hold))
    daemon = await shared_daemon(env={**llm.env(), "OLLIE_MAX_IMAGE_BYTES": "1000"})  # the queue holds 16,000 bytes
    (daemon.workspace / "a.py").write_text("x = 1\n")
    first = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "first"}))
    await daemon.wait_events(lambda evs: any(e["role"] == "assistant" for e in evs))
    item = {"uri": (daemon.workspace / "a.py").as_uri(), "selection": "y" * 5000,
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 5}}}
    await daemon.request("ollie/queue", {"text": "one", "context": item})
    with pytest.raises(JsonRpcException) as caught:
        await daemon.request("ollie/queue", {"text": "two", "context": item})
    assert caught.value.code == -32010 and "waiting in this session are over the 15.6 KiB it queues" in str(caught.value)
    assert (await daemon.request("ollie/popQueue", {}))["context"] == [item]  # what waits is kept, as it was sent
    assert (await daemon.request("ollie/interrupt", {}))["interrupted"] is True
    hold.set()
    await first


async def test_a_stop_while_a_queued_prompts_images_are_read_holds_it(shared_daemon, llm):
    """The Stop comes while the daemon reads the queued prompt's 40 MiB of images (sent at once after the queue, as a
    user stops right after queueing): the prompt is held as one queued before the Stop, not run after the next prompt.
    Bug: whether a Stop came was taken before the images were read. A fresh session (its record put off) has no store
    read before them: the reading is the queue's first wait, where the Stop lands."""
    daemon = await shared_daemon(env=llm.env())
    session = {"session": (await daemon.request("ollie/session/new", {"cwd": str(daemon.workspace)}))["session"]}
    picture = png(5, 3)
    (daemon.workspace / "big.png").write_bytes(picture + b"\0" * (5 * 2**20 - len(picture)))
    images = [{"path": "big.png"}] * 8
    queued = asyncio.ensure_future(daemon.request("ollie/queue", {**session, "text": "look", "images": images}))
    stopped = asyncio.ensure_future(daemon.request("ollie/interrupt", session))
    assert await queued == {"depth": 1} and (await stopped)["interrupted"] is False
    state = await daemon.request("ollie/state", session)
    assert (state["queuedPrompts"], state["queueHeld"]) == (["look"], True)


def _peak_rss(pid: int) -> int:
    """The process's peak resident memory so far, in bytes (VmHWM)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))) * 1024


async def test_queued_prompts_sent_at_once_read_no_images_past_the_queues_room(start_daemon, llm):
    """Round 40: a client sends 24 `ollie/queue` requests at once, each naming a 1 MiB image 8 times (a few hundred
    bytes each). Bug: each request read its 8 MiB (and its base64) before the queue's bound refused it, all at once:
    ~24 times a prompt's images held by the daemon (the bound held only what stayed queued). A session's queued
    prompts are taken one at a time, and one the queue has no room for is refused before its images are read."""
    daemon = await start_daemon(env={**llm.env(), "OLLIE_MAX_IMAGE_BYTES": str(1 << 20)})  # the queue holds 16 MiB
    session = {"session": (await daemon.request("ollie/session/new", {"cwd": str(daemon.workspace)}))["session"]}
    picture = png(5, 3)
    (daemon.workspace / "big.png").write_bytes(picture + b"\0" * ((1 << 20) - 4096))  # two prompts of them fit
    pid = daemon.client._server.pid  # type: ignore[union-attr]
    before = _peak_rss(pid)
    sent = [daemon.request("ollie/queue", {**session, "text": f"look {n}", "images": [{"path": "big.png"}] * 8})
            for n in range(24)]
    answers = await asyncio.gather(*sent, return_exceptions=True)
    refused = [a for a in answers if isinstance(a, JsonRpcException)]
    assert len(refused) == 22 and all(a.code == -32010 for a in refused), answers
    grown = _peak_rss(pid) - before
    assert grown < 80 << 20, f"the daemon's peak memory grew by {grown >> 20} MiB"
    assert len((await daemon.request("ollie/state", session))["queuedPrompts"]) == 2


async def test_prompts_with_images_waiting_in_many_sessions_stay_under_the_daemons_bound(start_daemon, llm):
    """A client sends, to each of six sessions whose turns run, two submits and two queued prompts of 8 MiB of images
    each, all at once. Bug: the bound was per session's queue: each submit waiting for its turn held its images, and
    each session queued 16 MiB, so the daemon held 192 MiB (256 of base64), as much again for each session more. What
    all sessions wait with is held to four prompts of images at the cap: past that -32010, and nothing is lost (each
    one taken runs with its images)."""
    hold = threading.Event()
    llm.script(*[Reply.text("slow", hold=hold)] * 6, *[Reply.text("saw it")] * 4)
    daemon = await start_daemon(env={**llm.env(), "OLLIE_MAX_IMAGE_BYTES": str(1 << 20)})  # four prompts: 32 MiB
    picture = png(5, 3)
    (daemon.workspace / "big.png").write_bytes(picture + b"\0" * ((1 << 20) - 4096))
    sessions = [(await daemon.request("ollie/session/new", {"cwd": str(daemon.workspace)}))["session"] for _ in range(6)]
    running = [asyncio.ensure_future(daemon.request("ollie/submit", {"session": s, "text": "first"})) for s in sessions]
    await daemon.wait_events(lambda evs: len({e["session"] for e in evs if e["role"] == "assistant"}) == 6)
    pid = daemon.client._server.pid  # type: ignore[union-attr]
    before = _peak_rss(pid)
    eight = [{"path": "big.png"}] * 8
    sent = [asyncio.ensure_future(daemon.request(method, {"session": s, "text": f"look {n}", "images": eight}))
            for s in sessions for n, method in enumerate(("ollie/submit", "ollie/queue") * 2)]
    # Four are taken (their images read): the submits among them wait for their turns, every other one answers now.
    with contextlib.suppress(TimeoutError):  # a bound for the bug only: too few refused, the rest never answer
        async with asyncio.timeout(30):
            while sum(1 for t in sent if t.done() and t.exception()) < 20:
                await asyncio.wait([t for t in sent if not t.done()], return_when=asyncio.FIRST_COMPLETED)
    grown = _peak_rss(pid) - before
    assert grown < 80 << 20, f"the daemon's peak memory grew by {grown >> 20} MiB"
    refused = [t.exception() for t in sent if t.done() and t.exception()]
    assert len(refused) == 20 and all(isinstance(e, JsonRpcException) and e.code == -32010 for e in refused), refused
    assert "of prompts waiting in this daemon's sessions are over the 32 MiB it holds" in str(refused[0]), refused[0]
    hold.set()
    assert all(r["reply"] == "slow" for r in await asyncio.gather(*running))
    taken = await asyncio.gather(*[t for t in sent if not t.done() or not t.exception()])
    assert len(taken) == 4 and all(t.get("reply", "saw it") == "saw it" for t in taken), taken
    # The queued ones run too (after their session's turn, once the submit waiting there has run): each its images.
    await daemon.wait_events(lambda evs: sum(1 for e in evs if e["role"] == "turn" and e["content"] == "end") == 10)
    users = [m for s in sessions for m in (await daemon.request("ollie/context", {"session": s}))["messages"]
             if m["role"] == "user"]
    assert sorted(len(m.get("images", [])) for m in users) == [0] * 6 + [8] * 4


async def test_a_stop_while_a_submits_context_is_read_keeps_its_images_counted(start_daemon, llm, _private_dirs):
    """Red team round 47: a submit of 8 MiB of images with an MCP resource as context (its server hangs), then a stop:
    the stop took the submit out of those counted, yet it went on holding its images until the read ended (120 s), so
    four more such prompts were taken, one past the daemon's bound (and as many again at each stop)."""
    from .test_mcp import configure, hung_server, state_dir, wait_state

    configure(_private_dirs, {"h": hung_server()})
    daemon = await start_daemon(env={**llm.env(), "OLLIE_MAX_IMAGE_BYTES": str(1 << 20)})  # four prompts: 32 MiB
    (daemon.workspace / "big.png").write_bytes(png(5, 3) + b"\0" * ((1 << 20) - 4096))
    await wait_state(daemon, "h", "ready")
    calls = state_dir(_private_dirs, "h") / "calls"
    prompt = {"text": "look", "images": [{"path": "big.png"}] * 8, "context": [{"uri": "note://x", "mcpServer": "h"}]}

    async def sent(reads: int) -> asyncio.Future[Any]:
        """A prompt sent: refused, or taken (its images read, its resource asked of the hung server)."""
        request = asyncio.ensure_future(daemon.request("ollie/submit", prompt, timeout=300))
        while not request.done() and len(calls.read_text().splitlines() if calls.exists() else []) < reads:
            await asyncio.sleep(0.05)
        return request

    first = await sent(1)
    assert (await daemon.request("ollie/interrupt", {}))["interrupted"] is True
    taken = [await sent(n) for n in (2, 3, 4)]
    assert not any(t.done() for t in taken)  # 32 MiB held: the first's 8 with these three's
    refused = await sent(5)
    assert refused.done(), "taken past the daemon's bound"
    error = refused.exception()
    assert isinstance(error, JsonRpcException) and error.code == -32010 and "over the 32 MiB it holds" in str(error)
    for request in (first, *taken):
        request.cancel()
