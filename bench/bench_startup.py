"""Start-up: spawn -> first assistant token of a scripted reply, against a bare pygls server's spawn -> initialize.

Also the same pair in CPU time (the server process's, all threads, read when the token or the answer arrives:
a second measure, which the machine's other work inflates far less than wall time), spawn -> `initialize`
answered (both servers) and the engine's import cost. The scripted model runs in a process of its own.

Run alone: python -m bench.bench_startup [ROUNDS]
"""

from __future__ import annotations

import compileall
import re
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import BARE_SERVER, DAEMON, PYTHON, REPO, Row, child_env, cpu_ms, interleaved, median, run_alone
from bench.llm_process import LLMProcess
from bench.lspwire import LSPProcess

# What a bare pygls server imports anyway, so the difference is ollie's own.
BASE_IMPORTS = "import lsprotocol.types, pygls.lsp.server"
ENGINE_IMPORTS = "import ollie.agent.core, ollie.tools.execute, ollie.backend.registry, ollie.sessions.registry"
# Everything the daemon imports to answer a first turn on the scripted (openai) backend, nothing run: the floor
# of any design that loads the engine in the daemon's own process after the spawn.
FLOOR_IMPORTS = (f"{BASE_IMPORTS}; import ollie_lsp.daemon, ollie_lsp.methods, ollie_lsp.sessions, "
                 "ollie.agent.core, ollie.backend.openai")



def fresh_bytecode() -> None:
    """Write the .pyc files of ollie's sources, as an installed (or once run) ollie has them.

    Under PYTHONDONTWRITEBYTECODE=1 (as in some shells) warm-up rounds write none: each start would compile
    every module edited since the last write again, and pay for it in every round.
    """
    for package in (REPO / "core" / "ollie", REPO / "ollie_lsp", REPO / "ollie_acp"):
        compileall.compile_dir(str(package), quiet=1)


def _initialize_seconds(argv: list[str], root: Path, cpu: list[float] | None = None) -> float:
    """Spawn -> `initialize` answered; the server's CPU time by then is appended to `cpu`."""
    server = LSPProcess(argv, env=child_env())
    try:
        pending = server.request_async("initialize", {
            "processId": None, "rootUri": root.as_uri(), "capabilities": {},
            "workspaceFolders": [{"uri": root.as_uri(), "name": "ws"}]})
        pending.result(60)
        if cpu is not None:
            cpu.append(cpu_ms(server.pid))
        return pending.answered_at - server.started_at
    finally:
        server.shutdown()


def _first_token_seconds(root: Path, srv: LLMProcess, cpu: list[float] | None = None) -> float:
    """Spawn -> the first `assistant` delta of a scripted reply: what a user waits for after opening the editor.

    The client does what an editor does: initialize, initialized, then at once the prompt. The daemon's CPU time
    when the delta arrived is appended to `cpu`.
    """
    first = threading.Event()
    stamp: list[float] = []

    def on_note(message: dict[str, Any], at: float) -> None:
        params = message.get("params") or {}
        if message.get("method") == "ollie/event" and params.get("role") == "assistant" and not first.is_set():
            stamp.append(at)
            if cpu is not None:
                cpu.append(cpu_ms(server.pid))
            first.set()

    srv.script("hello from the model")
    server = LSPProcess(DAEMON, env=child_env(srv.env), on_notification=on_note)
    try:
        server.initialize(root)
        result = server.request("ollie/submit", {"text": "hi"}, timeout=60)
        if result.get("stop") != "end" or not first.wait(10):
            raise RuntimeError(f"the first turn did not stream: {result}")
        return stamp[0] - server.started_at
    finally:
        server.shutdown()


def _imported_seconds(code: str) -> float:
    """Spawn -> `code` imported (the child says so on stdout; its exit is not counted)."""
    start = time.perf_counter()
    child = subprocess.Popen([PYTHON, "-c", f"{code}; print('ok', flush=True)"], stdout=subprocess.PIPE,
                             env=child_env())
    assert child.stdout is not None
    line = child.stdout.readline()
    took = time.perf_counter() - start
    child.wait()
    if line.strip() != b"ok":
        raise RuntimeError(f"the imports failed: {code}")
    return took


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


def run(rounds: int = 15) -> tuple[list[Row], list[str]]:
    """Rows for the table plus notes (the slowest engine imports)."""
    fresh_bytecode()
    bare_cpu: list[float] = []
    token_cpu: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, LLMProcess("openai") as srv:
        root = Path(tmp)
        for argv in (BARE_SERVER, DAEMON):  # warm the page cache and the .pyc files
            _initialize_seconds(argv, root)
        _first_token_seconds(root, srv)
        _imported_seconds(FLOOR_IMPORTS)
        bare, ollie, token, floor = interleaved(
            rounds, lambda: _initialize_seconds(BARE_SERVER, root, bare_cpu), lambda: _initialize_seconds(DAEMON, root),
            lambda: _first_token_seconds(root, srv, token_cpu), lambda: _imported_seconds(FLOOR_IMPORTS))
    base, engine = interleaved(rounds, lambda: _import_seconds(BASE_IMPORTS),
                               lambda: _import_seconds(f"{BASE_IMPORTS}; {ENGINE_IMPORTS}"))
    first_token = Row("start-up, cold (the default): spawn -> first assistant token (vs bare pygls spawn -> "
                      "initialize)", median(token) * 1e3, median(bare) * 1e3, target="<= 1.3x")
    first_token.ok = first_token.ratio is not None and first_token.ratio <= 1.3
    token_cpu_row = Row("start-up, cold, in CPU time: the daemon's (all threads) by its first token (vs bare pygls' by "
                        "its initialize answer)", median(token_cpu), median(bare_cpu))
    startup = Row("start-up: spawn -> initialize answered (vs bare pygls)", median(ollie) * 1e3, median(bare) * 1e3)
    floor_row = Row("start-up floor in-process: spawn -> python + pygls/lsprotocol + the engine's imports, nothing run "
                    "(vs bare pygls spawn -> initialize)", median(floor) * 1e3, median(bare) * 1e3)
    added = Row("engine import cost (added to pygls+lsprotocol)", (median(engine) - median(base)) * 1e3,
                median(base) * 1e3, note="reference: python + pygls + lsprotocol imports")
    notes = ["slowest imports of the engine (cumulative ms): "
             + ", ".join(f"{name} {ms:.0f}" for name, ms in top_imports(ENGINE_IMPORTS)),
             f"first-token rounds (ms): {[round(t * 1e3) for t in token]}; bare initialize "
             f"{[round(t * 1e3) for t in bare]}; engine imported (floor) {[round(t * 1e3) for t in floor]}",
             f"first-token CPU (ms): daemon {[round(t) for t in token_cpu]}, bare {[round(t) for t in bare_cpu]}"]
    return [first_token, token_cpu_row, startup, floor_row, added], notes


if __name__ == "__main__":
    run_alone(run)
