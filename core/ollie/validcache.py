"""Validated config files, cached by their exact text: a start skips the slow validation (YAML, pydantic).

Users: the sandbox policies (`ollie.sandbox.policy_cache`) and the agent configs
(`ollie.config`). An entry is `<ollie's config dir>/validated/<kind>/<key>.json`
(0600, in a 0700 dir), where the key is the SHA-256 of the file's text together with
the source of the code that validates it (and ollie's version): a changed file
or a changed schema is a new key, never a stale entry. An entry holds only what
the slow path returned for that text, so it cannot widen anything; it lives in
ollie's config dir, never the workspace, so a project cannot plant one. Not in
`$XDG_CACHE_HOME`: a policy may grant `~/.cache` to tool code (pip, npm), and
tool code that can write an entry under a key it can compute would widen the
next start's policy; no policy can open ollie's config dir to tool code
(`ollie.tools.execute.protect`). It is
read only when the user owns it and nobody else can write it, and its owner
checks every field again by hand (anything off: the slow path runs).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from ollie import __version__, paths

log = logging.getLogger(__name__)
T = TypeVar("T")
_code_digests: dict[tuple[Path, ...], bytes] = {}


class Malformed(Exception):
    """A cached entry that is not exactly what the slow path writes."""


def cache_dir(kind: str) -> Path:
    """Where validated files of `kind` are kept: in ollie's config dir, which tool code can never read or write."""
    return paths.config_dir() / "validated" / kind


def cache_key(text: str, code: Sequence[Path]) -> str:
    """The entry name of `text`: its SHA-256 with the source of the `code` that validates it."""
    files = tuple(code)
    digest = _code_digests.get(files)
    if digest is None:
        hashed = hashlib.sha256(__version__.encode())
        for file in files:
            hashed.update(file.read_bytes())
        digest = _code_digests[files] = hashed.digest()
    return hashlib.sha256(digest + text.encode("utf-8", "surrogatepass")).hexdigest()


def load(kind: str, key: str) -> object | None:
    """The data stored under `key`, or None (none, unreadable, not the user's own, or not this key's)."""
    path = cache_dir(kind) / f"{key}.json"
    try:
        with open(path, "rb") as file:
            info = os.fstat(file.fileno())
            # Only an entry this user wrote and nobody else can change is trusted.
            if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return None
            entry = json.loads(file.read())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.debug("ignoring the cached %s entry %s: %s", kind, path, exc)
        return None
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None
    return entry.get("data")


def store(kind: str, key: str, data: object) -> None:
    """Keep `data` (JSON) under `key`, whole or not at all; a read-only or full cache dir only costs speed."""
    directory = cache_dir(kind)
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump({"key": key, "data": data}, file)
            os.replace(tmp, directory / f"{key}.json")  # a reader never sees half of it
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        log.debug("cannot cache the validated %s in %s: %s", kind, directory, exc)


def validated(kind: str, text: str, code: Sequence[Path], *, build: Callable[[object], T],
              validate: Callable[[], object]) -> T:
    """`build` of the cached data of `text`, else of `validate()` (the slow path: its errors propagate), kept.

    `build` checks the data by hand (Malformed: the entry is ignored and replaced); `code` is what decides
    what a text validates to (see `cache_key`).
    """
    key = cache_key(text, code)
    cached = load(kind, key)
    if cached is not None:
        try:
            return build(cached)
        except Malformed:
            pass  # not what the slow path writes: it runs again and replaces the entry
    data = validate()
    result = build(data)  # what the cache will hand back, checked the same way now
    store(kind, key, data)
    return result


# Checks a cached entry's fields with: each raises Malformed when the value is not what the slow path writes.

def section(data: object, keys: set[str]) -> dict[str, object]:
    """`data` as a mapping with exactly `keys`."""
    if not isinstance(data, dict) or set(data) != keys:
        raise Malformed(f"expected the keys {sorted(keys)}")
    return data


def flag(value: object) -> bool:
    """A boolean (never 0/1)."""
    if type(value) is not bool:
        raise Malformed("expected a boolean")
    return value


def text(value: object) -> str:
    """A string."""
    if type(value) is not str:
        raise Malformed("expected a string")
    return value


def texts(value: object) -> tuple[str, ...]:
    """A list of strings, as a tuple."""
    if not isinstance(value, list):
        raise Malformed("expected a list")
    return tuple(text(v) for v in value)


def number(value: object, low: float | None = None, high: float | None = None, *, integer: bool = True) -> float:
    """An int (or, with `integer` false, an int or float; never a bool) within [low, high]."""
    kinds = (int,) if integer else (int, float)
    if type(value) not in kinds or (low is not None and value < low) or (high is not None and value > high):  # type: ignore[operator]
        raise Malformed(f"expected a number in [{low}, {high}]")
    return value  # type: ignore[return-value]
