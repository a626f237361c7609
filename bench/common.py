"""What every benchmark shares: private dirs, interleaved timing, medians, percentiles, the result row."""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
DAEMON = [PYTHON, "-m", "ollie_lsp"]
BARE_SERVER = [PYTHON, str(REPO / "bench" / "bare_server.py")]


@dataclass
class Row:
    """One line of the results table: a measurement against its reference, and the target when there is one."""

    name: str
    value: float
    reference: float | None = None
    unit: str = "ms"
    target: str = ""
    ok: bool | None = None
    note: str = ""
    paired: float | None = None  # the median of per-pair ratios, where each sample had its reference beside it

    @property
    def ratio(self) -> float | None:
        """The paired ratio, else value / reference."""
        if self.paired is not None:
            return self.paired
        if self.reference in (None, 0):
            return None
        return self.value / self.reference  # type: ignore[operator]

    @property
    def verdict(self) -> str:
        """PASS, MISS, or empty when the row has no target."""
        return "" if self.ok is None else ("PASS" if self.ok else "MISS")


def median(samples: list[float]) -> float:
    """The median (0 for no samples)."""
    return statistics.median(samples) if samples else 0.0


def percentile(samples: list[float], pct: float) -> float:
    """The `pct` percentile by nearest rank."""
    if not samples:
        return 0.0
    ordered = sorted(samples)
    rank = max(0, min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1))))
    return ordered[rank]


T = TypeVar("T")


def interleaved(rounds: int, *measures: Callable[[], T]) -> list[list[T]]:
    """Run the measures in turns, `rounds` times, so machine noise hits each alike; their samples."""
    samples: list[list[T]] = [[] for _ in measures]
    for _ in range(rounds):
        for index, measure in enumerate(measures):
            samples[index].append(measure())
    return samples


@contextmanager
def private_home() -> Iterator[Path]:
    """Private XDG dirs (and no OLLIE_* settings) for this process and its children, removed afterwards."""
    saved = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="ollie-bench-") as tmp:
        home = Path(tmp)
        for var, sub in (("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data"),
                         ("XDG_STATE_HOME", "state"), ("XDG_CACHE_HOME", "cache"), ("XDG_RUNTIME_DIR", "run")):
            (home / sub).mkdir(mode=0o700)
            os.environ[var] = str(home / sub)
        for var in [v for v in os.environ if v.startswith("OLLIE_")]:
            del os.environ[var]
        try:
            yield home
        finally:
            os.environ.clear()
            os.environ.update(saved)


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a server subprocess gets: ours plus `extra`."""
    env = dict(os.environ)
    env.update(extra or {})
    return env


def cpu_ms(pid: int) -> float:
    """CPU time a running process has used so far: all its threads, user and system (ms, in clock ticks)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def descendants_pss_kb(root: int) -> tuple[int, int]:
    """(count, summed PSS in KiB) of every live descendant of process `root` (PSS: shared pages split fairly)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    found, frontier = [], [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    total = 0
    for pid in found:
        try:
            with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
                total += next(int(line.split()[1]) for line in rollup if line.startswith("Pss:"))
        except (OSError, StopIteration):
            pass
    return len(found), total


def rss_kb(pid: int) -> int:
    """Resident set size of a process, in KiB (VmRSS)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def fmt(value: float | None, unit: str) -> str:
    """A number with its unit, sized for the table."""
    if value is None:
        return ""
    if unit == "s":
        return f"{value:.3f} s"
    if unit == "MiB":
        return f"{value:.1f} MiB"
    if unit == "KiB":
        return f"{value:.0f} KiB"
    return f"{value:.2f} ms" if abs(value) < 100 else f"{value:.0f} ms"


def table(rows: list[Row]) -> list[str]:
    """The markdown table."""
    out = ["| benchmark | value | reference | ratio | target | result |", "|---|---|---|---|---|---|"]
    for row in rows:
        ratio = f"{row.ratio:.2f}x" if row.ratio is not None else ""
        value = fmt(row.value, row.unit) + (f" ({row.note})" if row.note else "")
        out.append(f"| {row.name} | {value} | {fmt(row.reference, row.unit)} | {ratio} | {row.target} | "
                   f"{row.verdict} |")
    return out


def run_alone(run: Callable[..., tuple[list[Row], list[str]]]) -> None:
    """`python -m bench.bench_x [ROUNDS]`: one bench's `run` in private dirs, its rows printed as a table."""
    with private_home():
        rows, notes = run(int(sys.argv[1])) if len(sys.argv) > 1 else run()
    print(*table(rows), *notes, sep="\n")
