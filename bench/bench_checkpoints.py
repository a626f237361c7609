"""Checkpoint cost of a whole turn that changes one file, on a 10,000-file repository, against `git status`.

The tree is generated once (200 dirs x 50 files, a .gitignore, an ignored
build dir; bench_scale runs it for other sizes too). A turn goes through the
path the Core takes: `Review.begin_turn` (no scan: the turn's checkpoint waits
for its first write step), `ChangeTracker.before_step` (the turn's checkpoint)
/ `after_step` around one write step (that edits one file, untimed) and the
step's diffs, then `Review.end_turn` (both refs logged in one `update-ref`).
Both sides are wall time seen from this process, git's process spawns included.
The first turn (hashes everything) is reported apart.
The reference is a plain `git status --porcelain` of the same tree in its own
repository; rounds are interleaved. CPU time is reported too, for both sides
(the turn: this process + its git children; the reference: its git), as wall
time is noisy on a loaded machine and `git status` lstats in threads.
Usage: python -m bench.bench_checkpoints [ROUNDS]
"""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bench.common import Row, interleaved, median, private_home

FILES = 10_000
PER_DIR = 50
TARGET_MS = 50.0

if TYPE_CHECKING:
    from ollie.sessions.session import Session


def generate(root: Path, files: int = FILES) -> None:
    """`files` small source files in `files` / PER_DIR dirs, plus an ignored build dir."""
    for d in range(max(1, files // PER_DIR)):
        folder = root / f"pkg{d:03d}"
        folder.mkdir(parents=True)
        for f in range(PER_DIR):
            (folder / f"mod{f:02d}.py").write_text(f"# module {d}.{f}\n" + "x = 1\n" * 20)
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "out.o").write_bytes(b"\0" * 4096)


def plain_repo(root: Path) -> None:
    """The reference's own repository (index filled, so `git status` only stats and walks)."""
    env = {"PATH": os.environ["PATH"], "HOME": str(root), "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)


@dataclass
class _Host:
    """The little of a TurnHost that Review drives."""

    sessions_dir: Path
    session: Session
    plan_text: str = ""
    plan_step: str = ""

    def save(self) -> None:
        """Nothing to persist here."""

    async def save_rewritten(self) -> None:
        """Nothing to persist here."""

    async def reread_plan(self, *, stale: bool = False) -> None:
        """No plan in this bench."""

    async def put_plan(self, text: str) -> None:
        """No plan in this bench."""


def _cpu_s() -> float:
    """User + system CPU seconds of this process and its finished children (the git processes)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def run(rounds: int = 20, files: int = FILES) -> tuple[list[Row], list[str]]:
    """The rows: checkpoint cost of a one-file turn vs `git status`, and the first turn, on a `files`-file tree."""
    from ollie.agent.changes import ChangeTracker
    from ollie.agent.review import Review
    from ollie.sessions.session import Session

    with tempfile.TemporaryDirectory(prefix="ollie-bench-cp-") as tmp:
        root = Path(tmp) / "repo"
        generate(root, files)
        dirs = max(1, files // PER_DIR)
        plain_repo(root)
        session = Session()
        tracker = ChangeTracker(root, session.id)
        host = _Host(Path(tmp) / "sessions", session)
        review = Review(host, tracker=lambda: tracker, add_note=lambda _text, _quiet: None)
        loop = asyncio.new_event_loop()
        counter = iter(range(1_000_000))
        cpu: list[float] = []
        ref_cpu: list[float] = []

        async def a_turn() -> float:
            n = next(counter)
            began = time.perf_counter()
            await review.begin_turn()
            token = await tracker.before_step()
            paused = time.perf_counter()
            (root / f"pkg{n % dirs:03d}" / "mod00.py").write_text(f"changed {n}\n")  # the step: not ours
            resumed = time.perf_counter()
            changed = (await tracker.after_step(token))[1].changes
            await review.end_turn()
            assert len(changed) == 1, changed  # the bench measures a real, correct turn
            return (time.perf_counter() - began - (resumed - paused)) * 1e3

        try:
            first_ms = loop.run_until_complete(a_turn())
            status_env = {"PATH": os.environ["PATH"], "HOME": tmp, "GIT_CONFIG_NOSYSTEM": "1",
                          "GIT_OPTIONAL_LOCKS": "0"}

            def turn() -> float:
                before = _cpu_s()
                ms = loop.run_until_complete(a_turn())
                cpu.append((_cpu_s() - before) * 1e3)
                return ms

            def status() -> float:
                before, began = _cpu_s(), time.perf_counter()
                subprocess.run(["git", "status", "--porcelain"], cwd=root, env=status_env, check=True,
                               stdout=subprocess.DEVNULL)
                ms = (time.perf_counter() - began) * 1e3
                ref_cpu.append((_cpu_s() - before) * 1e3)
                return ms

            per_turn, ref = interleaved(rounds, turn, status)
        finally:
            loop.close()
    value = median(per_turn)
    rows = [
        # The target is the 10,000-file tree's (a smaller one is dominated by git's process spawns).
        Row(f"checkpoints of a turn changing one file, {files:,}-file repo (vs `git status`)", value,
            median(ref), target="<= 1.3x" if files == FILES else "",
            ok=value <= 1.3 * median(ref) if files == FILES else None,
            note=f"CPU {median(cpu):.1f} ms vs {median(ref_cpu):.1f} ms, {median(cpu) / median(ref_cpu):.2f}x; "
                 f"{TARGET_MS:g} ms absolute: {'met' if value <= TARGET_MS else 'missed'}"),
        Row(f"first turn's checkpoints, {files:,}-file repo (hashes every file)", first_ms),
    ]
    return rows, []


def main(argv: list[str]) -> int:
    """Print the rows."""
    rounds = int(argv[1]) if len(argv) > 1 else 20
    with private_home():
        rows, _ = run(rounds)
    for row in rows:
        ratio = f" ({row.ratio:.2f}x the reference {row.reference:.1f} ms)" if row.ratio else ""
        note = f" [{row.note}]" if row.note else ""
        print(f"{row.name}: {row.value:.1f} ms{ratio}{note} {row.verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
