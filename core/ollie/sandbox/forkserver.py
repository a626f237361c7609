"""The fork server: a single-threaded process that forks, restricts with Landlock and execs tool commands.

Started once per daemon as `python -I -S forkserver.py CONTROL_FD`, because
forking a threaded daemon and running Python before exec is unsafe. Protocol:
the daemon sends b"spawn" on the control socket (SOCK_SEQPACKET) with four fds:
a per-spawn stream socket and the child's stdin, stdout and stderr. On the
per-spawn socket it writes one JSON line `{argv, cwd, env, ruleset}`; the server
answers `{"pid": N}` (or `{"error": {stage, errno, message}}`) and, once it has
reaped the child, `{"status": exit_code}` (negative: killed by that signal).
The server exits when the control socket closes. Stdlib only.
"""

from __future__ import annotations

import array
import importlib.util
import json
import os
import selectors
import signal
import socket
import sys

MAX_REQUEST_BYTES = 64 << 20


def _load_landlock():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "landlock.py")
    spec = importlib.util.spec_from_file_location("_ollie_landlock", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


landlock = _load_landlock()


def _send(conn: socket.socket, message: dict) -> bool:
    try:
        conn.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        return False  # the daemon gave up on this spawn; the child is still reaped
    return True


def _refuse(conn: socket.socket, message: str) -> None:
    _send(conn, {"error": {"stage": "request", "errno": 0, "message": message}})


def _child(request: dict, stdio: list[int], err_w: int) -> None:
    """In the forked child: new session, stdio, cwd, Landlock, exec. Never returns."""
    stage = "setsid"
    try:
        os.setsid()
        stage = "stdio"
        for target, fd in enumerate(stdio):
            os.dup2(fd, target)
        # Python ignores these; an exec'd program must get the defaults back (`yes | head`).
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        stage = "chdir"
        os.chdir(request["cwd"])
        if request.get("ruleset"):
            stage = "landlock"
            landlock.apply_ruleset(request["ruleset"])
        stage = "exec"
        argv = request["argv"]
        os.execvpe(argv[0], argv, request["env"])
    except BaseException as exc:  # noqa: BLE001 - everything must be reported, then _exit
        error = {"stage": stage, "errno": getattr(exc, "errno", None) or 0, "message": str(exc)}
        try:
            os.write(err_w, json.dumps(error).encode())
        finally:
            os._exit(127)


class _Request:
    """A spawn whose JSON line is still arriving; read without blocking, so one slow client stalls nobody."""

    def __init__(self, conn: socket.socket, stdio: list[int]) -> None:
        self.conn = conn
        self.stdio = stdio
        self.buffer = bytearray()

    def discard(self) -> None:
        """The daemon gave up (connection closed) or sent garbage: drop everything."""
        for fd in self.stdio:
            os.close(fd)
        self.conn.close()


def _on_request_data(request: _Request, selector: selectors.BaseSelector) -> None:
    try:
        chunk = request.conn.recv(1 << 16)
    except BlockingIOError:
        return
    except OSError:
        chunk = b""
    request.buffer += chunk
    if chunk and len(request.buffer) > MAX_REQUEST_BYTES:
        _refuse(request.conn, "request too large")
        chunk = b""
    if b"\n" not in request.buffer:
        if not chunk:
            selector.unregister(request.conn)
            request.discard()
        return
    selector.unregister(request.conn)
    try:
        spec = json.loads(request.buffer.split(b"\n", 1)[0])
    except ValueError as exc:
        _refuse(request.conn, f"bad request: {exc}")
        request.discard()
        return
    request.conn.setblocking(True)
    _fork(spec, request.conn, request.stdio, selector)


def _fork(spec: dict, conn: socket.socket, stdio: list[int], selector: selectors.BaseSelector) -> None:
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(err_r)
        _child(spec, stdio, err_w)
    os.close(err_w)
    for fd in stdio:
        os.close(fd)
    with os.fdopen(err_r, "rb") as errors:
        failure = errors.read()  # EOF on a successful exec (the pipe is close-on-exec)
    if failure:
        os.waitpid(pid, 0)
        _send(conn, {"error": json.loads(failure)})
        conn.close()
        return
    if not _send(conn, {"pid": pid}):
        try:
            os.killpg(pid, signal.SIGKILL)  # nobody could ever stop it otherwise
        except OSError:
            pass
    pidfd = os.pidfd_open(pid)
    selector.register(pidfd, selectors.EVENT_READ, lambda: _reap(pidfd, pid, conn, selector))


def _reap(pidfd: int, pid: int, conn: socket.socket, selector: selectors.BaseSelector) -> None:
    selector.unregister(pidfd)
    os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    _send(conn, {"status": os.waitstatus_to_exitcode(status)})
    conn.close()


def _recv_fds(sock: socket.socket, maxfds: int) -> tuple[bytes, list[int]]:
    """Like socket.recv_fds, but the fds arrive close-on-exec: 3.11's recv_fds drops its flags,
    and an inherited fd would hand one child another spawn's pipes and socket."""
    item = array.array("i")
    message, ancdata, _, _ = sock.recvmsg(64, socket.CMSG_LEN(maxfds * item.itemsize), socket.MSG_CMSG_CLOEXEC)
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            item.frombytes(data[: len(data) - len(data) % item.itemsize])
    return message, list(item)


def _accept(control: socket.socket, selector: selectors.BaseSelector) -> bool:
    """Take one spawn message off the control socket; False when the daemon has gone."""
    try:
        message, fds = _recv_fds(control, 4)
    except OSError:
        return False
    if not message:
        return False
    if len(fds) != 4:
        for fd in fds:
            os.close(fd)
        return True
    request = _Request(socket.socket(fileno=fds[0]), fds[1:])
    request.conn.setblocking(False)
    selector.register(request.conn, selectors.EVENT_READ, lambda: _on_request_data(request, selector))
    return True


def serve(control: socket.socket) -> None:
    """Serve spawn requests until the control socket closes."""
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ, None)
    while True:
        for key, _ in selector.select():
            if key.data is None:
                if not _accept(control, selector):
                    return
            else:
                key.data()


def main() -> None:
    """Entry point: argv[1] is the inherited control socket's fd."""
    fd = int(sys.argv[1])
    os.set_inheritable(fd, False)
    for std in (0, 1, 2):  # keep 0-2 taken, so received fds never land there before the child's dup2
        try:
            os.fstat(std)
        except OSError:
            os.open(os.devnull, os.O_RDWR)
    serve(socket.socket(fileno=fd))


if __name__ == "__main__":
    main()
