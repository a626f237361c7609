"""Session persistence bench: save time per round must stay flat as the history grows.

Run: python bench/bench_sessions.py [--rounds N]

For histories of 10, 100, 1,000 and 10,000 messages it measures the median time
of one tool-round save (three new messages plus the meta record), durable
(fdatasync, as ollie runs) and without the sync (the CPU part alone), next to
the time a full snapshot of the same history takes (what rewriting everything
each round would cost). Then the resume (load) time of a 10,000-message session.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

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


def main() -> None:
    """Print the table and the flatness ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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


if __name__ == "__main__":
    main()
