"""Session store bench: PostgreSQL (OLLIE_STORE) against the embedded default (files + SQLite) on one machine.

Run: python bench/bench_store.py [--rounds N] [--url postgresql://...] [--daemons 20 --sessions 5]

- append: p50/p99 of one tool round's save until it is durable (files: the
  fdatasync'd append; PostgreSQL: the round's row committed, save + flush) and
  of a registry activity stamp (touch), both stores side by side, interleaved.
- resume: load of a 1,000-message session from each store.
- fan-in: N processes x M sessions each appending rounds at once to one
  PostgreSQL store, then every session read back and checked: no round lost,
  torn or out of order. The processes use the store API directly (open_session,
  save, flush), the part of a daemon that talks to the store: 20 whole daemons
  with their engines do not fit this 2-core machine alongside the server.

Without --url a local cluster is started (initdb + pg_ctl, fsync on) and removed after.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ollie.backend.types import Message, ToolCall
from ollie.sessions.persist import SessionFile
from ollie.sessions.pg import log as pg_log
from ollie.sessions.pg.log import PgRounds
from ollie.sessions.registry import Registry
from ollie.sessions.session import Session
from ollie.sessions.types import Channel, Kind, Request

try:
    from bench.common import Row, median, percentile
except ImportError:  # run as a script: python bench/bench_store.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.common import Row, median, percentile

BODY = "Some tool output line with a path/to/file.py:42 and text. " * 8  # ~470 bytes
APPEND_TARGET_MS = 3.0


def _pg_log(url: str, session_id: str) -> SessionFile:
    """A session's log in the PostgreSQL store at `url`."""
    return SessionFile("unused", session_id, storage=PgRounds(url, session_id))


def _add_round(session: Session, r: int) -> None:
    session.messages.append(Message("user", f"step {r}"))
    session.messages.append(Message("assistant", f"calling {r}", tool_calls=[ToolCall(f"c{r}", "file_read", "{}")]))
    session.messages.append(Message("tool", f"{r} {BODY}", tool_call_id=f"c{r}", name="file_read"))


def _timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def append_and_touch(url: str, root: Path, rounds: int) -> dict[str, list[float]]:
    """Seconds per durable round save and per registry touch, files/SQLite and PostgreSQL, interleaved."""
    file_session, pg_session = Session(agent="bench"), Session(agent="bench")
    file_log, pg = SessionFile(root / "sessions", file_session.id), _pg_log(url, pg_session.id)
    file_log.save(file_session)
    pg.save(pg_session)
    pg.flush()
    local, remote = Registry(root / "sessions.db"), Registry(url)
    ids = {}
    for name, registry in (("sqlite", local), ("pg", remote)):
        ids[name] = registry.ensure(Request(user_id="bench", agent_id="bench", kind=Kind.CHAT, channel=Channel.CLI)).id
    samples: dict[str, list[float]] = {"files": [], "pg": [], "sqlite touch": [], "pg touch": []}

    def pg_round(r: int) -> None:
        _add_round(pg_session, r)
        pg.save(pg_session)
        pg.flush()

    def file_round(r: int) -> None:
        _add_round(file_session, r)
        file_log.save(file_session)

    try:
        for r in range(rounds):
            samples["files"].append(_timed(lambda: file_round(r)))  # noqa: B023 - called at once
            samples["pg"].append(_timed(lambda: pg_round(r)))  # noqa: B023
            samples["sqlite touch"].append(_timed(lambda: local.touch(ids["sqlite"], turn_completed=True)))
            samples["pg touch"].append(_timed(lambda: remote.touch(ids["pg"], turn_completed=True)))
    finally:
        pg.close()
        local.close()
        remote.close()
    return samples


def resume(url: str, root: Path, size: int = 1_000) -> tuple[float, float]:
    """Median seconds to resume a `size`-message session (snapshot + 20 rounds): files, PostgreSQL."""
    times = []
    for make in (lambda sid: SessionFile(root / "sessions", sid), lambda sid: _pg_log(url, sid)):
        session = Session(agent="bench")
        log = make(session.id)
        r = 0
        while len(session.messages) < size:
            _add_round(session, r)
            r += 1
        log.save(session)
        for extra in range(20):
            _add_round(session, r + extra)
            log.save(session)
        log.close()
        samples = []
        for _ in range(5):
            reader = make(session.id)
            samples.append(_timed(reader.load))
            assert len(reader.load().messages) == len(session.messages)
            reader.close()
        times.append(median(samples))
    return times[0], times[1]


def fan_in(url: str, daemons: int, sessions: int, rounds: int) -> tuple[float, list[float], str]:
    """Wall seconds, per-round latencies and problems ("" = none) of daemons x sessions appending at once."""
    go = Path(tempfile.mkdtemp(prefix="ollie-bench-go-")) / "go"
    env = {**os.environ, "OLLIE_STORE": url}
    procs = [subprocess.Popen([sys.executable, __file__, "--child", str(sessions), str(rounds), str(go)],
                              stdout=subprocess.PIPE, text=True, env=env) for _ in range(daemons)]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    start = time.perf_counter()
    go.touch()
    outputs = [proc.communicate(timeout=600)[0] for proc in procs]
    wall = time.perf_counter() - start
    latencies: list[float] = []
    session_ids: list[str] = []
    for out in outputs:
        lines = out.split()
        session_ids += lines[0].split(",")
        latencies += [float(x) for x in lines[1:]]
    problems = []
    for sid in session_ids:
        texts = [m.content for m in _pg_log(url, sid).load().messages]
        expected = [f"{kind} {r}" for r in range(rounds) for kind in ("question", "answer")]
        if texts != expected:
            problems.append(f"{sid}: {len(texts)} messages, expected {len(expected)} in order")
    return wall, latencies, "; ".join(problems)


def _child(sessions: int, rounds: int, go: Path) -> None:
    """One 'daemon': `sessions` sessions, each round appended to each in turn, every round flushed (durable)."""
    opened = []
    for _ in range(sessions):
        session = Session(agent="bench")
        opened.append((_pg_log(os.environ["OLLIE_STORE"], session.id), session))
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.001)
    latencies = []
    for r in range(rounds):
        for log, session in opened:
            session.messages += [Message("user", f"question {r}"), Message("assistant", f"answer {r}")]
            start = time.perf_counter()
            log.save(session)
            log.flush()
            latencies.append(time.perf_counter() - start)
    for log, _ in opened:
        log.close()
    print(",".join(s.id for _, s in opened), *(f"{x:.6f}" for x in latencies), flush=True)


def store_rows(rounds: int, url: str = "", *, daemons: int = 20, sessions: int = 5, fan_rounds: int = 20) -> list[Row]:
    """The bench as result rows (a local cluster with fsync on is started when `url` is empty)."""
    server = None
    if not url:
        from tests.teams.pgserver import PgServer

        server = PgServer(fsync=True)
        url = server.schema_url()
    try:
        with tempfile.TemporaryDirectory(prefix="ollie-bench-") as tmp:
            samples = append_and_touch(url, Path(tmp), rounds)
            files_resume, pg_resume = resume(url, Path(tmp))
        pg_p50 = median(samples["pg"]) * 1e3
        rows = [
            Row("round append p50, PostgreSQL (vs files + fdatasync)", pg_p50, median(samples["files"]) * 1e3,
                target=f"<= {APPEND_TARGET_MS:g} ms", ok=pg_p50 <= APPEND_TARGET_MS,
                note=f"p99 {percentile(samples['pg'], 99) * 1e3:.2f} ms vs "
                     f"{percentile(samples['files'], 99) * 1e3:.2f} ms"),
            Row("registry touch p50, PostgreSQL (vs SQLite)", median(samples["pg touch"]) * 1e3,
                median(samples["sqlite touch"]) * 1e3),
            Row("resume of a 1,000-message session, PostgreSQL (vs files)", pg_resume * 1e3, files_resume * 1e3),
        ]
        wall, latencies, problems = fan_in(url, daemons, sessions, fan_rounds)
        total = daemons * sessions * fan_rounds
        rows.append(Row(f"{daemons} processes x {sessions} sessions appending at once: round p50",
                        median(latencies) * 1e3, target="no lost or reordered round", ok=not problems,
                        note=f"p99 {percentile(latencies, 99) * 1e3:.1f} ms; {total} rounds in {wall:.1f} s "
                             f"({total / wall:.0f}/s); {problems or 'every round there, in order'}"))
        return rows
    finally:
        pg_log.close_all()
        if server is not None:
            server.stop()


def main() -> None:
    """Print the rows."""
    if sys.argv[1:2] == ["--child"]:
        _child(int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200, help="rounds timed per store")
    parser.add_argument("--url", default="", help="an existing PostgreSQL store (default: start a local cluster)")
    parser.add_argument("--daemons", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--fan-rounds", type=int, default=20, help="rounds per session in the fan-in")
    args = parser.parse_args()
    for row in store_rows(args.rounds, args.url, daemons=args.daemons, sessions=args.sessions,
                          fan_rounds=args.fan_rounds):
        ref = f" (vs {row.reference:.3f} {row.unit})" if row.reference is not None else ""
        verdict = f" [{row.target}: {row.verdict}]" if row.target else ""
        print(f"{row.name}: {row.value:.3f} {row.unit}{ref}{verdict}  {row.note}")


if __name__ == "__main__":
    main()
