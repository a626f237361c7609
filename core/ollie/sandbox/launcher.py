"""Per-spawn fallback when the fork server is unavailable: `python -I -S launcher.py SOCKET_FD DAEMON_PID`.

It speaks the fork server's per-spawn protocol on SOCKET_FD and is itself the step's supervisor
(supervise.py), with the fork server's own `_child` doing the pre-exec work. It costs ~25 ms more per spawn,
and its PDEATHSIG fires when the daemon thread that started it exits. Stdlib only.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import sys


def _load(name: str):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_ollie_{name}", path)
    assert spec is not None and spec.loader is not None  # a sibling file of this one
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    """Read the request, then supervise the step; exits when it is over."""
    forkserver = _load("forkserver")
    conn = socket.socket(fileno=int(sys.argv[1]))
    daemon = int(sys.argv[2])
    try:
        request = forkserver.supervise.fdio.read_request(conn, forkserver.MAX_REQUEST_BYTES)
    except ValueError as exc:
        forkserver._refuse(conn, f"bad request: {exc}")
        os._exit(0)
    if request is None:
        os._exit(0)
    stdio = [os.dup(fd) for fd in (0, 1, 2)]  # close-on-exec copies: the tool dup2s them back onto 0-2
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)  # the supervisor must not keep the step's pipes open
    os.close(null)
    forkserver.supervise.run(request, conn, stdio, forkserver._child, daemon)


if __name__ == "__main__":
    main()
