"""A client that closes `ollie acp`'s stdin right after a request still gets the whole answer."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import select
import subprocess
import time

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


def test_run_in_a_terminal_it_answers_the_lines_typed_until_ctrl_d(tmp_path, _private_dirs):
    # A new user typed `ollie acp` in a shell to try it: it exited at once, status 0, silent. A terminal is one open
    # file behind stdin and stdout: the writer made stdout non-blocking, so stdin's read found nothing typed yet
    # (EAGAIN), taken for the end of the input.
    master, terminal = pty.openpty()
    with subprocess.Popen(AGENT_COMMAND, stdin=terminal, stdout=terminal, stderr=subprocess.DEVNULL, env=child_env(),
                          cwd=tmp_path) as proc:
        os.close(terminal)
        shown = b""
        deadline = time.monotonic() + 60
        # Each typed once the one before is answered: the agent waits on the keyboard (a read begun before the writer
        # was made, the first's, or the second's when the first came early, still blocked).
        for request in (7, 8, 9):
            typed = {"jsonrpc": "2.0", "id": request, "method": "initialize", "params": {"protocolVersion": 1}}
            os.write(master, json.dumps(typed).encode() + b"\n")
            while f'"id":{request},"result"'.encode() not in shown.replace(b" ", b""):  # after the terminal's echo
                assert time.monotonic() < deadline and proc.poll() is None, (proc.poll(), shown)
                if select.select([master], [], [], 1)[0]:
                    shown += os.read(master, 65536)
        os.write(master, b"\x04")  # Ctrl-D: the end of the input
        assert proc.wait(timeout=60) == 0
    os.close(master)
