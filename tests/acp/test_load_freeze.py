"""A long session's `session/load` replays its history in pages: the agent's other sessions are answered meanwhile,
each answer behind at most a page of the replay."""

from __future__ import annotations

import asyncio

from ollie_acp.agent import REPLAY_PAGE
from tests.longsession import saved_session

SIZE = 40_000


async def test_loading_a_40k_message_session_answers_other_sessions_behind_a_page_of_its_replay(start_agent,
                                                                                                   llm) -> None:
    # The replay's 40,000 updates went out back to back: the agent's loop held while the client kept up, and an
    # answer to another session queued behind a megabyte of them (the pipe's high-water mark) when it did not.
    sid = saved_session(SIZE)
    agent = await start_agent(env=llm.env())
    probe = await agent.new()
    loaded = asyncio.Event()
    answers = 0

    async def probing() -> None:
        nonlocal answers
        while not loaded.is_set():
            await asyncio.wait_for(agent.conn.set_session_mode(session_id=probe, mode_id="read-only"), 120)
            answers += 1

    start = len(agent.wire)
    prober = asyncio.ensure_future(probing())
    await asyncio.wait_for(agent.conn.load_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[]), 300)
    loaded.set()
    await prober
    # The whole history came, in order: each round's prompt, its step and result, its answer.
    client = agent.client
    prompts, replies = client.of(sid, "user_message_chunk"), client.of(sid, "agent_message_chunk")
    assert [u.content.text for u in prompts[:2]] == ["prompt 0 ü", "prompt 1 ü"] and len(prompts) == SIZE // 4
    assert len(replies) == SIZE // 4 and replies[-1].content.text == f"answer {SIZE // 4 - 1}"
    kinds = [u.session_update for s, u in client.updates if s == sid]
    assert kinds[:5] == ["user_message_chunk", "tool_call", "tool_call_update", "agent_message_chunk",
                         "user_message_chunk"], kinds[:5]
    # Each probe went out as the one before was answered: the replay's updates between two answers are those the
    # agent sent ahead of the later one. Paged, that is a page or two the client had taken into its reader's buffer
    # (~128 KiB) and the pipe's, besides the one being sent (1,500 here); unpaged, the agent's whole write buffer too
    # (1 MiB: 5,250 here).
    between, most = 0, 0
    for message in agent.wire[start:]:
        if message.get("method") == "session/update" and message["params"]["sessionId"] == sid:
            between += 1
        elif "id" in message and "method" not in message:
            most, between = max(most, between), 0
    assert answers > 5 and most <= 4 * REPLAY_PAGE, (answers, most)
