"""The client's process (initialize's `processId`) watched: once it has exited, the daemon ends as on `exit`.

LSP: "If the parent process is not alive then the server should exit." The client's pipe or socket ends with it, but
not while another process holds it open (a wrapper it started the daemon through, a child that inherited the socket):
such a daemon ran on for ever. A pidfd turns readable when its process exits: the loop is told, nothing polls.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ollie.sandbox.fdio import parent_pid

if TYPE_CHECKING:
    from asyncio.trsock import TransportSocket

logger = logging.getLogger("ollie.lsp.editorwatch")


_watching: set[asyncio.Task[bool]] = set()  # held so a check in progress is not collected


def start_watching(pid: int | None, conn: TransportSocket | None, on_gone: Callable[[], object]) -> None:
    """`watch_client` as a task of this loop."""
    task = asyncio.ensure_future(watch_client(pid, conn, on_gone))
    _watching.add(task)
    task.add_done_callback(_watching.discard)


async def watch_client(pid: int | None, conn: TransportSocket | None, on_gone: Callable[[], object]) -> bool:
    """Call `on_gone` on this loop once process `pid` has exited, when it is this daemon's client: an ancestor of it
    (stdio), or over TCP (`conn`) one holding the connection's other end. Any other is logged and not watched: over
    ssh or from a container the editor's pid names another process here, or none."""
    if pid is None:
        return False
    try:
        pidfd = os.pidfd_open(pid)  # first: a pid checked and then opened could have been reused meanwhile
    except (OSError, OverflowError) as exc:
        logger.info("initialize: processId %d is no process here (%s): not watched", pid, exc)
        return False
    # In a thread: /proc/net/tcp has a row for every socket on the machine, the client's fd table one per open file.
    if not await asyncio.to_thread(lambda: holds_peer(pid, conn) if conn is not None else pid in ancestors()):
        os.close(pidfd)
        how = "holds no end of this connection" if conn is not None else "is no process this daemon was started by"
        logger.info("initialize: processId %d %s: not watched", pid, how)
        return False
    loop = asyncio.get_running_loop()

    def gone() -> None:
        loop.remove_reader(pidfd)
        os.close(pidfd)
        logger.warning("the client's process %d has exited", pid)
        on_gone()

    loop.add_reader(pidfd, gone)
    logger.info("initialize: watching processId %d: the daemon ends once it has exited", pid)
    return True


def ancestors() -> Iterator[int]:
    """This process's parent, its parent, ... up to (not including) pid 1, or where /proc stops telling."""
    pid: int | None = os.getppid()
    while pid is not None and pid > 1:
        yield pid
        pid = parent_pid(pid)


def holds_peer(pid: int, conn: TransportSocket) -> bool:
    """Whether process `pid` has the other end of the loopback connection `conn` open (its socket's inode)."""
    ours, theirs = conn.getsockname()[1], conn.getpeername()[1]
    table = "/proc/net/tcp6" if conn.family == socket.AF_INET6 else "/proc/net/tcp"
    inode = None
    try:
        with open(table, "rb") as rows:
            for row in rows:  # the peer's: its local port is theirs, its remote ours (sl local remote st ... inode)
                fields = row.split()
                if fields[1].endswith(b":%04X" % theirs) and fields[2].endswith(b":%04X" % ours):
                    inode = fields[9].decode()
                    break
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:  # another user's process: not ours to watch
        return False
    return inode is not None and any(_link(f"/proc/{pid}/fd/{name}") == f"socket:[{inode}]" for name in names)


def _link(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:  # closed since it was listed
        return None
