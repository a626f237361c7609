"""Start-up: spawn -> `initialize` answered, ollie-lsp against a bare pygls server; the engine's import cost.

Run alone: python -m bench.bench_startup [ROUNDS]
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import BARE_SERVER, DAEMON, PYTHON, Row, child_env, interleaved, median, private_home
from bench.lspwire import LSPProcess

# What a bare pygls server imports anyway, so the difference is ollie's own.
BASE_IMPORTS = "import lsprotocol.types, pygls.lsp.server"
ENGINE_IMPORTS = "import ollie.agent.core, ollie.tools.execute, ollie.backend.registry, ollie.sessions.registry"



def _initialize_seconds(argv: list[str], root: Path) -> float:
    server = LSPProcess(argv, env=child_env())
    try:
        pending = server.request_async("initialize", {
            "processId": None, "rootUri": root.as_uri(), "capabilities": {},
            "workspaceFolders": [{"uri": root.as_uri(), "name": "ws"}]})
        pending.result(60)
        return pending.answered_at - server.started_at
    finally:
        server.shutdown()


def _first_request_seconds(root: Path) -> float:
    """initialize answered -> the first `ollie/state` answered: where the engine and default session load."""
    server = LSPProcess(DAEMON, env=child_env())
    try:
        server.initialize(root)
        start = time.perf_counter()
        server.request("ollie/state", {}, timeout=60)
        return time.perf_counter() - start
    finally:
        server.shutdown()


def _import_seconds(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([PYTHON, "-c", code], check=True, env=child_env())
    return time.perf_counter() - start


def top_imports(code: str, count: int = 6) -> list[tuple[str, float]]:
    """The slowest top-level packages `code` imports (cumulative ms, from -X importtime)."""
    out = subprocess.run([PYTHON, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True,
                         env=child_env()).stderr
    costs: dict[str, float] = {}
    for line in out.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if match and len(match.group(2)) <= 1:  # top level of the import tree
            costs[match.group(3)] = int(match.group(1)) / 1000
    return sorted(costs.items(), key=lambda kv: -kv[1])[:count]


def run(rounds: int = 7) -> tuple[list[Row], list[str]]:
    """Rows for the table plus notes (the slowest engine imports)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for argv in (BARE_SERVER, DAEMON):  # warm the page cache and the .pyc files
            _initialize_seconds(argv, root)
        bare, ollie = interleaved(rounds, lambda: _initialize_seconds(BARE_SERVER, root),
                                  lambda: _initialize_seconds(DAEMON, root))
        first = [_first_request_seconds(root) for _ in range(3)]
    base, engine = interleaved(rounds, lambda: _import_seconds(BASE_IMPORTS),
                               lambda: _import_seconds(f"{BASE_IMPORTS}; {ENGINE_IMPORTS}"))
    startup = Row("start-up: spawn -> initialize answered (vs bare pygls)", median(ollie) * 1e3, median(bare) * 1e3,
                  target="<= 1.3x")
    startup.ok = startup.ratio is not None and startup.ratio <= 1.3
    added = Row("engine import cost (added to pygls+lsprotocol)", (median(engine) - median(base)) * 1e3,
                median(base) * 1e3, note="reference: python + pygls + lsprotocol imports")
    first_request = Row("first ollie/state after initialize (engine + default session load)", median(first) * 1e3)
    notes = ["slowest imports of the engine (cumulative ms): "
             + ", ".join(f"{name} {ms:.0f}" for name, ms in top_imports(ENGINE_IMPORTS))]
    return [startup, added, first_request], notes


if __name__ == "__main__":
    with private_home():
        rows, notes = run(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
    for row in rows:
        versus = f" vs {row.reference:.1f} ms ({row.ratio:.2f}x)" if row.ratio else ""
        print(f"{row.name}: {row.value:.1f} ms{versus} {row.verdict}")
    print(*notes, sep="\n")
