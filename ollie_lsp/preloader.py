"""The warm-start preloader: imports the daemon once, then forks a ready daemon for each launcher (see warm.py).

`python -m ollie_lsp.preloader SOCKET`, started by a launcher (`ollie-lsp --warm`) that found none. One
per socket (a lock file beside it); it serves until it has been idle OLLIE_LSP_WARM_IDLE_S seconds with no
daemon of its own running, or until its socket is removed or replaced. It never reads a workspace, a
config or a session: each fork sets the launcher's environment, cwd and umask first, then runs the same
`run_daemon` a cold start runs. Nothing here starts a thread before a fork (a fork copies only its caller).
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import os
import selectors
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ollie.sandbox.fdio import recv_fds
from ollie.sessions.livelock import same_file
from ollie_lsp.warm import (
    DEFAULT_IDLE_S,
    HEADER,
    IDLE_ENV,
    MAX_REQUEST_BYTES,
    PID_TIMEOUT_S,
    STDIO,
    WarmUnavailable,
    check_peer,
    env_seconds,
)

REQUEST_TIMEOUT_S = 5.0  # from accept to the whole request
CONFIRM_TIMEOUT_S = PID_TIMEOUT_S + 5.0  # the launcher's own wait for "pid", and then some
MAX_PENDING = 32  # requests arriving at once; more are refused (each holds three fds of a client)


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
    """Import everything a daemon's first turn needs, on any backend, and build its converter."""
    import ollie.agent.core  # noqa: F401
    import ollie.backend.anthropic  # noqa: F401
    import ollie.backend.ollama  # noqa: F401
    import ollie.backend.openai  # noqa: F401
    import ollie.sandbox.spawn  # noqa: F401
    import ollie_lsp.__main__  # noqa: F401
    import ollie_lsp.methods  # noqa: F401
    import ollie_lsp.sessions  # noqa: F401
    from ollie_lsp.server import prebuild_converter

    prebuild_converter()


def idle_seconds() -> float:
    """How long the preloader waits with no daemon of its own before it ends (OLLIE_LSP_WARM_IDLE_S)."""
    return env_seconds(IDLE_ENV, DEFAULT_IDLE_S, low=1.0)


def _parse(body: bytes, fds: list[int], launcher_pidfd: int) -> Request:
    """The request's JSON, checked field by field (anything else a launcher sends is refused, never raised)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise WarmUnavailable("a request that is not JSON") from exc
    if not isinstance(data, dict):
        raise WarmUnavailable("a request that is not an object")
    argv, env, cwd, umask = data.get("argv"), data.get("env"), data.get("cwd"), data.get("umask")
    # What os.environ, chdir and exec would reject in the fork is refused here, before anything is forked.
    if not (isinstance(argv, list) and all(_os_text(arg) for arg in argv)
            and isinstance(env, dict) and all(_os_text(k) and k and "=" not in k and _os_text(v) for k, v in env.items())
            and _os_text(cwd) and cwd and type(umask) is int and 0 <= umask <= 0o777):
        raise WarmUnavailable("a malformed request")
    return Request(fds, argv, cwd, env, umask, launcher_pidfd)


def _os_text(text: object) -> bool:
    """Whether `text` can be an argument, a path or an environment entry (no NUL; encodable as the OS's)."""
    if not isinstance(text, str) or "\0" in text:
        return False
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        return False
    return True


@dataclass
class Pending:
    """A connection whose request is still arriving: read as it comes, so a slow one holds up no other."""

    conn: socket.socket
    pidfd: int
    deadline: float
    fds: list[int] = field(default_factory=list)
    data: bytearray = field(default_factory=bytearray)

    def feed(self) -> Request | None:
        """Read what has arrived: the request once whole; WarmUnavailable/OSError when it is refused."""
        if not self.fds:
            piece, self.fds = recv_fds(self.conn, len(STDIO), 65536)
            if len(self.fds) != len(STDIO):
                raise WarmUnavailable("a request without the client's stdio")
        else:
            piece = self.conn.recv(65536)
        if not piece:
            raise WarmUnavailable("the request ended early")
        self.data += piece
        if len(self.data) < HEADER.size:
            return None
        (size,) = HEADER.unpack_from(self.data)
        if size > MAX_REQUEST_BYTES:
            raise WarmUnavailable(f"a request of {size} bytes")
        if len(self.data) < HEADER.size + size:
            return None
        return _parse(bytes(self.data[HEADER.size:HEADER.size + size]), self.fds, self.pidfd)

    def drop(self) -> None:
        """Close what it holds (the fork keeps the fds it needs by now)."""
        for fd in (*self.fds, self.pidfd):
            os.close(fd)
        self.fds = []
        self.conn.close()


class Preloader:
    """The accept loop: one fork per launcher, each daemon's exit status sent back to its launcher."""

    def __init__(self, path: Path, listener: socket.socket, lock_fd: int) -> None:
        self.path = path
        self.listener = listener
        self.lock_fd = lock_fd
        self.inode = os.stat(path).st_ino
        self.daemons: dict[int, socket.socket] = {}  # daemon pid -> its launcher's connection
        self.pending: dict[int, Pending] = {}  # connection fd -> a request still arriving
        self.selector = selectors.DefaultSelector()
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def serve(self) -> Request | None:
        """Serve until idle; returns only in a forked daemon (its request), or None when the preloader ends."""
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # the wakeup fd is what matters
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.selector.register(self.wake_r, selectors.EVENT_READ)
        idle_s, last_busy = idle_seconds(), time.monotonic()
        while True:
            timeout = min([idle_s, 30.0, *(p.deadline - time.monotonic() for p in self.pending.values())])
            for key, _ in self.selector.select(timeout=max(0.0, timeout)):
                if key.fileobj is self.wake_r:
                    self._drain_wakeups()
                    self._reap()
                elif key.fileobj is self.listener:
                    self._accept()
                else:
                    request = self._read(key.data)
                    if request is not None:  # this is the forked daemon now
                        return request
            self._expire()
            if self.daemons or self.pending:
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

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        try:
            if len(self.pending) >= MAX_PENDING:
                raise WarmUnavailable("too many requests at once")
            _pid, pidfd = check_peer(conn)
        except (WarmUnavailable, OSError) as exc:
            _answer(conn, f"refused {exc}")
            conn.close()
            return
        conn.setblocking(False)
        pending = Pending(conn, pidfd, time.monotonic() + REQUEST_TIMEOUT_S)
        self.pending[conn.fileno()] = pending
        self.selector.register(conn, selectors.EVENT_READ, pending)

    def _read(self, pending: Pending) -> Request | None:
        """Take what a pending request sent; fork its daemon once it is whole (the fork returns the request)."""
        try:
            request = pending.feed()
        except BlockingIOError:
            return None
        except (WarmUnavailable, OSError) as exc:
            self._refuse(pending, f"refused {exc}")
            return None
        if request is None:
            return None
        self._forget(pending)
        return self._fork(pending.conn, request)

    def _expire(self) -> None:
        now = time.monotonic()
        for pending in [p for p in self.pending.values() if p.deadline <= now]:
            self._refuse(pending, f"refused no whole request within {REQUEST_TIMEOUT_S:g} s")

    def _forget(self, pending: Pending) -> None:
        self.selector.unregister(pending.conn)
        del self.pending[pending.conn.fileno()]

    def _refuse(self, pending: Pending, line: str) -> None:
        self._forget(pending)
        _answer(pending.conn, line)
        pending.drop()

    def _fork(self, conn: socket.socket, request: Request) -> Request | None:
        # The fork touches the client's stdio only once the launcher answers "ok" to "pid N": a launcher that
        # gave up waiting (a preloader stopped or killed in between) serves its client cold, and its fork,
        # reading EOF instead, ends: never two daemons on one client's pipes.
        try:
            pid = os.fork()
        except OSError as exc:  # out of processes or memory (EAGAIN, ENOMEM): this launcher starts cold
            self._refuse_whole(conn, request, f"refused {exc}")
            return None
        if pid == 0:
            self._become_child(conn)
            confirmed = _launcher_confirms(conn)
            conn.close()
            if not confirmed:
                os._exit(1)
            return request
        for fd in (*request.fds, request.launcher_pidfd):
            os.close(fd)
        conn.setblocking(True)
        _answer(conn, f"pid {pid}")
        self.daemons[pid] = conn
        return None

    @staticmethod
    def _refuse_whole(conn: socket.socket, request: Request, line: str) -> None:
        for fd in (*request.fds, request.launcher_pidfd):
            os.close(fd)
        _answer(conn, line)
        conn.close()

    def _become_child(self, conn: socket.socket) -> None:
        """In the fork: drop everything of the preloader's (its socket, lock, other launchers, signals) but `conn`."""
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        self.selector.close()
        self.listener.close()
        os.close(self.lock_fd)  # a lock held by an open file: the daemon must not keep it past the preloader
        os.close(self.wake_r)
        os.close(self.wake_w)
        for other in self.daemons.values():
            other.close()
        self.daemons.clear()
        # Requests still arriving hold other clients' stdio: a daemon keeping them would hold those pipes open.
        for pending in self.pending.values():
            pending.drop()
        self.pending.clear()

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
        """Stop listening: the socket and lock files removed if they are still ours, the lock released."""
        if self._still_ours():
            os.unlink(self.path)
        lock_path = f"{self.path}.lock"
        with contextlib.suppress(OSError):  # one per code key: an upgrade or an edit would leave them piling up
            if os.stat(lock_path).st_ino == os.fstat(self.lock_fd).st_ino:
                os.unlink(lock_path)
        for pending in self.pending.values():
            _answer(pending.conn, "refused the preloader is ending")
            pending.drop()
        self.pending.clear()
        self.selector.close()
        self.listener.close()
        os.close(self.lock_fd)


def _launcher_confirms(conn: socket.socket) -> bool:
    """Whether the launcher answers "ok" (it took the pid and stays warm) in time; EOF: it went cold."""
    conn.setblocking(True)
    conn.settimeout(CONFIRM_TIMEOUT_S)
    try:
        return conn.recv(3) == b"ok\n"
    except OSError:
        return False


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
    time.tzset()  # the C library read TZ once, in the preloader: local times are the client's
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
    try:  # never through a symlink: one planted there would have us make a file wherever it points
        lock_fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock_fd)
        return None
    # An ending preloader removes its lock file (close()): one opened just before that, locked now, guards nothing.
    if not same_file(lock_fd, Path(f"{path}.lock")):
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
