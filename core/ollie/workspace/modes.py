"""The read and write bits of checkpointed files, which git does not keep: a file brought back from deleted gets
those it had at the checkpoint it comes from.

Kept beside the shadow repository (its dir is 0700), as JSON objects of path to bits, for the files not 0644 only
(most files are): `ollie-modes.json` as the snapshots last saw them (deleted files' too), and `ollie-modes/<tree>` as of
each checkpoint, a hard link to `ollie-modes/<digest>.json` (a snapshot that changed no file's bits writes no data).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ollie.workspace.refs import shadow_dir

DEFAULT = 0o644
# Never written back, whoever set them: setuid, setgid and sticky (never recorded) and world-writable (a step's
# `chmod 666` must not outlive a rewind).
RESTORED = 0o664
_FILE = "ollie-modes.json"
_DIR = "ollie-modes"


def _parsed(raw: bytes) -> dict[str, int]:
    try:
        loaded = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(loaded, dict):
        return {}
    return {rel: bits & 0o666 for rel, bits in loaded.items() if isinstance(rel, str) and isinstance(bits, int)}


def _read(path: Path) -> dict[str, int] | None:
    try:
        return _parsed(path.read_bytes())
    except OSError:
        return None


def recorded(git_dir: Path) -> dict[str, int]:
    """Each file's bits as the checkpoints last saw them, for those not 0644 (a missing or damaged record: none)."""
    return _read(git_dir / _FILE) or {}


def at(git_dir: Path, tree: str) -> dict[str, int]:
    """The files' bits at checkpoint `tree`, for those not 0644 (one made before they were kept: as last seen)."""
    found = _read(git_dir / _DIR / tree)
    return recorded(git_dir) if found is None else found


def recorded_in(root: Path) -> dict[str, int]:
    """`recorded` of the shadow repository of work tree `root`."""
    return recorded(shadow_dir(root))


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f"{path.name}.{os.urandom(6).hex()}")  # two sessions of one work tree may write at once
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.replace(tmp, path)


class Record:
    """One work tree's bits, held between snapshots: the JSON is read again only when another process wrote it."""

    def __init__(self, git_dir: Path) -> None:
        self._git_dir = git_dir
        self._bits: dict[str, int] = {}
        self._key: tuple[int, ...] | None = None  # the file's stat as last read or written here
        self._digest = ""

    def _stat_key(self) -> tuple[int, ...] | None:
        try:
            st = os.stat(self._git_dir / _FILE)
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino

    def note(self, seen: dict[str, int]) -> None:
        """Note the bits of the files a snapshot saw (path: bits); a deleted file's stay, for its rewind. Blocking."""
        key = self._stat_key()
        if key != self._key:  # another session of the work tree wrote it
            self._bits, self._key, self._digest = recorded(self._git_dir), key, ""
        changed = {rel: bits for rel, bits in seen.items() if self._bits.get(rel, DEFAULT) != bits}
        if changed:
            for rel, bits in changed.items():
                if bits == DEFAULT:
                    del self._bits[rel]
                else:
                    self._bits[rel] = bits
            _write(self._git_dir / _FILE, json.dumps(self._bits).encode())
            self._key, self._digest = self._stat_key(), ""

    def keep(self, tree: str, seen: dict[str, int]) -> None:
        """`note` what snapshot `tree` saw, and keep the bits as that checkpoint's (the last snapshot to make it wins:
        a chmod alone makes no new tree). Blocking."""
        self.note(seen)
        folder = self._git_dir / _DIR
        if not self._digest:  # the bits changed since the last checkpoint kept here: their own file
            data = json.dumps(self._bits, sort_keys=True).encode()
            self._digest = hashlib.sha256(data).hexdigest()
            folder.mkdir(mode=0o700, exist_ok=True)
            if not (folder / f"{self._digest}.json").exists():
                _write(folder / f"{self._digest}.json", data)
        link = folder / f"{tree}.{os.urandom(6).hex()}"
        try:
            os.link(folder / f"{self._digest}.json", link)
        except OSError:  # no hard links here (or too many to one file): a copy
            _write(link, json.dumps(self._bits).encode())
        os.replace(link, folder / tree)


def restored(bits: int | None, executable: bool) -> int:
    """The mode to write a file with from its read and write `bits` (None: unknown, 0644; never world-writable); the
    executable bit where the checkpoint has it, for whoever may read it."""
    bits = (DEFAULT if bits is None else bits) & RESTORED
    return bits | (bits & 0o444) >> 2 if executable else bits
