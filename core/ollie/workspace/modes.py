"""The read and write bits of checkpointed files, which git does not keep: a file brought back from deleted gets
those it had at the checkpoint it comes from.

Kept beside the shadow repository (its dir is 0700), as JSON objects of path to bits, for the files not 0644 only
(most files are): `ollie-modes.json` as the snapshots last saw them (deleted files' too), and `ollie-modes/<tree>` as of
each checkpoint, a hard link to `ollie-modes/<digest>.json` (checkpoints of one set of bits share one file), removed
with the checkpoint's last ref.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from ollie import beneath

DEFAULT = 0o644
# Never written back, whoever set them: setuid, setgid and sticky (never recorded) and world-writable (a step's
# `chmod 666` must not outlive a rewind).
RESTORED = 0o664
_FILE = "ollie-modes.json"
_DIR = "ollie-modes"


def _read(path: Path) -> dict[str, int] | None:
    """The record at `path` (a damaged one: empty); None when there is none."""
    try:
        loaded = json.loads(path.read_bytes())
    except OSError:
        return None
    except ValueError:
        return {}
    if not isinstance(loaded, dict):
        return {}
    return {rel: bits & 0o666 for rel, bits in loaded.items() if isinstance(rel, str) and isinstance(bits, int)}


def at(git_dir: Path, tree: str) -> dict[str, int]:
    """The files' bits at checkpoint `tree`, for those not 0644 (one kept no record of: as last seen). Blocking."""
    found = _read(git_dir / _DIR / tree)
    return (_read(git_dir / _FILE) or {}) if found is None else found


def _write(folder: Path, name: str, data: bytes) -> None:
    beneath.write_bytes_sync(folder, name, data, 0o600)  # atomic: two sessions of one work tree may write at once


class Record:
    """One work tree's bits, held between snapshots: the JSON is read again only when another process wrote it."""

    def __init__(self, git_dir: Path) -> None:
        self._git_dir = git_dir
        self._bits: dict[str, int] = {}
        self._key: tuple[int, ...] | None = None  # the file's stat as last read or written here
        self._digest = ""  # of the bits as last kept here ("": changed since)

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
            self._bits, self._key, self._digest = _read(self._git_dir / _FILE) or {}, key, ""
        changed = {rel: bits for rel, bits in seen.items() if self._bits.get(rel, DEFAULT) != bits}
        if changed:
            for rel, bits in changed.items():
                if bits == DEFAULT:
                    del self._bits[rel]
                else:
                    self._bits[rel] = bits
            _write(self._git_dir, _FILE, json.dumps(self._bits).encode())
            self._key, self._digest = self._stat_key(), ""

    def keep(self, tree: str, seen: dict[str, int]) -> None:
        """`note` what snapshot `tree` saw, and keep the bits as that checkpoint's (the last snapshot to make it wins:
        a chmod alone makes no new tree). Blocking."""
        self.note(seen)
        folder = self._git_dir / _DIR
        if not self._digest:
            self._digest = hashlib.sha256(json.dumps(self._bits, sort_keys=True).encode()).hexdigest()
            folder.mkdir(mode=0o700, exist_ok=True)
        shared = folder / f"{self._digest}.json"
        if not shared.exists():  # new bits, or pruned since
            _write(folder, shared.name, json.dumps(self._bits, sort_keys=True).encode())
        link = folder / f"{tree}.{os.urandom(6).hex()}"
        try:
            os.link(shared, link)
        except OSError:  # no hard links here, too many to one file, or pruned just now: a copy
            _write(folder, link.name, json.dumps(self._bits).encode())
        os.replace(link, folder / tree)


def prune(git_dir: Path, trees: Iterable[str]) -> None:
    """Drop the records of checkpoints `trees` (no ref names them now), and the bits no checkpoint shares. Blocking."""
    folder = git_dir / _DIR
    for tree in trees:
        with contextlib.suppress(OSError):
            os.unlink(folder / tree)
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            shared = entry.name.endswith(".json") and not entry.name.startswith(".")  # not a write under way
            if shared and entry.stat(follow_symlinks=False).st_nlink == 1:
                os.unlink(entry.path)  # a `keep` racing this links it again or writes it anew


def restored(bits: int | None, executable: bool) -> int:
    """The mode to write a file with from its read and write `bits` (None: unknown, 0644; never world-writable); the
    executable bit where the checkpoint has it, for whoever may read it."""
    bits = (DEFAULT if bits is None else bits) & RESTORED
    return bits | (bits & 0o444) >> 2 if executable else bits
