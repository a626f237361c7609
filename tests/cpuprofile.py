"""Per-test CPU-seconds (`OLLIE_TEST_CPU=FILE`): each test's user+sys, the worker's own and its reaped children's, and
the processes it started by kind, one JSON line each in FILE; `python -m tests.cpuprofile FILE` ranks them.

A child counts when it is reaped: a module's shared daemons count to its last test (rank files, not tests), and what
runs under a server that detaches (Neovim and its daemon in tmux: ~1 CPU-s a TUI test) counts nowhere."""

from __future__ import annotations

import json
import os
import resource
import sys
from collections import Counter
from pathlib import Path

import pytest

KINDS = ("ollie-lsp", "acp", "nvim", "postgres", "initdb", "code-server", "tmux", "git", "python")
started: Counter[str] = Counter()


def cpu() -> float:
    """The worker's CPU-seconds so far, its reaped children's included."""
    return sum(r.ru_utime + r.ru_stime for r in map(resource.getrusage, (resource.RUSAGE_SELF,
                                                                          resource.RUSAGE_CHILDREN)))


def kind(args) -> str:
    """What a started process is, by its command line."""
    words = [str(word) for word in (args if isinstance(args, (list, tuple)) else [args])]
    line = " ".join(Path(word).name if n == 0 else word for n, word in enumerate(words))
    if "ollie_lsp" in line or "ollie-lsp" in line:
        return "ollie-lsp"
    if "ollie_acp" in line or " acp" in line:
        return "acp"
    return next((k for k in KINDS if k in line), Path(words[0]).name if words else "?")


def _audit(event: str, args: tuple) -> None:
    if event == "subprocess.Popen":
        started[kind(args[1])] += 1
    elif event == "os.posix_spawn":
        started[kind(args[1])] += 1


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem):
    """Time the test's setup, call and teardown (a module's fixtures count to its first and last tests)."""
    started.clear()
    before = cpu()
    yield
    with open(os.environ["OLLIE_TEST_CPU"], "a") as out:
        out.write(json.dumps({"test": item.nodeid, "cpu": round(cpu() - before, 3), "started": dict(started)}) + "\n")


sys.addaudithook(_audit)


def main(path: str) -> None:
    """Rank tests, files and process kinds by CPU-seconds."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
    files: Counter[str] = Counter()
    starts: dict[str, Counter[str]] = {}
    for row in rows:
        file = row["test"].split("::")[0]
        files[file] += row["cpu"]
        starts.setdefault(file, Counter()).update(row["started"])
    print(f"{len(rows)} tests, {sum(files.values()):.0f} CPU-s\n\nfiles:")
    for file, seconds in files.most_common(40):
        print(f"{seconds:8.1f}  {file}  {dict(starts[file].most_common(6))}")
    print("\ntests:")
    for row in sorted(rows, key=lambda row: -row["cpu"])[:40]:
        print(f"{row['cpu']:8.1f}  {row['test']}  {row['started']}")
    total = sum((Counter(row["started"]) for row in rows), Counter())
    print("\nstarted:", dict(total.most_common(15)))


if __name__ == "__main__":
    main(sys.argv[1])
