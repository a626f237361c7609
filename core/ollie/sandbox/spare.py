"""Spare supervisors, made ahead of time: each waits in a cgroup of its own, with its step's tool process forked.

Stdlib only: loaded by path (siblings.py) in the fork server's `-I -S` interpreter.
Moving a task into a cgroup waits for an RCU grace period when none happened
lately (~15 ms here), so spares pay that while idle: the tool they fork is born
in the cgroup, with nothing to move. Where it can make a PID namespace a spare
forks the tool process ahead too (`Prepared`), which takes the step itself, and
takes steps that ask for one only; made for steps with the egress proxy, that process makes the step's network
namespace ahead as well, and takes such steps only. Once handed a spawn, a spare is
a supervisor like any other (supervise.py).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from collections.abc import Iterable
from contextlib import suppress
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING or __package__:  # a type checker reads the package import
    from ollie.sandbox import cgroup, fdio, netns, prefault, stepinit, supervise
else:  # loaded by path (siblings.py)
    cgroup, fdio, netns, prefault, stepinit, supervise = map(
        sys.modules["_ollie_siblings"].load, ("cgroup", "fdio", "netns", "prefault", "stepinit", "supervise"))

# A spare copies its pages ahead (prefault.py: ~8 MB in each of its two processes, charged to its cgroup) only
# when made for steps allowed this much memory or more (or no limit), and takes only such steps then: one
# allowed less keeps that memory for itself.
COPY_MIN_MEMORY = 256 << 20

_spare_group: cgroup.Cgroup | None = None
_idle: Prepared | None = None  # an idle spare's prepared tool process


class Prepared:
    """A spare's tool process, forked ahead as PID 1 of the step's new PID namespace, waiting for its step.

    Forked while the spare is idle, it takes the namespace's unshare and the fork
    off the step's path; it leads its session, makes the step's IPC namespace, locks its
    capabilities (confine.lock_capabilities) and, with `net`, makes the step's network
    namespace (netns.prepare). The spare has
    read nothing yet, so its memory holds nothing of any step. It takes the step from
    the daemon itself, on the spare's job socket (the spare's wake-up is off the step's
    path): it hands the spare the daemon's socket (`started`), reads the request, sets
    the step's limits on the cgroup and does what a tool process forked after the
    request does (`child`: new session, stdio, cwd, confinement, the tool).
    """

    def __init__(self, pid: int, channel: socket.socket, err_r: int, status_r: int) -> None:
        self.pid, self.err_r, self.status_r = pid, err_r, status_r
        self._channel: socket.socket | None = channel

    @classmethod
    def fork(cls, child: supervise.ToolChild, group: cgroup.Cgroup, net: bool, copy: bool, jobs: socket.socket,
             max_request: int) -> Prepared | None:
        """Fork it, in the spare (a member of `group` already), as the spare's `_idle` one; None where no PID
        namespace can be made. `copy`: it copies its pages ahead (see `copies`); `jobs`: where its step comes."""
        global _idle
        if not stepinit.new_pid_namespace():
            return None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        err_r, err_w = os.pipe()
        status_r, status_w = os.pipe()
        stop = supervise.STOP_SIGNAL
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {stop})  # the spare's handler must not run there
        pid = os.fork()
        if pid == 0:
            _await_step(theirs, jobs, max_request, err_w, status_w, blocked, child, group, net, copy)
        theirs.close()
        os.close(err_w)
        os.close(status_w)
        _idle = cls(pid, ours, err_r, status_r)  # before the spare's handler may run: it kills this one
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        return _idle

    def started(self) -> socket.socket | None:
        """Wait until it has a step: the daemon's socket it hands over, on which this spare answers for the step;
        None when it exited instead (the daemon let the spare go, or stopped)."""
        assert self._channel is not None
        try:
            _, fds = fdio.recv_fds(self._channel, 1)
        except OSError:
            fds = []
        if len(fds) != 1:
            for fd in fds:
                os.close(fd)
            return None
        return socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0, fds[0])  # named: no syscall asked

    def told(self) -> None:
        """Say the daemon has the step's pid: the status may follow it there, from the step's init."""
        assert self._channel is not None  # told once
        with suppress(OSError):  # it is gone: its exit status (killed) becomes the step's
            self._channel.sendall(b"+")
        self._channel.close()

    def discard(self) -> None:
        """Kill and reap it when the step it was made for will not run (the spare is stopping, the request is bad)."""
        if self._channel is None:
            return
        stepinit.kill_tool(self.pid)  # first: it must not take the channel's EOF for anything
        self._channel.close()
        self._channel = None
        with suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def _await_step(channel: socket.socket, jobs: socket.socket, max_request: int, err_w: int, status_w: int,
                blocked: Iterable[int], child: supervise.ToolChild, group: cgroup.Cgroup, net: bool,
                copy: bool) -> NoReturn:
    """In the prepared process: wait for the daemon's b"go" with the step's socket and stdio on `jobs`, hand the
    socket to the spare on `channel`, then run `child` on the step's request."""
    global _spare_group, _idle
    try:
        signal.signal(supervise.STOP_SIGNAL, supervise.on_stop)  # what a tool process forked by a supervisor has
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        stepinit.status_fd, _spare_group, _idle = status_w, None, None
        # A spare that dies before this (getppid() says 0 here, PID 1 of its namespace) closes the channel: EOF.
        stepinit.die_with_supervisor()
        fdio.close_fds_except([channel.fileno(), jobs.fileno(), err_w, status_w, group.oom_events])
        # Done for the step (its `child`, confine.apply), which fails with the reason if it fails again
        with suppress(OSError):
            # What needs nothing of the step: its session (setsid makes a scheduler autogroup) and IPC namespace.
            stepinit.new_session()
            stepinit.confine.new_ipc_namespace()  # first: where it needs a user namespace, the lock is done in that
        # Tried again for the step (confine.apply), which fails with the reason if it fails again
        with suppress(OSError):
            stepinit.confine.lock_capabilities()
            if net:
                netns.prepare(stepinit.confine.unshare)
        if copy:
            prefault.prefault()  # the step's copy-on-write faults, taken while idle
        conn, stdio = _go(jobs)  # EOF: the daemon let the spare go, or stopped
        jobs.close()
        socket.send_fds(channel, [b"step"], [conn.fileno()])  # the spare answers the daemon: pid, error, the sweep
    except BaseException:  # noqa: BLE001 - never return into the spare's code
        os._exit(1)
    try:
        request = _take(conn, max_request, net, copy, group)
    except BaseException as exc:  # noqa: BLE001 - the spare reports it, as a tool process's failure before exec
        error = {"stage": "request", "errno": 0, "message": f"bad request: {exc}"}
        os.write(err_w, json.dumps(error).encode())
        os._exit(127)
    if request.get("python"):  # a script is PID 1 itself: no init, and no socket of the daemon's for it
        conn.close()
        channel.close()
    else:
        stepinit.daemon = (conn, channel, group)
    child(request, stdio, err_w, group)


def _take(conn: socket.socket, max_request: int, net: bool, copy: bool, group: cgroup.Cgroup) -> dict:
    """The step's request, read from the daemon's socket, checked to fit this process, its limits set on the
    cgroup (no write when they are those set ahead); ValueError when it does not fit."""
    line = fdio.read_line(conn, max_request)
    if line is None:
        raise ValueError("the daemon closed before its request")
    request = json.loads(line)
    if not supervise.wants_pid_namespace(request):
        raise ValueError("a step without a PID namespace was sent to a spare that made one")
    if net != bool((request.get("ruleset") or {}).get("netns")):
        raise ValueError("a step was sent to a spare whose network namespace does not fit it")
    if 0 < supervise.memory_limit(request) < (COPY_MIN_MEMORY if copy else 0):
        raise ValueError("a step allowed less memory than its spare copied ahead was sent to it")
    _set_limits(group, request)
    return request


def _set_limits(group: cgroup.Cgroup, request: dict) -> None:
    """Set the step's limits on the spare's cgroup (no write when they are those set ahead)."""
    processes, memory = supervise.spare_limits(request)
    group.set_limit(processes)
    with suppress(OSError):  # the kernel refused it (a v1 cgroup already past it): the step runs, its other limits hold
        group.set_memory(memory)


def _exit_now(signum: int, frame: object) -> NoReturn:
    """An idle spare told to stop (or whose fork server died): nothing to sweep; leave no cgroup behind."""
    if _idle is not None:
        _idle.discard()
    if _spare_group is not None:
        _spare_group.leave_and_remove()
    os._exit(0)


def copies(limits: bytes) -> bool:
    """Whether a spare made for steps with `limits` (b"processes memory"; b"": before the first step) copies its
    pages ahead, and so whether a step with them may go to a spare that did."""
    if not limits:
        return True  # the daemon's first step comes: the default policy's limit is half the memory
    try:
        memory = int(limits.split()[1])
    except (IndexError, ValueError):
        return False
    return memory == 0 or memory >= COPY_MIN_MEMORY


def _limits_ahead(limits: bytes) -> tuple[int, int]:
    """The cgroup limits a step with `limits` (b"processes memory") and its own PID namespace will need."""
    try:
        processes, memory = map(int, limits.split())
    except ValueError:
        return 0, 0
    return supervise.spare_limits({"limits": {"processes": processes, "memory": memory},
                                   "ruleset": {"pid_namespace": True}})


def _step(jobs: socket.socket, prepared: Prepared | None) -> tuple[socket.socket, list[int]]:
    """Wait for a step: the daemon's socket for it, and its stdio (none when `prepared` took it); exits on EOF."""
    if prepared is not None:
        conn = prepared.started()
        if conn is None:
            _exit_now(0, None)
        return conn, []
    return _go(jobs)  # EOF: the fork server has gone


def _go(jobs: socket.socket) -> tuple[socket.socket, list[int]]:
    """The daemon's b"go" on `jobs`: its socket for the step and the step's stdio; exits (`_exit_now`) on EOF."""
    message, fds = fdio.recv_fds(jobs, 4)
    if message != b"go" or len(fds) != 4:
        _exit_now(0, None)
    # The daemon's socketpair end, named rather than asked of the kernel (two syscalls on the step's path).
    return socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0, fds[0]), fds[1:]


def run_spare(jobs: socket.socket, child: supervise.ToolChild, parent: int, max_request: int,
              net: bool, limits: bytes = b"") -> NoReturn:
    """Move into a fresh cgroup (and fork the tool process ahead where it may), then wait for one spawn.

    `net`: the tool process makes the step's network namespace ahead too, for a step with the egress proxy.
    `limits`: b"processes memory" of the last step: the cgroup has them ahead, set again only if the step's differ.
    Sends b"ready ns" or b"ready ns net" (b"ready" without a prepared process), then receives the
    per-spawn socket and the stdio fds on `jobs` (EOF: the fork server is gone), or its prepared process does.
    """
    global _spare_group, _idle
    signal.signal(supervise.STOP_SIGNAL, _exit_now)  # idle: nothing to sweep yet
    code = 1
    try:
        stepinit.prctl(supervise.PR_SET_CHILD_SUBREAPER, 1)
        stepinit.prctl(stepinit.PR_SET_PDEATHSIG, supervise.STOP_SIGNAL)
        if os.getppid() != parent:
            os._exit(0)
        name = str(os.getpid())
        group = cgroup.Cgroup.create(name, *_limits_ahead(limits)) or cgroup.Cgroup.create(name, 0)
        if group is None:
            jobs.sendall(b"no cgroup")  # the fork server stops making spares
            os._exit(0)
        group.join()
        _spare_group = group
        copy = copies(limits)
        prepared = Prepared.fork(child, group, net, copy, jobs, max_request)
        jobs.sendall(b"ready" if prepared is None else b"ready ns net" if net else b"ready ns")
        if prepared is not None:
            jobs.close()  # its prepared process takes the step on it
        if copy:
            # After that fork (what this process shares with the prepared one is copied there) and once ready:
            # a step that comes meanwhile waits for the rest of it (a few ms), not for a supervisor of its own.
            prefault.prefault()
        conn, stdio = _step(jobs, prepared)
        signal.signal(supervise.STOP_SIGNAL, supervise.on_stop)
        _spare_group = _idle = None
        if os.getppid() != parent:
            supervise.on_stop(supervise.STOP_SIGNAL, None)
        request: dict = {}  # a prepared process reads it, and sets its limits
        if prepared is None:
            request = supervise.request_or_exit(conn, max_request)
            _set_limits(group, request)
        code = supervise.supervise(request, conn, stdio, child, parent, group, prepared)
        if os.getppid() != parent:
            group.leave_and_remove()  # the fork server, which would remove it, is gone
    except BaseException as exc:  # noqa: BLE001 - the supervisor must always exit here
        supervise.report_crash(exc)
    finally:
        os._exit(code)
