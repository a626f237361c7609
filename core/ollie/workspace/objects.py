"""The shadow repository's loose objects read in-process: a tree diff and blobs without a git process.

A step's snapshot writes a handful of loose objects (its blobs, the trees above them); diffing two snapshots and
reading their blobs here saves two git processes per write step (`diff-tree`, `cat-file`). The shadow is ollie's own
state (never inside the workspace: `Checkpoints._ensure`), read as git reads it. An object that is not loose (someone
packed the shadow) makes the answer None, and the caller asks git. Blocking file reads: call these in a thread.
"""

from __future__ import annotations

import os
import re
import zlib
from pathlib import Path

ZERO = "0" * 40
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git knows it without storing it
_OID = re.compile(r"[0-9a-f]{40}")
DIR, GITLINK = "40000", "160000"
# A raw diff entry, as `git diff-tree -r --raw` gives it: (path, status letter, old mode, new mode, old id, new id).
Entry = tuple[str, str, str, str, str, str]


class NotLoose(Exception):
    """An object is not a loose object of the shadow (packed, or missing): git must answer."""


def read(git_dir: Path, oid: str, kind: bytes) -> bytes:
    """The content of loose object `oid`, which must be of `kind` (b"tree", b"blob"); NotLoose otherwise."""
    if not _OID.fullmatch(oid):
        raise NotLoose(oid)  # a name git resolves (a ref, an abbreviation), or no id at all: never a path here
    if kind == b"tree" and oid == EMPTY_TREE:
        return b""
    try:
        with open(os.path.join(git_dir, "objects", oid[:2], oid[2:]), "rb") as source:
            raw = zlib.decompress(source.read())
    except (OSError, zlib.error) as exc:
        raise NotLoose(oid) from exc
    header, _, body = raw.partition(b"\0")
    found, _, size = header.partition(b" ")
    if found != kind or not size.isdigit() or int(size) != len(body):
        raise NotLoose(oid)  # not what was asked for, or damaged: git says what it is
    return body


def _entries(git_dir: Path, oid: str | None) -> dict[str, tuple[str, str]]:
    """Tree `oid`'s entries by their sort key (a subtree's name ends in "/"): key -> (mode, id); {} for None."""
    if oid is None:
        return {}
    data = read(git_dir, oid, b"tree")
    out: dict[str, tuple[str, str]] = {}
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        mode, name = data[pos:space].decode(), os.fsdecode(data[space + 1:nul])
        out[name + "/" if mode == DIR else name] = (mode, data[nul + 1:nul + 21].hex())
        pos = nul + 21
    return out


def _file_type(mode: str) -> str:
    return mode[:-3] if len(mode) > 3 else mode  # "100644" -> "100", "120000" -> "120"


def tree_diff(git_dir: Path, before: str, after: str) -> list[Entry]:
    """The blobs that differ between trees `before` and `after`, as `git diff-tree -r --no-renames` lists them (its
    order); nested repositories (gitlinks) left out. NotLoose when a tree on the way is not loose."""
    out: list[Entry] = []

    def walk(prefix: str, old: str | None, new: str | None) -> None:
        olds, news = _entries(git_dir, old), _entries(git_dir, new)
        # git orders entries by bytes, a subtree as its name + "/"
        for key in sorted(olds.keys() | news.keys(), key=os.fsencode):
            (old_mode, old_id), (new_mode, new_id) = olds.get(key, ("", None)), news.get(key, ("", None))
            if old_id == new_id and old_mode == new_mode:
                continue
            if key.endswith("/"):
                walk(prefix + key, old_id, new_id)
                continue
            if GITLINK in (old_mode, new_mode):
                continue  # nested repositories are never snapshotted
            path = prefix + key
            if old_id is None:
                out.append((path, "A", "000000", new_mode, ZERO, new_id or ZERO))
            elif new_id is None:
                out.append((path, "D", old_mode, "000000", old_id, ZERO))
            else:
                code = "M" if _file_type(old_mode) == _file_type(new_mode) else "T"
                out.append((path, code, old_mode, new_mode, old_id, new_id))

    walk("", before, after)
    return out


def held(git_dir: Path, tree: str, paths: set[str]) -> dict[str, str]:
    """The mode of each of `paths` that tree `tree` holds (DIR for a subtree); NotLoose when a tree on the way is not
    loose."""
    seen: dict[str, dict[str, tuple[str, str]]] = {}  # each tree read once (the root's is every path's first)

    def entries(oid: str) -> dict[str, tuple[str, str]]:
        if oid not in seen:
            seen[oid] = _entries(git_dir, oid)
        return seen[oid]

    found: dict[str, str] = {}
    for path in paths:
        *dirs, name = path.split("/")
        oid: str | None = tree
        for part in dirs:
            oid = entries(oid).get(part + "/", ("", None))[1]
            if oid is None:
                break
        else:
            at = entries(oid)
            mode = (at.get(name) or at.get(name + "/") or ("", ""))[0]
            if mode:
                found[path] = mode
    return found


def blobs(git_dir: Path, ids: list[str]) -> dict[str, bytes]:
    """The contents of blobs `ids`; NotLoose when one is not loose."""
    return {oid: read(git_dir, oid, b"blob") for oid in set(ids)}
