"""Session persistence bench: save time per round must stay flat as the history grows.

Run: python bench/bench_sessions.py [--rounds N]

For histories of 10, 100, 1,000 and 10,000 messages it measures the median time
of one tool-round save (three new messages plus the meta record), durable
(fdatasync, as ollie runs) and without the sync (the CPU part alone), next to
the time a full snapshot of the same history takes (what rewriting everything
each round would cost). Then the resume (load) time of a 10,000-message session,
and the long-history rows: a 100,000-message resume against the floor of reading
its file and parsing each line, and the `ollie/state` context estimate at 100,000
messages against 100.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import Row, interleaved, median
from ollie.backend.types import Message, ToolCall, Usage
from ollie.sessions.persist import SessionFile
from ollie.sessions.session import Session

SIZES = (10, 100, 1_000, 10_000)
BODY = "Some tool output line with a path/to/file.py:42 and text. " * 8  # ~470 bytes


def _add_round(session: Session, r: int) -> None:
    session.messages.append(Message("user", f"step {r}: {BODY[:120]}"))
    session.messages.append(Message("assistant", f"calling {r}", tool_calls=[ToolCall(f"c{r}", "file_read", "{}")]))
    session.messages.append(Message("tool", f"{r} {BODY}", tool_call_id=f"c{r}", name="file_read"))
    # As the loop does: every tool result gets a tier, and an older cold one collapses in place.
    session.result_tiers[f"c{r}"] = "cold"
    if r >= 2 and len(session.messages) >= 9:
        session.result_tiers[f"c{r - 2}"] = "collapsed"
        session.messages[-7].content = f"[cold result of file_read collapsed: {r - 2}]"
        session.mark_edited(len(session.messages) - 7)
    session.add_usage(Usage(input_tokens=1000 + r, output_tokens=50), 0.001)


def _session_of(size: int) -> Session:
    session = Session(agent="bench")
    r = 0
    while len(session.messages) < size:
        _add_round(session, r)
        r += 1
    del session.messages[size:]
    return session


def _time_saves(root: Path, rounds: int, *, sync: bool) -> dict[int, float]:
    """Median seconds of one round's save per history size.

    The sizes take turns round by round, so a burst of load on the machine
    (fsync latency varies a lot on a shared disk) hits every size alike.
    """
    sessions = {size: _session_of(size) for size in SIZES}
    files = {size: SessionFile(root, s.id, sync=sync) for size, s in sessions.items()}
    for size, file in files.items():
        file.save(sessions[size])  # the first save of a file is its snapshot
    samples: dict[int, list[float]] = {size: [] for size in SIZES}
    for r in range(rounds):
        for size in SIZES:
            _add_round(sessions[size], size + r)
            start = time.perf_counter()
            files[size].save(sessions[size])
            files[size].flush()  # durable: the round's fdatasync runs on the sync thread (off the event loop)
            samples[size].append(time.perf_counter() - start)
    return {size: statistics.median(times) for size, times in samples.items()}


def _median_time(action: Callable[[], object], repeats: int = 5) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _time_snapshot(root: Path, size: int) -> float:
    """Median seconds of a full snapshot of `size` messages (what rewriting every round would cost)."""
    session = _session_of(size)
    file = SessionFile(root, session.id)
    return _median_time(lambda: file.rewrite(session))


def _time_load(root: Path, size: int) -> float:
    """Median seconds to resume a session of `size` messages plus some appended rounds."""
    session = _session_of(size)
    file = SessionFile(root, session.id)
    file.save(session)
    for r in range(20):  # some appended rounds after the snapshot, as a real log has
        _add_round(session, size + r)
        file.save(session)
    assert len(SessionFile(root, session.id).load().messages) == len(session.messages)
    return _median_time(lambda: SessionFile(root, session.id).load())


LONG = 100_000


def _read_floor(path: Path) -> int:
    """The floor of a resume: read the file and json.loads each line, nothing built (the GC paused, as load does)."""
    gc.disable()
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        return len([json.loads(line) for line in data.split(b"\n") if line])
    finally:
        gc.enable()


def _long_session_file(root: Path, size: int) -> tuple[SessionFile, Session]:
    """A saved session of `size` messages plus some appended rounds, as a real log has."""
    session = _session_of(size)
    file = SessionFile(root, session.id)
    file.save(session)
    for r in range(20):
        _add_round(session, size + r)
        file.save(session)
    return file, session


def resume_rows(root: Path, rounds: int = 5) -> list[Row]:
    """Resume of a 100k-message session vs the read-and-parse floor of the same file, interleaved."""
    file, session = _long_session_file(root, LONG)
    assert len(SessionFile(root, session.id).load().messages) == len(session.messages)
    floor, load = interleaved(rounds, lambda: _timed(lambda: _read_floor(file.path)),
                              lambda: _timed(lambda: SessionFile(root, session.id).load()))
    row = Row(f"resume (load) of a {LONG:,}-message session (vs reading + json.loads of each line)",
              median(load) * 1e3, median(floor) * 1e3, target="<= 1.3x")
    row.ok = row.ratio is not None and row.ratio <= 1.3
    return [row]


def _timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


async def _state_costs(root: Path, sizes: tuple[int, ...], calls: int, rounds: int) -> dict[int, float]:
    """Median seconds of one `ollie/state` context estimate (Core.context_info) per history size."""
    from ollie.agent.core import Core
    from ollie.testing import ScriptedLLMServer

    ids = {size: _long_session_file(root, size)[1].id for size in sizes}
    work = root / "work"
    work.mkdir(exist_ok=True)
    with ScriptedLLMServer("openai") as srv:
        cores = {size: await Core.create(agent="default", cwd=work, env=srv.env(), sessions_dir=root,
                                         session_id=ids[size]) for size in sizes}
        try:
            for size, core in cores.items():
                assert len(core.session.messages) >= size
                core.context_info()  # the first one counts the loaded history once

            def measure(core: Core) -> Callable[[], float]:
                def batch() -> float:
                    start = time.perf_counter()
                    for _ in range(calls):
                        core.context_info()
                    return (time.perf_counter() - start) / calls
                return batch

            samples = interleaved(rounds, *(measure(cores[size]) for size in sizes))
        finally:
            for core in cores.values():
                await core.close()
    return {size: median(times) for size, times in zip(sizes, samples, strict=True)}


def state_rows(root: Path, calls: int = 5000, rounds: int = 15) -> list[Row]:
    """The context estimate behind `ollie/state` and `stateChanged`: 100k messages vs 100."""
    costs = asyncio.run(_state_costs(root, (100, LONG), calls, rounds))
    row = Row(f"ollie/state context estimate, 1,000 of them, at {LONG:,} messages (vs 100)", costs[LONG] * 1e6,
              costs[100] * 1e6, target="<= 1.2x")
    row.ok = row.ratio is not None and row.ratio <= 1.2
    return [row]


def long_history_rows(resume_rounds: int = 5) -> tuple[list[Row], list[str]]:
    """The rows for long histories: resume vs its floor, state cost at 100k vs 100 messages."""
    with tempfile.TemporaryDirectory(prefix="ollie-bench-") as tmp:
        root = Path(tmp)
        rows = resume_rows(root / "resume", resume_rounds)
        rows += state_rows(root / "state")
    return rows, []


def main() -> None:
    """Print the table and the flatness ratios."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60, help="saves measured per size")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ollie-bench-") as tmp:
        root = Path(tmp)
        print(f"{'messages':>9} {'save (fsync)':>14} {'save (no sync)':>15} {'full snapshot':>14}")
        durable = _time_saves(root, args.rounds, sync=True)
        cpu = _time_saves(root, args.rounds, sync=False)
        for size in SIZES:
            snapshot = _time_snapshot(root, size)
            print(f"{size:>9,} {durable[size] * 1e3:>11.3f} ms {cpu[size] * 1e3:>12.3f} ms {snapshot * 1e3:>11.3f} ms")
        print(f"save per round, 10,000 vs 10 messages: {durable[10_000] / durable[10]:.2f}x durable, "
              f"{cpu[10_000] / cpu[10]:.2f}x CPU part (flat = about 1)")
        load_s = _time_load(root, 10_000)
        print(f"resume (load) of a 10,000-message session: {load_s * 1e3:.1f} ms")
    rows, _ = long_history_rows()
    for row in rows:
        print(f"{row.name}: {row.value:.3f} {row.unit} vs {row.reference:.3f} ({row.ratio:.2f}x) {row.verdict}")


if __name__ == "__main__":
    main()
