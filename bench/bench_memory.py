"""Memory and per-session cost: the daemon's RSS after its first request vs a bare pygls server's, what a new
session costs (time and RSS), and what 20 resumed 1,000-message sessions add.

Run alone: python -m bench.bench_memory
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from bench.bench_sessions import _session_of
from bench.bench_startup import fresh_bytecode
from bench.common import BARE_SERVER, DAEMON, Row, child_env, median, rss_kb, run_alone
from bench.lspwire import LSPProcess
from ollie import paths
from ollie.sessions.persist import SessionFile
from ollie.sessions.registry import Registry
from ollie.sessions.types import Channel, Kind, Request, os_user

SESSIONS = 20
MESSAGES = 1_000
NEW_SESSIONS = 20
RSS_ROUNDS = 3


def write_saved_sessions(count: int, size: int) -> list[str]:
    """Save `count` sessions of `size` messages in the sessions dir and record them (channel lsp)."""
    registry = Registry()
    ids = []
    for _ in range(count):
        session = _session_of(size)
        session.agent = "default"
        SessionFile(paths.sessions_dir(), session.id).save(session)
        registry.ensure(Request(id=session.id, user_id=os_user(), agent_id="default", kind=Kind.CHAT,
                                channel=Channel.LSP, title="bench"))
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


def write_plain_agent() -> str:
    """An agent whose prompt is plain text (the default one runs ~25 shell commands): the daemon's own cost."""
    agents = paths.config_dir() / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "plain.json").write_text(json.dumps({"prompt": "You are a terse benchmark agent."}), encoding="utf-8")
    return "plain"


def _new_sessions(daemon: LSPProcess, count: int, agent: str | None = None) -> tuple[list[float], int]:
    """Create `count` sessions one after another: their `session/new` round trips (s) and the RSS they added (KiB)."""
    before = _settled_rss(daemon.pid)
    took = []
    for _ in range(count):
        start = time.perf_counter()
        daemon.request("ollie/session/new", {"agent": agent} if agent else {}, timeout=60)
        took.append(time.perf_counter() - start)
    return took, _settled_rss(daemon.pid) - before


def run() -> tuple[list[Row], list[str]]:
    """Rows: RSS after the first request vs bare pygls, session/new time and RSS, 20 resumed sessions."""
    fresh_bytecode()  # as the start-up rows: an installed ollie has them (and compiling allocates)
    ids = write_saved_sessions(SESSIONS, MESSAGES)
    plain = write_plain_agent()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        # Warm, as every start after a user's first is: the page cache and the .pyc files exist. Run alone,
        # this bench would otherwise measure a first-ever start.
        with LSPProcess(DAEMON, env=child_env()) as warm:
            warm.initialize(root)
            warm.request("ollie/state", {}, timeout=60)
        bare_kbs, ready_kbs = [], []
        for _ in range(RSS_ROUNDS):  # alternating, each a fresh process
            with LSPProcess(BARE_SERVER, env=child_env()) as bare:
                bare.initialize(root)
                bare_kbs.append(_settled_rss(bare.pid))
            with LSPProcess(DAEMON, env=child_env()) as daemon:
                daemon.initialize(root)
                # The first request: the engine and the default session are loaded (built in the background).
                daemon.request("ollie/state", {}, timeout=60)
                ready_kbs.append(_settled_rss(daemon.pid))
        bare_kb, ready_kb = int(median(bare_kbs)), int(median(ready_kbs))
        with LSPProcess(DAEMON, env=child_env()) as daemon:
            daemon.initialize(root)
            daemon.request("ollie/state", {}, timeout=60)
            _new_sessions(daemon, 3)  # warm: the first sessions fill caches every later one shares
            new_s, new_kb = _new_sessions(daemon, NEW_SESSIONS)
            _new_sessions(daemon, 3, plain)
            plain_s, plain_kb = _new_sessions(daemon, NEW_SESSIONS, plain)
            base_kb = _settled_rss(daemon.pid)
            for session_id in ids:
                daemon.request("ollie/session/load", {"session": session_id}, timeout=60)
            state = daemon.request("ollie/state", {"session": ids[-1]})
            if state["contextSize"]["tokens"] <= 0:
                raise RuntimeError(f"a resumed session looks empty: {state}")
            loaded_kb = _settled_rss(daemon.pid)
    first = Row("RSS after the first request (engine + default session) vs bare pygls, MiB", ready_kb / 1024,
                bare_kb / 1024, unit="MiB", target="<= 1.3x")
    first.ok = first.ratio is not None and first.ratio <= 1.3
    new = Row("session/new round trip, default agent (its 5 prompt commands wait for the first turn), median of 20",
              median(new_s) * 1e3, target="<= 15 ms")
    new.ok = median(new_s) * 1e3 <= 15
    plain_new = Row("session/new round trip, an agent with a plain-text prompt, median of 20", median(plain_s) * 1e3,
                    target="<= 15 ms")
    plain_new.ok = median(plain_s) * 1e3 <= 15
    per = Row(f"idle RSS per new session (added by {NEW_SESSIONS} session/new, default agent), KiB",
              new_kb / NEW_SESSIONS, None, unit="KiB", target="<= 100 KiB")
    per.ok = new_kb / NEW_SESSIONS <= 100
    plain_per = Row(f"idle RSS per new session ({NEW_SESSIONS} of the plain agent), KiB", plain_kb / NEW_SESSIONS,
                    None, unit="KiB")
    added = Row(f"RSS added by {SESSIONS} resumed sessions of {MESSAGES:,} messages, MiB",
                (loaded_kb - base_kb) / 1024, None, unit="MiB", target="<= 50 MB")
    added.ok = (loaded_kb - base_kb) * 1024 <= 50e6
    notes = [f"RSS KiB: bare pygls {bare_kbs}, daemon after the first request {ready_kbs}, "
             f"+{NEW_SESSIONS} new sessions {new_kb}, with resumed sessions {loaded_kb}"]
    return [first, new, plain_new, per, plain_per, added], notes


if __name__ == "__main__":
    run_alone(run)
