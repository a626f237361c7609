"""Passing fds and reading request lines between the fork server's processes (supervise.py, forkserver.py).

Stdlib only: the fork server and the launcher load this file by path in an
interpreter started with `-I -S`. Also a process's parent, from /proc (the
supervisor's sweep, the daemon's client watch).
"""

from __future__ import annotations

import array
import fcntl
import json
import os
import socket
from collections.abc import Sequence

# Seals that make a memfd's content final: no write, no shrink or growth, no seal taken back.
SEALED = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


def close_fds_except(keep: Sequence[int], low: int = 3) -> None:
    """Close every fd from `low` up except `keep`: a supervisor forked from the fork server must not hold
    other spawns' pipes or sockets (theirs would never see EOF while this step runs)."""
    for fd in sorted(set(keep)):
        if fd >= low:
            if fd > low:  # adjacent kept fds: nothing between them (closerange would ask the kernel all the same)
                os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 1 << 20)


def sealed_fd(data: bytes, name: str) -> int:
    """An inheritable memfd holding `data`, sealed: no process, the step it is handed to included, can change it."""
    fd = os.memfd_create(name, os.MFD_ALLOW_SEALING)  # not close-on-exec: the step's program inherits it
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALED)
    except BaseException:
        os.close(fd)
        raise
    return fd


def recv_fds(sock: socket.socket, maxfds: int, size: int = 64, flags: int = 0) -> tuple[bytes, list[int]]:
    """Like socket.recv_fds, but the fds arrive close-on-exec: 3.11's recv_fds drops its flags,
    and an inherited fd would hand one child another spawn's pipes and socket."""
    item = array.array("i")
    message, ancdata, _, _ = sock.recvmsg(size, socket.CMSG_LEN(maxfds * item.itemsize),
                                          socket.MSG_CMSG_CLOEXEC | flags)
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            item.frombytes(data[: len(data) - len(data) % item.itemsize])
    return message, list(item)


def read_line(conn: socket.socket, max_bytes: int) -> bytes | None:
    """One line (its newline included), read blocking; None on EOF first. ValueError when over `max_bytes`."""
    buffer = bytearray()
    while b"\n" not in buffer:
        chunk = conn.recv(1 << 16)
        if not chunk:
            return None
        buffer += chunk
        if len(buffer) > max_bytes:
            raise ValueError("request too large")
    return bytes(buffer[: buffer.index(b"\n") + 1])


def read_request(conn: socket.socket, max_bytes: int) -> dict | None:
    """The spawn's JSON request line, read blocking; None when the daemon closed first. ValueError if bad."""
    line = read_line(conn, max_bytes)
    return None if line is None else json.loads(line)


def parent_pid(pid: int) -> int | None:
    """Process `pid`'s parent, as /proc tells it (None: the process is gone, or /proc does not say)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[1])  # the name before it may hold anything
    except (OSError, IndexError, ValueError):
        return None
