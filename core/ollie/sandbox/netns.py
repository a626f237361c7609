"""A step's own network namespace: loopback only, and one listening socket handed to ollie's egress proxy.

Stdlib only: loaded by path (siblings.py) in the fork server's `-I -S` interpreter.

With `network: proxy` the step's first process, before it confines itself,
unshares CLONE_NEWNET (inside a new user namespace when it lacks CAP_SYS_ADMIN),
brings `lo` up, and listens on 127.0.0.1:PORT there. It sends that listening
socket (SCM_RIGHTS) with its one-time token to the proxy's unix socket, which
the daemon serves, and closes its own copy: the daemon accepts the step's
connections itself, on its own event loop, and the step keeps no way to close
or replace the proxy. No forwarder process runs in the step, so a step costs
one unshare, one ioctl and a few socket calls more. Everything else in the
namespace has no route: a program that ignores HTTP(S)_PROXY has no network.

Made ahead where it can be: a spare supervisor's prepared process (spare.py) for a step with the
proxy makes its namespace, `lo` and the listener while the daemon idles (`prepare`), so a step pays
only the hand-over to the proxy; such a process takes `network: proxy` steps only, and each namespace
serves one step (the process that made it becomes that step's PID 1). Elsewhere `enter` makes it.
"""

from __future__ import annotations

import fcntl
import socket
import struct
from collections.abc import Callable

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
# The proxy's address inside every step's namespace (its own loopback: no port there is anyone else's).
PROXY_HOST, PROXY_PORT = "127.0.0.1", 3128
_ahead: socket.socket | None = None  # the listener `prepare` made, in this process's namespace of its own


def loopback_up() -> None:
    """Bring `lo` up in this (new) network namespace: it starts down."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def _listen(unshare: Callable[[int, str], None]) -> socket.socket:
    """Move this process into a new network namespace with `lo` up; its proxy listener there."""
    unshare(CLONE_NEWNET, "CLONE_NEWNET")
    loopback_up()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # Its connections take their congestion control from it as they come (even those queued before the
        # daemon has it): a loopback hop, nothing to congest. Reno, which every kernel allows, never paces; the
        # host's default might (BBR times each burst: the daemon spent nearly twice the CPU per download).
        listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"reno")
        listener.bind((PROXY_HOST, PROXY_PORT))
        listener.listen(128)
    except BaseException:
        listener.close()
        raise
    return listener


def prepare(unshare: Callable[[int, str], None]) -> None:
    """In a spare's prepared process, before its step comes: make the namespace and listener `enter` will use."""
    global _ahead
    _ahead = _listen(unshare)


def enter(spec: dict, unshare: Callable[[int, str], None]) -> None:
    """Move this process into a new network namespace (made ahead by `prepare`, or now) and hand its proxy
    listener to the daemon; raises OSError.

    `spec`: {"socket": the proxy's unix socket path, "token": this step's one-time token}; `unshare`:
    confine.py's (it adds a user namespace where it must).
    """
    global _ahead
    listener, _ahead = _ahead or _listen(unshare), None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as proxy:
            proxy.connect(spec["socket"])
            # No wait for the proxy's answer: the listener queues the step's first connections until the
            # daemon accepts them, so a step pays no round trip through the daemon's event loop to start.
            socket.send_fds(proxy, [spec["token"].encode() + b"\n"], [listener.fileno()])
    finally:
        listener.close()
