"""A byte relay between two sockets through a pipe with splice(2): the egress proxy's data path.

The kernel hands the pages on, so the bytes are never copied into Python and back. Each direction is a thread
blocked in splice, which the kernel wakes when bytes come: no event-loop round per chunk (relayed on the loop, a
100 MB download from a loopback server took ~9% longer, bench/RESULTS.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import select
import socket
import threading
from collections.abc import Callable

Count = Callable[[int], bool]  # sees a chunk's size before it moves (in its pump's thread); False stops it

# A bulk transfer's pipe: what one splice(2) moves at most (pipe-max-size for a user). Per 100 MB relayed the
# daemon spends ~50 ms of CPU with 256 KiB pipes, ~30 with 1 MiB: fewer, larger splices and wakeups.
PIPE_SIZE = 1 << 20
# Pipes grown to PIPE_SIZE at once, all steps together: they count against the user's pipe quota
# (fs/pipe-user-pages-soft, 64 MiB by default, shared with all their programs'; past it their new pipes are
# small), so no step spends it. A bulk transfer past these keeps a 64 KiB pipe: slower, not broken.
MAX_GROWN_PIPES = 16
_growable = threading.BoundedSemaphore(MAX_GROWN_PIPES)  # the pipes that may still grow
# In a bulk transfer (a splice took all a new pipe holds) a pump sleeps until a pipe's worth has come or this long
# has passed, instead of waking at each burst a pacing sender sends: per 100 MB from a loopback server (the host's
# BBR) ~100 splices and 36-74 sleeps instead of 98-1,046 and 23-949, ~3 ms less of the daemon's CPU
# (bench/RESULTS.md). A shorter read ends the bulk, so a reply's tail waits this long at most and what follows it
# not at all. (poll's timeout, not SO_RCVTIMEO's: that one counts in scheduler ticks, 4-8 ms at HZ=250.)
BULK_WAIT_MS = 1


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
    loop = asyncio.get_running_loop()
    if first:
        if not sending(len(first)):
            return
        await loop.sock_sendall(upstream, first)
    client.setblocking(True)  # the pumps own both sockets until they have ended
    upstream.setblocking(True)
    ends = [loop.create_future(), loop.create_future()]
    for pump in ((ends[0], client, upstream, sending, limit), (ends[1], upstream, client, receiving, None)):
        threading.Thread(target=_run, args=(loop, *pump), name="ollie-relay", daemon=True).start()
    try:
        done, _ = await asyncio.wait(ends, return_when=asyncio.FIRST_COMPLETED)
        if ends[0] in done and ends[0].result():
            await asyncio.wait([ends[1]])  # the step half-closed: the reply still comes
    finally:
        # A blocked splice returns once its socket is shut down. The caller closes the sockets after this, and a
        # descriptor number reused while a pump still used it would move another connection's bytes: so this
        # waits for both pumps to end, even when cancelled again meanwhile (the first cancellation is raised).
        for sock in (client, upstream):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        while not all(end.done() for end in ends):
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait(ends)


def _run(loop: asyncio.AbstractEventLoop, end: asyncio.Future[bool], src: socket.socket, dst: socket.socket,
         count: Count, limit: int | None) -> None:
    """A pump's thread: `_pump`, its outcome set on `end` (an OSError, either side gone, ends it False)."""
    result = False
    try:
        result = _pump(src, dst, count, limit)
    except OSError:
        pass
    finally:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            loop.call_soon_threadsafe(lambda: end.done() or end.set_result(result))


def _pump(src: socket.socket, dst: socket.socket, count: Count, limit: int | None = None) -> bool:
    """Move bytes from `src` to `dst` until `src` ends (then half-close `dst`), `limit` bytes went (None: no limit)
    or `count(n)` says stop (then False).

    Through a pipe with splice(2): the kernel hands the pages on, so the bytes are never copied into
    Python and back (a 100 MB download costs about a hundred splices each way and no copies of ours).
    """
    pipe_out, pipe_in = os.pipe2(os.O_CLOEXEC)
    # Grown to PIPE_SIZE only once a splice fills it: most connections (an API call, a TLS handshake) never do.
    room, grown = fcntl.fcntl(pipe_in, fcntl.F_GETPIPE_SZ), False
    left, bulk, ready = limit, False, select.poll()
    ready.register(src, select.POLLIN)
    try:
        while left is None or left > 0:
            if bulk and not ready.poll(BULK_WAIT_MS):  # less than a pipe's worth came: the splice takes it
                bulk = _bulk(src, False)
            n = os.splice(src.fileno(), pipe_in, PIPE_SIZE if left is None else min(PIPE_SIZE, left),
                          flags=os.SPLICE_F_MOVE)
            if not n:
                break
            if not count(n):
                return False
            if left is not None:
                left -= n
            grow = not grown and n >= room
            if (n >= room) != bulk:
                bulk = _bulk(src, not bulk)
            while n:
                n -= os.splice(pipe_out, dst.fileno(), n, flags=os.SPLICE_F_MOVE)
            if grow and _growable.acquire(blocking=False):  # the pipe is empty now
                try:
                    fcntl.fcntl(pipe_in, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
                except OSError:  # past the user's pipe quota: it stays small (slower, not broken), not tried again
                    _growable.release()
                    room = PIPE_SIZE
                else:
                    grown = True
    finally:
        if grown:
            _growable.release()
        os.close(pipe_out)
        os.close(pipe_in)
    if left is None or left > 0:  # `src` ended (a plain request: before its whole body)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)  # after the pipe is given back: the peer may count on it then
    return True


def _bulk(sock: socket.socket, on: bool) -> bool:
    """`sock` wakes its reader at a pipe's worth (`on`: the kernel holds back earlier wake-ups) or at its first byte."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, PIPE_SIZE if on else 1)
    return on
