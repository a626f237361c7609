"""A history rewrite of a long session (a fork) writes its snapshot off the event loop: other sessions are served."""

from __future__ import annotations

import asyncio
import time

from ollie import paths
from ollie.sessions import persist
from tests.longsession import saved_session

SIZE = 100_000


async def test_forking_a_100k_message_session_leaves_other_sessions_served(start_daemon, llm):
    # The fork's first save encoded and wrote all 100,000 messages on the loop every session shares (~2 s frozen).
    sid = saved_session(SIZE)
    daemon = await start_daemon(env=llm.env())
    probe = (await daemon.request("ollie/state", {}))["session"]
    waits: list[float] = []
    forked = asyncio.Event()

    async def probing() -> None:
        while not forked.is_set():  # (a request cancelled unanswered upsets the test's LSP client)
            sent = time.perf_counter()
            await daemon.request("ollie/state", {"session": probe}, timeout=120)
            waits.append(time.perf_counter() - sent)

    prober = asyncio.ensure_future(probing())
    started = time.perf_counter()
    fid = (await daemon.request("ollie/session/fork", {"session": sid}, timeout=300))["session"]
    took = time.perf_counter() - started
    forked.set()
    await prober
    # Closed, the fork's log is whole: every message saved (the write ran in a thread, not skipped).
    await daemon.request("ollie/session/close", {"session": fid}, timeout=120)
    assert len(persist.load(paths.sessions_dir(), fid).messages) == SIZE
    # The fork itself reads and writes 100k messages (seconds here); a probe waited through all of the write before.
    assert len(waits) > 5 and max(waits) < took / 4, (max(waits), took, len(waits))

