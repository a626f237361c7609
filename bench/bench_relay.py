"""Streaming relay: 20,000 deltas from the scripted server, read through the daemon vs. read directly.

The scripted server (real OpenAI SSE over HTTP on 127.0.0.1) stamps the moment
it writes each frame; every delta carries its index, so each one's arrival can
be matched to its send. Through the daemon, the client is a plain LSP client
(`bench.lspwire`) taking `ollie/event` notifications; directly, it is a plain
httpx SSE reader. Run alone: python -m bench.bench_relay [ROUNDS]
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import DAEMON, Row, child_env, median, percentile, private_home
from bench.lspwire import LSPProcess
from ollie.testing import Reply, ScriptedLLMServer

DELTAS = 20_000
TOKEN = re.compile(r"(\d{5})\|")
_FRAME_TOKEN = re.compile(rb'"content":"(\d{5})\|')


def delta_text(count: int) -> str:
    """`count` deltas of six characters, each carrying its own index."""
    return "".join(f"{i:05d}|" for i in range(count))


class StampedServer(ScriptedLLMServer):
    """The scripted server, recording when each frame went out (perf_counter, same clock as the clients)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: list[tuple[float, bytes]] = []

    async def _chat(self, request: Any, writer: Any) -> bool:  # noqa: D102 - wraps the real one
        return await super()._chat(request, _StampingWriter(writer, self.sent))

    def send_times(self) -> dict[int, float]:
        """Delta index -> when its frame was written."""
        out = {}
        for stamp, data in self.sent:
            match = _FRAME_TOKEN.search(data)
            if match:
                out[int(match.group(1))] = stamp
        return out


class _StampingWriter:
    def __init__(self, writer: Any, sent: list[tuple[float, bytes]]) -> None:
        self._writer = writer
        self._sent = sent

    def write(self, data: bytes) -> None:
        self._sent.append((time.perf_counter(), data))
        self._writer.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)


async def _read_direct(url: str, model: str) -> tuple[float, dict[int, float]]:
    arrivals: dict[int, float] = {}
    body = {"model": model, "stream": True, "messages": [{"role": "user", "content": "go"}]}
    async with httpx.AsyncClient(timeout=60) as client:
        start = time.perf_counter()
        async with client.stream("POST", f"{url}/chat/completions", json=body,
                                 headers={"Authorization": "Bearer sk-x"}) as response:
            async for line in response.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                now = time.perf_counter()
                choices = json.loads(line[6:]).get("choices") or [{}]
                for token in TOKEN.findall((choices[0].get("delta") or {}).get("content") or ""):
                    arrivals[int(token)] = now
    return start, arrivals


def direct_round(srv: StampedServer, count: int, delay: float = 0.0) -> tuple[float, list[float]]:
    """(seconds until every delta arrived, per-delta latencies) reading the server directly."""
    srv.sent.clear()
    srv.script(Reply(text=delta_text(count), chunk_size=6, delay=delay))
    start, arrivals = asyncio.run(_read_direct(srv.url, srv.model))
    return _summary(srv, start, arrivals, count)


def daemon_round(srv: StampedServer, daemon: LSPProcess, arrivals: dict[int, float], count: int,
                 delay: float = 0.0) -> tuple[float, list[float]]:
    """The same through the daemon: submit, then take the deltas from ollie/event."""
    srv.sent.clear()
    arrivals.clear()
    srv.script(Reply(text=delta_text(count), chunk_size=6, delay=delay))
    pending = daemon.request_async("ollie/submit", {"text": "go"})
    result = pending.result(120)
    if result["stop"] != "end":
        raise RuntimeError(f"relay turn ended with {result}")
    summary = _summary(srv, pending.sent_at, arrivals, count)
    daemon.request("ollie/command", {"line": "/clear"})
    return summary


def _summary(srv: StampedServer, start: float, arrivals: dict[int, float], count: int) -> tuple[float, list[float]]:
    if len(arrivals) != count:
        raise RuntimeError(f"got {len(arrivals)} of {count} deltas")
    sent = srv.send_times()
    return max(arrivals.values()) - start, [arrivals[i] - sent[i] for i in range(count)]


def start_daemon(srv: StampedServer, root: Path, arrivals: dict[int, float]) -> LSPProcess:
    """A daemon pointed at `srv`, its default session ready, recording delta arrivals into `arrivals`."""

    def on_note(message: dict[str, Any], stamp: float) -> None:
        params = message.get("params") or {}
        if message.get("method") == "ollie/event" and params.get("role") == "assistant":
            for token in TOKEN.findall(params.get("content") or ""):
                arrivals[int(token)] = stamp

    daemon = LSPProcess(DAEMON, env=child_env(srv.env()), on_notification=on_note)
    daemon.initialize(root)
    daemon.request("ollie/state", {}, timeout=60)
    return daemon


def run(rounds: int = 3) -> tuple[list[Row], list[str]]:
    """Rows: relay time vs direct, per-delta latency (flood and paced)."""
    arrivals: dict[int, float] = {}
    with StampedServer("openai") as srv, tempfile.TemporaryDirectory() as tmp:
        daemon = start_daemon(srv, Path(tmp), arrivals)
        try:
            daemon_round(srv, daemon, arrivals, 2000)  # warm up both paths
            direct_round(srv, 2000)
            direct_t, daemon_t, direct_lat, daemon_lat = [], [], [], []
            for _ in range(rounds):
                seconds, lat = direct_round(srv, DELTAS)
                direct_t.append(seconds)
                direct_lat += lat
                seconds, lat = daemon_round(srv, daemon, arrivals, DELTAS)
                daemon_t.append(seconds)
                daemon_lat += lat
            paced_direct = direct_round(srv, 300, delay=0.002)[1]
            paced_daemon = daemon_round(srv, daemon, arrivals, 300, delay=0.002)[1]
        finally:
            daemon.shutdown()
    relay = Row(f"relay: {DELTAS:,} deltas through the daemon (vs direct httpx)", median(daemon_t) * 1e3,
                median(direct_t) * 1e3, target="<= 2.0x")
    relay.ok = relay.ratio is not None and relay.ratio <= 2.0
    rows = [relay]
    for label, through, direct in (("flood", daemon_lat, direct_lat), ("paced 2 ms", paced_daemon, paced_direct)):
        for pct in (50, 99):
            rows.append(Row(f"added latency per delta, {label}, p{pct}",
                            (percentile(through, pct) - percentile(direct, pct)) * 1e3, None,
                            note=f"through daemon {percentile(through, pct) * 1e3:.2f} ms, "
                                 f"direct {percentile(direct, pct) * 1e3:.2f} ms"))
    notes = [f"relay rounds (s): direct {[round(t, 3) for t in direct_t]}, daemon {[round(t, 3) for t in daemon_t]}"]
    return rows, notes


if __name__ == "__main__":
    with private_home():
        rows, notes = run(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
    for row in rows:
        ratio = f" ({row.ratio:.2f}x) {row.verdict}" if row.ratio else ""
        print(f"{row.name}: {row.value:.2f} ms{ratio} {row.note}")
    print(*notes, sep="\n")
