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
WAIT_ENV = "OLLIE_LSP_WARM_WAIT_S"
DEFAULT_IDLE_S = 900.0
MAX_REQUEST_BYTES = 4 << 20  # argv + cwd + environment
PID_TIMEOUT_S = 10.0  # a preloader that has not forked by then (stopped, hung) is given up: the client starts cold
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
    # What the interpreter reads at start-up (where it imports from, its flags, its locale) stays the
    # preloader's in every fork: a launcher with other values needs a preloader of its own.
    for name, value in sorted(os.environ.items()):
        if name.startswith("PYTHON") or name in ("LANG", "LC_ALL", "LC_CTYPE"):
            digest.update(f"{name}={value}\0".encode("utf-8", "surrogateescape"))
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
    except OSError:
        # Before Linux 6.5: open one by the pid the peer had when it connected. A peer that ended since and
        # whose pid went to another process of the user's in between is not caught here.
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
    try:
        info = os.lstat(path)
    except OSError:
        return None
    # Only a socket of ours, never through a symlink: one planted there (by tool code that could write the
    # directory) would hand the editor's pipes and environment to whichever service of the user's it names.
    if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.getuid():
        return None  # the preloader started next replaces it
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        sock.connect(str(path))
    except OSError:  # none listening (absent, or a stale socket of a preloader that ended)
        sock.close()
        return None
    return sock


def _request(argv: list[str]) -> bytes:
    try:
        cwd = os.getcwd()
    except OSError as exc:  # started in a directory removed since: a cold start runs there, a fork could not
        raise WarmUnavailable(f"no working directory ({exc.strerror})") from exc
    body = json.dumps({"argv": argv, "cwd": cwd, "env": dict(os.environ), "umask": _current_umask()}).encode()
    return HEADER.pack(len(body)) + body


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def preloader_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """What the preloader starts with: what the interpreter reads at start-up, none of this client's secrets.

    Each fork takes its own client's whole environment; the preloader's own is what every fork's
    /proc/PID/environ (and a core dump) shows, and it outlives this editor: no API keys or tokens in it.
    """
    return {key: value for key, value in environ.items()
            if key in _PRELOADER_KEEPS or key.startswith(("PYTHON", "LC_", "XDG_"))}


_PRELOADER_KEEPS = frozenset(("PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "VIRTUAL_ENV", IDLE_ENV))


def start_preloader(path: Path) -> None:
    """Start a preloader for `path` in a session of its own, not our child (a double fork), and do not wait on it."""
    env = preloader_environment(os.environ)
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
        request = _request(argv)
    except WarmUnavailable as exc:
        print(f"ollie-lsp: no warm start: {exc}", file=sys.stderr)
        return None
    sock = _connect(path)
    if sock is None:
        start_preloader(path)
        return None
    with sock:
        try:
            pid, pidfd = check_peer(sock)
            try:
                if _cmdline(pid) != [sys.executable, "-m", "ollie_lsp.preloader", str(path)]:
                    raise WarmUnavailable(f"the peer (pid {pid}) is not the preloader for {path.name}")
            finally:
                os.close(pidfd)  # closed after the cmdline is read: the pid is still that process's
        except WarmUnavailable as exc:
            print(f"ollie-lsp: no warm start: {exc}", file=sys.stderr)
            return None
        try:
            socket.send_fds(sock, [request[:65536]], list(STDIO))
            if len(request) > 65536:
                sock.sendall(request[65536:])
        except OSError as exc:  # the preloader closed (it was ending): nothing forked, serve cold
            print(f"ollie-lsp: no warm start: {exc}", file=sys.stderr)
            return None
        return _follow(sock)


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return [os.fsdecode(arg) for arg in cmdline.read().split(b"\0")[:-1]]
    except OSError:
        return []


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


def env_seconds(name: str, default: float, *, low: float, high: float = float("inf")) -> float:
    """Seconds from environment variable `name`, kept within [low, high]; `default` when unset or not a number."""
    try:
        return min(high, max(low, float(os.environ.get(name, default))))
    except ValueError:
        return default


def pid_wait_seconds() -> float:
    """How long to wait for the preloader's fork (OLLIE_LSP_WARM_WAIT_S, at most PID_TIMEOUT_S)."""
    return env_seconds(WAIT_ENV, PID_TIMEOUT_S, low=0.1, high=PID_TIMEOUT_S)


def _follow(sock: socket.socket) -> int | None:
    """Wait on the forked daemon: forward the editor's signals to it, and exit with its status."""
    sock.settimeout(pid_wait_seconds())
    first = _read_line(sock)
    sock.settimeout(None)
    if first is None or not first.startswith("pid "):
        # "refused ...", or nothing in time: a fork there never serves without our "ok"; serve cold.
        print(f"ollie-lsp: no warm start: {first or 'no answer from the preloader'}", file=sys.stderr)
        return None
    try:
        # A pidfd, opened while the preloader (its parent, which reaps it only after it ends) still holds
        # the pid: signals and the last wait reach this daemon even if the preloader dies and the pid is reused.
        pidfd = os.pidfd_open(int(first.split()[1]))
    except (OSError, ValueError):
        pidfd = -1

    def forward(signum: int, _frame: object) -> None:
        try:
            signal.pidfd_send_signal(pidfd, signum)
        except OSError:  # it has ended (or there is no pidfd): its status comes from the preloader
            pass

    try:
        sock.sendall(b"ok\n")  # the fork may take the client's stdio now
    except OSError:  # the preloader and its fork are gone: nothing serves the client; serve it cold
        return None
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
    if pidfd >= 0:
        while not select.select([pidfd], [], [])[0]:
            pass
    return 1
