"""Streaming relay: the latency the daemon adds to each delta, at a real model's pace and under a flood.

The scripted server (real OpenAI SSE over HTTP on 127.0.0.1) runs in a process
of its own (`bench.llm_process`) and stamps the moment it writes each frame;
every delta carries its index, so each one's arrival can be matched to its
send (perf_counter is CLOCK_MONOTONIC: one clock for all processes). Through
the daemon, the reader is a plain LSP client (`bench.lspwire`) taking
`ollie/event` notifications, as an editor would in a process of its own;
directly, it is a plain-socket SSE reader (one `recv` loop, each event's JSON
decoded) in a process of its own too (`python -m bench.bench_relay --read URL
MODEL`). The added latency per delta is the difference between the two.

The target row is the one a user can feel: a model streams one delta every
20 ms or slower, and the daemon may add at most 2 ms to the p99 of them.
Run alone: python -m bench.bench_relay [ROUNDS]
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.common import DAEMON, PYTHON, Row, child_env, median, percentile, run_alone
from bench.llm_process import LLMProcess
from bench.lspwire import LSPProcess

DELTAS = 20_000  # the flood
PACED = 150  # deltas per paced round: 3 s at 20 ms
PACE_S = 0.020  # one delta every 20 ms: a real model's pace (~50 tokens/s)
PACED_P99_TARGET_MS = 2.0
TOKEN = re.compile(r"(\d{5})\|")


def delta_text(count: int) -> str:
    """`count` deltas of six characters, each carrying its own index."""
    return "".join(f"{i:05d}|" for i in range(count))


def read_socket(url: str, model: str) -> tuple[float, dict[int, float]]:
    """The direct reader: POST over a bare socket, split the SSE stream into events, decode each event's JSON."""
    parts = urlsplit(url)
    body = json.dumps({"model": model, "stream": True, "messages": [{"role": "user", "content": "go"}]}).encode()
    arrivals: dict[int, float] = {}
    with socket.create_connection((parts.hostname, parts.port)) as sock:
        start = time.perf_counter()
        sock.sendall(b"POST %s/chat/completions HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer sk-x\r\n"
                     b"Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                     % (parts.path.encode(), parts.netloc.encode(), len(body), body))
        buffer = b""
        done = False
        while not done:
            chunk = sock.recv(65536)
            if not chunk:
                break
            now = time.perf_counter()
            buffer += chunk
            cut = buffer.rfind(b"\n\n")
            if cut < 0:
                continue
            events, buffer = buffer[:cut], buffer[cut + 2:]
            for event in events.split(b"\n\n"):
                at = event.find(b"data: ")
                if at < 0:
                    continue
                data = event[at + 6:].split(b"\r\n", 1)[0]  # chunked encoding: the size line follows
                if data.startswith(b"[DONE]"):
                    done = True
                    break
                choices = json.loads(data).get("choices") or [{}]
                for token in TOKEN.findall((choices[0].get("delta") or {}).get("content") or ""):
                    arrivals[int(token)] = now
    return start, arrivals


def direct_round(srv: LLMProcess, count: int, delay: float = 0.0) -> tuple[float, list[float]]:
    """(seconds until every delta arrived, per-delta latencies) read directly, by a reader in a process of its own."""
    srv.script(delta_text(count), chunk_size=6, delay=delay)
    out = subprocess.run([PYTHON, "-m", "bench.bench_relay", "--read", srv.url, srv.model], check=True,
                         capture_output=True, text=True, timeout=600).stdout
    answer = json.loads(out)
    return _summary(srv, answer["start"], {int(i): t for i, t in answer["arrivals"].items()}, count)


def daemon_round(srv: LLMProcess, daemon: LSPProcess, arrivals: dict[int, float], count: int,
                 delay: float = 0.0) -> tuple[float, list[float]]:
    """The same through the daemon: submit, then take the deltas from ollie/event."""
    arrivals.clear()
    srv.script(delta_text(count), chunk_size=6, delay=delay)
    pending = daemon.request_async("ollie/submit", {"text": "go"})
    result = pending.result(600)
    if result["stop"] != "end":
        raise RuntimeError(f"relay turn ended with {result}")
    summary = _summary(srv, pending.sent_at, arrivals, count)
    daemon.request("ollie/command", {"line": "/clear"})
    return summary


def _summary(srv: LLMProcess, start: float, arrivals: dict[int, float], count: int) -> tuple[float, list[float]]:
    if len(arrivals) != count:
        raise RuntimeError(f"got {len(arrivals)} of {count} deltas")
    sent = srv.send_times()
    return max(arrivals.values()) - start, [arrivals[i] - sent[i] for i in range(count)]


def start_daemon(srv: LLMProcess, root: Path, arrivals: dict[int, float]) -> LSPProcess:
    """A daemon pointed at `srv`, its default session ready, recording delta arrivals into `arrivals`."""

    def on_note(message: dict[str, Any], stamp: float) -> None:
        params = message.get("params") or {}
        if message.get("method") == "ollie/event" and params.get("role") == "assistant":
            for token in TOKEN.findall(params.get("content") or ""):
                arrivals[int(token)] = stamp

    daemon = LSPProcess(DAEMON, env=child_env(srv.env), on_notification=on_note)
    daemon.initialize(root)
    daemon.request("ollie/state", {}, timeout=60)
    return daemon


def run(rounds: int = 3) -> tuple[list[Row], list[str]]:
    """Rows: added latency per delta at 20 ms a delta (the target) and under a flood; the flood's time."""
    arrivals: dict[int, float] = {}
    with LLMProcess("openai") as srv, tempfile.TemporaryDirectory() as tmp:
        daemon = start_daemon(srv, Path(tmp), arrivals)
        try:
            daemon_round(srv, daemon, arrivals, 200)  # warm up both paths
            direct_round(srv, 200)
            flood_direct_t, flood_daemon_t, flood_direct, flood_daemon, paced_direct, paced_daemon = [], [], [], [], [], []
            for _ in range(rounds):  # interleaved, so the machine's noise falls on both alike
                seconds, lat = direct_round(srv, PACED, delay=PACE_S)
                paced_direct += lat
                seconds, lat = daemon_round(srv, daemon, arrivals, PACED, delay=PACE_S)
                paced_daemon += lat
                seconds, lat = direct_round(srv, DELTAS)
                flood_direct_t.append(seconds)
                flood_direct += lat
                seconds, lat = daemon_round(srv, daemon, arrivals, DELTAS)
                flood_daemon_t.append(seconds)
                flood_daemon += lat
        finally:
            daemon.shutdown()
    rows = []
    for label, through, direct, target in (
        (f"one delta every {PACE_S * 1e3:.0f} ms", paced_daemon, paced_direct, PACED_P99_TARGET_MS),
        (f"flood of {DELTAS:,}", flood_daemon, flood_direct, None),
    ):
        for pct in (50, 99):
            added = (percentile(through, pct) - percentile(direct, pct)) * 1e3
            row = Row(f"added latency per delta, {label}, p{pct} (vs a plain-socket reader in another process)",
                      added, None, note=f"through daemon {percentile(through, pct) * 1e3:.2f} ms, "
                                        f"direct {percentile(direct, pct) * 1e3:.2f} ms")
            if target is not None and pct == 99:
                row.target, row.ok = f"<= {target:g} ms", added <= target
            rows.append(row)
    rows.append(Row(f"relay: {DELTAS:,} deltas through the daemon (vs the plain-socket reader)",
                    median(flood_daemon_t) * 1e3, median(flood_direct_t) * 1e3))
    notes = [f"relay rounds (s): socket {[round(t, 3) for t in flood_direct_t]}, "
             f"daemon {[round(t, 3) for t in flood_daemon_t]}; paced samples {len(paced_daemon)} each way"]
    return rows, notes


def _read_main(url: str, model: str) -> None:
    """`--read URL MODEL`: the direct reader's process; prints when it started and when each delta arrived."""
    start, arrivals = read_socket(url, model)
    print(json.dumps({"start": start, "arrivals": arrivals}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--read"]:
        _read_main(sys.argv[2], sys.argv[3])
        sys.exit(0)
    run_alone(run)
