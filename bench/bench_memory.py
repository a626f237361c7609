"""Memory: the daemon's RSS idle vs a bare pygls server's, and what 20 resumed 1,000-message sessions add.

Run alone: python -m bench.bench_memory
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from bench.bench_sessions import _session_of
from bench.common import BARE_SERVER, DAEMON, Row, child_env, median, private_home, rss_kb
from bench.lspwire import LSPProcess
from ollie import paths
from ollie.sessions import Channel, Kind, Registry, Request, os_user
from ollie.sessions.persist import SessionFile

SESSIONS = 20
MESSAGES = 1_000


def write_saved_sessions(count: int, size: int) -> list[str]:
    """Save `count` sessions of `size` messages in the sessions dir and record them (channel lsp)."""
    registry = Registry()
    ids = []
    for _ in range(count):
        session = _session_of(size)
        session.agent = "default"
        SessionFile(paths.sessions_dir(), session.id).save(session)
        registry.ensure(Request(id=session.id, user_id=os_user(), agent_id="default", kind=Kind.CHAT,
                                channel=Channel.LSP, title="bench", allow_exact_id_create=True))
        ids.append(session.id)
    registry.close()
    return ids


def _settled_rss(pid: int, *, samples: int = 5, every_s: float = 0.1) -> int:
    """Median of a few RSS readings (KiB), once the process has settled."""
    readings = []
    for _ in range(samples):
        time.sleep(every_s)
        readings.append(rss_kb(pid))
    return int(median(readings))


def run() -> tuple[list[Row], list[str]]:
    """Rows: idle RSS vs bare pygls, and the RSS added by 20 sessions of 1,000 messages."""
    ids = write_saved_sessions(SESSIONS, MESSAGES)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bare = LSPProcess(BARE_SERVER, env=child_env())
        try:
            bare.initialize(root)
            bare_kb = _settled_rss(bare.pid)
        finally:
            bare.shutdown()
        daemon = LSPProcess(DAEMON, env=child_env())
        try:
            daemon.initialize(root)
            # Idle: initialized, nothing asked yet (the engine loads with the first ollie/* request).
            idle_kb = _settled_rss(daemon.pid)
            daemon.request("ollie/state", {}, timeout=60)  # the default session (and the engine) is ready
            ready_kb = _settled_rss(daemon.pid)
            for session_id in ids:
                daemon.request("ollie/session/load", {"session": session_id}, timeout=60)
            state = daemon.request("ollie/state", {"session": ids[-1]})
            if state["contextSize"]["tokens"] <= 0:
                raise RuntimeError(f"a resumed session looks empty: {state}")
            loaded_kb = _settled_rss(daemon.pid)
        finally:
            daemon.shutdown()
    idle = Row("idle RSS: daemon (initialized, nothing asked) vs bare pygls, MiB", idle_kb / 1024, bare_kb / 1024,
               unit="MiB", target="<= 1.3x")
    idle.ok = idle.ratio is not None and idle.ratio <= 1.3
    ready = Row("RSS with the default session ready (engine loaded) vs bare pygls, MiB", ready_kb / 1024,
                bare_kb / 1024, unit="MiB")
    added = Row(f"RSS added by {SESSIONS} resumed sessions of {MESSAGES:,} messages, MiB",
                (loaded_kb - ready_kb) / 1024, None, unit="MiB", target="<= 50 MB")
    added.ok = (loaded_kb - ready_kb) * 1024 <= 50e6
    notes = [f"RSS KiB: bare pygls {bare_kb}, daemon idle {idle_kb}, default session ready {ready_kb}, "
             f"with sessions {loaded_kb}"]
    return [idle, ready, added], notes


if __name__ == "__main__":
    with private_home():
        rows, notes = run()
    for row in rows:
        ratio = f" ({row.ratio:.2f}x)" if row.ratio else ""
        print(f"{row.name}: {row.value:.1f}{ratio} {row.verdict}")
    print(*notes, sep="\n")
