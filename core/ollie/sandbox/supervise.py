"""The per-spawn supervisor: runs one tool process and, when it ends, kills everything it left behind.

Stdlib only: the fork server and the launcher load this file by path in an
interpreter started with `-I -S`. The supervisor is a child subreaper, so every
orphan of the step (a double fork, a `setsid` daemon) is reparented to it; it
gets SIGTERM when its own parent dies (PDEATHSIG) or is told to stop. It forks
the tool process (which leads its own session and process group: the pid the
daemon kills on a timeout), waits for it, then SIGKILLs and reaps every
remaining descendant and every member of the step's pids cgroup, and only then
reports the exit status: "the step is done" means all its processes are dead.
The supervisor stays outside the tool's process group, so a group kill never
stops the sweep; the sweep never forks, so the process limit cannot either (a
spare supervisor sits in its step's cgroup, with one slot added for itself).
A spare that can make a PID namespace forks its step's tool process while idle
(`Prepared`), before it reads any request, and hands it the step when one comes.

A step whose ruleset asks for `pid_namespace` gets its own PID namespace: the
supervisor unshares CLONE_NEWPID (in a new user namespace too when it lacks
CAP_SYS_ADMIN, so that namespace can own the PID one) just before it forks, so
the forked process is PID 1 there. That process mounts a fresh /proc and confines
itself (confine.py), spawns the real tool process (PID 2), then stays as a tiny init (`become_init`):
it reaps orphans, passes the tool's exit status up a pipe and exits with it; the
kernel then SIGKILLs whatever is left in the namespace (a second guarantee next
to the sweep and the cgroup). Why not the tool itself as PID 1: init gets no
default signal actions from inside its namespace (`kill $$` would do nothing) and
must reap orphans. The init leads the step's session and process group, so the
pid reported to the daemon is still what a group kill must hit: SIGKILLing the
init ends the namespace. When the namespace cannot be made, the step runs as
before and confine.py falls back (best_effort) to granting /proc/self only.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING or __package__:  # a type checker reads the package import
    from ollie.sandbox import cgroup, confine, fdio
else:  # loaded by path from the fork server or the launcher
    def _sibling(name: str):
        spec = importlib.util.spec_from_file_location(
            f"_ollie_{name}", os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    cgroup = _sibling("cgroup")
    confine = _sibling("confine")
    fdio = _sibling("fdio")

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4
CLONE_NEWPID = 0x20000000
GO = b"!"  # a prepared tool process's signal to go on with its step (see `Prepared`)
STOP_SIGNAL = signal.SIGTERM
_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl  # noqa: B018 - looked up once here, in the fork server, rather than in every supervisor

# Set by the SIGTERM handler; the tool's pid once forked (the handler kills its group).
_stopping = False
_tool = 0
# In a step with its own PID namespace: the write end of the pipe on which its init reports the tool's status.
_init_status = -1

# The tool process's pre-exec work: (request, stdio fds, error pipe, cgroup or None); never returns.
ToolChild = Callable[[dict, Sequence[int], int, "cgroup.Cgroup | None"], NoReturn]


def _prctl(option: int, value: int) -> None:
    if _libc.prctl(ctypes.c_int(option), ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
                   ctypes.c_ulong(0)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _kill_tool(pid: int) -> None:
    for kill in (os.killpg, os.kill):  # the group, and the pid itself in case it has not led one yet
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _on_stop(signum: int, frame: object) -> None:
    """Parent died or we were told to stop: kill the tool; the wait then returns and the sweep runs.

    No exception is raised here, so no state of the wait loop can be lost to it.
    """
    global _stopping
    _stopping = True
    if _tool:
        _kill_tool(_tool)


def _children() -> set[int]:
    """Our direct children (orphans reparented to us included)."""
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children", encoding="ascii") as children:
            return {int(pid) for pid in children.read().split()}
    except FileNotFoundError:
        pass  # a kernel without CONFIG_PROC_CHILDREN: scan every process's parent
    found = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == me:
                        found.add(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return found


def _reap_all() -> tuple[int, bool]:
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


def sweep(group: cgroup.Cgroup | None) -> None:
    """SIGKILL and reap every remaining descendant and cgroup member; return once none is left.

    Killing a process reparents its children to us (the subreaper) before we
    can reap it, so "no child left" means "no descendant left"; the loop also
    catches what a racing forker started between two rounds.
    """
    delay = 0.0002
    me = os.getpid()  # a spare supervisor is a member of its own cgroup
    while True:
        reaped, left = _reap_all()
        if not left:
            # No child, so no descendant. Members of the cgroup that are not descendants could
            # only have been moved in from outside the sandbox: not looked for (~0.1 ms a step).
            return
        # The cgroup lists the whole tree at once; the children catch what is outside it.
        members = group.procs() - {me} if group is not None else set()
        for pid in _children() | members:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if not reaped:
            time.sleep(delay)
            delay = min(delay * 2, 0.02)


def _send(conn: socket.socket, message: dict) -> bool:
    try:
        conn.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        return False  # the daemon gave up on this spawn
    return True


def _wait_tool(pid: int) -> int:
    """Reap children until the tool itself exits (orphans that die meanwhile must not pile up as zombies)."""
    while True:
        try:
            reaped, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return -signal.SIGKILL  # cannot happen: the tool is our child
        if reaped == pid:
            return os.waitstatus_to_exitcode(status)


def _arm(parent: int) -> None:
    """Become a subreaper that hears of its parent's death; stop at once if it is already gone."""
    signal.signal(STOP_SIGNAL, _on_stop)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, STOP_SIGNAL)
    if os.getppid() != parent:
        _on_stop(STOP_SIGNAL, None)  # it died before PDEATHSIG was armed


def _wants_pid_namespace(request: dict) -> bool:
    return bool((request.get("ruleset") or {}).get("pid_namespace"))


def _limit_of(request: dict) -> int:
    """The step's cgroup limit: its processes, plus one for its init when it gets a PID namespace."""
    limit = int((request.get("limits") or {}).get("processes") or 0)
    return limit + 1 if limit > 0 and _wants_pid_namespace(request) else limit


def _new_pid_namespace() -> bool:
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
        if not os.path.lexists(path):
            continue  # a failed posix_spawn costs a whole process (vfork, exec, exit): stat first
        try:
            return os.posix_spawn(path, list(argv), env)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except PermissionError as exc:
            error = exc  # execvpe reports EACCES over a later ENOENT
    raise error


def die_with_supervisor() -> None:
    """In the step's PID 1: SIGKILL when the supervisor is gone (even SIGKILLed), so the namespace goes too."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def become_init(argv: Sequence[str], env: dict[str, str]) -> NoReturn:
    """In the step's PID 1, confined already: spawn the tool process (PID 2), then stay as the namespace's init.

    posix_spawn (vfork, no page tables copied) rather than a second Python fork: that
    keeps the namespace's cost off most of the spawn. The init reaps every orphan, writes
    the tool's exit status to the supervisor's pipe and exits, which kills whatever is
    left in the namespace. It has the tool's Landlock domain, seccomp filter and no
    capabilities, and is not dumpable, so the tool can neither ptrace it nor read its
    /proc/1/environ or memory; signals from inside its namespace never reach it (init).
    Raises OSError when the program cannot be run (the caller reports it as the exec's).
    """
    tool = _spawn(argv, env)
    code = 0
    try:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)  # from outside the namespace: die; from inside: ignored (init)
        _prctl(PR_SET_DUMPABLE, 0)
        die_with_supervisor()
        os.closerange(0, _init_status)  # the step's pipes, the error pipe (the supervisor waits for its EOF)
        os.closerange(_init_status + 1, 1 << 20)
        os.write(_init_status, str(_wait_tool(tool)).encode())
    except BaseException:  # noqa: BLE001 - init must always exit here
        code = 1
    finally:
        os._exit(code)


def _exec_report(err_r: int, conn: socket.socket, pid: int) -> bytes:
    """What the tool process reported on `err_r` before exec (b"": EOF, it exec'd or its init spawned the tool).

    A daemon that gave up on the spawn before it knew the pid half-closes `conn` (nothing else comes on it
    after the request): the tool process is killed then, so that a report that never comes (a process that
    never gets to exec) cannot leave it running unseen.
    """
    poller = select.poll()
    poller.register(err_r, select.POLLIN)
    poller.register(conn, select.POLLIN)
    report = bytearray()
    while True:
        for fd, _ in poller.poll():
            if fd != err_r:
                poller.unregister(conn)
                _kill_tool(pid)
                continue
            chunk = os.read(err_r, 1 << 16)
            if not chunk:
                os.close(err_r)
                return bytes(report)
            report += chunk


def _init_report(status_r: int, status: int) -> int:
    """The tool's exit status as its init reported it; the init's own (SIGKILLed by a group kill) if none."""
    try:
        text = os.read(status_r, 32)
    finally:
        os.close(status_r)
    return int(text) if text.strip().lstrip(b"-").isdigit() else status


def supervise(request: dict, conn: socket.socket, stdio: Sequence[int], child: ToolChild, parent: int,
              group: cgroup.Cgroup | None = None, prepared: Prepared | None = None) -> int:
    """Run `request` as one step (its replies go to `conn`) and sweep after it; the supervisor's exit code.

    `parent` is the pid whose death must end the step (the fork server, or the
    daemon for the launcher); `child` does the tool's pre-exec work and execs.
    `group`: a spare's cgroup that this process already belongs to (see `run_spare`);
    `prepared`: its tool process, forked ahead as PID 1 of the step's PID namespace, to hand the step to.
    """
    global _tool, _init_status
    if group is None:
        _arm(parent)
        limit = _limit_of(request)
        group = cgroup.Cgroup.create(str(os.getpid()), limit) if limit > 0 else None
    if prepared is not None:
        pid, err_r, status_r = prepared.pid, prepared.err_r, prepared.status_r
        _tool = pid
        if _stopping:
            _kill_tool(pid)
        prepared.release()
    else:
        err_r, err_w = os.pipe()
        # Unshared right before the fork: the namespace is for this child (we are single-threaded, fork nothing else).
        status_r = -1
        if _wants_pid_namespace(request) and _new_pid_namespace():
            status_r, _init_status = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(err_r)
            if status_r >= 0:
                os.close(status_r)
            child(request, stdio, err_w, group)
        _tool = pid
        if _stopping:
            _kill_tool(pid)
        os.close(err_w)
        if status_r >= 0:
            os.close(_init_status)
    for fd in stdio:
        os.close(fd)  # the step's pipes must close once its processes are gone
    failure = _exec_report(err_r, conn, pid)
    if failure:
        _wait_tool(pid)
        if status_r >= 0:
            os.close(status_r)
        sweep(group)
        _finish(group)
        _send(conn, {"error": json.loads(failure)})
        return 0
    if not _send(conn, {"pid": pid}):
        _kill_tool(pid)  # nobody could ever stop it otherwise
    status = _wait_tool(pid)
    if status_r >= 0:
        status = _init_report(status_r, status)
    sweep(group)
    _finish(group)  # a spare cannot remove the cgroup it is in: the fork server does, once it exits
    _send(conn, {"status": status})
    return 0


def _finish(group: cgroup.Cgroup | None) -> None:
    if group is not None:
        group.remove()


def limit_processes(request: dict, group: cgroup.Cgroup | None) -> None:
    """In the tool process before exec: join the step's cgroup, or fall back to RLIMIT_NPROC (not for root)."""
    limit = int((request.get("limits") or {}).get("processes") or 0)
    if group is not None:
        group.join()
    elif limit > 0:
        cgroup.limit_rlimit(limit)


def _request_or_exit(conn: socket.socket, max_request: int, prepared: Prepared | None = None,
                     stdio: Sequence[int] = ()) -> dict:
    """The spawn's request; a bad one is refused, and both it and a daemon that closed first end this process.

    `prepared` (a spare's tool process, for a step with a PID namespace: the request must ask for one)
    gets the request's text and `stdio` first, so that it parses the request while this process does.
    """
    try:
        line = fdio.read_line(conn, max_request)
        if line is not None and prepared is not None:
            prepared.start(line, stdio)
        request = None if line is None else json.loads(line)
        if request is not None and prepared is not None and not _wants_pid_namespace(request):
            raise ValueError("a step without a PID namespace was sent to a spare that made one")
    except ValueError as exc:
        _send(conn, {"error": {"stage": "request", "errno": 0, "message": f"bad request: {exc}"}})
        request = None
    if request is None:
        if prepared is not None:
            prepared.discard()
        os._exit(0)
    return request


class Prepared:
    """A spare's tool process, forked ahead as PID 1 of the step's new PID namespace, waiting for its step.

    Forked while the spare is idle, it takes the namespace's unshare and the fork
    off the step's path. The spare has read nothing yet, so its memory holds
    nothing of any step; once handed the request and the step's stdio (`start`)
    it does what a tool process forked after the request does (`child`:
    new session, stdio, cwd, confinement, the tool) with the same pipes.
    """

    def __init__(self, pid: int, channel: socket.socket, err_r: int, status_r: int) -> None:
        self.pid, self.err_r, self.status_r = pid, err_r, status_r
        self._channel: socket.socket | None = channel

    @classmethod
    def fork(cls, child: ToolChild, group: cgroup.Cgroup) -> Prepared | None:
        """Fork it, in the spare (a member of `group` already), as the spare's `_idle` one; None where no PID
        namespace can be made."""
        global _idle
        if not _new_pid_namespace():
            return None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        err_r, err_w = os.pipe()
        status_r, status_w = os.pipe()
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {STOP_SIGNAL})  # the spare's handler must not run there
        pid = os.fork()
        if pid == 0:
            _await_step(theirs, err_w, status_w, blocked, child, group)
        theirs.close()
        os.close(err_w)
        os.close(status_w)
        _idle = cls(pid, ours, err_r, status_r)  # before the spare's handler may run: it kills this one
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        return _idle

    def start(self, line: bytes, stdio: Sequence[int]) -> None:
        """Hand it the step's request line and stdio: it parses the request meanwhile, then waits for `release`."""
        assert self._channel is not None  # started once, before `release`
        try:
            sent = socket.send_fds(self._channel, [line], list(stdio))
            self._channel.sendall(line[sent:])
        except OSError:
            pass  # it is gone: its exit status (killed) becomes the step's

    def release(self) -> None:
        """Let it go on (the step's process limit is set): it confines itself and starts the tool."""
        channel, self._channel = self._channel, None
        assert channel is not None  # released once
        try:
            channel.sendall(GO)
        except OSError:
            pass
        finally:
            channel.close()

    def discard(self) -> None:
        """Kill and reap it when the step it was made for will not run (the spare is stopping, the request is bad)."""
        if self._channel is None:
            return
        _kill_tool(self.pid)  # first: it must not take the channel's EOF for anything
        self._channel.close()
        self._channel = None
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def _await_step(channel: socket.socket, err_w: int, status_w: int, blocked: Iterable[int], child: ToolChild,
                group: cgroup.Cgroup) -> NoReturn:
    """In the prepared process: wait for the step's request and stdio on `channel`, then run `child` on them."""
    global _init_status, _spare_group, _idle
    try:
        signal.signal(STOP_SIGNAL, _on_stop)  # what a tool process forked by a working supervisor has
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        _init_status, _spare_group, _idle = status_w, None, None
        # A spare that dies before this (getppid() says 0 here, PID 1 of its namespace) closes the channel: EOF.
        die_with_supervisor()
        fdio.close_fds_except([channel.fileno(), err_w, status_w])
        data, stdio = fdio.recv_fds(channel, 3, 1 << 16)
        line = bytearray(data)
        while data and not line.endswith(b"\n"):
            data = channel.recv(1 << 16)
            line += data
        request = json.loads(line) if data and len(stdio) == 3 else None
        # Its pre-exec work starts once the step's process limit is set (measured: doing it meanwhile was slower).
        go = channel.recv(len(GO)) if request is not None else b""
        channel.close()
    except BaseException:  # noqa: BLE001 - never return into the spare's code
        os._exit(1)
    if go != GO or request is None:
        os._exit(0)  # the spare stopped, or the step will not run
    child(request, stdio, err_w, group)


_spare_group: cgroup.Cgroup | None = None
_idle: Prepared | None = None  # an idle spare's prepared tool process


def _exit_now(signum: int, frame: object) -> None:
    """An idle spare told to stop (or whose fork server died): nothing to sweep; leave no cgroup behind."""
    if _idle is not None:
        _idle.discard()
    if _spare_group is not None:
        _spare_group.leave_and_remove()
    os._exit(0)


def run_spare(jobs: socket.socket, child: ToolChild, parent: int, max_request: int) -> NoReturn:
    """A supervisor made ahead of time: it moves itself into a fresh cgroup, then waits for one spawn.

    Moving a task into a cgroup waits for an RCU grace period when none happened
    lately (~15 ms here), so spares pay that while idle: the tool they fork is
    born in the cgroup, with nothing to move. Where it can make a PID namespace
    it forks the tool process ahead too (`Prepared`) and takes steps that ask for one
    only. Sends b"ready ns" (or b"ready"), then receives the per-spawn socket and the
    stdio fds on `jobs` (EOF: the fork server is gone).
    """
    global _spare_group, _idle
    signal.signal(STOP_SIGNAL, _exit_now)  # idle: nothing to sweep yet
    code = 1
    try:
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        _prctl(PR_SET_PDEATHSIG, STOP_SIGNAL)
        if os.getppid() != parent:
            os._exit(0)
        group = cgroup.Cgroup.create(str(os.getpid()), 0)
        if group is None:
            jobs.sendall(b"no cgroup")  # the fork server stops making spares
            os._exit(0)
        group.join()
        _spare_group = group
        prepared = Prepared.fork(child, group)
        jobs.sendall(b"ready ns" if prepared is not None else b"ready")
        message, fds = fdio.recv_fds(jobs, 4)
        if message != b"go" or len(fds) != 4:
            _exit_now(0, None)  # EOF: the fork server has gone
        signal.signal(STOP_SIGNAL, _on_stop)
        _spare_group = _idle = None
        if os.getppid() != parent:
            _on_stop(STOP_SIGNAL, None)
        conn, stdio = socket.socket(fileno=fds[0]), fds[1:]
        request = _request_or_exit(conn, max_request, prepared, stdio)
        limit = _limit_of(request)
        group.set_limit(limit + 1 if limit > 0 else 0)  # + 1: this supervisor is a member too
        code = supervise(request, conn, stdio, child, parent, group, prepared)
        if os.getppid() != parent:
            group.leave_and_remove()  # the fork server, which would remove it, is gone
    except BaseException as exc:  # noqa: BLE001 - the supervisor must always exit here
        _report_crash(exc)
    finally:
        os._exit(code)


def _report_crash(exc: BaseException) -> None:
    try:
        sys.stderr.write(f"ollie supervisor: {exc!r}\n")
    except Exception:  # noqa: BLE001
        pass
    if _tool:
        _kill_tool(_tool)
        sweep(None)


def run_unread(conn: socket.socket, stdio: Sequence[int], child: ToolChild, parent: int,
               max_request: int) -> NoReturn:
    """Read the spawn's request from `conn` (the fork server never reads one), then `run` it."""
    try:
        request = _request_or_exit(conn, max_request)
    except BaseException:  # noqa: BLE001 - never return into the fork server's loop
        os._exit(1)
    run(request, conn, stdio, child, parent)


def run(request: dict, conn: socket.socket, stdio: Sequence[int], child: ToolChild, parent: int) -> NoReturn:
    """`supervise`, then exit: a supervisor never returns to its caller's code (the fork server's loop)."""
    code = 1
    try:
        code = supervise(request, conn, stdio, child, parent)
    except BaseException as exc:  # noqa: BLE001 - the supervisor must always exit here
        _report_crash(exc)
    finally:
        os._exit(code)
