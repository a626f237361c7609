"""Checkpoint cost per turn: a snapshot of a 10,000-file repository after one file changed, against `git status`.

The tree is generated once (200 dirs x 50 files, a .gitignore, an ignored
build dir); the first snapshot (hashes everything) is reported apart. Each
round changes one file, then times a snapshot and a plain `git status
--porcelain` of the same tree in its own repository (rounds interleaved).
Usage: python -m bench.bench_checkpoints [ROUNDS]
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import Row, interleaved, median, private_home

FILES = 10_000
PER_DIR = 50
TARGET_MS = 50.0


def generate(root: Path) -> None:
    """FILES small source files in FILES / PER_DIR dirs, plus an ignored build dir."""
    for d in range(FILES // PER_DIR):
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


def run(rounds: int = 20) -> tuple[list[Row], list[str]]:
    """The rows: per-turn checkpoint vs `git status`, and the first snapshot."""
    from ollie.workspace import Checkpoints

    with tempfile.TemporaryDirectory(prefix="ollie-bench-cp-") as tmp:
        root = Path(tmp) / "repo"
        generate(root)
        plain_repo(root)
        loop = asyncio.new_event_loop()
        try:
            cps = Checkpoints(root)
            start = time.perf_counter()
            loop.run_until_complete(cps.snapshot())
            first_ms = (time.perf_counter() - start) * 1e3
            counter = iter(range(1_000_000))
            status_env = {"PATH": os.environ["PATH"], "HOME": tmp, "GIT_CONFIG_NOSYSTEM": "1",
                          "GIT_OPTIONAL_LOCKS": "0"}

            def turn() -> float:
                n = next(counter)
                (root / f"pkg{n % 200:03d}" / "mod00.py").write_text(f"changed {n}\n")
                began = time.perf_counter()
                loop.run_until_complete(cps.snapshot())
                return (time.perf_counter() - began) * 1e3

            def status() -> float:
                began = time.perf_counter()
                subprocess.run(["git", "status", "--porcelain"], cwd=root, env=status_env, check=True,
                               stdout=subprocess.DEVNULL)
                return (time.perf_counter() - began) * 1e3

            snap, ref = interleaved(rounds, turn, status)
        finally:
            loop.close()
    per_turn = median(snap)
    rows = [
        Row(f"checkpoint per turn, {FILES:,}-file repo, one file changed (vs `git status`)", per_turn,
            median(ref), target=f"<= {TARGET_MS:g} ms", ok=per_turn <= TARGET_MS),
        Row(f"first checkpoint of a {FILES:,}-file repo (hashes every file)", first_ms),
    ]
    return rows, []


def main(argv: list[str]) -> int:
    """Print the rows."""
    rounds = int(argv[1]) if len(argv) > 1 else 20
    with private_home():
        rows, _ = run(rounds)
    for row in rows:
        ratio = f" ({row.ratio:.2f}x the reference {row.reference:.1f} ms)" if row.ratio else ""
        print(f"{row.name}: {row.value:.1f} ms{ratio} {row.verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
