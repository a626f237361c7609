"""Where a work tree's shadow repository lies and how its refs are named: light, for the turn's start."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from ollie import paths

_SAFE_SESSION = re.compile(r"[A-Za-z0-9_-]{1,128}")


def shadow_dir(cwd: Path) -> Path:
    """The shadow repository of `cwd`: the checkpoints dir + a hash of its real path."""
    key = hashlib.sha256(os.fsencode(os.path.realpath(cwd))).hexdigest()[:32]
    return paths.checkpoints_dir() / key


def session_ref(session_id: str) -> str:
    """The ref namespace of a session (ids that are not ref-safe are hex-encoded)."""
    part = session_id if _SAFE_SESSION.fullmatch(session_id) else "x" + session_id.encode().hex()
    return f"refs/ollie/sessions/{part}/"


def turn_ref(session_id: str, turn: int) -> str:
    """The ref that logs the state before `turn` of `session_id`."""
    if turn < 0:
        raise ValueError(f"turn must be >= 0, got {turn}")
    return f"{session_ref(session_id)}{turn:08d}"


def present_refs(cwd: Path, refs: list[str]) -> list[str]:
    """Those of `refs` that may exist in `cwd`'s shadow repository (all of them once refs were packed)."""
    git_dir = shadow_dir(cwd)
    # Auto gc is off, so refs are only packed if someone ran pack-refs: then ask git.
    packed = (git_dir / "packed-refs").exists()
    return [ref for ref in refs if packed or (git_dir / ref).exists()]
