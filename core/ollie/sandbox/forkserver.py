"""The fork server: a single-threaded process that forks one supervisor per tool command.

Started once per daemon as `python -I -S forkserver.py CONTROL_FD [TOOLS_DIR]`, because
forking a threaded daemon and running Python before exec is unsafe (`--launch`: one spawn's
supervisor, when the server is unavailable). Protocol:
the daemon sends b"spawn" (b"spawn ns": the step asks for its own PID namespace, so a
spare that forked its tool process ahead may take it; b"spawn ns net": and for the egress
proxy's network namespace, which such a process makes ahead too), then a line with the
step's `limits.processes` and `limits.memory` (new spares set their cgroups to those ahead),
on the control socket (SOCK_SEQPACKET) with four fds:
a per-spawn stream socket and the child's stdin, stdout and stderr. On the
per-spawn socket it writes one JSON line `{argv, cwd, env, ruleset, limits, paths}`; the
server forks a supervisor (supervise.py) that forks the tool process (`_child`:
new session, stdio, cwd, process limit, Landlock, exec). The server lends each
spare supervisor, once ready, to the daemon: b"PID LEAST_MEMORY KIND" (KIND as in
the spawn message, b"" for a spare with no prepared process; LEAST_MEMORY: the
least memory limit of a step it takes, 0 for any) with its socket, on which the
daemon sends b"go" with those four fds itself (a wake-up of this server less on
the step's path), then tells the server b"took PID\n" with the spawn message's
kind and limits; a spare the daemon closes exits (a spare's prepared process
takes the `go` itself: spare.py). Either supervisor answers `{"pid": N}`
(or `{"error": {stage, errno, message}}`) and, once the tool has exited and every
process it left behind is killed and reaped, `{"status": exit_code}` (negative:
killed by that signal; in a spare's step its init sends that line when no other
process is left). When the control socket closes (the daemon exited or was
killed) the server stops every running step, waits for their sweeps and exits.
Stdlib only.
"""

from __future__ import annotations

import importlib.util
import json
import os
import selectors
import socket
import sys
import time
from contextlib import suppress

MAX_REQUEST_BYTES = 64 << 20
# Names the descriptor of a sandboxed step's policy paths (`paths` in its request; tools/_toolkit.py reads it).
PATHS_ENV = "OLLIE_SANDBOX_PATHS"


def _siblings():
    """siblings.py, loaded by path (this interpreter runs -I -S, without the `ollie` package): it loads the rest."""
    loaded = sys.modules.get("_ollie_siblings")
    if loaded is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "siblings.py")
        spec = importlib.util.spec_from_file_location("_ollie_siblings", path)
        assert spec is not None and spec.loader is not None  # a sibling file of this one
        loaded = importlib.util.module_from_spec(spec)
        sys.modules["_ollie_siblings"] = loaded
        spec.loader.exec_module(loaded)
    return loaded


_load = _siblings().load
supervise = _load("supervise")  # the per-spawn supervisor: subreaper, sweep, its cgroup
spare = _load("spare")  # supervisors made ahead of time, each with its tool process forked
stepinit = _load("stepinit")  # a step's own PID namespace and its init
limits = _load("limits")  # processes, memory, file size, OOM preference
pyrun = _load("pyrun")  # the pre-imported Python worker for bundled tool scripts
fdio, cgroup = supervise.fdio, supervise.cgroup
confine = stepinit.confine  # read-only view, read-only .git, a private /proc, Landlock, no capabilities, seccomp
# How long the server waits, when the daemon has gone, for its steps' supervisors to finish their sweeps.
SHUTDOWN_WAIT_S = 5.0
# Supervisors kept ready in their own cgroups (see spare.run_spare); 2 covers back-to-back spawns.
SPARES = 2
# Spares are made once the server has been idle this long (or right after a spawn found none): a spare
# moving into its cgroup while a spawn runs slows that spawn (forks take the slow path during the move).
REFILL_IDLE_S = 0.02


def _child(request: dict, stdio: list[int], err_w: int, group) -> None:
    """The tool process, forked by its supervisor: new session, stdio, cwd, process limit, Landlock, exec.

    In a step with its own PID namespace this process is PID 1: it confines itself
    (a fresh /proc first), then spawns the tool process and stays as its init.
    A request with `python` ({script, args}) runs that script in this interpreter
    (pyrun.py) where `argv` would be exec'd, after the same confinement. A spare's
    prepared process (spare.Prepared) runs it once its supervisor hands it the step.

    Never returns. The launcher runs this same function.
    """
    stage = "setsid"
    try:
        stepinit.new_session()  # and the signals an exec'd program gets back (done ahead by a spare's prepared one)
        stage = "stdio"
        for target, fd in enumerate(stdio):
            os.dup2(fd, target)
        stage = "chdir"
        os.chdir(request["cwd"])
        # By name: a dir on its way another session's step swapped for a link since the daemon checked it (the cwd is
        # the real path it was given) would run an unsandboxed hook elsewhere, a step outside its policy.
        if (now := os.getcwd()) != request["cwd"]:
            raise OSError(f"the working directory {request['cwd']} leads to {now} now: not run there")
        kept = None
        if request.get("paths") is not None:
            # The policy's paths for the file tools' own check: a sealed memfd the variable names, not the lists
            # themselves, which past 128 KiB (one string) or 2 MiB (all) fail the exec with E2BIG. Made before the
            # limits (the file size one bounds a memfd's writes too), never writable by the step.
            stage = "paths"
            kept = fdio.sealed_fd(request["paths"].encode(), PATHS_ENV)
            request["env"][PATHS_ENV] = str(kept)
        stage = "limits"  # before the confinement: it closes /sys and /proc
        limits.apply(request.get("limits") or {}, group)
        if request.get("ruleset"):
            stage = "landlock"
            confine.apply(request["ruleset"])
        stage = "exec"
        argv, env = request["argv"], request["env"]
        python = request.get("python") or {}  # a bundled Python tool script: run by the pre-imported worker
        errors = pyrun.stdio_errors(env) if python else None
        code = pyrun.compile_script(python["script"]) if errors else None
        run = None if code is None else lambda: pyrun.run_script(code, python["script"], python["args"], errors, kept)
        if run is not None:
            if confine.own_pid_namespace():
                # The script is the namespace's PID 1 itself (no separate init): see pyrun.py for why that is safe.
                stepinit.die_with_supervisor()
            run()
        if confine.own_pid_namespace():
            stepinit.become_init(argv, env)  # PID 1 spawns the tool and stays as its init
        os.execvpe(argv[0], argv, env)
    except BaseException as exc:  # noqa: BLE001 - everything must be reported, then _exit
        error = {"stage": stage, "errno": getattr(exc, "errno", None) or 0, "message": str(exc)}
        try:
            os.write(err_w, json.dumps(error).encode())
        finally:
            os._exit(127)


# The running supervisors (spares included): pid -> pidfd (registered with the selector until reaped).
_supervisors: dict[int, int] = {}
# Spares: every spare's job socket until it is ready (then lent to the daemon), and those lent and not yet used.
_jobs: dict[int, socket.socket] = {}
_lent: dict[int, bytes] = {}  # pid -> the kind it was lent for
_spares_work = True  # False once a spare could not make its cgroup: none is writable
_wanted = b"ns net"  # the kind new spares are made for: the last step's (the default policy's at first)
_limits = b""  # the last step's "processes memory": new spares set them on their cgroups ahead
_copied: set[int] = set()  # spares that copy their pages ahead (spare.copies): steps allowed little memory go elsewhere


def _watch(pid: int, selector: selectors.BaseSelector, spare: bool) -> None:
    pidfd = os.pidfd_open(pid)
    _supervisors[pid] = pidfd
    selector.register(pidfd, selectors.EVENT_READ, lambda: _reap(pidfd, pid, selector, spare))


def _fork(fds: list[int], selector: selectors.BaseSelector, control: socket.socket) -> None:
    """Fork this spawn's supervisor; it reads the request and answers the daemon itself.

    The server never reads a request: its memory, which every tool process run by the
    Python worker (pyrun.py) inherits, then holds nothing of any session's steps.
    """
    server = os.getpid()
    pid = os.fork()
    if pid == 0:
        fdio.close_fds_except(fds)
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0, fds[0])  # named: not asked of the kernel
        supervise.run_unread(conn, fds[1:], _child, server, MAX_REQUEST_BYTES)
    for fd in fds:
        os.close(fd)
    _watch(pid, selector, spare=False)
    _start_spares(selector, control)  # spawns come fast now: new spares' cgroup moves share this one's grace period


def _spares_wanted() -> bool:
    """Whether fewer than SPARES spares are ready or getting ready for the last step's kind and limits.

    A lent one they do not fit counts for nothing: lent before the server read the step, it waits unread for the
    daemon's next step, which lets it go (and, counted, it kept the step after that from a spare of its own)."""
    fit = sum(kind in (b"", _wanted) and (pid not in _copied or spare.copies(_limits)) for pid, kind in _lent.items())
    return _spares_work and len(_jobs) + fit < SPARES


def _start_spares(selector: selectors.BaseSelector, control: socket.socket) -> None:
    """Top the spares up to SPARES (counting those still getting ready)."""
    while _spares_wanted():
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        server = os.getpid()
        pid = os.fork()
        if pid == 0:
            fdio.close_fds_except([theirs.fileno()])
            spare.run_spare(theirs, _child, server, MAX_REQUEST_BYTES, _wanted == b"ns net", _limits)
        theirs.close()
        _jobs[pid] = ours
        if spare.copies(_limits):
            _copied.add(pid)
        _watch(pid, selector, spare=True)
        selector.register(ours, selectors.EVENT_READ, lambda pid=pid: _on_spare_ready(pid, selector, control))


def _on_spare_ready(pid: int, selector: selectors.BaseSelector, control: socket.socket) -> None:
    """Lend a spare that says it is ready to the daemon (let it go if made for the kind of step before the last)."""
    global _spares_work
    jobs = _jobs.get(pid)
    if jobs is None:
        return  # reaped in the same round of events
    selector.unregister(jobs)
    del _jobs[pid]
    try:
        message = jobs.recv(16)
    except OSError:
        message = b""
    kind = message[len(b"ready "):]
    if message in (b"ready", b"ready ns", b"ready ns net") and not (kind and kind != _wanted):
        least = spare.COPY_MIN_MEMORY if pid in _copied else 0
        with suppress(OSError):  # the daemon has gone: the control socket's EOF ends everything
            socket.send_fds(control, [b"%d %d %s" % (pid, least, kind)], [jobs.fileno()])
            _lent[pid] = kind
    elif message == b"no cgroup":
        _spares_work = False  # none is writable: spares would gain nothing
    jobs.close()  # the daemon's alone now; else EOF where it waits for a step: it ends its prepared process, exits
    if pid not in _lent:
        with suppress(OSError):  # not reaped yet (its pidfd is watched), so this cannot be another process
            os.kill(pid, supervise.STOP_SIGNAL)  # and now where it still copies its pages (spare.py)


def _reap(pidfd: int, pid: int, selector: selectors.BaseSelector, spare: bool) -> None:
    selector.unregister(pidfd)
    os.close(pidfd)
    del _supervisors[pid]
    _copied.discard(pid)
    _lent.pop(pid, None)
    os.waitpid(pid, 0)
    if spare and pid in _jobs:  # died before it was ready
        jobs = _jobs.pop(pid)
        selector.unregister(jobs)
        jobs.close()
    # A spare could not remove its cgroup while inside; a killed supervisor never did.
    cgroup.Cgroup.named(str(pid)).remove()


def _stop_all(selector: selectors.BaseSelector) -> None:
    """The daemon has gone: every step must end now; wait (bounded) until the supervisors have swept."""
    for pid in _supervisors:
        with suppress(OSError):
            os.kill(pid, supervise.STOP_SIGNAL)
    deadline = time.monotonic() + SHUTDOWN_WAIT_S
    while _supervisors and time.monotonic() < deadline:
        for key, _ in selector.select(max(deadline - time.monotonic(), 0)):
            if key.fd in _supervisors.values():
                key.data()
    # Any supervisor still running gets PDEATHSIG when we exit and sweeps then.


def _accept(control: socket.socket, selector: selectors.BaseSelector) -> bool:
    """Take one spawn message off the control socket; False when the daemon has gone."""
    global _wanted, _limits
    try:
        message, fds = fdio.recv_fds(control, 4)
    except OSError:
        return False
    if not message:
        return False
    took, _, message = message.partition(b"\n") if message.startswith(b"took ") else (b"", b"", message)
    if len(fds) != (0 if took else 4):
        for fd in fds:
            os.close(fd)
        return True
    head, _, limits = message.partition(b"\n")
    kind = head[len(b"spawn "):]
    # The next spares are made for such steps (the daemon lets lent spares made for the other kind, or too big for
    # such steps' memory limit, go). First: _fork tops the spares up, for this step's kind and limits (where the
    # spares the daemon let go for this step were reaped first, in the same round, ones made for the last step's
    # would be let go too).
    if kind in (b"ns", b"ns net"):
        _wanted, _limits = kind, limits
    if took:  # a step of the daemon's runs in that spare now: refilled once this server is idle
        _lent.pop(int(took[len(b"took "):]) if took[len(b"took "):].isdigit() else 0, None)
    else:
        _fork(fds, selector, control)
    return True


def serve(control: socket.socket) -> None:
    """Serve spawn requests until the control socket closes, then end every running step."""
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ, None)
    while True:
        events = selector.select(REFILL_IDLE_S if _spares_wanted() else None)
        if not events:
            _start_spares(selector, control)
        for key, _ in events:
            if key.data is None:
                if not _accept(control, selector):
                    _stop_all(selector)
                    return
            else:
                key.data()


def main() -> None:
    """Entry point: argv[1] is the inherited control socket's fd, argv[2] (optional) ollie's bundled tools dir."""
    # No PR_SET_PDEATHSIG here: it fires when the daemon *thread* that forked us exits,
    # and the daemon is threaded (a fork server started from a worker thread or a
    # short-lived event loop would die with it, killing every running step). The
    # control socket is the daemon's lifeline instead: only the daemon process holds
    # its end (close-on-exec, never inherited), so it reads EOF exactly when the
    # daemon process is gone, by exit or SIGKILL alike.
    fd = int(sys.argv[1])
    os.set_inheritable(fd, False)
    for std in (0, 1, 2):  # keep 0-2 taken, so received fds never land there before the child's dup2
        try:
            os.fstat(std)
        except OSError:
            os.open(os.devnull, os.O_RDWR)
    cgroup.bases()  # looked up once here, so every supervisor inherits the answer
    cgroup.remove_stale()
    pyrun.preload(sys.argv[2] if len(sys.argv) > 2 else "")
    serve(socket.socket(fileno=fd))


def launch() -> None:
    """`forkserver.py --launch SOCKET_FD DAEMON_PID`: the per-spawn fallback when the fork server is unavailable.

    It speaks the server's per-spawn protocol on SOCKET_FD and is itself the step's supervisor, with `_child` doing
    the pre-exec work. It costs ~25 ms more per spawn, and its PDEATHSIG fires when the daemon thread that started it
    exits. It exits when the step is over.
    """
    conn = socket.socket(fileno=int(sys.argv[2]))
    request = supervise.request_or_exit(conn, MAX_REQUEST_BYTES)
    stdio = [os.dup(fd) for fd in (0, 1, 2)]  # close-on-exec copies: the tool dup2s them back onto 0-2
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)  # the supervisor must not keep the step's pipes open
    os.close(null)
    supervise.run(request, conn, stdio, _child, int(sys.argv[3]))


if __name__ == "__main__":
    launch() if sys.argv[1] == "--launch" else main()
