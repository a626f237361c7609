"""A long session's `session/load` replays its history in pages: the agent's other sessions are answered meanwhile,
each answer behind at most a page of the replay."""

from __future__ import annotations

import asyncio
import json

from ollie import paths
from ollie.backend.types import Message, ToolCall
from ollie.sessions.persist import SessionFile
from ollie.sessions.session import Session
from ollie_acp.agent import REPLAY_PAGE
from tests.longsession import saved_session

SIZE = 20_000


async def test_loading_a_20k_message_session_answers_other_sessions_behind_a_page_of_its_replay(start_agent,
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


async def test_a_saved_prompt_of_unclosed_context_opens_and_blank_lines_replays_at_once(start_agent, llm) -> None:
    """Round 38: a session log not of this ollie's making (a teammate's row in a shared store, a copied file), or a
    prompt the user pasted a hostile file into: 20,000 lines of `<editor-context>` never closed, 40,000 blank lines,
    a `File:` header of 50,000 ` (`s. The replay's labels of the prompt's blocks tried each open to the prompt's
    end and each blank line's run again (the regex holds the GIL, in its thread or not): minutes, every session of
    the agent held. Now linear: the load answers at once and replays the words as they were."""
    from ollie import paths
    from ollie.backend.types import Message
    from ollie.sessions.persist import SessionFile
    from ollie.sessions.session import Session

    opens = "<editor-context>\n" * 20_000
    header = "<editor-context>\nFile: a" + " (" * 50_000 + "\n</editor-context>"
    session = Session(agent="default")
    session.messages += [Message("user", f"{header}\n\nlook{chr(10) * 40_000}at {opens}this"),
                         Message("assistant", "seen")]
    SessionFile(paths.sessions_dir(), session.id).save(session)
    agent = await start_agent(env=llm.env())
    await asyncio.wait_for(agent.conn.load_session(cwd=str(agent.workspace), session_id=session.id, mcp_servers=[]),
                           60)
    [replayed] = agent.client.of(session.id, "user_message_chunk")
    assert replayed.content.text == f"[a{' (' * 50_000}] look{chr(10) * 40_000}at {opens}this"


async def test_a_load_diffs_no_turn_that_logged_no_checkpoint_here_whatever_its_step_files(start_agent, llm) -> None:
    """Round 40: a session log of 1,000 turns whose `step_files` name a changed file for a call of each (a copied or
    crafted log; a long session loaded in another directory). The load looked up each turn's checkpoints in git
    again (a git run or two a turn: seconds of them for one load), the session's live updates held meanwhile;
    the turns' checkpoints are listed once, and a turn that logged none here is not diffed."""
    session = Session(agent="default")
    for n in range(1000):
        session.turn_starts.append(len(session.messages))
        session.messages += [Message("user", f"prompt {n}"),
                             Message("assistant", "", tool_calls=[ToolCall(f"c{n}", "execute_code", '{"steps": []}')]),
                             Message("tool", f"result {n}", tool_call_id=f"c{n}", name="execute_code"),
                             Message("assistant", f"answer {n}")]
        session.step_files[f"c{n}"] = ["app.py"]
    SessionFile(paths.sessions_dir(), session.id).save(session)
    agent = await start_agent(env={**llm.env(), "OLLIE_LOG_LEVEL": "debug"})
    await asyncio.wait_for(agent.conn.load_session(cwd=str(agent.workspace), session_id=session.id, mcp_servers=[]),
                           300)
    assert len(agent.client.of(session.id, "user_message_chunk")) == 1000
    logged = [json.loads(line) for line in (paths.state_dir() / "ollie.log").read_text().splitlines()]
    assert [e for e in logged if e["msg"] == "turn changes diffed"] == []
