"""A byte relay between two sockets on the event loop, through a pipe with splice(2): the egress proxy's data path.

The kernel hands the pages on, so the bytes are never copied into Python and back.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import socket
from collections.abc import Callable

Count = Callable[[int], bool]  # sees a chunk's size before it moves; False stops that direction

# A bulk transfer's pipe: what one splice(2) moves at most (pipe-max-size for a user). Per 100 MB relayed the
# daemon spends ~50 ms of CPU with 256 KiB pipes, ~30 with 1 MiB: fewer, larger splices and wakeups.
PIPE_SIZE = 1 << 20
# Pipes grown to PIPE_SIZE at once, all steps together: they count against the user's pipe quota
# (fs/pipe-user-pages-soft, 64 MiB by default, shared with all their programs'; past it their new pipes are
# small), so no step spends it. A bulk transfer past these keeps a 64 KiB pipe: slower, not broken.
MAX_GROWN_PIPES = 16
_grown_pipes = 0
_SPLICE_FLAGS = os.SPLICE_F_MOVE | os.SPLICE_F_NONBLOCK


async def connect(addresses: list[str], port: int) -> socket.socket:
    """A non-blocking TCP connection to the first of `addresses` (at `port`) that answers."""
    loop = asyncio.get_running_loop()
    error: OSError = OSError("no address")
    for address in addresses:
        sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, (address, port))
        except OSError as exc:
            sock.close()
            error = exc
            continue
        except BaseException:
            sock.close()
            raise
        # Small writes (a TLS handshake, a request head) go at once, as they would without the proxy.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock
    raise error


async def relay(client: socket.socket, upstream: socket.socket, first: bytes, limit: int | None,
                counters: tuple[Count, Count]) -> None:
    """Copy both ways until either side ends; `counters` (sending, receiving) see each chunk's size first and
    may stop their direction (a cap on bytes sent).

    `first` (the request head, and what the step sent with it) goes upstream before the rest, of which at most
    `limit` bytes follow (None: no limit; a plain request's body).
    """
    sending, receiving = counters
    if first:
        if not sending(len(first)):
            return
        await asyncio.get_running_loop().sock_sendall(upstream, first)
    tasks = [asyncio.ensure_future(_pump(client, upstream, sending, limit)),
             asyncio.ensure_future(_pump(upstream, client, receiving))]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        if tasks[0] in done and not tasks[0].exception() and tasks[0].result():
            await asyncio.wait([tasks[1]])  # the step half-closed: the reply still comes
    finally:
        for task in tasks:
            task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.gather(*tasks, return_exceptions=True)


async def _pump(src: socket.socket, dst: socket.socket, count: Count, limit: int | None = None) -> bool:
    """Move bytes from `src` to `dst` until `src` ends (then half-close `dst`), `limit` bytes went (None: no limit)
    or `count(n)` says stop (then False).

    Through a pipe with splice(2): the kernel hands the pages on, so the bytes are never copied into
    Python and back (a 100 MB download costs about a hundred splices each way and no copies of ours).
    """
    global _grown_pipes
    loop = asyncio.get_running_loop()
    pipe_out, pipe_in = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    # Grown to PIPE_SIZE only once a splice fills it: most connections (an API call, a TLS handshake) never do.
    room, grown = fcntl.fcntl(pipe_in, fcntl.F_GETPIPE_SZ), False
    left = limit
    try:
        while left is None or left > 0:
            try:
                n = os.splice(src.fileno(), pipe_in, PIPE_SIZE if left is None else min(PIPE_SIZE, left),
                              flags=_SPLICE_FLAGS)
            except BlockingIOError:
                await _ready(loop, src, write=False)
                continue
            if not n:
                break
            if not count(n):
                return False
            if left is not None:
                left -= n
            grow = not grown and n >= room
            while n:
                try:
                    n -= os.splice(pipe_out, dst.fileno(), n, flags=_SPLICE_FLAGS)
                except BlockingIOError:
                    await _ready(loop, dst, write=True)
            if grow and _grown_pipes < MAX_GROWN_PIPES:  # empty now
                try:
                    fcntl.fcntl(pipe_in, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
                except OSError:  # past the user's pipe quota: it stays small (slower, not broken), not tried again
                    room = PIPE_SIZE
                else:
                    grown, _grown_pipes = True, _grown_pipes + 1
        if left is None or left > 0:  # `src` ended (a plain request: before its whole body)
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)
        return True
    finally:
        _grown_pipes -= grown
        os.close(pipe_out)
        os.close(pipe_in)


async def _ready(loop: asyncio.AbstractEventLoop, sock: socket.socket, *, write: bool) -> None:
    """Wait until `sock` can be read (or written)."""
    ready = loop.create_future()
    add, remove = (loop.add_writer, loop.remove_writer) if write else (loop.add_reader, loop.remove_reader)
    add(sock.fileno(), lambda: ready.done() or ready.set_result(None))
    try:
        await ready
    finally:
        remove(sock.fileno())
