"""Cost of ollie's egress proxy: a step downloading SIZE MB from a server on the host's loopback, direct vs proxied.

Direct: the step under `network.mode: open` fetches `http://127.0.0.1:PORT/blob`.
Proxied: the step under `network.mode: proxy` (its own namespace) fetches
`http://bench.local:PORT/blob` through the proxy (the name is mapped to
127.0.0.1 and allow-listed). Both run the same `curl -s -o /dev/null` against
the same server, which runs in a process of its own (as a real server would:
never sharing the proxy's CPU and GIL). Each kind runs twice in a row and only
the second is measured, so both start from a spare made for their kind, with
no spares of the other kind being let go and made meanwhile (a session that
alternates them pays that at every switch: the spawn rows measure spawns). The
kinds alternate in ABBA order, and each round's two steps make a pair: the row
is the median of the pairs' ratios. Server, proxy and curl all run on one CPU,
so a step's wall time is the CPU its path costs, the proxy's own work hidden in
no idle core. Spread over this machine's two vCPUs, a loopback transfer ran at
one of two speeds for minutes at a time, whatever the placement, and the direct
reference swung with it (bench/RESULTS.md). Target: the proxied step ≤ 1.2× the
direct one at 100 MB; the transfer alone (curl's own `time_total`) and the
proxy's CPU per download are reported beside it.
Usage: python bench/bench_egress.py [SIZE_MB] [ROUNDS]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import PYTHON, Row
from ollie.sandbox import egress
from ollie.sandbox.policy import parse_policy
from ollie.sandbox.spawn import spawn_sandboxed, start_fork_server
from ollie.testing.nethosts import hosts_resolver

FS = ('filesystem: {rox: ["/usr", "/bin", "/lib", "/lib64"], ro: ["/etc"], '
      'rw: ["{CWD}", "/dev/null", "/dev/urandom"]}\n')
# A server answering every GET with argv[1] bytes; it prints its port.
SERVER = """
import http.server, sys
blob = b"x" * int(sys.argv[1])
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(blob)))
        self.end_headers()
        self.wfile.write(blob)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


async def fetch(url: str, policy, cwd: Path, env: dict[str, str], core: int) -> tuple[float, float, float]:
    """One sandboxed `curl` of `url` on CPU `core`: (the step's ms, curl's own time_total in ms, this process's CPU
    ms: the daemon's side, the relay's threads included)."""
    start, cpu = time.perf_counter(), time.process_time()
    # taskset: the fork server keeps every CPU (the benches after this one spawn through it too).
    proc = await spawn_sandboxed(["taskset", "-c", str(core), "curl", "-sf", "-o", "/dev/null", "-w",
                                  "%{time_total}", url], policy=policy, cwd=cwd, env=env)
    out, _, _ = await proc.communicate()
    if await proc.wait() != 0:
        raise SystemExit(f"curl {url} failed")
    return (time.perf_counter() - start) * 1e3, float(out) * 1e3, (time.process_time() - cpu) * 1e3


async def measure(size_mb: float, rounds: int) -> dict[str, list[tuple[float, float, float]]]:
    """`rounds` samples of each kind ("direct", "proxied"), each the second of two in a row, in ABBA order, all on
    one CPU (this thread's, the server's and the relay's, which inherit it, and the steps')."""
    await asyncio.to_thread(start_fork_server)  # before this thread is pinned: the fork server would inherit it
    cpus = os.sched_getaffinity(0)
    core = max(cpus)
    os.sched_setaffinity(0, {core})
    server = subprocess.Popen([PYTHON, "-c", SERVER, str(int(size_mb * 1e6))], stdout=subprocess.PIPE)
    assert server.stdout is not None
    port = int(server.stdout.readline())
    real_resolve = egress.system_resolve
    egress.system_resolve = hosts_resolver({"bench.local": "127.0.0.1"})  # the server is on this machine's loopback
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    samples: dict[str, list[tuple[float, float, float]]] = {"direct": [], "proxied": []}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cwd = Path(tmp)
            kinds = {
                "direct": (f"http://127.0.0.1:{port}/blob",
                           parse_policy(FS + "network: {mode: open}\n", source="bench", name="open", cwd=cwd)),
                "proxied": (f"http://bench.local:{port}/blob",
                            parse_policy(FS + f'network: {{mode: proxy, allow: ["bench.local:{port}"], '
                                         'max_sent: 0}\n', source="bench", name="proxy", cwd=cwd)),
            }
            for turn in range(rounds + 1):  # the first: warm-up (the spares are made)
                for kind in ("direct", "proxied") if turn % 2 else ("proxied", "direct"):
                    url, policy = kinds[kind]
                    await fetch(url, policy, cwd, env, core)
                    got = await fetch(url, policy, cwd, env, core)
                    if turn:
                        samples[kind].append(got)
    finally:
        server.kill()
        server.wait()
        egress.system_resolve = real_resolve
        os.sched_setaffinity(0, cpus)
    return samples


def run(size_mb: float = 100, rounds: int = 15) -> tuple[list[Row], list[str]]:
    """bench/run.py's rows: the proxied download against the direct one, as steps and as curl's transfer alone."""
    samples = asyncio.run(measure(size_mb, rounds))
    step, transfer, cpu = ({kind: statistics.median(s[i] for s in got) for kind, got in samples.items()}
                           for i in range(3))
    # A round's two steps ran back to back, so whatever else the machine ran hit both alike: its ratio is a sample.
    steps, transfers = ([p[i] / d[i] for d, p in zip(samples["direct"], samples["proxied"], strict=True)]
                        for i in range(2))
    quartiles = statistics.quantiles(steps, n=4)
    name = f"egress proxy: {size_mb:g} MB download from a loopback server"
    row = Row(f"{name}, proxied step vs `mode: open` step, median of per-round ratios", step["proxied"],
              step["direct"], target="<= 1.2x", paired=statistics.median(steps),
              note=f"rounds' ratios {quartiles[0]:.2f}-{quartiles[2]:.2f}x (quartiles); the daemon's CPU "
                   f"{cpu['proxied']:.1f} ms vs {cpu['direct']:.1f} ms")
    row.ok = row.ratio is not None and row.ratio <= 1.2
    alone = f"{name}, the transfer alone (curl's time_total), proxied vs direct, median of per-round ratios"
    return [row, Row(alone, transfer["proxied"], transfer["direct"], paired=statistics.median(transfers))], []


if __name__ == "__main__":
    size, count = float(sys.argv[1]) if len(sys.argv) > 1 else 100, int(sys.argv[2]) if len(sys.argv) > 2 else 15
    result = asyncio.run(measure(size, count))
    for i, what in enumerate(("step", "transfer (curl's time_total)", "daemon CPU")):
        d, p = (statistics.median(s[i] for s in result[kind]) for kind in ("direct", "proxied"))
        print(f"{size:g} MB {what}: direct {d:.1f} ms, through the egress proxy {p:.1f} ms, ratio {p / d:.2f}x")
