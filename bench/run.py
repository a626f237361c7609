"""Run every benchmark, print the table of ratios and write bench/RESULTS.md.

Usage: python -m bench [--quick] [--small] [--no-write] [--only STEP,...]
Each ratio compares two things measured side by side in this run (rounds
interleaved, medians), so the machine's noise largely cancels.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bench.common import REPO, Row, private_home, table

RESULTS = REPO / "bench" / "RESULTS.md"
# The steps in the order they run (`--only` picks some of them).
STEPS = ("startup", "acp", "relay", "inline", "tools", "network", "sessions", "memory", "stalls", "checkpoints",
         "scale")


def session_rows(rounds: int) -> tuple[list[Row], list[str]]:
    """Save per round at 10..10,000 messages (durable and CPU part), resume of 10,000 (bench_sessions)."""
    from bench.bench_sessions import SIZES, _time_load, _time_saves, long_history_rows

    with tempfile.TemporaryDirectory(prefix="ollie-bench-") as tmp:
        root = Path(tmp)
        durable = _time_saves(root, rounds, sync=True)
        cpu = _time_saves(root, rounds, sync=False)
        load_s = _time_load(root, 10_000)
    rows = []
    for size in SIZES[1:]:
        row = Row(f"session save per round at {size:,} messages (vs 10), fdatasync", durable[size] * 1e3,
                  durable[10] * 1e3, note=f"CPU part {cpu[size] * 1e3:.3f} ms vs {cpu[10] * 1e3:.3f} ms")
        if size == 10_000:
            row.target = "<= 1.5x"
            row.ok = row.ratio is not None and row.ratio <= 1.5
        rows.append(row)
    cpu_row = Row("session save per round at 10,000 messages (vs 10), CPU part only", cpu[10_000] * 1e3,
                  cpu[10] * 1e3)
    rows.append(cpu_row)
    rows.append(Row("resume (load) of a 10,000-message session", load_s * 1e3))
    long_rows, notes = long_history_rows(3 if rounds < 20 else 5)
    return rows + long_rows, notes


def machine() -> list[str]:
    """Where the numbers come from."""
    return [
        f"- date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: `{' '.join(platform.uname())}`",
        f"- CPUs: {os.cpu_count()} (load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} at the start)",
        f"- Python: {platform.python_version()} ({sys.executable})",
    ]


def main(argv: list[str] | None = None) -> int:
    """Run all, print, write RESULTS.md (the analysis section after the marker is kept)."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run, noisier)")
    parser.add_argument("--small", action="store_true", help="the scale rows at small sizes (a smoke run); implies "
                        "--no-write")
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    parser.add_argument("--only", metavar="STEP,...", help=f"run only these steps ({', '.join(STEPS)}); implies "
                        "--no-write (a partial table must not replace RESULTS.md)")
    args = parser.parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()] if args.only else list(STEPS)
    unknown = [s for s in only if s not in STEPS]
    if unknown:
        parser.error(f"--only: unknown step(s) {', '.join(unknown)} (known: {', '.join(STEPS)})")
    quick = args.quick
    if args.small:
        os.environ["OLLIE_BENCH_SMALL"] = "1"  # read when bench_scale is imported, below
        args.no_write = True
    header = machine()
    started = time.perf_counter()
    from bench import (
        bench_acp,
        bench_checkpoints,
        bench_egress,
        bench_inline,
        bench_memory,
        bench_relay,
        bench_scale,
        bench_stalls,
        bench_startup,
        bench_tools,
    )

    every: dict[str, tuple[str, Callable[[], tuple[list[Row], list[str]]]]] = {
        "startup": ("start-up", lambda: bench_startup.run(3 if quick else 15)),
        "acp": ("ollie acp start-up", lambda: bench_acp.run(2 if quick else 11)),
        "relay": ("streaming relay", lambda: bench_relay.run(1 if quick else 3)),
        "inline": ("inline completions", lambda: bench_inline.run(20 if quick else 100)),
        "tools": ("tool spawn and fan-out", lambda: bench_tools.run(10 if quick else 40, 1 if quick else 2)),
        "network": ("egress proxy", lambda: bench_egress.run(10 if quick else 100, 2 if quick else 15)),
        "sessions": ("sessions", lambda: session_rows(10 if quick else 40)),
        "memory": ("memory and per-session cost", bench_memory.run),
        "stalls": ("event-loop stalls", bench_stalls.run),
        "checkpoints": ("checkpoints", lambda: bench_checkpoints.run(5 if quick else 20)),
        "scale": ("scale: session length, live sessions, repository size, resume", lambda: bench_scale.run(
            2 if quick else 5)),
    }
    steps = [every[name] for name in STEPS if name in only]
    rows: list[Row] = []
    notes: list[str] = []
    with private_home():
        for title, step in steps:
            print(f"== {title}", file=sys.stderr, flush=True)
            got, extra = step()
            rows += got
            notes += extra
            for line in table(got)[2:]:
                print(line, flush=True)
    elapsed = time.perf_counter() - started
    targets = [r for r in rows if r.ok is not None]
    missed = [r for r in targets if not r.ok]
    summary = f"{len(targets) - len(missed)} of {len(targets)} targets met in {elapsed:.0f} s"
    print("\n" + "\n".join(table(rows)) + f"\n\n{summary}")
    for note in notes:
        print(f"- {note}")
    if not args.no_write and not args.only:
        write_results(header, rows, notes, summary, quick=quick)
        print(f"\nwrote {RESULTS.relative_to(REPO)}")
    return 0


ANALYSIS_MARKER = "<!-- analysis: kept across runs -->"


def write_results(header: list[str], rows: list[Row], notes: list[str], summary: str, *, quick: bool) -> None:
    """RESULTS.md: the machine, the table, the notes; a hand-written analysis below the marker survives."""
    kept = ""
    if RESULTS.exists():
        text = RESULTS.read_text(encoding="utf-8")
        if ANALYSIS_MARKER in text:
            kept = text[text.index(ANALYSIS_MARKER):]
    lines = ["# Benchmark results", "", "Written by `./scripts/bench` (`python -m bench`"
             + (" --quick" if quick else "") + "). Every ratio compares two things measured side by side in "
             "this run (interleaved rounds, medians).", "", *header, "", *table(rows), "", f"**{summary}.**", ""]
    if notes:
        lines += ["Notes:", "", *[f"- {n}" for n in notes], ""]
    RESULTS.write_text("\n".join(lines) + ("\n" + kept if kept else ""), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
