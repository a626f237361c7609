"""What a file tool killed mid-write (its daemon SIGKILLed) leaves in the workspace: its temporary file."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from ollie import beneath
from ollie.backend.types import ToolCall

log = logging.getLogger("ollie.agent.leftovers")


# tools/_toolkit.write_atomic's temporary file for a file NAME: mkstemp's `.NAME.ollie-` + 8 random characters +
# `.tmp` (without `ollie-`, another program's atomic write in progress, made by mkstemp so, was taken for ours).
_TEMPORARY = re.compile(r"\.(.+)\.ollie-[a-z0-9_]{8}\.tmp", re.S)


def sweep_write_temporaries(cwd: Path | str, calls: Iterable[ToolCall], saved: Path) -> list[str]:
    """Remove the temporary files that the file writes of `calls`, cut short, left beside the files they wrote (only
    beneath `cwd`, through the guarded path, and only those made since the session log `saved` last changed: the
    calls were saved then, before they ran, so an older file of that name is the user's); the paths removed."""
    from ollie.agent.steps import describe  # only after a kill: a session opens without it otherwise

    try:
        since = saved.stat().st_mtime
    except OSError:
        return []  # not saved: no call of it ran
    cwd = os.path.abspath(cwd)
    names: dict[str, set[str]] = {}  # by their dir: each dir listed once, however many writes there (or entries)
    for call in calls:
        for step in describe(call.name, call.arguments, cwd):
            for loc in step.locations if step.kind == "edit" else ():
                with contextlib.suppress(OSError):  # OutsideRoot: absolute, or `..` out of the cwd
                    parent, name = os.path.split(beneath.relative(cwd, loc.path))
                    names.setdefault(parent, set()).add(name)
    removed: list[str] = []
    # Walked from `/` with no link followed: the saved cwd is a real path, and one swapped for a link since (another
    # session's step) leads where no session worked (nothing holds it yet: a session opened from another folder).
    for parent, written in sorted(names.items()):
        try:
            for entry in beneath.listdir_sync("/", os.path.join(cwd, parent)):
                rel = os.path.join(parent, entry)
                match = _TEMPORARY.fullmatch(entry)  # a set's lookup: one call may name 10,000 files of one dir
                info = beneath.lstat_sync("/", os.path.join(cwd, rel)) if match and match[1] in written else None
                if (info is not None and stat.S_ISREG(info.st_mode) and info.st_mtime >= since
                        and beneath.remove_sync("/", os.path.join(cwd, rel))):
                    removed.append(rel)
        except OSError as exc:  # gone since, a symlink on the way, no permission: nothing of ours to sweep there
            log.info("no write leftovers swept", extra={"path": parent or ".", "error": str(exc)})
    if removed:
        log.info("write leftovers swept", extra={"paths": removed})
    return removed
