"""`ollie acp`: spawn -> first agent message chunk, against a minimal agent on the same ACP SDK.

The client is the SDK's own client side, in this process; each agent is a
process of its own (the reference shares no process or GIL with ollie). A
round spawns the agent as an editor does (`ollie acp`, the console script),
then `initialize`, `session/new` and a prompt, until the first
`agent_message_chunk` arrives; the scripted LLM server runs in its own process.
The reference (`bench.acp_minimal`) answers the prompt with one chunk at once:
what any agent on the SDK pays (python, `import acp` and its pydantic schema,
the handshake). Rounds are interleaved. Run alone: python -m bench.bench_acp [ROUNDS]
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, cast

from bench.common import PYTHON, Row, child_env, interleaved, median, run_alone
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
        self.came = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if getattr(update, "session_update", "") == "agent_message_chunk" and self.at is None:
            self.at = time.perf_counter()
            self.came.set()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no permission question expected")


async def _first_chunk(command: list[str], env: dict[str, str], cwd: Path) -> float:
    import acp

    client = _FirstChunk()
    started = time.perf_counter()
    async with acp.spawn_agent_process(cast(Any, client), *command, env=env, cwd=cwd) as (conn, _proc):
        await asyncio.wait_for(conn.initialize(protocol_version=1), 60)
        session = await asyncio.wait_for(conn.new_session(cwd=str(cwd), mcp_servers=[]), 60)
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hi")]), 60)
        await asyncio.wait_for(client.came.wait(), 10)
    assert client.at is not None
    return client.at - started


def run(rounds: int = 5) -> tuple[list[Row], list[str]]:
    """The row: `ollie acp` spawn -> first chunk vs the minimal SDK agent's."""
    with LLMProcess("openai") as srv, tempfile.TemporaryDirectory(prefix="ollie-bench-acp-") as tmp:
        cwd = Path(tmp)
        env = child_env(srv.env)
        ours = ollie_acp()

        def ollie() -> float:
            srv.script("hello from the model")
            return asyncio.run(_first_chunk(ours, env, cwd))

        def minimal() -> float:
            return asyncio.run(_first_chunk(MINIMAL, env, cwd))

        ollie()  # warm the page cache and the .pyc files
        minimal()
        got, ref = interleaved(rounds, ollie, minimal)
    row = Row("`ollie acp` spawn -> first chunk (vs a minimal agent on the same ACP SDK)", median(got) * 1e3,
              median(ref) * 1e3, target=f"<= {TARGET}x")
    row.ok = row.ratio is not None and row.ratio <= TARGET
    return [row], [f"acp first-chunk rounds (ms): ollie {[round(t * 1e3) for t in got]}, "
                   f"minimal {[round(t * 1e3) for t in ref]}"]


if __name__ == "__main__":
    run_alone(run)
