"""The session's plan file: a markdown checklist (`- [ ] step` / `- [x] step`) for the task_* tools."""

from __future__ import annotations

import re
from pathlib import Path

from _toolkit import ToolError, read_text, required_env, write_atomic

ITEM = re.compile(r"^(\s*[-*] \[)([ xX])(\] )(.*)$")


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


def show(lines: list[str]) -> str:
    """The plan as a numbered checklist for the model."""
    entries = items(lines)
    if not entries:
        return "the plan is empty"
    done = sum(1 for _, d, _ in entries if d)
    rows = [f"{n}. [{'x' if d else ' '}] {text}" for n, (_, d, text) in enumerate(entries, 1)]
    return f"plan ({done}/{len(entries)} done):\n" + "\n".join(rows)


def mark(lines: list[str], index: int) -> None:
    """Check the item on line `index`."""
    match = ITEM.match(lines[index])
    if match is None:
        raise ToolError("not a checklist item")
    lines[index] = f"{match.group(1)}x{match.group(3)}{match.group(4)}"
