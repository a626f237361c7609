"""The per-spawn supervisor: runs one tool process and, when it ends, kills everything it left behind.

Stdlib only: loaded by path (siblings.py) in the fork server's or the launcher's
`-I -S` interpreter. The supervisor is a child subreaper, so every orphan of the
step (a double fork, a `setsid` daemon) is reparented to it; it gets SIGTERM when
its own parent dies (PDEATHSIG) or is told to stop. It forks the tool process
(which leads its own session and process group: the pid the daemon kills on a
timeout), waits for it, then SIGKILLs and reaps every remaining descendant and
every member of the step's cgroup, and only then reports the exit status: "the
step is done" means all its processes are dead. The supervisor stays outside the
tool's process group, so a group kill never stops the sweep; the sweep never
forks, so the process limit cannot either (a spare supervisor sits in its step's
cgroup, with one slot added for itself).

The rest of the house: a step's own PID namespace and its init (stepinit.py),
spare supervisors made ahead of time, with the tool process forked while idle
(spare.py), and the limits the tool process sets before exec (limits.py).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, NoReturn, Protocol

if TYPE_CHECKING or __package__:  # a type checker reads the package import
    from ollie.sandbox import cgroup, fdio, stepinit
else:  # loaded by path (siblings.py)
    cgroup, fdio, stepinit = map(sys.modules["_ollie_siblings"].load, ("cgroup", "fdio", "stepinit"))

PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNAL = signal.SIGTERM

# Set by the SIGTERM handler; the tool's pid once forked (the handler kills its group).
_stopping = False
_tool = 0

# The tool process's pre-exec work: (request, stdio fds, error pipe, cgroup or None); never returns.
ToolChild = Callable[[dict, Sequence[int], int, "cgroup.Cgroup | None"], NoReturn]


class Ahead(Protocol):
    """A step's tool process forked before its request came (spare.Prepared)."""

    pid: int
    err_r: int
    status_r: int

    def told(self) -> None:
        """Say the daemon has the step's pid."""

    def discard(self) -> None:
        """Kill and reap it: its step will not run."""


def on_stop(signum: int, frame: object) -> None:
    """Parent died or we were told to stop: kill the tool; the wait then returns and the sweep runs.

    No exception is raised here, so no state of the wait loop can be lost to it.
    """
    global _stopping
    _stopping = True
    if _tool:
        stepinit.kill_tool(_tool)


def _children() -> set[int]:
    """Our direct children (orphans reparented to us included)."""
    me = os.getpid()
    with suppress(FileNotFoundError):  # a kernel without CONFIG_PROC_CHILDREN: scan every process's parent
        with open(f"/proc/{me}/task/{me}/children", encoding="ascii") as children:
            return {int(pid) for pid in children.read().split()}
    return {int(e.name) for e in os.scandir("/proc") if e.name.isdigit() and fdio.parent_pid(int(e.name)) == me}


def sweep(group: cgroup.Cgroup | None) -> None:
    """SIGKILL and reap every remaining descendant and cgroup member; return once none is left.

    Killing a process reparents its children to us (the subreaper) before we
    can reap it, so "no child left" means "no descendant left"; the loop also
    catches what a racing forker started between two rounds.
    """
    delay = 0.0002
    me = os.getpid()  # a spare supervisor is a member of its own cgroup
    while True:
        reaped, left = stepinit.reap_all()
        if not left:
            # No child, so no descendant. Members of the cgroup that are not descendants could
            # only have been moved in from outside the sandbox: not looked for (~0.1 ms a step).
            return
        # The cgroup lists the whole tree at once; the children catch what is outside it.
        members = group.procs() - {me} if group is not None else set()
        for pid in _children() | members:
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if not reaped:
            time.sleep(delay)
            delay = min(delay * 2, 0.02)


def _send(conn: socket.socket, message: dict) -> bool:
    try:
        conn.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        return False  # the daemon gave up on this spawn
    return True


def arm(parent: int) -> None:
    """Become a subreaper that hears of its parent's death; stop at once if it is already gone."""
    signal.signal(STOP_SIGNAL, on_stop)
    stepinit.prctl(PR_SET_CHILD_SUBREAPER, 1)
    stepinit.prctl(stepinit.PR_SET_PDEATHSIG, STOP_SIGNAL)
    if os.getppid() != parent:
        on_stop(STOP_SIGNAL, None)  # it died before PDEATHSIG was armed


def wants_pid_namespace(request: dict) -> bool:
    """Whether the step's ruleset asks for its own PID namespace."""
    return bool((request.get("ruleset") or {}).get("pid_namespace"))


def process_limit(request: dict) -> int:
    """The step's cgroup process limit: its processes, plus one for its init when it gets a PID namespace."""
    limit = int((request.get("limits") or {}).get("processes") or 0)
    return limit + 1 if limit > 0 and wants_pid_namespace(request) else limit


def spare_limits(request: dict) -> tuple[int, int]:
    """A spare's cgroup limits for `request`: (pids.max, plus one for the spare itself, a member too; memory)."""
    limit = process_limit(request)
    return limit + 1 if limit > 0 else 0, memory_limit(request)


def memory_limit(request: dict) -> int:
    """The step's memory limit in bytes (0: none)."""
    return int((request.get("limits") or {}).get("memory") or 0)


def _exec_report(err_r: int, conn: socket.socket, pid: int) -> bytes:
    """What the tool process reported on `err_r` before exec (b"": EOF, it exec'd or its init spawned the tool).

    A daemon that gave up on the spawn before it knew the pid half-closes `conn` (nothing else comes on it
    after the request): the tool process is killed then, so that a report that never comes (a process that
    never gets to exec) cannot leave it running unseen.
    """
    poller = select.poll()
    poller.register(err_r, select.POLLIN)
    poller.register(conn, select.POLLRDHUP)  # not the request's bytes: a spare's tool process reads them
    report = bytearray()
    while True:
        for fd, _ in poller.poll():
            if fd != err_r:
                poller.unregister(conn)
                stepinit.kill_tool(pid)
                continue
            chunk = os.read(err_r, 1 << 16)
            if not chunk:
                os.close(err_r)
                return bytes(report)
            report += chunk


def _fork_tool(request: dict, stdio: Sequence[int], child: ToolChild,
               group: cgroup.Cgroup | None) -> tuple[int, int, int]:
    """Fork the tool process (PID 1 of a new PID namespace when the step asks for one); (pid, err_r, status_r)."""
    err_r, err_w = os.pipe()
    # Unshared right before the fork: the namespace is for this child (we are single-threaded, fork nothing else).
    status_r = -1
    if wants_pid_namespace(request) and stepinit.new_pid_namespace():
        status_r, stepinit.status_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(err_r)
        if status_r >= 0:
            os.close(status_r)
        child(request, stdio, err_w, group)
    os.close(err_w)
    if status_r >= 0:
        os.close(stepinit.status_fd)
    return pid, err_r, status_r


def supervise(request: dict, conn: socket.socket, stdio: Sequence[int], child: ToolChild, parent: int,
              group: cgroup.Cgroup | None = None, prepared: Ahead | None = None) -> int:
    """Run `request` as one step (its replies go to `conn`) and sweep after it; the supervisor's exit code.

    `parent` is the pid whose death must end the step (the fork server, or the
    daemon for the launcher); `child` does the tool's pre-exec work and execs.
    `group`: a spare's cgroup that this process already belongs to (see `spare.run_spare`);
    `prepared`: its tool process, forked ahead as PID 1 of the step's PID namespace, which took the step from
    the daemon itself (`request` is then empty: that process reads it).
    """
    global _tool
    if group is None:
        arm(parent)
        limit, memory = process_limit(request), memory_limit(request)
        group = cgroup.Cgroup.create(str(os.getpid()), limit, memory) if limit > 0 or memory > 0 else None
    if prepared is not None:
        pid, err_r, status_r = prepared.pid, prepared.err_r, prepared.status_r
    else:
        pid, err_r, status_r = _fork_tool(request, stdio, child, group)
    _tool = pid
    if _stopping:  # told to stop before the handler knew the pid
        stepinit.kill_tool(pid)
    for fd in stdio:
        os.close(fd)  # the step's pipes must close once its processes are gone
    failure = _exec_report(err_r, conn, pid)
    if failure:
        stepinit.wait_for(pid)
        if status_r >= 0:
            os.close(status_r)
        sweep(group)
        _send(conn, {"error": json.loads(failure)})
        _finish(group)
        return 0
    if not _send(conn, {"pid": pid}):
        stepinit.kill_tool(pid)  # nobody could ever stop it otherwise
    elif prepared is not None:
        prepared.told()  # its init may tell the daemon the status now (after the pid)
    mounts = _hold_mounts(pid) if status_r < 0 or prepared is not None or request.get("python") else -1
    status, clean, told = stepinit.init_report(status_r) if status_r >= 0 else (None, False, False)
    if not clean:
        own = stepinit.wait_for(pid)  # the init's own status: SIGKILLed before it could report (a group kill)
        sweep(group)
        status = own if status is None else status
    if not told:
        # Whether the step's memory limit ended it: the daemon says so instead of a bare "killed by signal 9".
        oom = group is not None and group.oom_killed()
        # Killed by us because our parent (the fork server) died: the daemon says so instead of blaming the tool.
        orphaned = _stopping and status == -signal.SIGKILL and os.getppid() != parent
        # Every process of the step is dead. When its init said no other was left, only the init itself (ollie's,
        # confined, past its last act) may still be exiting: its teardown (~1 ms) is swept after the status is out.
        _send(conn, {"status": status, **({"oom": True} if oom else {}),
                     **({"orphaned": True} if orphaned else {})})
    if mounts >= 0:
        os.close(mounts)  # the step's mount namespace is torn down now, after its status
    if clean:
        stepinit.wait_for(pid)  # the init's exit is all that is left: blocked on it, not polling beside the daemon
        sweep(group)
    _finish(group)
    return 0


def _hold_mounts(pid: int) -> int:
    """An fd on the step's mount namespace (-1 when there is none to hold), so that it outlives the step's
    process: a process whose exit is the step's end (no init reports it earlier) would otherwise tear it down
    in that exit, waiting for an RCU grace period (~1-2 ms) before the status can go."""
    try:
        return os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return -1  # it has exited already (or may not be looked at): nothing to win


def _finish(group: cgroup.Cgroup | None) -> None:
    if group is not None and not group.joined:  # a spare is in its own: the fork server removes it once it exits
        group.remove()


def request_or_exit(conn: socket.socket, max_request: int) -> dict:
    """The spawn's request; a bad one is refused, and both it and a daemon that closed first end this process."""
    try:
        request = fdio.read_request(conn, max_request)
    except ValueError as exc:
        _send(conn, {"error": {"stage": "request", "errno": 0, "message": f"bad request: {exc}"}})
        request = None
    if request is None:
        os._exit(0)
    return request


def report_crash(exc: BaseException) -> None:
    """Say why the supervisor failed, and leave nothing of its step running."""
    with suppress(Exception):
        sys.stderr.write(f"ollie supervisor: {exc!r}\n")
    if _tool:
        stepinit.kill_tool(_tool)
        sweep(None)


def run_unread(conn: socket.socket, stdio: Sequence[int], child: ToolChild, parent: int,
               max_request: int) -> NoReturn:
    """Read the spawn's request from `conn` (the fork server never reads one), then `run` it."""
    try:
        request = request_or_exit(conn, max_request)
    except BaseException:  # noqa: BLE001 - never return into the fork server's loop
        os._exit(1)
    run(request, conn, stdio, child, parent)


def run(request: dict, conn: socket.socket, stdio: Sequence[int], child: ToolChild, parent: int) -> NoReturn:
    """`supervise`, then exit: a supervisor never returns to its caller's code (the fork server's loop)."""
    code = 1
    try:
        code = supervise(request, conn, stdio, child, parent)
    except BaseException as exc:  # noqa: BLE001 - the supervisor must always exit here
        report_crash(exc)
    finally:
        os._exit(code)
