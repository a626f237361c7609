"""The `@environment` prompt entry: working directory, date, system and git branch, computed in-process.

The branch is read through `ollie.beneath` (hostile repository). git itself must run sandboxed (its config can name
programs): `GIT_STATUS` runs in the command box in the background and reaches the model as a later note.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from ollie import beneath

ENTRY = "@environment"
# How long after the prompt is made the git status starts (ollie.agent.prompt): out of the first turn's way.
LATE_START_S = 0.5
# The sandboxed command whose output is the late note; its git runs no hook, fsmonitor, pager or global config.
GIT_STATUS = (
    "GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_OPTIONAL_LOCKS=0 GIT_TERMINAL_PROMPT=0 GIT_PAGER=cat "
    "git -c core.fsmonitor=false -c core.hooksPath=/dev/null -c core.untrackedCache=false --no-optional-locks "
    "status --short 2>/dev/null | head -n 20"
)
_HEAD_BYTES = 4096
_REF = re.compile(r"ref: refs/heads/([A-Za-z0-9._/+-]{1,200})")
_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def _read(root: Path, rel: str) -> str | None:
    """A small regular file beneath `root`, never through a symlink; None when there is none."""
    try:
        return beneath.read_text_sync(root, rel, limit=_HEAD_BYTES, errors="replace")
    except (OSError, ValueError):
        return None


def git_dir(cwd: Path) -> Path | None:
    """The git directory of the repository `cwd` is in (a `.git` dir, or the `gitdir:` a `.git` file names)."""
    for folder in (cwd, *cwd.parents):
        if _read(folder, ".git/HEAD") is not None:
            return folder / ".git"
        pointer = _read(folder, ".git")
        if pointer is not None and pointer.startswith("gitdir: "):
            target = Path(pointer[len("gitdir: "):].strip())
            return target if target.is_absolute() else folder / target
    return None


def branch(found: Path) -> str:
    """`main`, `detached at 1a2b3c4`, or `unknown` (HEAD unreadable or not in a known form)."""
    head = (_read(found, "HEAD") or "").strip()
    match = _REF.fullmatch(head)
    if match:
        return match.group(1)
    return f"detached at {head[:7]}" if _SHA.fullmatch(head) else "unknown"


def facts(cwd: Path) -> tuple[str, bool]:
    """The environment section of the system prompt, and whether `cwd` is in a git repository (sync: a thread)."""
    system = os.uname()
    lines = ["# Environment", "", f"- Working directory: {cwd}",
             f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
             f"- System: {system.sysname} {system.machine}"]
    found = git_dir(Path(cwd))
    if found is None:
        lines.append("- Not a git repository")
    else:
        lines.append(f"- Git branch: {branch(found)}")
        lines.append("- Git status: given with the first turn that starts after it is known")
    return "\n".join(lines), found is not None


def status_note(output: str) -> str:
    """The late note of GIT_STATUS's output."""
    body = "\n".join(f"    {line}" for line in output.splitlines() if line.strip())
    if not body:
        return "Environment: the git working tree was clean when this session was started or last resumed."
    return ("Environment: uncommitted changes when this session was started or last resumed"
            f" (git status --short, first 20):\n{body}")
