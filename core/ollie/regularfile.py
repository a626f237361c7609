"""Reading a regular file only, size-capped, never blocking: the one checked read under `ollie.beneath`'s guarded
workspace reads and the user's config files read by name (sandbox.yaml, agent configs, mcp.json, the env file...)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

CONFIG_CAP = 1024 * 1024  # a config file of the user's: far more than any needs
_CHUNK = 1 << 16


class NotRegular(OSError):
    """A FIFO, device, socket or symlink where a regular file (or directory) was expected."""


class TooLarge(OSError):
    """The file is larger than the cap: it was not read."""

    def __init__(self, path: str, size: int, cap: int) -> None:
        super().__init__(errno.EFBIG, f"{path} is larger than {cap:,} bytes ({size:,}); not read")


def read_regular(fd: int, name: str, most: int, *, head: bool = False) -> bytes:
    """The bytes of open file `fd` (`name` in errors) when it is a regular file of at most `most` bytes (with `head`,
    its first `most` bytes); NotRegular or TooLarge otherwise (opened O_NONBLOCK: a FIFO's open never waits)."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise NotRegular(errno.EINVAL, f"{name} is not a regular file")
    if info.st_size > most and not head:
        raise TooLarge(name, info.st_size, most)
    chunks: list[bytes] = []
    got = 0
    while chunk := os.read(fd, min(_CHUNK, most + 1 - got)):
        chunks.append(chunk)
        got += len(chunk)
        if got > most:  # it grew while read
            if head:
                return b"".join(chunks)[:most]
            raise TooLarge(name, got, most)
    return b"".join(chunks)


def read_file_sync(path: Path | str, limit: int = CONFIG_CAP, *, head: bool = False) -> bytes:
    """The bytes of the user's file `path` (a link followed), only when it is a regular file of at most `limit` bytes
    (with `head`, its first `limit` bytes): a FIFO or a link to /dev/zero there would hang the daemon or fill its
    memory. FileNotFoundError, NotRegular or TooLarge (naming `path`)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        return read_regular(fd, str(path), limit, head=head)
    finally:
        os.close(fd)


def read_config_sync(path: Path | str, limit: int = CONFIG_CAP, errors: str = "strict") -> str:
    """The UTF-8 text of the user's config file `path`, a link followed (the user may link their config on purpose),
    only when it is a regular file of at most `limit` bytes: a FIFO or a link to /dev/zero there would hang the
    daemon or fill its memory. FileNotFoundError, NotRegular or TooLarge (naming `path`), UnicodeDecodeError (with
    errors='strict')."""
    return read_file_sync(path, limit).decode("utf-8", errors=errors)
