"""The user's "always allow" answers to network questions: `<config>/network-allowed`, one pattern a line.

It lives in the user's config dir, which no step can write and no workspace supplies (a workspace's
files are hostile). An answer writes `host:port`; the user may edit it and add patterns in
`network.allow`'s syntax (`*.example.com`, `name:8443`); `#` starts a comment.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

from ollie import paths, regularfile

log = logging.getLogger("ollie.sandbox.netsaved")

FILE_NAME = "network-allowed"
_HEADER = ("# Hosts ollie's egress proxy lets steps reach without asking, in every session: your \"Always allow\"\n"
           "# answers. One pattern a line, as in sandbox.yaml's network.allow (ports 80/443 unless one is named).\n")


def saved_file() -> Path:
    """Where the answers are kept."""
    return paths.config_dir() / FILE_NAME


def read_saved() -> tuple[str, ...]:
    """The saved patterns (none when the file is missing or unreadable: it only ever allows more)."""
    try:
        text = regularfile.read_config_sync(saved_file())
    except FileNotFoundError:
        return ()
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("cannot read the saved network answers", extra={"file": str(saved_file()), "reason": str(exc)})
        return ()
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return tuple(line for line in lines if line)


def save(pattern: str) -> None:
    """Add `pattern` (a no-op when it is there already)."""
    if pattern in read_saved():
        return
    file = saved_file()
    file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as out:
        out.write((_HEADER if out.tell() == 0 else "") + pattern + "\n")


async def saved() -> tuple[str, ...]:
    """`read_saved`, off the event loop."""
    return await asyncio.to_thread(read_saved)


async def remember(pattern: str) -> None:
    """`save`, off the event loop; a failure is logged (the answer still holds for the session)."""
    try:
        await asyncio.to_thread(save, pattern)
    except OSError as exc:
        log.warning("cannot save the network answer", extra={"file": str(saved_file()), "reason": str(exc)})
