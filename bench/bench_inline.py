"""Inline completions: the latency the daemon adds to the model's own fill-in-the-middle answer.

The scripted server (real Ollama `/api/generate` over HTTP on 127.0.0.1) runs in
a process of its own (`bench.llm_process`). Each round asks it directly (a plain
HTTP POST of the same body, from this process) and through the daemon (a plain
LSP client's `textDocument/inlineCompletion` on an open document), interleaved;
the added latency is the difference of the two at each percentile.
Run alone: python -m bench.bench_inline [ROUNDS]
"""

from __future__ import annotations

import http.client
import json
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from bench.common import DAEMON, Row, child_env, percentile, run_alone
from bench.llm_process import LLMProcess
from bench.lspwire import LSPProcess

P95_TARGET_MS = 10.0
COMPLETION = "r * r"
TEXT = "def area(r):\n    return 3.14 * \n" + "\n".join(f"x{i} = {i}" for i in range(300)) + "\n"
POSITION = {"line": 1, "character": 18}


def start_daemon(srv: LLMProcess, root: Path) -> tuple[LSPProcess, str]:
    """A daemon pointed at `srv`, declaring inline completions, with one document open; its URI."""
    # As a user sets it up: the daemon offers ghost text only once a completion model is chosen.
    daemon = LSPProcess(DAEMON, env=child_env({**srv.env, "OLLIE_COMPLETION_MODEL": srv.model}))
    init = daemon.request("initialize", {
        "processId": None, "rootUri": root.as_uri(), "workspaceFolders": [{"uri": root.as_uri(), "name": "ws"}],
        "capabilities": {"textDocument": {"inlineCompletion": {}}},
    }, timeout=60)
    assert "inlineCompletionProvider" in init["capabilities"], init["capabilities"]
    daemon.notify("initialized", {})
    uri = (root / "area.py").as_uri()
    daemon.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                            "text": TEXT}})
    return daemon, uri


def through_daemon(srv: LLMProcess, daemon: LSPProcess, uri: str) -> float:
    """Seconds for one inline completion through the daemon."""
    srv.script(COMPLETION)
    started = time.perf_counter()
    result = daemon.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": POSITION, "context": {"triggerKind": 2}})
    took = time.perf_counter() - started
    assert result["items"][0]["insertText"] == COMPLETION, result
    return took


def direct(srv: LLMProcess, conn: http.client.HTTPConnection) -> float:
    """Seconds for the same FIM request sent straight to the model (a kept-alive connection, as the daemon's)."""
    srv.script(COMPLETION)
    offset = TEXT.index("3.14 * ") + len("3.14 * ")
    body = json.dumps({"model": srv.model, "prompt": TEXT[:offset], "suffix": TEXT[offset:offset + 2000],
                       "stream": False, "options": {"num_predict": 128, "temperature": 0.2}})
    started = time.perf_counter()
    conn.request("POST", "/api/generate", body, {"Content-Type": "application/json"})
    answer = json.loads(conn.getresponse().read())
    took = time.perf_counter() - started
    assert answer["response"] == COMPLETION
    return took


def run(rounds: int = 50) -> tuple[list[Row], list[str]]:
    """Rows: the added latency of an inline completion at p50 and p95 (the target)."""
    with LLMProcess("ollama") as srv, tempfile.TemporaryDirectory() as tmp:
        daemon, uri = start_daemon(srv, Path(tmp))
        parts = urlsplit(srv.url)
        conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port)
        try:
            for _ in range(3):  # warm up both paths (the daemon builds its completion backend on the first)
                through_daemon(srv, daemon, uri)
                direct(srv, conn)
            via, plain = [], []
            for _ in range(rounds):
                plain.append(direct(srv, conn))
                via.append(through_daemon(srv, daemon, uri))
        finally:
            conn.close()
            daemon.shutdown()
    rows = []
    for pct in (50, 95):
        added = (percentile(via, pct) - percentile(plain, pct)) * 1e3
        row = Row(f"inline completion added latency over the model's own response, p{pct} (model in another "
                  "process)", added, note=f"through daemon {percentile(via, pct) * 1e3:.2f} ms, direct "
                  f"{percentile(plain, pct) * 1e3:.2f} ms")
        if pct == 95:
            row.target = f"<= {P95_TARGET_MS:g} ms"
            row.ok = added <= P95_TARGET_MS
        rows.append(row)
    return rows, []


if __name__ == "__main__":
    run_alone(run)
