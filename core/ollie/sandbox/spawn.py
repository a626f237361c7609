"""spawn_sandboxed: run a command in its own session under the policy's Landlock rules and process limit.

The daemon is threaded (pygls), so it never forks to run Python before exec.
A single-threaded fork server (forkserver.py, started lazily once per process)
forks a supervisor per spawn (supervise.py) that forks, restricts and execs the
tool and, when it exits, kills everything it left behind; when the server cannot
run, a per-spawn launcher (`forkserver.py --launch`) is that supervisor, at a higher cost.
Both answer the same per-spawn protocol, read here by `_converse`.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ollie import paths, programs
from ollie.sandbox import fdio, unconfined, writers
from ollie.sandbox.errors import SUPERVISOR_DIED, HelperDiedError, SandboxError
from ollie.sandbox.ldd import library_rules
from ollie.sandbox.policy import Policy
from ollie.sandbox.process import SandboxedProcess, write_stdin
from ollie.sandbox.rules import landlock_abi, ruleset_for

if TYPE_CHECKING:  # the egress proxy is imported by the first step whose policy uses it
    from ollie.sandbox import egress

HERE = Path(__file__).resolve().parent
FORK_SERVER = HERE / "forkserver.py"

log = logging.getLogger("ollie.sandbox")
# A step's oom_score_adj (limits.py): the most the kernel allows, so a step always goes before the daemon.
STEP_OOM_SCORE_ADJ = 1000
# How long a cancelled spawn waits for its step's processes to be killed and swept before it raises.
CANCEL_WAIT_S = 5.0
# How long a spawn that got no answer waits to see the fork server's exit: its death closes the spawn's socket a
# moment before its exit shows, and only a fork server that died may have left the step unstarted.
SERVER_EXIT_WAIT_S = 0.5
_background: set[asyncio.Future[None] | asyncio.Future[int]] = set()


# /proc in a policy means the step's own procfs (or /proc/self); a path check cannot honour that.
_PROC = "/proc"


@functools.lru_cache(maxsize=32)  # a policy's roots are the same Path objects at each step: dumped once
def _policy_paths(readable: tuple[Path, ...], writable: tuple[Path, ...]) -> str:
    """The JSON `{"read": [...], "write": [...]}` a sandboxed step gets as `$OLLIE_SANDBOX_PATHS` (a sealed memfd,
    forkserver.py) for the file tools' own check, /proc left out."""
    def listed(roots: tuple[Path, ...]) -> list[str]:
        # Strings, not Path.parents: this runs for every step, over every root of the policy.
        return [text for text in map(str, roots) if text != _PROC and not text.startswith(_PROC + "/")]

    return json.dumps({"read": listed(readable), "write": listed(writable)})


class _ServerLost(Exception):
    """The fork server is gone or did not answer: fall back to the launcher."""


class _Spare(NamedTuple):
    """A ready spare supervisor the fork server lent us (forkserver.py): the steps it takes, and its socket."""

    pid: int
    least_memory: int  # the least memory limit of a step it takes (0: any): it copied its pages ahead
    kind: bytes  # b"ns" or b"ns net" (its tool process forked ahead, for such steps only), b"" (any step)
    jobs: socket.socket

    def fits(self, kind: bytes, memory: int) -> bool:
        """Whether a step of `kind` (as in the spawn message) allowed `memory` bytes (0: no limit) may go there."""
        return self.kind in (b"", kind) and not 0 < memory < self.least_memory


class ForkServer:
    """The daemon's handle on its fork server process (started on first use, restarted if it died)."""

    def __init__(self, script: Path = FORK_SERVER) -> None:
        self._script = script
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._owner = 0
        self._atexit_registered = False
        self._spares: list[_Spare] = []

    @property
    def pid(self) -> int | None:
        """The server's pid while it runs (None before first use or after it stopped)."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def _ensure(self) -> socket.socket:
        with self._lock:
            if self._control is not None and self._owner == os.getpid() and self._proc and self._proc.poll() is None:
                return self._control
            self._close_locked()
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                # Popen forks in C with no Python in the child: safe in a threaded process.
                self._proc = subprocess.Popen(
                    [sys.executable, "-I", "-S", str(self._script), str(theirs.fileno()), str(paths.bundled("tools"))],
                    pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    start_new_session=True, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                )
            finally:
                theirs.close()
            self._control, self._owner = ours, os.getpid()
            if not self._atexit_registered:
                atexit.register(self.close)
                self._atexit_registered = True
            return ours

    def _close_locked(self) -> None:
        for spare in self._spares:
            spare.jobs.close()  # it exits
        self._spares.clear()
        if self._control is not None:
            self._control.close()
        if self._proc is not None and self._owner == os.getpid():
            try:
                self._proc.wait(timeout=6)  # its steps' sweeps (bounded at 5 s there); killed, they still sweep
            except subprocess.TimeoutExpired:
                self._proc.kill()
        self._control, self._proc = None, None

    def start(self) -> None:
        """Start the server now rather than at the first spawn (a no-op while it runs)."""
        self._ensure()

    def close(self) -> None:
        """Stop the server: it ends every running step's processes, then exits (its control socket closed)."""
        with self._lock:
            self._close_locked()

    async def spawn(self, request: dict, stdio: Sequence[int], report: dict | None = None,
                    ) -> tuple[int, asyncio.Future[int]]:
        """Fork/exec `request` with `stdio` as fds 0-2; the pid and a future of the exit status.

        `report` gets what the supervisor says with the status besides it (`oom`: the memory limit ended the step).
        """
        control = self._ensure()
        # A step with its own PID namespace may go to a spare supervisor that forked its tool process already
        # (which made the step's network namespace too, for a step with the egress proxy).
        ruleset = request.get("ruleset") or {}
        kind = b"spawn" + (b" ns" if ruleset.get("pid_namespace") else b"") + (b" net" if ruleset.get("netns") else b"")
        # And its limits, which the next spares set on their cgroups ahead (a spare sets them again if they differ).
        limits = request["limits"]
        kind += f"\n{int(limits.get('processes') or 0)} {int(limits.get('memory') or 0)}".encode()
        line = json.dumps(request).encode() + b"\n"
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        unfit: list[socket.socket] = []
        try:
            # The request goes ahead of the spawn, so its supervisor finds it at once (not after a turn of our
            # loop); what does not fit the socket's buffer follows from the loop.
            mine.setblocking(False)
            sent = mine.send(line)
            with self._lock:
                taken, unfit = self._lend(kind, [theirs.fileno(), *stdio], int(limits.get("memory") or 0))
                if not taken:  # the server forks the step's supervisor
                    socket.send_fds(control, [kind], [theirs.fileno(), *stdio])
            if taken:  # the server makes the next spares for this step's kind and limits (once idle)
                with suppress(OSError):  # it has gone: the spare, which has the step, answers for it (never twice)
                    control.send(b"took %d\n%s" % (taken, kind))
        except OSError as exc:
            mine.close()
            raise _ServerLost(str(exc)) from exc
        finally:
            theirs.close()
            # Let the spares that do not fit such steps go only now: the server, which refills the spares once
            # they exit, has this step's kind and limits first (else, loaded, it made two for the last step's).
            for jobs in unfit:
                jobs.close()
        try:
            return await _converse(mine, line[sent:], request["argv"][0], report)
        except _ServerLost:
            # No answer at all: the fork server died before a supervisor took the spawn (the launcher runs it),
            # or the supervisor (a spare we handed it to, say) died, maybe with the step started: never run twice.
            if taken or await self._runs_on(SERVER_EXIT_WAIT_S):
                raise HelperDiedError(SUPERVISOR_DIED) from None
            raise

    def _lend(self, kind: bytes, fds: list[int], memory: int) -> tuple[int, list[socket.socket]]:
        """Hand a spawn (kind and limits, as in the spawn message; its socket and stdio) to a lent spare that fits
        it: its pid (0 when none does), and the job sockets of the spares such steps never fit, for the caller to
        close (they exit). With the lock held."""
        assert self._control is not None
        while True:  # take what the server lent since the last spawn
            try:
                message, jobs = fdio.recv_fds(self._control, 1, flags=socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            if not message:
                raise ConnectionResetError("the fork server has gone")
            pid, least, made = message.split(b" ", 2)
            # Named, not asked of the kernel (two syscalls).
            self._spares.append(_Spare(int(pid), int(least), made,
                                       socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, 0, jobs[0])))
        step = kind.partition(b"\n")[0][len(b"spawn "):]
        # The next spares are made for such steps (forkserver._accept): one made for the other kind, or that
        # copied its pages, goes.
        unfit = [spare for spare in self._spares if step in (b"ns", b"ns net") and not spare.fits(step, memory)]
        self._spares = [spare for spare in self._spares if spare not in unfit]
        while self._spares:
            spare = next((spare for spare in self._spares if spare.fits(step, memory)), None)
            if spare is None:
                break
            self._spares.remove(spare)
            try:
                socket.send_fds(spare.jobs, [b"go"], fds)
            except OSError:
                continue  # it died meanwhile: try the next
            finally:
                spare.jobs.close()
            return spare.pid, [spare.jobs for spare in unfit]
        return 0, [spare.jobs for spare in unfit]

    async def _runs_on(self, wait: float) -> bool:
        """Whether the server is still running after `wait` seconds (False as soon as it has exited)."""
        proc = self._proc
        try:
            fd = os.pidfd_open(proc.pid) if proc is not None and proc.poll() is None else -1
        except ProcessLookupError:
            fd = -1
        if fd < 0:
            return False
        loop = asyncio.get_running_loop()
        exited = loop.create_future()
        loop.add_reader(fd, lambda: exited.done() or exited.set_result(None))
        try:
            async with asyncio.timeout(wait):
                await exited
        except TimeoutError:
            return True
        finally:
            loop.remove_reader(fd)
            os.close(fd)
        return False


async def _converse(sock: socket.socket, line: bytes, program: str, report: dict | None = None,
                    ) -> tuple[int, asyncio.Future[int]]:
    """Send the request `line` (or what is left of it) on a per-spawn socket; the tool's pid and a future of its
    status (sent after the sweep)."""
    # Shielded, and finished even when the spawn is cancelled meanwhile: the fork server's request went ahead
    # of the spawn (ForkServer.spawn), so the step may run already, its pid sent, and only this connection can
    # still stop it (closing the socket unread would leave the step running, its supervisor waiting on it).
    opening = asyncio.ensure_future(_connect(sock))
    try:
        reader, writer = await asyncio.shield(opening)
        writer.write(line)
        line = await reader.readline()
    except asyncio.CancelledError:
        # The child may already run: kill it as soon as its pid is known, and raise only once the step is over.
        # Its supervisor runs beside the others, so without this wait the step could start (and be seen running)
        # after the cancelled caller has moved on; bounded, so that a stuck supervisor cannot hold the cancel.
        await _settle(asyncio.ensure_future(_kill_when_started(opening)))
        raise
    except OSError as exc:
        line = b""
        log.warning("fork server connection failed", extra={"reason": str(exc)})
    if not line:
        writer.close()
        raise _ServerLost("the fork server closed the connection")
    try:
        reply = _reply(line, "pid")
        if "error" in reply:
            raise _spawn_error(reply["error"], program)
    except Exception:
        writer.close()  # the supervisor sees EOF and kills its step, if it started one
        raise
    return reply["pid"], asyncio.ensure_future(_read_status(reader, writer, report))


def _keep(task: asyncio.Future[None] | asyncio.Future[int]) -> None:
    """Hold `task` until it is done: the loop keeps only weak references to tasks."""
    _background.add(task)
    task.add_done_callback(_background.discard)


async def _settle(cleanup: asyncio.Future[None] | asyncio.Future[int]) -> None:
    """Wait for a cancelled spawn's `cleanup`, CANCEL_WAIT_S at most (less if cancelled again); it goes on after."""
    _keep(cleanup)
    with suppress(asyncio.CancelledError):  # the caller raises its own exception now
        await asyncio.wait([cleanup], timeout=CANCEL_WAIT_S)  # unlike wait_for, it never cancels `cleanup`


async def _connect(sock: socket.socket) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Streams on a per-spawn socket; closed when that fails (the supervisor sees EOF and kills its step)."""
    try:
        return await asyncio.open_unix_connection(sock=sock)
    except BaseException as exc:
        sock.close()
        if isinstance(exc, OSError):  # not _ServerLost: the step may have run, the launcher must not run it again
            raise SandboxError(f"the sandbox's connection failed: {exc}") from exc
        raise


async def _kill_when_started(opening: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]]) -> None:
    """After a cancelled spawn: kill its step, and return once its supervisor reports every process dead."""
    try:
        reader, writer = await opening
    except Exception:  # noqa: BLE001 - no connection: its socket is closed (see _connect)
        return
    try:
        # Half-closed: the supervisor kills the tool process even if its pid never comes (it never gets to exec).
        writer.write_eof()
        reply = json.loads(await reader.readline() or b"{}")
        if "pid" in reply:
            with suppress(ProcessLookupError):  # its group is gone already; what left the group is the sweep's
                os.killpg(reply["pid"], signal.SIGKILL)
            await reader.readline()  # the status (or EOF): sent after the sweep
    except (OSError, ValueError):
        pass
    finally:
        writer.close()


async def _read_status(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, report: dict | None) -> int:
    try:
        line = await reader.readline()
    finally:
        writer.close()
    if not line:  # its supervisor (not the fork server: this socket is the supervisor's alone) died
        raise HelperDiedError(SUPERVISOR_DIED)
    reply = _reply(line, "status")
    if report is not None:
        report.update((key, value) for key, value in reply.items() if key != "status")
    return reply["status"]


def _reply(line: bytes, key: str) -> dict:
    """A supervisor's line: a JSON object with the int `key` (`pid`, `status`), or a spawn's `error`; anything else is
    a SandboxError for the step, not a traceback (only ollie's own processes write there)."""
    try:
        reply = json.loads(line)
    except ValueError:
        reply = None
    if isinstance(reply, dict) and (
            type(value := reply.get(key)) is int and (key != "pid" or value > 0)  # pid 0 or -1: the daemon's own group
            or key == "pid" and isinstance(error := reply.get("error"), dict) and {"stage", "message"} <= error.keys()):
        return reply
    raise SandboxError(f"the sandbox's supervisor sent a malformed reply (no {key}): {line[:200]!r}")


def _spawn_error(error: dict, program: str) -> Exception:
    if error["stage"] in ("exec", "chdir") and error.get("errno"):
        return OSError(error["errno"], os.strerror(error["errno"]), program)
    if error["stage"] == "chdir":  # a cwd that leads elsewhere (forkserver._child), sandboxed or not
        return OSError(error["message"])
    return SandboxError(f"cannot start {program} in the sandbox ({error['stage']}): {error['message']}")


_server = ForkServer()


def fork_server() -> ForkServer:
    """This process's fork server."""
    return _server


def start_fork_server() -> None:
    """Start the fork server unless it runs; blocks, so a worker thread's call (the daemon's, as a turn's reply begins).

    Not at start-up, nor when the turn starts: no first token needs it, and its interpreter competed with the
    daemon's own start and first request for the CPU. The streaming of a tool call's arguments hides its start.
    A failure is logged: the first spawn tries again, or runs through the per-spawn launcher.
    """
    if _server.pid is not None:
        return
    try:
        _server.start()
    except Exception:  # noqa: BLE001 - see above
        log.warning("starting the sandbox's fork server failed", exc_info=True)


async def _spawn_fallback(request: dict, stdio: Sequence[int], report: dict) -> tuple[int, asyncio.Future[int]]:
    """The launcher as this spawn's supervisor: the same protocol as the fork server, one process per spawn."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-S", str(FORK_SERVER), "--launch", str(theirs.fileno()), str(os.getpid()),
            stdin=stdio[0], stdout=stdio[1], stderr=stdio[2], pass_fds=[theirs.fileno()], cwd=request["cwd"],
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, start_new_session=True)
    except BaseException:
        mine.close()
        raise
    finally:
        theirs.close()
    try:
        pid, status = await _converse(mine, json.dumps(request).encode() + b"\n", request["argv"][0], report)
    except _ServerLost as exc:
        await proc.wait()
        raise SandboxError(f"the sandbox launcher failed (exit status {proc.returncode})") from exc
    except BaseException as exc:
        reaping = asyncio.ensure_future(proc.wait())  # it exits right after its sweep
        if isinstance(exc, asyncio.CancelledError):
            await _settle(reaping)  # a cancelled spawn leaves no supervisor either
        else:
            _keep(reaping)
        raise

    async def reaped() -> int:
        try:
            return await status
        finally:
            await proc.wait()  # it exits right after reporting

    return pid, asyncio.ensure_future(reaped())


def _open_step_net(policy: Policy, argv: Sequence[str], ruleset: dict, child_env: dict[str, str],
                   ) -> tuple[egress.StepNet, Callable[..., None]]:
    """Register the step with the egress proxy (its namespace's listener goes there, its env names it); the step's
    registration and what releases it (its connections end then)."""
    from ollie.sandbox import egress  # only a policy with the proxy needs it: not imported at start

    net = policy.network
    proxy = egress.proxy()
    step = proxy.open_step(label=" ".join(argv)[:200], allow=net.allow, deny=net.deny, max_sent=net.max_sent,
                           ask=egress.asking.get())
    ruleset["netns"] = {"socket": proxy.path, "token": step.token}
    child_env.update(step.env())
    return step, lambda *_: proxy.release(step)


async def spawn_sandboxed(argv: Sequence[str], *, policy: Policy | None, cwd: Path, env: Mapping[str, str],
                          stdin: bytes | None = None, tmp_at_tmp: bool = False,
                          python: tuple[str, Sequence[str]] | None = None,
                          stdin_pipe: bool = False) -> SandboxedProcess:
    """Start `argv` in `cwd` with exactly `env`, in a new session, under `policy` (None: unsandboxed).

    `cwd` is a real path: a process that would start anywhere else (a dir on its way swapped for a link) is refused.

    `tmp_at_tmp`: the child sees its TMPDIR (when the policy lets it write there) mounted
    at /tmp, for programs that ignore TMPDIR; absolute paths under the real /tmp are then hidden.
    `stdin_pipe`: the child's stdin stays an open pipe, its write end the process's `stdin_fd`
    (a long-lived server spoken to over stdio, e.g. an MCP server); `stdin` is then ignored.
    `python`: (script, args) when `argv` is `python3 -I script args` for a stdlib-only script:
    the fork server's pre-imported interpreter runs it after the same confinement (pyrun.py).
    Under a policy the child's `$OLLIE_SANDBOX_PATHS` names a sealed memfd of its paths (`_policy_paths`).

    Raises SandboxUnavailableError (no Landlock and best_effort false), OSError
    (the program is missing or not executable) or SandboxError. Cancelled while in
    flight, it raises once the step's processes are killed and swept (CANCEL_WAIT_S at most).
    """
    argv = [str(a) for a in argv]
    if not argv:
        raise ValueError("spawn_sandboxed needs a command")
    warnings: list[str] = []
    ruleset = None
    child_env = dict(env)
    places: dict[str, str] = {}
    if policy is not None:
        programs.note_writable(policy.writable())  # the daemon's own helpers are never run from there
        extra = await library_rules(argv[0], env, cwd) if policy.ldd else []
        ruleset, warnings = ruleset_for(policy, landlock_abi(), extra_fs=extra)
        # Resolved once: the writer lock guards these paths, and the step's rules must still open them (landlock.py).
        places = writers.places(policy.writable())
        if ruleset is not None:
            ruleset["pinned"] = {**policy.pinned, **places}
        child_env = policy.child_env(env)
        tmp = child_env.get("TMPDIR")
        wants_tmp = tmp_at_tmp and tmp and Path(tmp) in policy.writable() and Path(tmp) != Path("/tmp")
        if ruleset is not None and wants_tmp:
            ruleset["tmp_at_tmp"] = tmp
        if policy.log_level in ("info", "debug"):
            log.info("sandboxed spawn", extra={"argv0": argv[0], "policy": policy.name, "cwd": str(cwd),
                                               "ruleset": ruleset if policy.log_level == "debug" else None})
    stdin_r, stdin_w = os.pipe() if stdin is not None or stdin_pipe else (os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC), None)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    child_fds = (stdin_r, out_w, err_w)
    # Every step, sandboxed or not, is the OOM killer's first pick: never the daemon.
    limits: dict[str, int] = {"oom_score_adj": STEP_OOM_SCORE_ADJ}
    if policy is not None:
        limits.update(processes=policy.max_processes, memory=policy.max_memory, file_size=policy.max_file_size)
    request = {"argv": argv, "cwd": os.path.abspath(cwd), "env": child_env, "ruleset": ruleset, "limits": limits}
    if policy is not None:
        request["paths"] = _policy_paths(policy.readable(), policy.writable())
    if python is not None:
        request["python"] = {"script": str(python[0]), "args": [str(a) for a in python[1]]}
    report: dict = {}
    # What ends with the step (each called with its status future), or with a spawn that fails.
    ends: list[Callable[..., None]] = []
    if ruleset is not None and policy is not None and ruleset.get("proxy"):
        step_net, release_net = _open_step_net(policy, argv, ruleset, child_env)
        report["network"], report["asks"] = step_net.connections, step_net
        ends.append(release_net)
    if ruleset is None or not ruleset.get("seccomp"):
        # It can make hard links: the checkpoints trust no inotify events while it may run (treewatch).
        ends.append(unconfined.starting())
    try:
        if policy is not None:  # no editor is handed a path there by name while the step may swap it (writers.py)
            ends.append(await writers.hold(places))
        try:
            pid, status = await _server.spawn(request, child_fds, report)
        except _ServerLost as exc:
            log.warning("fork server unavailable, using the launcher", extra={"reason": str(exc)})
            pid, status = await _spawn_fallback(request, child_fds, report)
    except BaseException:
        for end in ends:
            end()
        for fd in (out_r, err_r, stdin_w):
            if fd is not None:
                os.close(fd)
        raise
    finally:
        for fd in child_fds:
            os.close(fd)
    for end in ends:
        # Callbacks, run once every process of the step is dead and before the status's waiters resume (added
        # first), not a task awaiting the status: that took one more turn of the loop between the step's end and
        # its status (the egress proxy's release).
        status.add_done_callback(end)
    if stdin_pipe:
        return SandboxedProcess(pid=pid, stdout_fd=out_r, stderr_fd=err_r, status=status, warnings=warnings,
                                stdin_fd=stdin_w, report=report)
    writer = asyncio.ensure_future(write_stdin(stdin_w, stdin)) if stdin_w is not None and stdin is not None else None
    return SandboxedProcess(pid=pid, stdout_fd=out_r, stderr_fd=err_r, status=status, warnings=warnings,
                            stdin_writer=writer, report=report)
