"""The `$XDG_CONFIG_HOME/ollie/env` file: KEY=VALUE lines that never override the environment."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import TypeVar

from ollie import paths, regularfile


def parse_env_file(text: str) -> dict[str, str]:
    """Parse `KEY=VALUE` lines; `#` comments (whole lines, or after a value: `KEY=value # note`), blank lines,
    `export ` and quotes (a quoted value keeps its `#`) are allowed."""
    return {key: value for _, key, value in _entries(text)}


def _entries(text: str, *, unread: list[int] | None = None) -> Iterator[tuple[int, str, str]]:
    """(line number, key, value) of each setting, in order (a later one of a key wins); the numbers of the lines that
    are none (no `=`, not a name before it) go into `unread`."""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if sep and key.isidentifier():
            yield number, key, _value(value.strip())
        elif unread is not None:
            unread.append(number)


def unread_lines_note(known: Collection[str] = ()) -> str:
    """` (line N of <env file> is not KEY=VALUE: not read)` when the env file has such lines, naming too a key that is
    a misspelling of one of the `known` names (which ollie would never read), one of them that the environment
    sets to another value (an editor's or ACP client's `env`, an export: it comes first), or another OLLIE_ setting
    (read from the environment only); else ""."""
    unread: list[int] = []
    notes = []  # (lines, what is wrong with them)
    for number, key, value in _entries(_env_text(), unread=unread):
        close = [] if key in known else _misspelt(key, known)
        if close:
            notes.append((f"line {number}", f": {key} is not a setting, did you mean {close[0]}?"))
        elif key in known and os.environ.get(key, value) != value:  # values unsaid: a key's is a secret
            notes.append((f"line {number}", f": {key} there is not used, the environment sets it and comes first"))
        elif known and key not in known and key.startswith("OLLIE_"):  # OLLIE_APPROVAL: the user's mode, unsaid
            notes.append((f"line {number}", f": {key} is read from the environment only, not from this file"))
    if unread:
        lines = f"line {unread[0]}" if len(unread) == 1 else f"lines {', '.join(map(str, unread[:5]))}"
        notes.insert(0, (lines, f" {'is' if len(unread) == 1 else 'are'} not KEY=VALUE: not read"))
    said = [f"{lines}{f' of {env_file()}' if not n else ''}{what}" for n, (lines, what) in enumerate(notes)]
    return f" ({'; '.join(said)})" if said else ""


def _misspelt(key: str, known: Collection[str]) -> list[str]:
    """The `known` names `key` may be a misspelling of; difflib loads here, for a key that is no setting, not for every
    message that names the env file (an unreachable backend's, in a daemon's first answer)."""
    import difflib

    return [name for name in difflib.get_close_matches(key, known, n=3, cutoff=0.8) if _kin(key, name)]


def _kin(key: str, name: str) -> bool:
    """Whether `key` may be `name` misspelt: its first word (the provider, OLLIE) and last (KEY, URL) are `name`'s or
    near them. XAI_API_KEY is another provider's key and OPENAI_API_BASE another setting, not OPENAI_API_KEY's typos."""
    import difflib  # as the caller: only when a message is being written

    ends = [(n.split("_")[0], n.split("_")[-1]) for n in (key, name)]
    return all(difflib.SequenceMatcher(None, a, b).ratio() >= 0.6 for a, b in zip(*ends, strict=True))


def where_set(name: str, value: str | None, *, key: Callable[[str], str] = str) -> str:
    """`NAME is set on line N of <env file>` when the env file gives `name` this `value` (the same once both go
    through `key`); "" when it does not, or when the environment sets `name` (the file never overrides it)."""
    if name in os.environ:
        return ""
    lines = {entry: (number, found) for number, entry, found in _entries(_env_text())}
    number, found = lines.get(name, (0, None))
    same = value is not None and found is not None and key(found) == key(value)
    return f"{name} is set on line {number} of {env_file()}" if same else ""


def environment() -> dict[str, str]:
    """os.environ over the env file (which never overrides a variable already set)."""
    return {**env_values(), **os.environ}


def env_values() -> dict[str, str]:
    """The env file's settings ({} when it is missing or cannot be read: not a regular file, not UTF-8)."""
    return parse_env_file(_env_text())


def _env_text() -> str:
    """The env file's text, for what a message says of it ("" when it cannot be read)."""
    try:
        return regularfile.read_config_sync(env_file()).removeprefix("\ufeff")  # a Windows editor's byte order mark
    except (OSError, UnicodeDecodeError):
        return ""


def _value(text: str) -> str:
    """A value as a shell reads it: a quoted one up to its closing quote (`#` inside kept), else up to ` #`."""
    if text[:1] in ("'", '"'):
        end = text.find(text[0], 1)
        if end > 0:
            return text[1:end]
    if text.startswith("#"):
        return ""
    comment = re.search(r"[ \t]#", text)
    return (text[:comment.start()] if comment else text).rstrip()


def env_file() -> Path:
    """The env file's path."""
    return paths.config_dir() / "env"


N = TypeVar("N", int, float)


def env_number(name: str, default: N, kind: Callable[[str], N]) -> N:
    """A number above 0 from environment variable `name`, read by `kind` (int: a count, float: seconds): `default`
    when unset or empty; ValueError naming the variable and its value when it is not one."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or not value > 0 or value == float("inf"):
        what = "a whole number" if kind is int else "a number"
        raise ValueError(f"environment variable {name}={text!r} is not {what} above 0")
    return value


def env_seconds(name: str, default: float) -> float:
    """Seconds from environment variable `name`: `default` when unset, not a number, or not above 0."""
    try:
        return env_number(name, default, float)
    except ValueError:
        return default
