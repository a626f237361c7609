"""The session's plan file: a markdown checklist (`- [ ] step` / `- [x] step`) for the task_* tools."""

from __future__ import annotations

import re
from pathlib import Path

from _toolkit import ToolError, read_text, required_env, write_atomic

ITEM = re.compile(r"^(\s*[-*] \[)([ xX])(\] )(.*)$")
# What of the plan one call prints, as the terminal shows it: steps from the last one done on, each cut, the rest
# counted. The whole plan each time made 120 checks of a long plan in one reply pass the result's 128 KiB, and the
# checks cut off read as failed.
SHOWN, STEP_CHARS = 5, 100


def plan_path() -> Path:
    """The plan file of this session ($OLLIE_PLAN_FILE)."""
    return Path(required_env("OLLIE_PLAN_FILE"))


def load(path: Path) -> list[str]:
    """The plan's lines (empty when there is no plan yet)."""
    return read_text(path).splitlines() if path.exists() else []


def save(path: Path, lines: list[str]) -> None:
    """Write the plan back."""
    write_atomic(path, "".join(line + "\n" for line in lines))


def items(lines: list[str]) -> list[tuple[int, bool, str]]:
    """(line index, done, text) of every checklist item."""
    found = []
    for index, line in enumerate(lines):
        match = ITEM.match(line)
        if match:
            found.append((index, match.group(2) != " ", match.group(4)))
    return found


def clip(text: str) -> str:
    """A step's text cut to STEP_CHARS."""
    return text if len(text) <= STEP_CHARS else text[:STEP_CHARS - 1] + "…"


def show(lines: list[str]) -> str:
    """The plan for the model: its counts, and SHOWN of its steps, numbered, from the last one done before the first
    open one on (the rest counted)."""
    entries = items(lines)
    if not entries:
        return "the plan is empty"
    first = next((n for n, (_, d, _) in enumerate(entries) if not d), len(entries))
    start = max(0, min(first - 1, len(entries) - SHOWN))
    end = start + SHOWN  # (past the last step when there are fewer: nothing to come)
    rows = [f"{n}. [{'x' if d else ' '}] {clip(text)}" for n, (_, d, text) in enumerate(entries[start:end], start + 1)]
    return "\n".join([f"plan ({sum(d for _, d, _ in entries)}/{len(entries)} done):",
                      *([f"… steps 1-{start} done"] if start else []), *rows,
                      *([f"… steps {end + 1}-{len(entries)} to come"] if end < len(entries) else [])])


def mark(lines: list[str], index: int) -> None:
    """Check the item on line `index`."""
    match = ITEM.match(lines[index])
    if match is None:
        raise ToolError("not a checklist item")
    lines[index] = f"{match.group(1)}x{match.group(3)}{match.group(4)}"
