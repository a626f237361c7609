"""Saying plainly when a step failed because of ollie's sandbox, not its own code: a program or file outside
the policy (a bare "Permission denied" reads like a bug to fix), a size or memory limit, a disk nearly full."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ollie.sandbox import Policy

# How shells, Python and most programs report EACCES on a path: `bash: /x/python3: Permission denied`,
# `[Errno 13] Permission denied: '/x'`, `cannot open '/x': Permission denied`.
_DENIED = re.compile(rb"""(?:(/[^\s:'"`]+)['"`]?: Permission denied|Permission denied: ['"](/[^'"]+)['"])""")
EXEC_DENIED = 126  # a shell's status when it found the program but could not run it
_MOST = 3  # notes per step: the first paths a failing build names are the ones that matter


def _inside(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def outside_note(policy: Policy, path: str, *, execute: bool) -> str | None:
    """The note for `path` when the policy does not let a step read (or run) it; None when it does."""
    real = Path(os.path.realpath(path))
    roots = tuple(Path(os.path.realpath(root)) for root in (policy.rox + policy.rwx if execute else policy.readable()))
    if _inside(real, roots):
        return None  # allowed: the denial is the file's own mode, not the sandbox
    shown = path if str(real) == path else f"{path} (resolves to {real})"
    kind = "filesystem.rox" if execute else "filesystem.ro"
    return (f"blocked by ollie's sandbox: {shown} is outside the allowed paths of sandbox policy "
            f"{policy.name!r}; if the step needs it, the user can add its directory to {kind} in {policy.source}")


def denied_notes(policy: Policy, stderr: bytes, status: int | None) -> list[str]:
    """A note per path a step's stderr says it was denied that lies outside the policy."""
    if b"Permission denied" not in stderr:
        return []
    notes: list[str] = []
    for match in _DENIED.finditer(stderr):
        path = (match.group(1) or match.group(2)).decode("utf-8", "replace")
        note = outside_note(policy, path, execute=status == EXEC_DENIED)
        if note is not None and note not in notes:
            notes.append(note)
            if len(notes) == _MOST:
                break
    return notes
