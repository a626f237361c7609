"""A step's own PID namespace and its init, and the process controls every supervisor uses (prctl, kill, wait).

Stdlib only: loaded by path (siblings.py) in the fork server's `-I -S` interpreter. The step's first
process is PID 1 of a new namespace: it mounts a fresh /proc, confines itself, spawns the tool (PID 2)
and stays as its init (`become_init`), because a PID 1 ignores signals it has no handler for and must
reap orphans. When it exits the kernel kills the rest of the namespace.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import socket
import sys
from collections.abc import Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING or __package__:  # a type checker reads the package import
    from ollie.sandbox import confine, fdio
else:  # loaded by path (siblings.py)
    confine, fdio = map(sys.modules["_ollie_siblings"].load, ("confine", "fdio"))
if TYPE_CHECKING:
    from ollie.sandbox.cgroup import Cgroup

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
CLONE_NEWPID = 0x20000000
_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl  # noqa: B018 - looked up once here, in the fork server, rather than in every supervisor

# In a step with its own PID namespace: the write end of the pipe on which its init reports the tool's status.
status_fd = -1
# In a spare's step (spare.py): the daemon's per-spawn socket, the spare's channel (b"+" comes on it once the daemon
# has the step's pid) and the step's cgroup. The init then tells the daemon the status itself when nothing else is
# left, a wake-up of the supervisor less between the step's end and its status. It already reports that status to
# the supervisor, which passes it on as said: holding the daemon's socket trusts it with nothing more.
daemon: tuple[socket.socket, socket.socket, Cgroup] | None = None


# Python ignores these; an exec'd program must get the defaults back (`yes | head`). SIGINT and SIGQUIT too: a daemon
# a shell started with `&` ignores them, and a step is a job of its own (`timeout -s INT`); SIGHUP, which a `nohup`ed
# daemon ignores (every step's programs kept it ignored: `kill -HUP` of one ended nothing).
DEFAULT_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP)
_session = False  # new_session ran in this process


def new_session() -> None:
    """Lead a new session (the group the daemon kills) with DEFAULT_SIGNALS at their defaults; once per process.

    A spare's prepared process does it ahead: setsid makes a scheduler autogroup (tens of µs on a step's path).
    """
    global _session
    if _session:
        return
    os.setsid()
    for sig in DEFAULT_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    _session = True


def prctl(option: int, value: int) -> None:
    """prctl(2) with one argument; raises OSError."""
    if _libc.prctl(ctypes.c_int(option), ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
                   ctypes.c_ulong(0)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def kill_tool(pid: int) -> None:
    """SIGKILL the tool process's group, and the pid itself in case it has not led one yet."""
    for kill in (os.killpg, os.kill):
        with suppress(OSError):
            kill(pid, signal.SIGKILL)


def wait_for(pid: int) -> int:
    """Reap children until `pid` itself exits (orphans that die meanwhile must not pile up as zombies)."""
    while True:
        try:
            reaped, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return -signal.SIGKILL  # cannot happen: the tool is our child
        if reaped == pid:
            return os.waitstatus_to_exitcode(status)


def new_pid_namespace() -> bool:
    """Make our next child PID 1 of a new PID namespace; False when we may not (confine.py then falls back)."""
    try:
        confine.unshare(CLONE_NEWPID, "CLONE_NEWPID")
    except OSError:
        return False
    return True


def _spawn(argv: Sequence[str], env: dict[str, str]) -> int:
    """posix_spawn `argv` found on `env`'s PATH, as execvpe would find it; its pid. Raises the last OSError."""
    if "/" in argv[0]:
        return os.posix_spawn(argv[0], list(argv), env)
    error: OSError = FileNotFoundError(2, os.strerror(2))
    for directory in os.get_exec_path(env):
        path = os.path.join(directory, argv[0])
        try:
            if not os.path.lexists(path):
                continue  # a failed posix_spawn costs a whole process (vfork, exec, exit): stat first
            return os.posix_spawn(path, list(argv), env)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except PermissionError as exc:
            error = exc  # execvpe reports EACCES over a later ENOENT; an unreadable dir is skipped as it does
    raise error


def die_with_supervisor() -> None:
    """In the step's PID 1: SIGKILL when the supervisor is gone (even SIGKILLed), so the namespace goes too."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _reader_gone(fd: int) -> bool:
    """Whether nobody holds the read end of pipe `fd` any more (poll reports POLLERR on its write end)."""
    poller = select.poll()
    poller.register(fd, 0)  # POLLERR and POLLHUP are reported whatever is asked
    return any(events & select.POLLERR for _, events in poller.poll(0))


def become_init(argv: Sequence[str], env: dict[str, str]) -> NoReturn:
    """In the step's PID 1, confined already: spawn the tool process (PID 2), then stay as the namespace's init.

    posix_spawn (vfork) keeps a second fork's cost off the spawn. The init reaps orphans, reports the tool's
    status on the supervisor's pipe and exits, which kills the rest of the namespace; it is confined like the
    tool and not dumpable, so the tool can neither ptrace nor signal it. OSError when the program cannot run.
    """
    # Armed before the tool exists: a supervisor SIGKILLed right after the spawn left an init with no death signal,
    # and its step ran to its end while the turn waited for it (seen once in ~35 chaos runs).
    die_with_supervisor()
    # Before the tool exists: a tool acting at once took the daemon's socket from a still dumpable init
    # (pidfd_getfd) and sent its own pid and status lines (red team round 11).
    prctl(PR_SET_DUMPABLE, 0)
    tool = _spawn(argv, env)
    code = 0
    try:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)  # from outside the namespace: die; from inside: ignored (init)
        # The step's pipes, the error pipe (the supervisor waits for its EOF) go.
        kept = [] if daemon is None else [daemon[0].fileno(), daemon[1].fileno(), daemon[2].oom_events]
        fdio.close_fds_except([status_fd, *kept], low=0)
        if _reader_gone(status_fd):  # the supervisor died before the signal was armed: nobody would end this step
            raise ChildProcessError("the supervisor is gone")
        status = wait_for(tool)
        # Every process of the namespace descends from the init: no child left means none left.
        clean = not reap_all()[1]
        told = clean and _tell_daemon(status)
        os.write(status_fd, f"{status}{' clean' if clean else ''}{' told' if told else ''}".encode())
    except BaseException:  # noqa: BLE001 - init must always exit here
        code = 1
    finally:
        os._exit(code)


def _tell_daemon(status: int) -> bool:
    """Send the step's status line to the daemon (see `daemon`) once its supervisor says the pid went before it;
    whether it went (if not, the supervisor sends it)."""
    if daemon is None:
        return False
    conn, channel, group = daemon
    try:
        if channel.recv(1) != b"+":
            return False  # the supervisor is gone, or the daemon has no pid (gave up on the step)
        line = json.dumps({"status": status, **({"oom": True} if group.oom_killed() else {})}).encode() + b"\n"
        return conn.send(line, socket.MSG_NOSIGNAL) == len(line)
    except OSError:
        return False


def reap_all() -> tuple[int, bool]:
    """Reap every dead child without blocking: (how many, whether any child is left)."""
    reaped = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped, False
        if pid == 0:
            return reaped, True
        reaped += 1


def init_report(status_r: int) -> tuple[int | None, bool, bool]:
    """The tool's exit status as its init reported it (None if the init died first), whether the init said
    nothing else is left in the namespace, and whether it told the daemon that status itself."""
    try:
        words = os.read(status_r, 32).split()
    finally:
        os.close(status_r)
    if not words or not words[0].lstrip(b"-").isdigit():
        return None, False, False
    return int(words[0]), b"clean" in words[1:], b"told" in words[1:]
