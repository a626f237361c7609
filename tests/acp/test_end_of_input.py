"""A client that closes `ollie acp`'s stdin right after a request still gets the whole answer."""

from __future__ import annotations

import asyncio
import json
import subprocess

import acp
from acp.connection import StreamDirection, StreamEvent

from ollie.testing import Reply

from .conftest import AGENT_COMMAND, RecordingClient, child_env

# Several times what the pipe holds (64 KiB), less than the writer's high-water mark: the answer's tail is still
# queued in the agent when its reading ends.
NAME = "d" * 200 + "/"


async def test_stdin_closed_after_a_request_still_gets_its_whole_answer(tmp_path, _private_dirs):
    # The agent cancelled a request that was not answered yet at the end of its input, and an answer already
    # written (a 900 KB -32602) was cut at the pipe's 64 KiB: the process exited with the rest unsent.
    cwd = "/nowhere/" + NAME * 4500
    sent = asyncio.Event()

    def observe(event: StreamEvent) -> None:
        if event.direction is StreamDirection.OUTGOING and event.message.get("method") == "session/new":
            sent.set()

    async with acp.spawn_agent_process(RecordingClient(), *AGENT_COMMAND, env=child_env(), cwd=tmp_path,
                                       observers=[observe]) as (conn, proc):
        await asyncio.wait_for(conn.initialize(protocol_version=1), 60)
        answer = asyncio.ensure_future(conn.new_session(cwd=cwd, mcp_servers=[]))
        await asyncio.wait_for(sent.wait(), 30)
        proc.stdin.close()  # the client's last word
        try:
            await asyncio.wait_for(answer, 30)
        except acp.RequestError as exc:
            error = exc
        assert error.code == -32602, error
        assert error.data == {"cwd": f"{cwd} is not an existing absolute directory"}, str(error.data)[:300]
        assert await asyncio.wait_for(proc.wait(), 30) == 0


async def test_stdin_closed_during_a_turn_stops_it_and_the_prompt_answers_cancelled(start_agent, llm):
    # The SDK cancelled the prompt's handler at the end of the input: the client waiting on it got no answer.
    llm.script(Reply(text="word " * 3000, chunk_size=5, delay=0.1))  # ~5 minutes of streaming
    agent = await start_agent(env=llm.env())
    sid = await agent.new()
    answer = asyncio.ensure_future(agent.prompt(sid, "talk"))
    await agent.updates(sid, "agent_message_chunk")
    agent.proc.stdin.close()
    assert (await asyncio.wait_for(answer, 30)).stop_reason == "cancelled"
    assert await asyncio.wait_for(agent.proc.wait(), 30) == 0


def test_a_request_whose_id_is_an_object_leaves_the_agent_serving(tmp_path, _private_dirs):
    # The ids awaiting an answer are kept in a set: an object's id (unhashable) ended the agent's reading.
    lines = [{"jsonrpc": "2.0", "id": {"x": 1}, "method": "initialize", "params": {"protocolVersion": 1}},
             {"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {"protocolVersion": 1}}]
    out = subprocess.run(AGENT_COMMAND, input=b"".join(json.dumps(line).encode() + b"\n" for line in lines),
                         capture_output=True, timeout=120, env=child_env(), cwd=tmp_path)
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    assert any(a.get("id") == 9 and "result" in a for a in map(json.loads, out.stdout.splitlines())), out.stdout
