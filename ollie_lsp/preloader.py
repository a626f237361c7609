"""The warm-start preloader: imports the daemon once, then forks a ready daemon for each launcher (see warm.py).

`python -m ollie_lsp.preloader SOCKET`, started by a launcher (`ollie-lsp --warm`) that found none. One
per socket (a lock file beside it); it serves until it has been idle OLLIE_LSP_WARM_IDLE_S seconds with no
daemon of its own running, or until its socket is removed or replaced. It never reads a workspace, a
config or a session: each fork sets the launcher's environment, cwd and umask first, then runs the same
`run_daemon` a cold start runs. Nothing here starts a thread before a fork (a fork copies only its caller).
"""

from __future__ import annotations

import fcntl
import gc
import json
import os
import selectors
import signal
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ollie.sandbox.fdio import recv_fds
from ollie_lsp.warm import DEFAULT_IDLE_S, HEADER, IDLE_ENV, MAX_REQUEST_BYTES, STDIO, WarmUnavailable, check_peer

REQUEST_TIMEOUT_S = 5.0


@dataclass
class Request:
    """What a launcher handed over: the client's stdio, its command line and environment, and its pidfd."""

    fds: list[int]
    argv: list[str]
    cwd: str
    env: dict[str, str]
    umask: int
    launcher_pidfd: int


def preload() -> None:
    """Import everything a daemon's first turn needs, on any backend."""
    import ollie.agent.core  # noqa: F401
    import ollie.backend.anthropic  # noqa: F401
    import ollie.backend.ollama  # noqa: F401
    import ollie.backend.openai  # noqa: F401
    import ollie.sandbox.spawn  # noqa: F401
    import ollie_lsp.__main__  # noqa: F401
    import ollie_lsp.methods  # noqa: F401
    import ollie_lsp.server  # noqa: F401
    import ollie_lsp.sessions  # noqa: F401


def idle_seconds() -> float:
    """How long the preloader waits with no daemon of its own before it ends (OLLIE_LSP_WARM_IDLE_S)."""
    try:
        return max(1.0, float(os.environ.get(IDLE_ENV, DEFAULT_IDLE_S)))
    except ValueError:
        return DEFAULT_IDLE_S


def _read_request(conn: socket.socket, launcher_pidfd: int) -> Request:
    conn.settimeout(REQUEST_TIMEOUT_S)
    first, fds = recv_fds(conn, len(STDIO), 65536)
    try:
        if len(fds) != len(STDIO) or len(first) < HEADER.size:
            raise WarmUnavailable("a request without the client's stdio")
        (size,) = HEADER.unpack_from(first)
        if size > MAX_REQUEST_BYTES:
            raise WarmUnavailable(f"a request of {size} bytes")
        body = bytearray(first[HEADER.size:])
        while len(body) < size:
            piece = conn.recv(min(65536, size - len(body)))
            if not piece:
                raise WarmUnavailable("the request ended early")
            body += piece
        data = json.loads(bytes(body[:size]))
        argv, env = data["argv"], data["env"]
        if not (isinstance(argv, list) and all(isinstance(arg, str) for arg in argv)
                and isinstance(env, dict) and all(isinstance(v, str) for v in env.values())
                and isinstance(data["cwd"], str) and isinstance(data["umask"], int)):
            raise WarmUnavailable("a malformed request")
        return Request(fds, argv, data["cwd"], env, data["umask"], launcher_pidfd)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


class Preloader:
    """The accept loop: one fork per launcher, each daemon's exit status sent back to its launcher."""

    def __init__(self, path: Path, listener: socket.socket, lock_fd: int) -> None:
        self.path = path
        self.listener = listener
        self.lock_fd = lock_fd
        self.inode = os.stat(path).st_ino
        self.daemons: dict[int, socket.socket] = {}  # daemon pid -> its launcher's connection
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def serve(self) -> Request | None:
        """Serve until idle; returns only in a forked daemon (its request), or None when the preloader ends."""
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # the wakeup fd is what matters
        selector = selectors.DefaultSelector()
        selector.register(self.listener, selectors.EVENT_READ)
        selector.register(self.wake_r, selectors.EVENT_READ)
        idle_s, last_busy = idle_seconds(), time.monotonic()
        while True:
            ready = selector.select(timeout=min(idle_s, 30.0))
            for key, _ in ready:
                if key.fileobj is self.wake_r:
                    self._drain_wakeups()
                    self._reap()
                else:
                    request = self._accept()
                    if request is not None:  # this is the forked daemon now
                        selector.close()
                        return request
            if self.daemons:
                last_busy = time.monotonic()
            if not self._still_ours() or (not self.daemons and time.monotonic() - last_busy >= idle_s):
                self.close()
                return None

    def _drain_wakeups(self) -> None:
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass

    def _still_ours(self) -> bool:
        try:
            return os.stat(self.path).st_ino == self.inode
        except OSError:
            return False

    def _accept(self) -> Request | None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return None
        try:
            _pid, pidfd = check_peer(conn)
        except (WarmUnavailable, OSError) as exc:
            _answer(conn, f"refused {exc}")
            conn.close()
            return None
        try:
            request = _read_request(conn, pidfd)
        except (WarmUnavailable, OSError, ValueError, KeyError) as exc:
            os.close(pidfd)
            _answer(conn, f"refused {exc}")
            conn.close()
            return None
        # The fork waits for "go", sent once its launcher knows its pid: a preloader killed in between leaves
        # no daemon on the client's pipes while the launcher, told nothing, serves the client cold itself.
        go_r, go_w = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:
            os.close(go_w)
            self._become_child(conn)
            if os.read(go_r, 1) != b"g":
                os._exit(1)
            os.close(go_r)
            return request
        os.close(go_r)
        for fd in request.fds:
            os.close(fd)
        os.close(pidfd)
        conn.settimeout(None)
        _answer(conn, f"pid {pid}")
        os.write(go_w, b"g")
        os.close(go_w)
        self.daemons[pid] = conn
        return None

    def _become_child(self, conn: socket.socket) -> None:
        """In the fork: drop everything of the preloader's (its socket, lock, other launchers, signals)."""
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        self.listener.close()
        os.close(self.lock_fd)  # a lock held by an open file: the daemon must not keep it past the preloader
        os.close(self.wake_r)
        os.close(self.wake_w)
        conn.close()
        for other in self.daemons.values():
            other.close()
        self.daemons.clear()

    def _reap(self) -> None:
        while self.daemons:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.daemons.pop(pid, None)
            if conn is not None:
                code = os.waitstatus_to_exitcode(status)
                _answer(conn, f"exit {128 - code if code < 0 else code}")  # killed by a signal: 128 + its number
                conn.close()

    def close(self) -> None:
        """Stop listening: the socket file removed if it is still ours, the lock released."""
        if self._still_ours():
            os.unlink(self.path)
        self.listener.close()
        os.close(self.lock_fd)


def _answer(conn: socket.socket, line: str) -> None:
    try:
        conn.sendall(line.encode() + b"\n")
    except OSError:  # the launcher is gone; its daemon sees that through the pidfd
        pass


def become_daemon(request: Request) -> int:
    """In the fork: take the client's stdio, environment, cwd and umask, watch the launcher, run the daemon."""
    os.setsid()
    for target, fd in zip(STDIO, request.fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request.env)
    os.umask(request.umask)
    sys.argv = ["ollie-lsp", *request.argv]
    try:
        os.chdir(request.cwd)
    except OSError as exc:
        print(f"ollie-lsp: cannot enter {request.cwd}: {exc.strerror}", file=sys.stderr)
        return 1
    watch_launcher(request.launcher_pidfd)
    from ollie_lsp.__main__ import run_daemon

    return run_daemon([arg for arg in request.argv if arg != "--warm"])


def watch_launcher(pidfd: int) -> None:
    """When the launcher (the editor's child) ends, end as a daemon whose client left: SIGTERM to ourselves."""
    import threading

    def wait() -> None:
        import select

        select.select([pidfd], [], [])
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=wait, name="ollie-launcher-watch", daemon=True).start()


def take_lock(path: Path) -> int | None:
    """The lock beside `path` (held as long as its fd is open); None when another preloader holds it."""
    lock_fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock_fd)
        return None
    return lock_fd


def listen(path: Path) -> socket.socket:
    """Listen on `path` (mode 0600), replacing a stale socket a preloader that ended left there."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    old_mask = os.umask(0o077)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old_mask)
    listener.listen(16)
    return listener


def main(argv: list[str]) -> int:
    """Preload, listen on argv[0], serve; in each fork, run that client's daemon."""
    path = Path(argv[0])
    lock_fd = take_lock(path)
    if lock_fd is None:
        return 0
    # Loaded before it listens: a launcher that comes meanwhile starts cold rather than wait on the imports.
    preload()
    gc.collect()
    gc.freeze()  # what the preload made stays out of every fork's collections: fewer pages copied
    listener = listen(path)
    request = Preloader(path, listener, lock_fd).serve()
    if request is None:
        return 0
    return become_daemon(request)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
