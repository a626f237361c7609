"""Streaming relay: 20,000 deltas from the scripted server, read through the daemon vs. read directly.

The scripted server (real OpenAI SSE over HTTP on 127.0.0.1) runs in a process
of its own (`bench.llm_process`) for every reader, and stamps the moment it
writes each frame; every delta carries its index, so each one's arrival can
be matched to its send (perf_counter is CLOCK_MONOTONIC: one clock for all
processes). Through the daemon, the client is a plain LSP client
(`bench.lspwire`) taking `ollie/event` notifications; directly, it is the
floor, a plain-socket SSE reader (one `recv` loop, each event's JSON decoded),
and, for comparison, an httpx reader, httpx's raw body chunks alone (the
floor of anything built on httpx's own transport) and the raw body chunks
through the daemon's own client (`ollie.backend.http_client` on http1.py's
llhttp transport, the floor of the daemon's HTTP reading). Run alone: python -m bench.bench_relay [ROUNDS]
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from bench.common import DAEMON, Row, child_env, median, percentile, private_home
from bench.llm_process import LLMProcess
from bench.lspwire import LSPProcess
from ollie.backend.http1 import HTTP1Transport
from ollie.backend.http_client import Client

DELTAS = 20_000
TOKEN = re.compile(r"(\d{5})\|")
RAW_TOKEN = re.compile(rb"(\d{5})\|")


def delta_text(count: int) -> str:
    """`count` deltas of six characters, each carrying its own index."""
    return "".join(f"{i:05d}|" for i in range(count))


def _body(model: str) -> bytes:
    return json.dumps({"model": model, "stream": True, "messages": [{"role": "user", "content": "go"}]}).encode()


def _read_socket(url: str, model: str) -> tuple[float, dict[int, float]]:
    """The floor: POST over a bare socket, split the SSE stream into events, decode each event's JSON."""
    parts = urlsplit(url)
    body = _body(model)
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


async def _read_httpx(url: str, model: str, *, raw: bool = False, ours: bool = False) -> tuple[float, dict[int, float]]:
    """An httpx reader: SSE lines with each event's JSON decoded, or (`raw`) what httpx itself costs: its raw
    body chunks (h11's chunked parsing), tokens found by a bytes regex; `ours`: the raw body chunks of the
    daemon's own client instead (llhttp's parsing)."""
    arrivals: dict[int, float] = {}
    async with (Client(transport=HTTP1Transport(), timeout=60) if ours else httpx.AsyncClient(timeout=60)) as client:
        start = time.perf_counter()
        async with client.stream("POST", f"{url}/chat/completions", content=_body(model),
                                 headers={"Authorization": "Bearer sk-x", "Content-Type": "application/json"}) as response:
            if raw:
                carry = b""  # a chunk may end inside a token: its last 5 bytes (never a whole token) go on
                async for chunk in response.aiter_raw():
                    now = time.perf_counter()
                    carry += chunk
                    for token in RAW_TOKEN.findall(carry):
                        arrivals[int(token)] = now
                    carry = carry[-5:]
                return start, arrivals
            assert isinstance(response, httpx.Response)
            async for line in response.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                now = time.perf_counter()
                choices = json.loads(line[6:]).get("choices") or [{}]
                for token in TOKEN.findall((choices[0].get("delta") or {}).get("content") or ""):
                    arrivals[int(token)] = now
    return start, arrivals


def direct_round(srv: LLMProcess, count: int, delay: float = 0.0, *, reader: str = "socket") -> tuple[float, list[float]]:
    """(seconds until every delta arrived, per-delta latencies) reading the server directly."""
    srv.script(delta_text(count), chunk_size=6, delay=delay)
    if reader == "socket":
        start, arrivals = _read_socket(srv.url, srv.model)
    elif reader == "ollie":
        start, arrivals = asyncio.run(_read_httpx(srv.url, srv.model, raw=True, ours=True))
    else:
        start, arrivals = asyncio.run(_read_httpx(srv.url, srv.model, raw=reader == "raw"))
    return _summary(srv, start, arrivals, count)


def daemon_round(srv: LLMProcess, daemon: LSPProcess, arrivals: dict[int, float], count: int,
                 delay: float = 0.0) -> tuple[float, list[float]]:
    """The same through the daemon: submit, then take the deltas from ollie/event."""
    arrivals.clear()
    srv.script(delta_text(count), chunk_size=6, delay=delay)
    pending = daemon.request_async("ollie/submit", {"text": "go"})
    result = pending.result(120)
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
    """Rows: relay time vs the plain-socket floor (and httpx), per-delta latency (flood and paced)."""
    arrivals: dict[int, float] = {}
    with LLMProcess("openai") as srv, tempfile.TemporaryDirectory() as tmp:
        daemon = start_daemon(srv, Path(tmp), arrivals)
        try:
            daemon_round(srv, daemon, arrivals, 2000)  # warm up every path
            direct_round(srv, 2000)
            direct_round(srv, 2000, reader="httpx")
            socket_t, httpx_t, raw_t, ollie_t, daemon_t, direct_lat, daemon_lat = [], [], [], [], [], [], []
            for _ in range(rounds):
                seconds, lat = direct_round(srv, DELTAS)
                socket_t.append(seconds)
                direct_lat += lat
                seconds, lat = daemon_round(srv, daemon, arrivals, DELTAS)
                daemon_t.append(seconds)
                daemon_lat += lat
                httpx_t.append(direct_round(srv, DELTAS, reader="httpx")[0])
                raw_t.append(direct_round(srv, DELTAS, reader="raw")[0])
                ollie_t.append(direct_round(srv, DELTAS, reader="ollie")[0])
            paced_direct = direct_round(srv, 300, delay=0.002)[1]
            paced_daemon = daemon_round(srv, daemon, arrivals, 300, delay=0.002)[1]
        finally:
            daemon.shutdown()
    relay = Row(f"relay: {DELTAS:,} deltas through the daemon (vs plain-socket SSE reader; server out of process)",
                median(daemon_t) * 1e3, median(socket_t) * 1e3, target="<= 1.3x")
    relay.ok = relay.ratio is not None and relay.ratio <= 1.3
    rows = [relay, Row(f"relay: {DELTAS:,} deltas through the daemon vs an httpx SSE reader", median(daemon_t) * 1e3,
                       median(httpx_t) * 1e3),
            Row(f"relay: {DELTAS:,} deltas through the daemon vs httpx's raw body chunks (its floor)",
                median(daemon_t) * 1e3, median(raw_t) * 1e3),
            Row(f"relay: httpx's raw body chunks of {DELTAS:,} deltas (no SSE parsing) vs the plain-socket reader",
                median(raw_t) * 1e3, median(socket_t) * 1e3),
            Row(f"relay: raw body chunks of {DELTAS:,} deltas through the daemon's own client (on llhttp, "
                "no SSE parsing) vs the plain-socket reader", median(ollie_t) * 1e3, median(socket_t) * 1e3)]
    for label, through, direct in (("flood", daemon_lat, direct_lat), ("paced 2 ms", paced_daemon, paced_direct)):
        for pct in (50, 99):
            rows.append(Row(f"added latency per delta, {label}, p{pct}",
                            (percentile(through, pct) - percentile(direct, pct)) * 1e3, None,
                            note=f"through daemon {percentile(through, pct) * 1e3:.2f} ms, "
                                 f"direct {percentile(direct, pct) * 1e3:.2f} ms"))
    notes = [f"relay rounds (s): socket {[round(t, 3) for t in socket_t]}, httpx {[round(t, 3) for t in httpx_t]}, "
             f"raw httpx {[round(t, 3) for t in raw_t]}, raw llhttp transport {[round(t, 3) for t in ollie_t]}, "
             f"daemon {[round(t, 3) for t in daemon_t]}"]
    return rows, notes


if __name__ == "__main__":
    with private_home():
        rows, notes = run(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
    for row in rows:
        ratio = f" ({row.ratio:.2f}x) {row.verdict}" if row.ratio else ""
        print(f"{row.name}: {row.value:.2f} ms{ratio} {row.note}")
    print(*notes, sep="\n")
