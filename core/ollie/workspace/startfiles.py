"""Start files: files in ignored paths that programs run later, outside any sandbox, with the user's rights.

Checkpoints skip what the project's `.gitignore` ignores (`.venv/`, `node_modules/`, `.env`), so a step's write there
is in no diff and no rewind. Most such writes are harmless (pip's packages, build output); these are not, and the
review names them when a step makes or changes one (`Checkpoints.started`):

- `*/lib/python*/site-packages/*.pth` (Python runs each `import` line of them at every start) and
  `sitecustomize.py`, `usercustomize.py` there (imported at every start);
- `*/bin/*` (a virtual environment's `activate`, `python`, its scripts);
- `node_modules/.bin/*` (what `npm run` and `npx` run);
- `.env`, `.env.*`, `.envrc` at the top (sourced by tools and direnv).

Found from the watcher's events where it runs, else by listing only the dirs these patterns lead to (never a walk of
all of `.venv`), each listing capped.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path

from ollie import beneath

PATTERNS = ("*/lib/python*/site-packages/*.pth", "*/lib/python*/site-packages/sitecustomize.py",
            "*/lib/python*/site-packages/usercustomize.py", "*/bin/*", "node_modules/.bin/*", ".env", ".env.*", ".envrc")
_SPLIT: tuple[tuple[str, ...], ...] = tuple(tuple(p.split("/")) for p in PATTERNS)
MAX_LISTED = 5_000  # names looked at in one dir (a dir with more is looked at that far)
MAX_FOUND = 1_000  # start files kept track of (more: the rest are not)

Key = tuple[int, int, int]


def found(root: Path | str, paths: set[str] | None) -> dict[str, Key]:
    """The start files there now, by path, with their (inode, ctime, size): among `paths` (those with events, a dir
    with what of it the patterns reach), or all (None). Blocks: in a thread."""
    out: dict[str, Key] = {}
    if paths is None:
        _walk(root, "", _SPLIT, out)
        return out
    for rel in sorted(paths):
        parts = tuple(rel.split("/"))
        tails = [p[len(parts):] for p in _SPLIT if len(p) >= len(parts) and all(map(fnmatchcase, parts, p))]
        if tails:
            _visit(root, rel, tails, out)
    return out


def _visit(root: Path | str, rel: str, tails: Sequence[tuple[str, ...]], out: dict[str, Key]) -> None:
    """Note `rel` if a pattern ends there (anything but a dir: a `bin/python` made a symlink counts), else walk on."""
    try:
        st = beneath.lstat_sync(root, rel)
    except OSError:
        return  # gone, or below a symlink
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        if any(tails):
            _walk(root, rel, [t for t in tails if t], out)
    elif () in tails and len(out) < MAX_FOUND:
        out[rel] = (st.st_ino, st.st_ctime_ns, st.st_size)


def _walk(root: Path | str, rel: str, tails: Sequence[tuple[str, ...]], out: dict[str, Key]) -> None:
    """Visit the names in the dir `rel` that the first part of a tail matches (one listing per dir)."""
    heads = {t[0] for t in tails}
    if all(not any(c in h for c in "*?[") for h in heads):
        names = sorted(heads)  # literal: no listing
    else:
        try:
            names = sorted(beneath.listdir_sync(root, rel or "."))[:MAX_LISTED]
        except OSError:
            return
    for name in names:
        nexts = [t[1:] for t in tails if fnmatchcase(name, t[0])]
        if nexts and name != ".git":
            _visit(root, os.path.join(rel, name) if rel else name, nexts, out)
