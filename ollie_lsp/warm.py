"""Warm start: `ollie-lsp --warm` hands its stdio to a per-user preloader that forks a daemon already loaded.

The preloader (`ollie_lsp.preloader`) is a process of the user's that has imported python, pygls,
lsprotocol and the engine once and sits idle on a unix socket. The launcher (this module, run by the
`ollie-lsp` the editor starts) connects, passes its stdin, stdout and stderr, its argv, cwd, umask and
environment; the preloader forks, and the fork becomes this client's daemon with exactly that environment.
The launcher stays as the editor's child: it forwards SIGTERM/SIGINT/SIGHUP to the daemon, and exits with
the daemon's status; if the launcher is killed, the daemon sees it go (a pidfd) and ends as if the client
left. With no preloader running, the launcher starts one for next time and serves this client itself (cold).

Opt-in (`--warm`, or OLLIE_LSP_WARM=1): the preloader outlives the editor until it has been idle
OLLIE_LSP_WARM_IDLE_S seconds (default 900), which is a process left behind by design.

Only plain processes of the same user meet: both ends check the other's uid and that it is not under
no_new_privs. Every process in ollie's sandbox runs under no_new_privs (Landlock sets it), so sandboxed
tool code can neither get a daemon outside the sandbox from a preloader nor pose as one to an editor.
The socket's name carries a key of the installed code (the sources' sizes and mtimes, the interpreter,
site-packages), so a preloader never serves code older than what the launcher would run.

Only the standard library here: this runs before anything heavy is imported.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import signal
import socket
import stat
import struct
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path

WARM_ENV = "OLLIE_LSP_WARM"
IDLE_ENV = "OLLIE_LSP_WARM_IDLE_S"
DEFAULT_IDLE_S = 900.0
MAX_REQUEST_BYTES = 4 << 20  # argv + cwd + environment
SO_PEERPIDFD = getattr(socket, "SO_PEERPIDFD", 77)  # Linux 6.5; 3.11's socket module lacks the name
HEADER = struct.Struct("!I")  # the request's JSON length
STDIO = (0, 1, 2)


class WarmUnavailable(Exception):
    """No warm start here (no safe runtime dir, a confined process, an untrusted peer); start cold."""


def wanted(argv: list[str], environ: Mapping[str, str]) -> bool:
    """Whether this start asked for a warm start (`--warm` or OLLIE_LSP_WARM=1)."""
    return "--warm" in argv or environ.get(WARM_ENV, "") in ("1", "true", "yes")


def runtime_dir(environ: Mapping[str, str] | None = None) -> Path:
    """This user's private directory for the preloader's socket: made 0700 if absent, checked if present."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_RUNTIME_DIR", "")
    path = Path(base) / "ollie" if base and os.path.isdir(base) else Path(f"/tmp/ollie-{os.getuid()}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise WarmUnavailable(f"cannot make {path}: {exc.strerror}") from exc
    info = os.lstat(path)
    # Someone else's directory, a symlink, or one others may write to: another user could answer as the preloader.
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise WarmUnavailable(f"{path} is not a directory of this user's alone (mode {info.st_mode:o})")
    return path


def code_key() -> str:
    """A key of the code a daemon would run now: ollie's sources (sizes, mtimes), the interpreter, site-packages."""
    digest = hashlib.sha256(f"{sys.executable}\0{sys.version}\0{sys.prefix}".encode())
    import ollie  # the engine's package: beside ollie_lsp when installed, under core/ in a checkout

    for root in (Path(__file__).resolve().parent, Path(ollie.__file__).resolve().parent):
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(name for name in dirnames if name != "__pycache__")
            for name in sorted(filenames):
                if name.endswith((".py", ".sh", ".yaml", ".json", ".md")):
                    info = os.stat(os.path.join(dirpath, name))
                    digest.update(f"{dirpath}/{name}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    # site-packages' mtime changes when a dependency is installed, removed or upgraded. Not sys.path itself:
    # `python -m` puts the cwd first, and every project would get a preloader of its own.
    for entry in dict.fromkeys((sysconfig.get_path("purelib"), sysconfig.get_path("platlib"))):
        try:
            digest.update(f"{entry}\0{os.stat(entry).st_mtime_ns}\0".encode())
        except OSError:
            continue
    return digest.hexdigest()[:20]


def socket_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the preloader for the code installed now listens."""
    return runtime_dir(environ) / f"warm-{code_key()}.sock"


def no_new_privs(pid: int) -> bool:
    """Whether process `pid` runs under no_new_privs (True when it cannot be told: refuse rather than trust)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("NoNewPrivs:"):
                    return line.split()[1] != "0"
    except OSError:
        pass
    return True


def _pidfd_pid(pidfd: int) -> int:
    with open(f"/proc/self/fdinfo/{pidfd}", encoding="ascii") as info:
        for line in info:
            if line.startswith("Pid:"):
                return int(line.split()[1])
    return -1


def check_peer(sock: socket.socket) -> tuple[int, int]:
    """The peer's (pid, pidfd) if it is a plain process of this user; WarmUnavailable otherwise.

    The pidfd pins the process: the checks read the process it names, and it is still alive afterwards,
    so a pid recycled meanwhile is caught.
    """
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    if uid != os.getuid():
        raise WarmUnavailable(f"the peer is uid {uid}, not {os.getuid()}")
    try:
        pidfd = sock.getsockopt(socket.SOL_SOCKET, SO_PEERPIDFD)
    except OSError:  # before Linux 6.5: open one now, then make sure it is still the peer's pid below
        try:
            pidfd = os.pidfd_open(pid)
        except OSError as exc:
            raise WarmUnavailable(f"the peer (pid {pid}) is gone") from exc
    try:
        pid = _pidfd_pid(pidfd)
        if pid <= 0 or no_new_privs(pid):
            raise WarmUnavailable(f"the peer (pid {pid}) runs confined (no_new_privs): never across a sandbox")
        if select.select([pidfd], [], [], 0)[0]:  # readable: the process has ended, its pid may be another's
            raise WarmUnavailable("the peer ended while it was checked")
    except BaseException:
        os.close(pidfd)
        raise
    return pid, pidfd


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        sock.connect(str(path))
    except OSError:  # none listening (absent, or a stale socket of a preloader that ended)
        sock.close()
        return None
    return sock


def _request(argv: list[str]) -> bytes:
    body = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ),
                       "umask": _current_umask()}).encode()
    return HEADER.pack(len(body)) + body


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def start_preloader(path: Path) -> None:
    """Start a preloader for `path` in a session of its own, not our child (a double fork), and do not wait on it."""
    env = {key: value for key, value in os.environ.items() if key != WARM_ENV}
    argv = [sys.executable, "-m", "ollie_lsp.preloader", str(path)]
    middle = os.fork()
    if middle == 0:  # pragma: no cover - a forked child, measured by the warm-start tests from outside
        try:
            os.setsid()
            if os.fork() == 0:
                os.chdir("/")  # it serves every project: it must not hold the first one's directory
                devnull = os.open(os.devnull, os.O_RDWR)
                for fd in STDIO:
                    os.dup2(devnull, fd)
                os.closerange(3, 65536)
                os.execve(sys.executable, argv, env)
        finally:
            os._exit(0)
    os.waitpid(middle, 0)


def launch(argv: list[str]) -> int | None:
    """Serve this client through a warm daemon: its exit status; None to start cold here (a preloader started)."""
    if no_new_privs(os.getpid()):
        return None  # a confined process (maybe ollie's own sandbox): it must not reach a daemon outside
    try:
        path = socket_path()
    except WarmUnavailable as exc:
        print(f"ollie-lsp: no warm start: {exc}", file=sys.stderr)
        return None
    sock = _connect(path)
    if sock is None:
        start_preloader(path)
        return None
    with sock:
        try:
            _pid, pidfd = check_peer(sock)
        except WarmUnavailable as exc:
            print(f"ollie-lsp: no warm start: {exc}", file=sys.stderr)
            return None
        os.close(pidfd)
        request = _request(argv)
        try:
            socket.send_fds(sock, [request[:65536]], list(STDIO))
            if len(request) > 65536:
                sock.sendall(request[65536:])
        except OSError as exc:  # the preloader closed (it was ending): nothing forked, serve cold
            print(f"ollie-lsp: no warm start: {exc}", file=sys.stderr)
            return None
        return _follow(sock)


def _read_line(reader: socket.socket) -> str | None:
    line = b""
    while not line.endswith(b"\n"):
        try:
            piece = reader.recv(1)
        except OSError:  # reset: the preloader ended
            return None
        if not piece:
            return None
        line += piece
    return line.decode("ascii", "replace").strip()


def _follow(sock: socket.socket) -> int | None:
    """Wait on the forked daemon: forward the editor's signals to it, and exit with its status."""
    first = _read_line(sock)
    if first is None or not first.startswith("pid "):
        # "refused ...": nothing forked, the fds were closed there; serve cold.
        print(f"ollie-lsp: no warm start: {first or 'the preloader closed the connection'}", file=sys.stderr)
        return None
    child = int(first.split()[1])

    def forward(signum: int, _frame: object) -> None:
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    # The daemon alone holds the client's pipes now: the editor sees EOF exactly when the daemon closes them.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    last = _read_line(sock)
    if last is not None and last.startswith("exit "):
        return int(last.split()[1])
    # The preloader went away first (killed): the daemon may still be serving; wait for it to end.
    try:
        pidfd = os.pidfd_open(child)
    except OSError:
        return 1
    while not select.select([pidfd], [], [])[0]:
        pass
    return 1
