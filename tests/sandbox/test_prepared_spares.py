"""Spare supervisors fork their step's tool process ahead, as PID 1 of a new PID namespace (supervise.Prepared).

The steps that ask for a namespace run in such a process; the others never do; an idle one never outlives
its spare or the fork server, and a request that does not fit it is refused without leaking it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import socket
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from ollie.sandbox import cgroup
from ollie.sandbox import spawn as spawn_module
from ollie.sandbox.errors import HelperDiedError, SandboxError
from ollie.sandbox.process import SandboxedProcess
from ollie.sandbox.rules import landlock_abi, ruleset_for
from ollie.sandbox.spawn import ForkServer, spawn_sandboxed
from tests.procs import children_of, exited, process_gone

PAGE = os.sysconf("SC_PAGE_SIZE")
RECVMSG = {"x86_64": "47", "aarch64": "212"}[os.uname().machine]  # its syscall number
EPOLL_WAIT = {"x86_64": "232", "aarch64": "22"}[os.uname().machine]  # (aarch64 has only epoll_pwait)

pytestmark = pytest.mark.skipif(landlock_abi() < 1 or cgroup.base() is None,
                                reason="needs Landlock and a writable pids cgroup (spares need both)")


@pytest.fixture
def server(monkeypatch) -> Iterator[ForkServer]:
    """A fork server of this test's own, as the one spawn_sandboxed uses."""
    own = ForkServer()
    monkeypatch.setattr(spawn_module, "_server", own)
    yield own
    own.close()


def _unconfined(pid: int) -> bool:
    """Whether `pid` never confined itself: an idle prepared process, not a finished step's init still exiting
    (its supervisor sends the status first, so it too is a supervisor with one child for a moment)."""
    try:
        return "NoNewPrivs:\t0" in Path(f"/proc/{pid}/status").read_text()  # Landlock set it in every step
    except OSError:
        return False


def _blocked_in(pid: int, syscall: str) -> bool:
    """Whether `pid` sleeps in `syscall` (a process woken meanwhile reads "running")."""
    try:
        return Path(f"/proc/{pid}/syscall").read_text().split()[0] == syscall
    except (OSError, IndexError):
        return False


def _wants_no_spares(server: int) -> bool:
    """Whether the fork server sleeps in its select with no timeout: no spare to make (it makes them after
    REFILL_IDLE_S asleep)."""
    try:
        fields = Path(f"/proc/{server}/syscall").read_text().split()
    except OSError:
        return False
    return len(fields) > 4 and fields[0] == EPOLL_WAIT and int(fields[4], 16) & 0xFFFFFFFF == 0xFFFFFFFF  # -1


def _waiting(pid: int) -> bool:
    """Whether `pid` is blocked in recvmsg (a spare waiting for a step, its prepared process for the request):
    done getting ready, its pages copied."""
    return _blocked_in(pid, RECVMSG)


async def idle_spares(server: ForkServer, want: int = 2, within: float = 60.0) -> dict[int, int]:
    """The fork server's idle spares that forked their tool process ahead: spare pid -> that process's pid."""
    deadline = time.monotonic() + within
    while True:
        assert server.pid is not None
        children = children_of(server.pid)
        spares = {spare: kids[0] for spare in children
                  if len(kids := children_of(spare)) == 1 and _unconfined(kids[0])
                  and _waiting(spare) and _waiting(kids[0])}
        # A spare sends b"ready" before it waits: the fork server asleep in its select after that has read it (the
        # message would have woken it), and these spares still waiting were lent, not let go (made for the kind
        # before the last step's: the server signals such a spare, which wakes it, before it sleeps again). Asleep
        # with no timeout it wants no more spares, and with no other child none is getting ready: the next spawn
        # goes to these spares (some may be of the kind before, lent before it read the last step).
        if (len(spares) >= want and len(spares) == len(children) and _wants_no_spares(server.pid)
                and all(map(_waiting, spares))):
            return spares
        assert time.monotonic() < deadline, f"no {want} idle spares with a prepared process: {spares}"
        await asyncio.sleep(0.02)


async def step_taken_by_a_lent_spare(ws, server: ForkServer) -> tuple[Path, asyncio.Future]:
    """Start a step that writes `ran` to its marker file, once one of the two lent spares has it (not run yet)."""
    marker = ws.work / "ran"
    spawning = asyncio.ensure_future(spawn_sandboxed(["bash", "-c", f"echo ran >> {marker}"],
                                                     policy=ws.default_policy(), cwd=ws.work, env=ws.env))
    deadline = time.monotonic() + 20
    while len(server._spares) != 1:  # both were lent to us; one has the step now
        assert time.monotonic() < deadline and not spawning.done(), server._spares
        await asyncio.sleep(0.01)
    return marker, spawning


async def test_a_step_runs_in_the_process_its_spare_forked_before_the_request(ws, server):
    await ws.bash("true", ws.default_policy())  # starts the fork server
    prepared = await idle_spares(server)
    proc = await spawn_sandboxed(["bash", "-c", "echo $$ $PPID; ls /proc | grep -c '^[0-9]'"],
                                 policy=ws.default_policy(), cwd=ws.work, env=ws.env)
    out, err, _ = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.pid in prepared.values(), (proc.pid, prepared)
    # Confined as before: PID 2 under its init, a /proc of its own namespace (the init, bash, ls... only).
    me, parent, listed = out.decode().split()
    assert (me, parent) == ("2", "1") and int(listed) <= 4, (out, err)
    assert await proc.wait() == 0


async def test_an_idle_prepared_process_leads_its_session_in_an_ipc_namespace_of_its_own_before_its_step(ws, server):
    """What needs nothing of the step is done while idle, off its path: setsid (which makes a scheduler autogroup)
    and the step's IPC namespace, one per prepared process; the step runs in that namespace, none but its own."""
    await ws.bash("true", ws.default_policy())
    prepared = await idle_spares(server)
    ahead = {pid: f"ipc:[{os.stat(f'/proc/{pid}/ns/ipc').st_ino}]" for pid in prepared.values()}
    assert [os.getsid(pid) for pid in ahead] == list(ahead)
    assert f"ipc:[{os.stat('/proc/self/ns/ipc').st_ino}]" not in ahead.values() and len(set(ahead.values())) == 2
    proc = await spawn_sandboxed(["bash", "-c", "readlink /proc/self/ns/ipc"], policy=ws.default_policy(),
                                 cwd=ws.work, env=ws.env)
    out, err, _ = await asyncio.wait_for(proc.communicate(), 20)
    assert out.decode().strip() == ahead.get(proc.pid), (out, err, ahead)
    assert await proc.wait() == 0


async def test_a_step_goes_to_its_spare_without_the_fork_server_on_its_path(ws, server):
    await ws.bash("true", ws.default_policy())
    prepared = await idle_spares(server)
    assert server.pid is not None
    os.kill(server.pid, signal.SIGSTOP)  # the ready spares are lent to the daemon: it hands the step over itself
    try:
        proc = await asyncio.wait_for(spawn_sandboxed(["bash", "-c", "echo ran"], policy=ws.default_policy(),
                                                      cwd=ws.work, env=ws.env), 10)
        out, err, _ = await asyncio.wait_for(proc.communicate(), 10)
    finally:
        os.kill(server.pid, signal.SIGCONT)
    assert (out, proc.pid in prepared.values()) == (b"ran\n", True), err
    assert await proc.wait() == 0


async def test_a_step_a_lent_spare_runs_holds_no_descriptor_but_its_stdio(ws, server):
    # The daemon now holds the ready spares' sockets and hands a step over itself: a step must not inherit one of
    # them (it could send another spare a step of its own choosing) nor the daemon's control socket.
    await ws.bash("true", ws.default_policy())
    prepared = await idle_spares(server)
    proc = await spawn_sandboxed(["bash", "-c", "ls -l /proc/$$/fd"], policy=ws.default_policy(), cwd=ws.work,
                                 env=ws.env)
    out, err, _ = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.pid in prepared.values(), (proc.pid, prepared)
    # (ls's own handle on the listed directory left out; the sealed memfd of its policy's paths is its own)
    listed = [line for line in out.decode().splitlines() if " -> " in line and not line.endswith("/fd")]
    paths = [line for line in listed if " -> /memfd:OLLIE_SANDBOX_PATHS " in line]
    fds = sorted(int(line.split(" -> ")[0].split()[-1]) for line in listed if line not in paths)
    assert fds == [0, 1, 2] and len(paths) == 1, (out, err)
    assert "socket:" not in out.decode(), out


async def test_a_step_whose_lent_spares_died_runs_all_the_same(ws, server):
    await ws.bash("true", ws.default_policy())
    prepared = await idle_spares(server)
    for spare in prepared:
        os.kill(spare, signal.SIGKILL)  # crashed while lent to the daemon, which holds their sockets
    assert all(process_gone(pid) for pid in [*prepared, *prepared.values()])
    for _ in range(3):
        assert (await asyncio.wait_for(ws.bash("echo still works", ws.default_policy()), 20))[1] == "still works\n"


async def test_a_step_whose_spare_died_unanswered_with_the_fork_server_is_never_run_again(ws, server):
    await ws.bash("true", ws.default_policy())
    prepared = await idle_spares(server)
    fork_server = server.pid
    assert fork_server is not None
    for pid in [*prepared, *prepared.values()]:
        os.kill(pid, signal.SIGSTOP)  # whichever takes the step never starts it, nor answers
    marker, spawning = await step_taken_by_a_lent_spare(ws, server)
    os.kill(fork_server, signal.SIGKILL)
    assert process_gone(fork_server)
    for spare in prepared:
        os.kill(spare, signal.SIGKILL)
    # The server is gone, but it had not the step: only its spare, which may have started it, so no launcher.
    with pytest.raises(HelperDiedError):
        await asyncio.wait_for(spawning, 20)
    assert not marker.exists()


async def test_a_step_in_a_lent_spare_ends_when_the_fork_server_is_sigkilled(ws, server):
    # No sweep of the server's runs (killed): the spare's own death signal stops its step (PDEATHSIG, spare.py). A
    # daemon's first step goes to a supervisor of its own (test_chaos_kills), so nothing else tried this path.
    await ws.bash("true", ws.default_policy())
    prepared = await idle_spares(server)
    proc = await spawn_sandboxed(["sleep", "60"], policy=ws.default_policy(), cwd=ws.work, env=ws.env)
    spare = next((spare for spare, tool in prepared.items() if tool == proc.pid), None)
    assert spare is not None and server.pid is not None, (proc.pid, prepared)
    os.kill(server.pid, signal.SIGKILL)
    assert await asyncio.wait_for(proc.wait(), 20) == -signal.SIGKILL and proc.report.get("orphaned"), proc.report
    assert process_gone(spare) and process_gone(proc.pid)


async def test_a_step_without_a_pid_namespace_never_gets_a_prepared_process(ws, server, monkeypatch):
    await ws.bash("true", ws.default_policy())
    prepared = await idle_spares(server)
    monkeypatch.setenv("OLLIE_SANDBOX_PIDNS", "0")  # the daemon's switch: such steps ask for no namespace
    for _ in range(3):
        proc = await spawn_sandboxed(["bash", "-c", "echo $$"], policy=ws.default_policy(), cwd=ws.work,
                                     env=ws.env)
        out, err, _ = await asyncio.wait_for(proc.communicate(), 20)
        assert out.decode().split() == [str(proc.pid)], (out, err)  # no namespace: its own host pid
        assert proc.pid not in prepared.values()
    assert not any(process_gone(pid, within=0.1) for pid in prepared.values()), "a prepared process was used"


async def test_a_spare_stopped_while_idle_takes_its_prepared_process_and_cgroup_along(ws, server):
    await ws.bash("true", ws.default_policy())
    spare, prepared = next(iter((await idle_spares(server, want=1)).items()))
    base = cgroup.base()
    assert base is not None and (Path(base) / str(spare)).is_dir()
    os.kill(spare, signal.SIGTERM)  # what the fork server sends each supervisor when the daemon has gone
    assert process_gone(prepared) and process_gone(spare)
    deadline = time.monotonic() + 30  # a bound for a loaded machine: it returns once the cgroup is gone
    while (Path(base) / str(spare)).exists():
        assert time.monotonic() < deadline, "the idle spare's cgroup was left behind"
        await asyncio.sleep(0.02)
    assert (await ws.bash("echo still works", ws.default_policy()))[1] == "still works\n"


async def test_closing_the_fork_server_ends_every_idle_spare_and_prepared_process(ws, server):
    await ws.bash("true", ws.default_policy())
    prepared = await idle_spares(server)
    await asyncio.to_thread(server.close)
    left = [pid for pid in [*prepared, *prepared.values()] if not process_gone(pid)]
    assert left == []



def _pages(pid: int) -> tuple[int, int]:
    """(present, present and still shared: copy-on-write) pages of `pid`'s private writable mappings."""
    present = shared = 0
    with open(f"/proc/{pid}/maps", "rb") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for line in maps:
            fields = line.split()
            if fields[1][:2] != b"rw" or fields[1][3:4] != b"p":
                continue
            start, end = (int(edge, 16) for edge in fields[0].split(b"-"))
            pagemap.seek(start // PAGE * 8)
            for entry in memoryview(pagemap.read((end - start) // PAGE * 8)).cast("Q"):
                if entry >> 63:
                    present += 1
                    shared += not entry >> 56 & 1  # not mapped by this process alone
    return present, shared


async def test_idle_spares_take_their_copy_on_write_faults_before_their_step(ws, server):
    """A spare and its prepared process copy what they share with the fork server while idle, not on the step's
    path (a few hundred faults between the hand-over and the tool's start)."""
    await ws.bash("true", ws.default_policy())
    spares = await idle_spares(server)
    processes = [*spares, *spares.values()]
    assert all(_pages(pid)[0] > 500 for pid in processes)  # an interpreter's heap: pagemap was read
    deadline = time.monotonic() + 15
    while left := {pid: shared for pid in processes if (shared := _pages(pid)[1]) > 16}:
        assert time.monotonic() < deadline, f"pages still shared with the fork server: {left}"
        await asyncio.sleep(0.02)
    assert (await ws.bash("echo still works", ws.default_policy()))[1] == "still works\n"


async def test_a_step_allowed_little_memory_never_goes_to_a_spare_that_copied_its_pages(ws, server):
    """Copied pages are charged to the spare's cgroup: such a spare takes no step with a small memory limit, and
    the spares made for such steps copy nothing."""
    await ws.bash("true", ws.default_policy())
    copied = await idle_spares(server)  # made for the default policy's limit (half the memory)
    small = dataclasses.replace(ws.default_policy(), max_memory=64 << 20)
    proc = await spawn_sandboxed(["true"], policy=small, cwd=ws.work, env=ws.env)
    assert await asyncio.wait_for(proc.wait(), 20) == 0 and proc.pid not in copied.values()
    prepared = await idle_spares(server)
    assert not set(prepared) & set(copied), "the spares that copied their pages stayed ready"
    assert all(_pages(pid)[1] > 500 for pid in [*prepared, *prepared.values()])  # still shared: nothing copied
    proc = await spawn_sandboxed(["true"], policy=small, cwd=ws.work, env=ws.env)
    assert await asyncio.wait_for(proc.wait(), 20) == 0 and proc.pid in prepared.values()

def _ended(pids: Iterable[int]) -> list[int]:
    """Those of `pids` that have ended, looked at once one has (within 30 s) and for a second more."""
    pids = list(pids)
    assert exited(pids, 30), f"none of {pids} ended"
    return [pid for pid in pids if process_gone(pid, within=1)]


def _spawn_as_net_kind(server) -> socket.socket:
    """Hand a spare lent to the daemon a `spawn ns net` whatever the request will be; our end of the step's socket."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    stdio = [os.open(os.devnull, os.O_RDWR) for _ in range(3)]
    try:
        with server._lock:
            assert server._lend(b"spawn ns net\n0 0", [theirs.fileno(), *stdio], 0)[0], "no spare was lent"
    finally:
        theirs.close()
        for fd in stdio:
            os.close(fd)
    return mine

async def test_a_request_without_a_namespace_sent_to_a_prepared_spare_is_refused_and_leaks_nothing(ws, server):
    await ws.bash("true", ws.default_policy())
    prepared = await idle_spares(server)
    ruleset, _ = ruleset_for(ws.default_policy(), landlock_abi())
    assert ruleset is not None
    request = {"argv": ["true"], "cwd": str(ws.work), "env": ws.env, "ruleset": {**ruleset, "pid_namespace": False},
               "limits": {}}
    mine = _spawn_as_net_kind(server)  # a daemon that got the kind wrong
    with pytest.raises(SandboxError, match="without a PID namespace"):
        await spawn_module._converse(mine, json.dumps(request).encode() + b"\n", "true")
    ended = _ended(prepared.values())
    assert len(ended) == 1, "the spare that took the request must discard its prepared process, and only it"


async def test_a_hostile_step_cannot_reach_the_idle_prepared_processes_waiting_for_the_next_steps(ws, server):
    # A hostile model's step knows the next steps will run in processes that already wait beside it: it tries to
    # signal every pid, to read their /proc entries and to find their sockets.
    await ws.bash("true", ws.default_policy())
    prepared = await idle_spares(server)
    attack = (
        f"for p in {' '.join(map(str, prepared.values()))} {' '.join(map(str, prepared))}; do "
        "kill -9 $p 2>/dev/null && echo KILLED-$p; "
        "cat /proc/$p/cmdline 2>/dev/null && echo READ-$p; done; "
        "kill -9 -1 2>/dev/null; "
        "ls -l /proc/*/fd 2>/dev/null | grep -c socket; echo done"
    )
    proc = await spawn_sandboxed(["bash", "-c", attack], policy=ws.default_policy(), cwd=ws.work, env=ws.env)
    out, err, _ = await asyncio.wait_for(proc.communicate(), 20)
    text = out.decode()
    assert "KILLED-" not in text and "READ-" not in text and text.split()[-2:] == ["0", "done"], (text, err)
    # The prepared processes the step did not run in are alive and untouched ...
    untouched = {spare: pid for spare, pid in prepared.items() if pid != proc.pid}
    for pid in untouched.values():
        assert not process_gone(pid, within=0.2), f"the hostile step killed the prepared process {pid}"
    # ... and the next step runs normally in one.
    nxt = await spawn_sandboxed(["bash", "-c", "echo $$"],
                                policy=ws.default_policy(), cwd=ws.work, env=ws.env)
    out2, err2, _ = await asyncio.wait_for(nxt.communicate(), 20)
    assert await nxt.wait() == 0, err2
    assert out2.decode().split()[0] == "2", out2


OPEN = ('filesystem: {rox: ["/usr", "/bin", "/lib", "/lib64"], ro: ["/etc", "/proc"], rw: ["{CWD}", "/dev/null"]}\n'
        "network: {mode: open}\n")


async def _net_namespace(ws, policy, hold: list[int] | None = None) -> tuple[int, str]:
    """(pid, the network namespace) of one step under `policy`, which has no capability left to gain either.

    `hold`: an fd on the step's namespace is kept there, so that the kernel cannot free it and give its inode
    number to a later namespace (which would look like one namespace shared by two steps)."""
    go = ws.work / "go"
    go.unlink(missing_ok=True)
    script = ("readlink /proc/self/ns/net; grep -E '^Cap(Bnd|Prm|Eff)' /proc/self/status;"
              " while [ ! -e go ]; do sleep 0.01; done")
    proc = await spawn_sandboxed(["bash", "-c", script], policy=policy, cwd=ws.work, env=ws.env)
    if hold is not None:
        hold.append(os.open(f"/proc/{proc.pid}/ns/net", os.O_RDONLY))
    go.touch()
    out, err, _ = await asyncio.wait_for(proc.communicate(), 20)
    assert await proc.wait() == 0, err
    namespace, *caps = out.decode().splitlines()
    # Locked ahead in the prepared process (its bounding set), dropped at the step: none at exec, root or not.
    assert len(caps) == 3 and all(line.endswith("\t0000000000000000") for line in caps), caps
    if hold is not None:
        assert os.readlink(f"/proc/self/fd/{hold[-1]}") == namespace, "the fd held is not the step's namespace"
    return proc.pid, namespace


async def test_each_proxy_step_gets_a_fresh_network_namespace_its_prepared_process_made(ws, server):
    await ws.bash("true", ws.default_policy())  # the default policy's steps go through the egress proxy
    seen: list[str] = []
    held: list[int] = []
    try:
        for _ in range(3):
            prepared = await idle_spares(server)
            pid, namespace = await _net_namespace(ws, ws.default_policy(), held)
            assert pid in prepared.values(), "the step did not run in a prepared process"
            seen.append(namespace)
    finally:
        for fd in held:
            os.close(fd)
    host = os.readlink("/proc/self/ns/net")
    assert len(set(seen)) == 3 and host not in seen, (host, seen)


async def test_steps_switching_between_proxy_and_open_each_get_the_network_they_asked_for(ws, server):
    # Spares are made for the last step's kind: after a switch, the ready ones made for the other kind go.
    host, open_policy = os.readlink("/proc/self/ns/net"), ws.policy(OPEN)
    await ws.bash("true", ws.default_policy())
    for policy, in_host in [(open_policy, True), (open_policy, True), (ws.default_policy(), False),
                            (open_policy, True)]:
        _, namespace = await _net_namespace(ws, policy)
        assert (namespace == host) == in_host, (namespace, host)
    prepared = await idle_spares(server)  # made for `open` steps now
    pid, namespace = await _net_namespace(ws, open_policy)
    assert pid in prepared.values() and namespace == host


async def test_a_step_without_the_proxy_sent_to_a_spare_that_made_a_network_namespace_is_refused(ws, server):
    await ws.bash("true", ws.default_policy())
    prepared = await idle_spares(server)
    ruleset, _ = ruleset_for(ws.default_policy(), landlock_abi())
    assert ruleset is not None and "netns" not in ruleset  # the daemon adds it with the step's proxy token
    request = {"argv": ["true"], "cwd": str(ws.work), "env": ws.env, "ruleset": ruleset, "limits": {}}
    mine = _spawn_as_net_kind(server)  # a daemon that got the kind wrong
    with pytest.raises(SandboxError, match="network namespace does not fit"):
        await spawn_module._converse(mine, json.dumps(request).encode() + b"\n", "true")
    ended = _ended(prepared.values())
    assert len(ended) == 1, "the spare that took the request must discard its prepared process, and only it"


LEAVE_A_LISTENER = """
import os, socket, sys
server = socket.create_server(("127.0.0.1", 8123))
if os.fork() == 0:  # a detached child keeps the listener for a later step to find
    os.setsid()
    os.closerange(0, 3)
    while True:
        server.accept()[0].sendall(b"left behind")
socket.create_connection(("127.0.0.1", 8123)).close()
print("listening")
"""

FIND_IT = """
import socket
try:
    print(socket.create_connection(("127.0.0.1", 8123), timeout=5).recv(64))
except OSError as exc:
    print("refused", exc.errno)
print(sum(":1FBB " in line for line in open("/proc/net/tcp")))
"""


async def test_a_listener_a_step_leaves_behind_is_not_there_for_the_next_step(ws, server):
    # Each proxy step's namespace is made ahead by a prepared process: a step that leaves a detached server on
    # its loopback must not be reachable from a later one (same namespace reused, or the process surviving).
    await ws.bash("true", ws.default_policy())
    for script, expected in ((LEAVE_A_LISTENER, "listening"), (FIND_IT, "refused 111\n0")):
        await idle_spares(server)
        proc = await spawn_sandboxed(["python3", "-I", "-S", "-c", script], policy=ws.default_policy(), cwd=ws.work,
                                     env=ws.env)
        out, err, _ = await asyncio.wait_for(proc.communicate(), 20)
        assert out.decode().strip() == expected, (out, err)


READ = {"x86_64": "0", "aarch64": "63"}[os.uname().machine]


async def _step_past_its_pid(ws, server) -> tuple[SandboxedProcess, int]:
    """A prepared step waiting for a line on its stdin, and its supervisor, blocked once the daemon has the pid
    (reading its init's report)."""
    await ws.bash("true", ws.default_policy())
    prepared = await idle_spares(server)
    proc = await spawn_sandboxed(["bash", "-c", "read line; exit 7"], policy=ws.default_policy(),
                                 cwd=ws.work, env=ws.env, stdin_pipe=True)
    supervisor = next((spare for spare, tool in prepared.items() if tool == proc.pid), 0)
    assert supervisor, (proc.pid, prepared)
    deadline = time.monotonic() + 20
    while not _blocked_in(supervisor, READ):
        assert time.monotonic() < deadline, "the supervisor never waited for its init's report"
        await asyncio.sleep(0.01)
    return proc, supervisor


async def test_a_steps_status_reaches_the_daemon_from_its_init_without_waking_its_supervisor(ws, server):
    # The hop a step's end took through its supervisor is gone: the init, which has the daemon's socket, says
    # the status itself once nothing else is left (the supervisor only sweeps after it, off the step's path).
    proc, supervisor = await _step_past_its_pid(ws, server)
    os.kill(supervisor, signal.SIGSTOP)
    try:
        assert proc.stdin_fd is not None
        os.write(proc.stdin_fd, b"go\n")
        os.close(proc.stdin_fd)
        await asyncio.wait_for(proc.communicate(), 10)
        assert await proc.wait() == 7
    finally:
        os.kill(supervisor, signal.SIGCONT)
    assert process_gone(supervisor) and process_gone(proc.pid)  # it swept and exited after all


async def test_a_step_whose_supervisor_dies_after_its_pid_ends_unreported_and_leaves_nothing(ws, server):
    # Its init holds the daemon's socket too: it must die with the supervisor, or the daemon would wait forever.
    proc, supervisor = await _step_past_its_pid(ws, server)
    os.kill(supervisor, signal.SIGKILL)
    with pytest.raises(HelperDiedError):
        await asyncio.wait_for(proc.wait(), 10)
    assert process_gone(proc.pid)
    proc.close()


async def test_a_step_its_init_reports_keeps_its_oom_kill(ws, server):
    small = dataclasses.replace(ws.default_policy(), max_memory=64 << 20)
    await ws.bash("true", ws.default_policy())
    copied = await idle_spares(server)
    await ws.bash("true", small)  # the next spares are made for such steps: these take no such step
    prepared = await idle_spares(server)
    assert not set(prepared) & set(copied)
    proc = await spawn_sandboxed(["python3", "-c", "x = bytearray(256 << 20)"], policy=small, cwd=ws.work,
                                 env=ws.env)
    await asyncio.wait_for(proc.communicate(), 20)
    assert proc.pid in prepared.values(), (proc.pid, prepared)
    assert (await proc.wait(), proc.report.get("oom")) == (-signal.SIGKILL, True), proc.report


async def test_a_step_starts_from_the_daemons_go_without_waking_its_spare(ws, server):
    # The daemon's go reaches the prepared process itself (the spare's job socket is its own), so the step starts
    # while the spare sleeps; the spare answers for it (the pid, the sweep) once it runs again.
    await ws.bash("true", ws.default_policy())
    prepared = await idle_spares(server)
    for spare in prepared:
        os.kill(spare, signal.SIGSTOP)
    marker = ws.work / "ran"
    try:
        spawning = asyncio.ensure_future(spawn_sandboxed(["bash", "-c", f"echo ran > {marker}"],
                                                         policy=ws.default_policy(), cwd=ws.work, env=ws.env))
        deadline = time.monotonic() + 20
        while not marker.exists():
            assert time.monotonic() < deadline and not spawning.done(), "the step waited for its spare"
            await asyncio.sleep(0.01)
    finally:
        for spare in prepared:
            os.kill(spare, signal.SIGCONT)
    proc = await asyncio.wait_for(spawning, 20)
    await asyncio.wait_for(proc.communicate(), 20)
    assert (await proc.wait(), proc.pid in prepared.values(), marker.read_text()) == (0, True, "ran\n")


async def test_a_step_whose_prepared_process_died_before_taking_it_never_runs_and_leaves_nothing(ws, server):
    await ws.bash("true", ws.default_policy())
    prepared = await idle_spares(server)
    for tool in prepared.values():
        os.kill(tool, signal.SIGSTOP)  # the go waits on its socket, unread
    marker, spawning = await step_taken_by_a_lent_spare(ws, server)
    for tool in prepared.values():
        os.kill(tool, signal.SIGKILL)
    with pytest.raises(HelperDiedError):  # its spare, which may not run it again, says nothing and exits
        await asyncio.wait_for(spawning, 20)
    assert all(process_gone(pid) for pid in [*prepared, *prepared.values()]) and not marker.exists()
