"""A client that reads a long session's replay slowly (a loaded machine, a big history) gets it paced and whole: the
agent waits on it while it keeps reading, not for a fixed time."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ollie_acp.agent import REPLAY_PAGE
from tests.acp.conftest import AGENT_COMMAND, child_env
from tests.longsession import saved_session

# The agent's wait on a reader that takes nothing (5 s by default), and the reader's pace: a page (500 updates) takes
# it 4 s, twice what the agent once waited for a page in all.
STALL = {"OLLIE_FLUSH_STALL_S": "2"}
PACE_S = 0.008


@contextmanager
def raw_agent(workspace: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """`ollie acp` over plain pipes, initialized: the test reads its stdout at its own pace."""
    workspace.mkdir()
    proc = subprocess.Popen(AGENT_COMMAND, env=child_env(env), cwd=workspace, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        send(proc, 1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert proc.stdout is not None
        while "result" not in json.loads(proc.stdout.readline()):
            pass
        yield proc
    finally:
        proc.kill()
        proc.wait()


def send(proc: subprocess.Popen[bytes], msg_id: int, method: str, params: dict[str, Any]) -> None:
    """Write one request line."""
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode() + b"\n")
    proc.stdin.flush()


def messages(stdout: IO[bytes], pace: float) -> Iterator[dict[str, Any]]:
    """The agent's messages, each read `pace` seconds after the one before, until its output ends."""
    while line := stdout.readline():
        yield json.loads(line)
        time.sleep(pace)


def load(proc: subprocess.Popen[bytes], sid: str, cwd: Path) -> None:
    """Ask for session `sid` to be loaded (request 2)."""
    send(proc, 2, "session/load", {"sessionId": sid, "cwd": str(cwd), "mcpServers": []})


def test_a_slow_reader_of_a_replay_gets_other_answers_behind_a_page_not_the_history(tmp_path, _private_dirs, llm):
    # `read_by_client` waited 5 s (here 2) in all for a page to be read: a reader slower than that had the next pages
    # sent on, and an answer to another request waited behind them (the whole history, up to the 1 MiB high-water mark).
    sid = saved_session(3 * REPLAY_PAGE)
    with raw_agent(tmp_path / "ws", {**llm.env(), **STALL}) as proc:
        assert proc.stdout is not None
        load(proc, sid, tmp_path / "ws")
        updates, answered_after = 0, None
        for message in messages(proc.stdout, PACE_S):
            if message.get("method") == "session/update":
                updates += 1
                if updates == REPLAY_PAGE * 4 // 5:  # 3.2 s into the first page: another request comes
                    send(proc, 3, "session/list", {})
            elif message.get("id") == 3:
                assert "result" in message, message
                answered_after = updates
                break
    assert answered_after is not None and REPLAY_PAGE <= answered_after < 2 * REPLAY_PAGE, answered_after


def test_a_client_that_ends_its_input_after_a_load_gets_the_whole_replay_however_slowly_it_reads(tmp_path,
                                                                                                _private_dirs, llm):
    # At the end of its input the agent waited 5 s (here 2) in all for the requests' answers: a load still sending its
    # replay to a slow reader was then cancelled, its answer and the rest of the history never sent.
    sid = saved_session(2 * REPLAY_PAGE)
    with raw_agent(tmp_path / "ws", {**llm.env(), **STALL}) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        load(proc, sid, tmp_path / "ws")
        proc.stdin.close()
        received = list(messages(proc.stdout, PACE_S / 2))  # 4 s for the replay
        assert proc.wait(60) == 0
    answer = next(n for n, m in enumerate(received) if m.get("id") == 2)
    assert received[answer].get("result") is not None, received[answer]
    updates = [m for m in received[:answer] if m.get("method") == "session/update"]
    assert len(updates) == 2 * REPLAY_PAGE and updates[-1]["params"]["update"]["content"]["text"] == \
        f"answer {2 * REPLAY_PAGE // 4 - 1}"
