"""Cost of ollie's egress proxy: a step downloading SIZE MB from a server on the host's loopback, direct vs proxied.

Direct: the step under `network.mode: open` fetches `http://127.0.0.1:PORT/blob`.
Proxied: the step under `network.mode: proxy` (its own namespace) fetches
`http://bench.local:PORT/blob` through the proxy (the name is mapped to
127.0.0.1 and allow-listed). Both run `curl -s -o /dev/null`; rounds are
interleaved. Target: proxied ≤ 1.2× direct at 100 MB.
Usage: python bench/bench_egress.py [SIZE_MB] [ROUNDS]
"""

from __future__ import annotations

import asyncio
import http.server
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.common import Row
from ollie.sandbox import egress, parse_policy, spawn_sandboxed

FS = ('filesystem: {rox: ["/usr", "/bin", "/lib", "/lib64"], ro: ["/etc"], '
      'rw: ["{CWD}", "/dev/null", "/dev/urandom"]}\n')


def serve(size: int) -> tuple[http.server.ThreadingHTTPServer, int]:
    """A server on the host's loopback answering every GET with `size` bytes."""
    blob = b"x" * size

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(blob)))
            self.end_headers()
            self.wfile.write(blob)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


async def fetch(url: str, policy, cwd: Path, env: dict[str, str]) -> float:
    """Seconds one sandboxed `curl` of `url` took."""
    start = time.perf_counter()
    proc = await spawn_sandboxed(["curl", "-sf", "-o", "/dev/null", url], policy=policy, cwd=cwd, env=env)
    await proc.communicate()
    if await proc.wait() != 0:
        raise SystemExit(f"curl {url} failed")
    return time.perf_counter() - start


async def measure(size_mb: float, rounds: int) -> tuple[float, float]:
    """Median ms of `rounds` interleaved (direct, proxied) downloads of `size_mb` MB."""
    server, port = serve(int(size_mb * 1e6))
    egress.set_resolver(egress.hosts_resolver({"bench.local": "127.0.0.1"}))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cwd = Path(tmp)
            open_policy = parse_policy(FS + "network: {mode: open}\n", source="bench", name="open", cwd=cwd)
            proxied = parse_policy(FS + f'network: {{mode: proxy, allow: ["bench.local:{port}"], max_sent: 0}}\n',
                                   source="bench", name="proxy", cwd=cwd)
            direct, through = [], []
            await fetch(f"http://127.0.0.1:{port}/blob", open_policy, cwd, env)  # warm-up: the fork server starts
            await fetch(f"http://bench.local:{port}/blob", proxied, cwd, env)
            for _ in range(rounds):
                direct.append(await fetch(f"http://127.0.0.1:{port}/blob", open_policy, cwd, env))
                through.append(await fetch(f"http://bench.local:{port}/blob", proxied, cwd, env))
    finally:
        server.shutdown()
        egress.set_resolver(None)
    return statistics.median(direct) * 1e3, statistics.median(through) * 1e3


def run(size_mb: float = 100, rounds: int = 5) -> tuple[list[Row], list[str]]:
    """bench/run.py's rows: the proxied download against the direct one."""
    direct, proxied = asyncio.run(measure(size_mb, rounds))
    row = Row(f"egress proxy: {size_mb:g} MB download from a loopback server, proxied step vs `mode: open` step",
              proxied, direct, target="<= 1.2x")
    row.ok = row.ratio is not None and row.ratio <= 1.2
    return [row], []


if __name__ == "__main__":
    size, count = float(sys.argv[1]) if len(sys.argv) > 1 else 100, int(sys.argv[2]) if len(sys.argv) > 2 else 5
    d, p = asyncio.run(measure(size, count))
    print(f"{size:g} MB download: direct {d:.1f} ms, through the egress proxy {p:.1f} ms, ratio {p / d:.2f}x")
