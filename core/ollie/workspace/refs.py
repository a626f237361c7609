"""The shadow repository's place and its turn refs: their names (light, for the turn's start) and their writing.

A turn's refs are written in-process the way git's files backend writes them, one git process fewer per turn:
`git update-ref --stdin` (2.39) makes each ref's `<ref>.lock` exclusively, writes the id into it, checks the object
exists, then renames every lock over its ref (no fsync by default). `write` does the same, for the shadow's turn
refs only, in ollie's own state dir (never the workspace). Anything it does not handle the same way (a lock held by
another process, packed refs, a name or an object git must judge) writes nothing and leaves it to git.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time
from pathlib import Path

from ollie import beneath, paths

_SAFE_SESSION = re.compile(r"[A-Za-z0-9_-]{1,128}")
_TURN_REF = re.compile(r"refs/ollie/sessions/[A-Za-z0-9_-]{1,300}/[0-9]{8}")
_OID = re.compile(r"[0-9a-f]{40}")


def is_checkpoint(text: str) -> bool:
    """Whether `text` is a checkpoint id (a tree's object id), never an option (`--output=...`) git would take."""
    return _OID.fullmatch(text) is not None


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
    if _may_exist(git_dir, "packed-refs"):
        return list(refs)
    return [ref for ref in refs if _may_exist(git_dir, ref)]


def _may_exist(git_dir: Path, name: str) -> bool:
    # Through the guarded path: the state dir may lie inside a workspace (one opened at $HOME holds
    # ~/.local/state), whose entries are hostile; a symlink there is not followed, only seen.
    try:
        return beneath.lstat_sync(git_dir, name) is not None
    except OSError:  # a symlinked dir on the way, a dir that cannot be read: git judges it
        return True


def write(git_dir: Path, updates: list[tuple[str, str]]) -> bool:
    """Point each (ref, object id) of `updates` at its object; False, with nothing changed, when git must do it."""
    if (git_dir / "packed-refs").exists():
        return False  # a ref may be packed (someone ran pack-refs): git knows how it is shadowed
    if not all(_TURN_REF.fullmatch(ref) and _OID.fullmatch(oid) for ref, oid in updates):
        return False
    if not all((git_dir / "objects" / oid[:2] / oid[2:]).is_file() for _, oid in updates):
        return False  # not a loose object (git knows the empty tree without storing it): git checks it
    locks: list[tuple[Path, Path]] = []
    try:
        for ref, oid in updates:
            path = git_dir / ref
            path.parent.mkdir(parents=True, exist_ok=True)
            lock = path.with_name(path.name + ".lock")
            _clear_stale(lock)
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
            locks.append((lock, path))
            with os.fdopen(fd, "w") as out:
                out.write(oid + "\n")
        for lock, path in locks:
            os.rename(lock, path)
    except OSError:  # a lock another process holds (git reports it), a dir where a ref would go
        for lock, _ in locks:
            with contextlib.suppress(OSError):
                lock.unlink()  # those not renamed yet: git then writes them all again (the same values)
        return False
    return True


def _clear_stale(lock: Path) -> None:
    """Remove a ref's lock left by a process killed between its lock and its rename (ours hold it for microseconds;
    a git process outlives ollie's kill, but this write does not): else that turn's ref could never be written."""
    from ollie.workspace.shadowgit import STALE_LOCK_S  # only with a write: the turn's start loads none of git

    with contextlib.suppress(FileNotFoundError):
        if time.time() - lock.lstat().st_mtime > STALE_LOCK_S:
            lock.unlink()
