"""`ollie acp`: spawn -> first agent message chunk, against a minimal agent on the same ACP SDK.

The client is the SDK's own client side, in this process; each agent is a
process of its own (the reference shares no process or GIL with ollie). A
round spawns the agent as an editor does (`ollie acp`, the console script),
then `initialize`, `session/new` and a prompt, until the first
`agent_message_chunk` arrives; the scripted LLM server runs in its own process.
The reference (`bench.acp_minimal`) answers the prompt with one chunk at once:
what any agent on the SDK pays (python, `import acp` and its pydantic schema,
the handshake). Rounds are interleaved. A second row compares the two agents' CPU time (all threads) when
their first chunk arrives. Both run from .pyc files, as installed code does (`fresh_bytecode`: under
PYTHONDONTWRITEBYTECODE=1 the warm-up round writes none, and ollie_acp compiled its ~1,500 lines, ~25 ms of CPU, in
every round). Run alone: python -m bench.bench_acp [ROUNDS]
"""

from __future__ import annotations

import asyncio
import compileall
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, cast

from bench.bench_startup import fresh_bytecode
from bench.common import PYTHON, REPO, Row, child_env, cpu_ms, interleaved, median, run_alone
from bench.llm_process import LLMProcess

MINIMAL = [PYTHON, "-m", "bench.acp_minimal"]
TARGET = 1.3


def ollie_acp() -> list[str]:
    """`ollie acp` as an editor spawns it (the console script beside this python)."""
    found = shutil.which("ollie", path=str(Path(PYTHON).parent))
    return [found, "acp"] if found else [PYTHON, "-m", "ollie_acp"]


class _FirstChunk:
    """An ACP client that notes when the first agent message chunk came."""

    def __init__(self) -> None:
        self.at: float | None = None
        self.pid = 0
        self.cpu = 0.0  # the agent's CPU time (ms) when its first chunk came
        self.came = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if getattr(update, "session_update", "") == "agent_message_chunk" and self.at is None:
            self.at = time.perf_counter()
            self.cpu = cpu_ms(self.pid)
            self.came.set()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no permission question expected")


async def _first_chunk(command: list[str], env: dict[str, str], cwd: Path, cpu: list[float]) -> float:
    import acp

    client = _FirstChunk()
    started = time.perf_counter()
    async with acp.spawn_agent_process(cast(Any, client), *command, env=env, cwd=cwd) as (conn, proc):
        client.pid = proc.pid
        await asyncio.wait_for(conn.initialize(protocol_version=1), 60)
        session = await asyncio.wait_for(conn.new_session(cwd=str(cwd), mcp_servers=[]), 60)
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hi")]), 60)
        await asyncio.wait_for(client.came.wait(), 10)
    assert client.at is not None
    cpu.append(client.cpu)
    return client.at - started


def run(rounds: int = 11) -> tuple[list[Row], list[str]]:
    """The rows: `ollie acp` spawn -> first chunk vs the minimal SDK agent's, in wall and in CPU time."""
    got_cpu: list[float] = []
    ref_cpu: list[float] = []
    fresh_bytecode()
    compileall.compile_file(str(REPO / "bench" / "acp_minimal.py"), quiet=1)
    with LLMProcess("openai") as srv, tempfile.TemporaryDirectory(prefix="ollie-bench-acp-") as tmp:
        cwd = Path(tmp)
        env = child_env(srv.env)
        ours = ollie_acp()

        def ollie() -> float:
            srv.script("hello from the model")
            return asyncio.run(_first_chunk(ours, env, cwd, got_cpu))

        def minimal() -> float:
            return asyncio.run(_first_chunk(MINIMAL, env, cwd, ref_cpu))

        ollie()  # warm the page cache and the .pyc files
        minimal()
        del got_cpu[:], ref_cpu[:]
        got, ref = interleaved(rounds, ollie, minimal)
    row = Row("`ollie acp` spawn -> first chunk (vs a minimal agent on the same ACP SDK)", median(got) * 1e3,
              median(ref) * 1e3, target=f"<= {TARGET}x")
    row.ok = row.ratio is not None and row.ratio <= TARGET
    cpu_row = Row("`ollie acp` in CPU time by its first chunk (vs the minimal agent's by its chunk)", median(got_cpu),
                  median(ref_cpu))
    return [row, cpu_row], [f"acp first-chunk rounds (ms): ollie {[round(t * 1e3) for t in got]}, "
                            f"minimal {[round(t * 1e3) for t in ref]}; CPU ollie {[round(t) for t in got_cpu]}, "
                            f"minimal {[round(t) for t in ref_cpu]}"]


if __name__ == "__main__":
    run_alone(run)
