"""Event-loop stalls: the slowest `ollie/state` of one session while another does something heavy.

A probe thread sends `ollie/state` for the default session back to back; its
worst round trip (p100, stamped as the request is written and as the reader
thread reads the answer; the daemon's `ollie/event`s are dropped unparsed) during
each operation is how long the daemon's one event loop was held, against its worst
while the daemon idles. Operations: resuming a 100,000-message session, its
`ollie/context`, `/compact` on it, a 20,000-delta reply in another session, and
code actions (as eglot asks at each cursor move) over a select-all of an open
1,000,000-line (57 MB) document.
The scripted server runs in its own process. Run alone: python -m bench.bench_stalls
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from bench.bench_memory import write_saved_sessions
from bench.bench_relay import delta_text
from bench.common import DAEMON, Row, child_env, percentile, run_alone
from bench.llm_process import LLMProcess
from bench.lspwire import LSPProcess

BIG = 100_000
FLOOD = 20_000
HUGE_LINES = 1_000_000
ASKS = 20
TARGET_MS = 50.0


class Probe:
    """`ollie/state` of one session, back to back in a thread; the round trips while it runs."""

    def __init__(self, daemon: LSPProcess, session: str) -> None:
        self._daemon = daemon
        self._session = session
        self._stop = threading.Event()
        self.samples: list[float] = []
        self._thread = threading.Thread(target=self._run, name="probe", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            pending = self._daemon.request_async("ollie/state", {"session": self._session})
            pending.result(60)
            # Stamped as written and as read (the reader thread): not when this thread next gets the GIL.
            self.samples.append(pending.answered_at - pending.sent_at)

    def __enter__(self) -> Probe:
        self._thread.start()
        time.sleep(0.05)  # a few probes before the operation starts
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(0.05)
        self._stop.set()
        self._thread.join(60)

    @property
    def worst_ms(self) -> float:
        """The slowest round trip, ms."""
        return max(self.samples) * 1e3 if self.samples else 0.0

    @property
    def summary(self) -> str:
        """How many probes, their p50 and p99."""
        return (f"{len(self.samples)} probes, p50 {percentile(self.samples, 50) * 1e3:.1f} ms, "
                f"p99 {percentile(self.samples, 99) * 1e3:.1f} ms")


def started_daemon(env: dict[str, str], root: Path) -> tuple[LSPProcess, str]:
    """A daemon on `root` (its `ollie/event`s dropped unread) and the probe's session."""
    daemon = LSPProcess(DAEMON, env=env, cwd=root, keep_events=False)
    daemon.initialize(root)
    return daemon, daemon.request("ollie/state", {}, timeout=60)["session"]


def _worst_during(daemon: LSPProcess, probe_session: str,
                  operation: Callable[[], object]) -> tuple[float, float, str]:
    """(worst probe ms, seconds the operation took, the probes' summary)."""
    with Probe(daemon, probe_session) as probe:
        start = time.perf_counter()
        operation()
        took = time.perf_counter() - start
    return probe.worst_ms, took, probe.summary


def code_actions_during(daemon: LSPProcess, probe_session: str, root: Path) -> tuple[float, float, str]:
    """(worst probe ms, seconds, summary) while ASKS code actions over a select-all of a huge open document run."""
    uri = (root / "huge.py").as_uri()
    text = "".join(f"    x_{n} = compute(value_{n}) + 1  # some comment\n" for n in range(HUGE_LINES))
    daemon.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                           "text": text}})
    daemon.request("ollie/state", {}, timeout=120)  # opened
    everything = {"start": {"line": 0, "character": 0}, "end": {"line": HUGE_LINES, "character": 0}}
    params = {"textDocument": {"uri": uri}, "range": everything, "context": {"diagnostics": []}}
    return _worst_during(daemon, probe_session, lambda: [daemon.request("textDocument/codeAction", params, timeout=120)
                                                         for _ in range(ASKS)])


def run() -> tuple[list[Row], list[str]]:
    """Rows: the worst probe during each heavy operation, against the worst while idle."""
    big = write_saved_sessions(1, BIG)[0]
    task_state = json.dumps({"goal": "benchmark", "plan": ["compact"], "notes": "bench"})
    with LLMProcess("openai") as srv, tempfile.TemporaryDirectory() as tmp:
        daemon, probe_session = started_daemon(child_env(srv.env), Path(tmp))
        try:
            flood_session = daemon.request("ollie/session/new", {}, timeout=60)["session"]
            idle, _, idle_probes = _worst_during(daemon, probe_session, lambda: time.sleep(1.0))
            load, load_s, load_probes = _worst_during(daemon, probe_session, lambda: daemon.request(
                "ollie/session/load", {"session": big}, timeout=120))
            context, context_s, context_probes = _worst_during(daemon, probe_session, lambda: daemon.request(
                "ollie/context", {"session": big, "offset": BIG - 500, "limit": 500}, timeout=120))
            fork, fork_s, fork_probes = _worst_during(daemon, probe_session, lambda: daemon.request(
                "ollie/session/fork", {"session": big}, timeout=120))  # a rewritten history: a fresh snapshot
            srv.script(task_state, chunk_size=4096)
            compact, compact_s, compact_probes = _worst_during(daemon, probe_session, lambda: daemon.request(
                "ollie/command", {"session": big, "line": "/compact"}, timeout=120))
            srv.script(delta_text(FLOOD))
            flood, flood_s, flood_probes = _worst_during(daemon, probe_session, lambda: daemon.request(
                "ollie/submit", {"session": flood_session, "text": "flood"}, timeout=120))
            actions, actions_s, actions_probes = code_actions_during(daemon, probe_session, Path(tmp))
            state = daemon.request("ollie/state", {"session": big})
        finally:
            daemon.shutdown()
    if state["contextSize"]["tokens"] <= 0:
        raise RuntimeError(f"the big session looks empty: {state}")
    rows = []
    for label, worst, took, probes in (
            (f"session/load of {BIG:,} messages", load, load_s, load_probes),
            (f"ollie/context (its last 500) of {BIG:,} messages", context, context_s, context_probes),
            (f"a fork of {BIG:,} messages", fork, fork_s, fork_probes),
            (f"/compact of {BIG:,} messages", compact, compact_s, compact_probes),
            (f"a {FLOOD:,}-delta reply in another session", flood, flood_s, flood_probes),
            (f"{ASKS} code actions over a select-all of a {HUGE_LINES:,}-line document", actions, actions_s,
             actions_probes)):
        row = Row(f"loop stall (worst ollie/state of another session) during {label}, vs idle", worst, idle,
                  target=f"<= {TARGET_MS:.0f} ms", note=f"the operation took {took * 1e3:.0f} ms; {probes}")
        row.ok = worst <= TARGET_MS
        rows.append(row)
    notes = [f"probe while idle: worst {idle:.1f} ms, {idle_probes}; big session state after compaction: "
             f"{state['contextSize']['tokens']} tokens"]
    return rows, notes


if __name__ == "__main__":
    run_alone(run)
