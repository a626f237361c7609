"""The read and write bits of checkpointed files, which git does not keep: a file brought back from deleted gets its own.

Kept beside the shadow repository (its dir is 0700), one JSON object of path to bits, for the files not 0644 only
(most files are, and a snapshot of them writes nothing here).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ollie.workspace.refs import shadow_dir

DEFAULT = 0o644
_FILE = "ollie-modes.json"


def recorded(git_dir: Path) -> dict[str, int]:
    """Each file's bits as the checkpoints last saw them, for those not 0644 (a missing or damaged record: none)."""
    try:
        loaded = json.loads((git_dir / _FILE).read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(loaded, dict):
        return {}
    return {rel: bits & 0o666 for rel, bits in loaded.items() if isinstance(rel, str) and isinstance(bits, int)}


def recorded_in(root: Path) -> dict[str, int]:
    """`recorded` of the shadow repository of work tree `root`."""
    return recorded(shadow_dir(root))


def record(git_dir: Path, seen: dict[str, int]) -> None:
    """Note the bits of the files a snapshot saw (path: bits); a deleted file's stay, for its rewind or undo."""
    before = recorded(git_dir)
    after = {**before, **{rel: bits for rel, bits in seen.items() if bits != DEFAULT}}
    for rel in [rel for rel, bits in seen.items() if bits == DEFAULT]:
        after.pop(rel, None)
    if after == before:
        return
    tmp = git_dir / f"{_FILE}.{os.urandom(6).hex()}"  # two sessions of one work tree may write at once
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(after, out)
    os.replace(tmp, git_dir / _FILE)


def restored(bits: int | None, executable: bool) -> int:
    """The mode to write a file with from its read and write `bits` (None: unknown, 0644); the executable bit where
    the checkpoint has it, for whoever may read it."""
    bits = DEFAULT if bits is None else bits
    return bits | (bits & 0o444) >> 2 if executable else bits
