"""spawn_sandboxed: process groups, kill on timeout/cancel, output caps, stdin, exit codes, fallbacks."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ollie.sandbox import cgroup
from ollie.sandbox import spawn as spawn_module
from ollie.sandbox.errors import SandboxError, SandboxUnavailableError
from ollie.sandbox.rules import landlock_abi
from ollie.sandbox.spawn import ForkServer, spawn_sandboxed
from tests.procs import children_of, host_pid, process_gone, processes_with

needs_landlock = pytest.mark.skipif(landlock_abi() < 1, reason="needs a kernel with Landlock")


async def wait_for_file(path: Path, within: float = 30.0) -> str:
    """The file's text once it has some."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


@pytest.mark.parametrize("sandboxed", [True, False])
async def test_timeout_kills_the_grandchild(ws, sandboxed):
    policy = ws.default_policy() if sandboxed else None
    proc = await spawn_sandboxed(["bash", "-c", "sleep 30 & echo $! > gc.pid; wait"], policy=policy,
                                 cwd=ws.work, env=ws.env)
    grandchild = host_pid(proc.pid, int(await wait_for_file(ws.work / "gc.pid")))
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(proc.communicate(limit_bytes=1000), 0.2)
    assert await asyncio.wait_for(proc.wait(), 30) == -9
    assert process_gone(grandchild)
    proc.kill_group()  # idempotent: the group is already gone


async def test_cancelling_wait_kills_the_group(ws):
    proc = await spawn_sandboxed(["bash", "-c", "sleep 30 & echo $! > gc.pid; wait"], policy=ws.default_policy(),
                                 cwd=ws.work, env=ws.env)
    grandchild = host_pid(proc.pid, int(await wait_for_file(ws.work / "gc.pid")))
    task = asyncio.ensure_future(proc.wait())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert process_gone(proc.pid) and process_gone(grandchild)
    proc.close()


async def test_child_leads_its_own_session_and_group(ws):
    code = "import os; print(os.getpid(), os.getpgid(0), os.getsid(0))"
    proc = await spawn_sandboxed(["python3", "-I", "-S", "-c", code], policy=None, cwd=ws.work, env=ws.env)
    out, _, _ = await proc.communicate()
    assert out.decode().split() == [str(proc.pid)] * 3
    assert proc.pgid == proc.pid and proc.pid != os.getpid()


@needs_landlock
async def test_a_sandboxed_step_is_pid_2_under_its_init_which_leads_the_group(ws):
    # The reported pid is the init (PID 1 of the step's namespace): its group holds the tool, so a group kill ends both.
    code = "import os; print(os.getpid(), os.getppid(), os.getpgid(0), os.getsid(0))"
    proc = await spawn_sandboxed(["python3", "-I", "-S", "-c", code], policy=ws.default_policy(), cwd=ws.work,
                                 env=ws.env)
    out, _, _ = await proc.communicate()
    assert out.decode().split() == ["2", "1", "1", "1"]
    assert proc.pgid == proc.pid and proc.pid != os.getpid()


@needs_landlock
async def test_a_group_kill_of_the_reported_pid_ends_the_whole_namespace(ws):
    proc = await spawn_sandboxed(["bash", "-c", "setsid sleep 30 & echo $! > gc.pid; wait"],
                                 policy=ws.default_policy(), cwd=ws.work, env=ws.env)
    escapee = host_pid(proc.pid, int(await wait_for_file(ws.work / "gc.pid")))
    proc.kill_group()  # the setsid sleep is outside the group: the init's death takes it along
    assert await asyncio.wait_for(proc.wait(), 30) == -9
    assert process_gone(escapee)


async def test_output_is_capped_and_drained(ws):
    proc = await spawn_sandboxed(["bash", "-c", "head -c 300000 /dev/zero; echo done >&2"],
                                 policy=ws.default_policy(), cwd=ws.work, env=ws.env)
    out, err, truncated = await asyncio.wait_for(proc.communicate(limit_bytes=1000), 30)
    assert (len(out), err, truncated) == (1000, b"done\n", True)
    assert await proc.wait() == 0


async def test_small_output_is_not_truncated(ws):
    status, out, err = await ws.bash("echo out; echo err >&2", ws.default_policy())
    assert (status, out, err) == (0, "out\n", "err\n")


async def test_stdin_is_fed_and_large_input_does_not_deadlock(ws):
    data = os.urandom(300_000)
    proc = await spawn_sandboxed(["cat"], policy=ws.default_policy(), cwd=ws.work, env=ws.env, stdin=data)
    out, _, truncated = await asyncio.wait_for(proc.communicate(limit_bytes=1 << 20), 30)
    assert out == data and not truncated


async def test_stdin_ignored_by_the_child_is_fine(ws):
    proc = await spawn_sandboxed(["true"], policy=ws.default_policy(), cwd=ws.work, env=ws.env,
                                 stdin=b"x" * 500_000)
    await asyncio.wait_for(proc.communicate(), 30)
    assert await proc.wait() == 0


async def test_exit_status_and_signal(ws):
    assert (await ws.bash("exit 3", ws.default_policy()))[0] == 3
    assert (await ws.bash("kill -TERM $$", ws.default_policy()))[0] == -15


async def test_environment_is_exactly_what_was_given_plus_policy_env_and_paths(ws):
    policy = ws.policy('filesystem: {rox: ["/usr", "/bin", "/lib", "/lib64"]}\n'
                       'env: ["GREETING=hi {CWD}", "PATH"]\nnetwork: {mode: open}\n')  # proxy adds *_PROXY
    proc = await spawn_sandboxed(["env"], policy=policy, cwd=ws.work, env={"PATH": "/usr/bin", "ONLY": "1"})
    out, _, _ = await proc.communicate()
    seen = sorted(out.decode().splitlines())
    paths = [line for line in seen if line.startswith("OLLIE_SANDBOX_PATHS=")]  # its paths' memfd (forkserver.py)
    assert len(paths) == 1 and paths[0].split("=")[1].isdigit(), seen
    assert [line for line in seen if line not in paths] == [
        "GREETING=hi " + str(ws.work), "ONLY=1", f"PATH={os.environ['PATH']}"]


async def test_missing_program_is_a_clear_error(ws):
    with pytest.raises(FileNotFoundError, match="no-such-interpreter"):
        await spawn_sandboxed(["no-such-interpreter", "-c", "1"], policy=ws.default_policy(), cwd=ws.work,
                              env=ws.env)
    with pytest.raises(FileNotFoundError):
        await spawn_sandboxed(["true"], policy=None, cwd=ws.work / "missing", env=ws.env)


async def test_concurrent_spawns_do_not_mix_up(ws):
    async def one(i: int) -> str:
        proc = await spawn_sandboxed(["bash", "-c", f"sleep 0.0{i % 3}; echo {i}"], policy=ws.default_policy(),
                                     cwd=ws.work, env=ws.env)
        out, _, _ = await proc.communicate()
        return out.decode().strip()

    assert await asyncio.gather(*(one(i) for i in range(12))) == [str(i) for i in range(12)]


async def test_spawns_from_another_threads_loop(ws):
    def in_thread() -> tuple[int, str, str]:
        return asyncio.run(ws.bash(f"echo hi; echo x > {ws.outside}/new", ws.default_policy()))

    status, out, err = await asyncio.to_thread(in_thread)
    assert out == "hi\n" and "Read-only file system" in err  # outside the writable paths: a read-only view
    assert not (ws.outside / "new").exists()


async def test_fork_server_is_restarted_after_it_dies(ws):
    await ws.bash("true", None)
    server = spawn_module.fork_server()
    old = server.pid
    assert old is not None
    os.kill(old, 9)
    assert process_gone(old)
    status, out, _ = await ws.bash("echo back", ws.default_policy())
    assert (status, out) == (0, "back\n")
    assert server.pid not in (None, old)


@needs_landlock
async def test_launcher_fallback_still_enforces_the_policy(ws, monkeypatch, tmp_path):
    broken = tmp_path / "broken_server.py"
    broken.write_text("raise SystemExit(3)\n")
    server = ForkServer(broken)
    monkeypatch.setattr(spawn_module, "_server", server)
    try:
        status, out, err = await ws.bash(f"echo hi; echo x > {ws.outside}/new; echo y > inside", ws.default_policy())
        assert out == "hi\n" and "Read-only file system" in err
        assert not (ws.outside / "new").exists() and (ws.work / "inside").exists()
        assert (await ws.bash("exit 4", None))[0] == 4
    finally:
        server.close()


def test_the_launcher_answers_a_bad_request():
    """The per-spawn launcher refuses a request that is no JSON as a supervisor does, with an answer (it named a
    function the fork server lacks, and died without one)."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with mine:
        with theirs:
            launcher = subprocess.Popen([sys.executable, "-I", "-S", str(spawn_module.FORK_SERVER), "--launch",
                                         str(theirs.fileno()), str(os.getpid())], pass_fds=[theirs.fileno()])
        mine.sendall(b"not json\n")
        answer = mine.makefile("rb").readline()
        assert launcher.wait(30) == 0
    assert json.loads(answer)["error"]["stage"] == "request", answer


async def test_no_landlock_best_effort_runs_unsandboxed_with_a_warning(ws, monkeypatch):
    monkeypatch.setenv("OLLIE_LANDLOCK_ABI", "0")
    proc = await spawn_sandboxed(["bash", "-c", f"echo x > {ws.outside}/new"], policy=ws.default_policy(),
                                 cwd=ws.work, env=ws.env)
    await proc.communicate()
    assert await proc.wait() == 0
    assert proc.warnings == ["Landlock unavailable: running unsandboxed (best_effort)"]
    assert (ws.outside / "new").exists()


async def test_no_landlock_without_best_effort_refuses(ws, monkeypatch):
    monkeypatch.setenv("OLLIE_LANDLOCK_ABI", "0")
    policy = ws.policy("general: {best_effort: false}\nfilesystem: {rw: ['{CWD}']}\n")
    with pytest.raises(SandboxUnavailableError, match="best_effort: false"):
        await spawn_sandboxed(["bash", "-c", "echo x > ran"], policy=policy, cwd=ws.work, env=ws.env)
    assert not (ws.work / "ran").exists()


@needs_landlock
async def test_old_abi_without_tcp_rules_warns_or_refuses(ws, monkeypatch):
    monkeypatch.setenv("OLLIE_LANDLOCK_ABI", "3")
    lenient = ws.policy("filesystem: {rox: ['/usr', '/lib', '/lib64']}\nnetwork: {enabled: false}\n")
    proc = await spawn_sandboxed(["true"], policy=lenient, cwd=ws.work, env=ws.env)
    await proc.communicate()
    assert proc.warnings == ["Landlock ABI 3 cannot restrict TCP (needs 4): network unrestricted (best_effort)"]
    strict = ws.policy("general: {best_effort: false}\nnetwork: {enabled: false}\n", name="strict")
    with pytest.raises(SandboxUnavailableError, match="cannot restrict TCP"):
        await spawn_sandboxed(["true"], policy=strict, cwd=ws.work, env=ws.env)


async def test_cancelling_a_spawn_in_flight_leaves_no_orphan(ws):
    marker = f"ollie-orphan-check-{os.getpid()}-{time.monotonic_ns()}"
    policy = ws.default_policy()
    for i in range(24):
        try:
            proc = await asyncio.wait_for(spawn_sandboxed(["bash", "-c", "sleep 30; exit", marker], policy=policy,
                                                          cwd=ws.work, env=ws.env), 0.0004 * (i % 8))
        except TimeoutError:
            continue
        proc.kill_group()
        await proc.wait()
        proc.close()
    # No waiting here: a cancelled spawn raises only once its step's processes are dead (its supervisor runs
    # beside the others, so nothing else says when it got to start the tool).
    assert processes_with(marker) == []


@pytest.mark.parametrize("sandboxed", [True, False])
async def test_child_inherits_only_its_stdio(ws, sandboxed):
    # And, under a policy, the sealed memfd of its paths that $OLLIE_SANDBOX_PATHS names (forkserver.py).
    code = ("import os; paths = os.environ.get('OLLIE_SANDBOX_PATHS'); "
            "print(sorted(int(fd) for fd in os.listdir('/proc/self/fd') if fd != paths), "
            "paths and os.readlink(f'/proc/self/fd/{paths}').startswith('/memfd:OLLIE_SANDBOX_PATHS'))")
    policy = ws.default_policy() if sandboxed else None

    async def fds_seen() -> str:
        proc = await spawn_sandboxed(["python3", "-I", "-S", "-c", code], policy=policy, cwd=ws.work, env=ws.env)
        out, err, _ = await proc.communicate()
        return out.decode().strip() or err.decode()

    results = await asyncio.gather(*(fds_seen() for _ in range(6)))
    assert results == [f"[0, 1, 2, 3] {sandboxed or None}"] * 6  # 3 is listdir's own


# Its sleep's argument marks it: from inside the step's PID namespace, $$ is not the host's pid.
ESCAPEE = ("setsid sh -c 'exec >/dev/null 2>&1 </dev/null; echo $$ > escapee.pid; exec sleep 1000.{mark}' & "
           "while [ ! -s escapee.pid ]; do sleep 0.01; done")
# At most 2**7 processes if nothing stops it; prints "limited" once a fork fails.
BOUNDED_BOMB = ("import os, time\nfor _ in range(7):\n    try:\n        os.fork()\n    except OSError:\n"
                "        print('limited', flush=True)\n        break\ntime.sleep(0.5)\n")


def low_limit(ws, limit: int):
    """The default policy with `limits.processes: limit`."""
    bundled = (Path(__file__).resolve().parents[2] / "sandbox.yaml").read_text()
    return ws.policy(bundled.replace("processes: 512", f"processes: {limit}"), name="low")


@pytest.mark.parametrize("fallback", [False, True])
async def test_a_step_is_done_only_once_its_setsid_escapee_is_dead(ws, monkeypatch, tmp_path, fallback):
    if fallback:
        broken = tmp_path / "broken_server.py"
        broken.write_text("raise SystemExit(3)\n")
        server = ForkServer(broken)
        monkeypatch.setattr(spawn_module, "_server", server)
    mark = time.monotonic_ns()
    status, _, err = await ws.bash(ESCAPEE.format(mark=mark), ws.default_policy())
    assert status == 0 and (ws.work / "escapee.pid").read_text().strip(), err
    assert processes_with(f"1000.{mark}") == [], "the escapee is still there after the step was reported done"


@pytest.mark.parametrize("fallback", [False, True])
async def test_the_policy_process_limit_stops_a_fork_bomb(ws, monkeypatch, tmp_path, fallback):
    if fallback:
        broken = tmp_path / "broken_server.py"
        broken.write_text("raise SystemExit(3)\n")
        monkeypatch.setattr(spawn_module, "_server", ForkServer(broken))
    status, out, err = await ws.run(["python3", "-I", "-S", "-c", BOUNDED_BOMB], low_limit(ws, 8))
    assert "limited" in out, (status, out, err)
    status, out, _ = await ws.bash("seq 1 50 | sort -rn | head -2 | tr '\\n' ' '", low_limit(ws, 8))
    assert (status, out) == (0, "50 49 ")


def pids_cgroup_of(pid: int) -> Path | None:
    """The pids cgroup directory of a running process (v1 here), or None without one."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(","):
            return Path("/sys/fs/cgroup/pids") / path.lstrip("/")
    return None


@pytest.mark.skipif(cgroup.base() is None, reason="needs a writable pids cgroup (v1, or v2 with pids delegated)")
async def test_each_step_gets_its_own_pids_cgroup_and_it_is_removed(ws):
    seen = []
    for limit in (8, 9, 10):
        # Runs until killed: a step that ended on its own before /proc was read had no cgroup left to read.
        proc = await spawn_sandboxed(["sleep", "60"], policy=low_limit(ws, limit), cwd=ws.work, env=ws.env)
        group = pids_cgroup_of(proc.pid)
        assert group is not None and group.name.isdigit() and group.parent.name == "ollie", group
        # The step's init (PID 1 of its namespace) takes one slot, and a spare supervisor, a member of its
        # step's cgroup itself, another.
        assert int((group / "pids.max").read_text()) in (limit + 1, limit + 2)
        seen.append(group)
        proc.kill_group()
        await asyncio.wait_for(proc.communicate(), 10)
    assert len(set(seen)) == 3
    await asyncio.to_thread(spawn_module.fork_server().close)  # reaps its supervisors and removes their cgroups
    assert [group for group in seen if group.exists()] == []


def _cgroup_of(pid: int, controller: str) -> Path:
    """The v1 `controller` cgroup directory of a running process."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            parent, _, step = path.rpartition("/")
            assert parent.endswith("/ollie"), path
            return Path(cgroup.bases()[controller]) / step
    raise AssertionError(f"{pid} has no {controller} cgroup")


def _status(pid: int) -> str:
    """/proc/PID/status, or "" once the process is gone (a spare let go may end while it is looked at)."""
    try:
        return Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return ""


def _spares_ready(within: float = 60.0) -> None:
    """Wait until the fork server has two idle spares, each with its prepared process (never confined yet)."""
    server = spawn_module.fork_server().pid
    deadline = time.monotonic() + within
    while True:
        assert server is not None
        ready = [spare for spare in children_of(server) if len(kids := children_of(spare)) == 1
                 and "NoNewPrivs:\t0" in _status(kids[0])]
        if len(ready) >= 2:
            return
        assert time.monotonic() < deadline, "no two idle spares"
        time.sleep(0.02)


@pytest.mark.skipif(cgroup.base() is None or "memory" not in cgroup.bases() or cgroup._is_v2(cgroup.base() or ""),
                    reason="needs writable v1 pids and memory cgroups")
async def test_each_step_gets_its_own_limits_though_spares_set_the_last_steps_ahead(ws):
    # Spares made after a step set its limits on their cgroups ahead; a step takes the oldest ready spare (made
    # two steps before): the 4th step raises the limits set ahead (v1 refuses a memory limit above the
    # memory+swap one unless that is lifted first), the 6th lowers them, the others keep them.
    bundled = (Path(__file__).resolve().parents[2] / "sandbox.yaml").read_text()
    for processes, memory in ((8, 64), (8, 64), (8, 64), (20, 256), (8, 64), (8, 64)):
        text = bundled.replace("processes: 512", f"processes: {processes}").replace("memory: 50%", f"memory: {memory}M")
        proc = await spawn_sandboxed(["sleep", "60"], policy=ws.policy(text, name="limits"), cwd=ws.work,
                                     env=ws.env)
        pids, mem = _cgroup_of(proc.pid, "pids"), _cgroup_of(proc.pid, "memory")
        assert int((pids / "pids.max").read_text()) in (processes + 1, processes + 2)
        for name in ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
            if (mem / name).exists():
                assert int((mem / name).read_text()) == memory << 20, (name, processes, memory)
        proc.kill_group()
        await asyncio.wait_for(proc.communicate(), 10)
        await asyncio.to_thread(_spares_ready)  # made for this step's limits


def test_the_process_limit_is_a_policy_key_with_a_default(ws):
    from ollie.errors import ConfigError

    assert ws.default_policy().max_processes == 512
    assert ws.policy("limits: {processes: 40}\n").max_processes == 40
    assert ws.policy("filesystem: {ro: ['/etc']}\n").max_processes == 512
    with pytest.raises(ConfigError, match="limits.processes"):
        ws.policy("limits: {processes: 0}\n")


# At its first instruction the tool takes every descriptor of its init (pidfd_getfd needs ptrace access only: the
# filter denies ptrace itself) and sends a forged pid and status on each socket it got.
GRAB_INIT_FDS = r"""
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int init = syscall(SYS_pidfd_open, 1, 0), grabbed = 0;
    char forged[64];
    snprintf(forged, sizeof forged, "{\"pid\": %s}\n{\"status\": 0}\n", argv[1]);
    for (int fd = 0; fd < 64 && init >= 0; fd++) {
        struct stat st;
        int mine = syscall(SYS_pidfd_getfd, init, fd, 0);
        if (mine < 0) continue;
        grabbed++;
        if (fstat(mine, &st) == 0 && S_ISSOCK(st.st_mode)) send(mine, forged, strlen(forged), MSG_NOSIGNAL);
    }
    printf("grabbed %d\n", grabbed);
    return 3;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
async def test_a_tool_cannot_take_its_inits_descriptors_and_forge_the_pid_the_daemon_kills(ws, tmp_path):
    # The init made itself undumpable only after spawning the tool: a tool that acts at once took the daemon's
    # socket from it (a spare's init holds it; a supervisor's init has it until it closes what it inherited) in
    # about every fourth step, and sent its own pid line first. The daemon took that pid for the step's group,
    # SIGKILLed on a timeout or cancel (as root `{"pid": 1}` is kill(-1): every process), and its forged status.
    (tmp_path / "grab.c").write_text(GRAB_INIT_FDS)
    subprocess.run(["gcc", "-O2", "-static", "-o", str(ws.work / "grab"), str(tmp_path / "grab.c")], check=True)
    victim = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        results = []
        for _ in range(40):
            proc = await spawn_sandboxed([str(ws.work / "grab"), str(victim.pid)], policy=ws.default_policy(),
                                         cwd=ws.work, env=ws.env)
            out, err, _ = await asyncio.wait_for(proc.communicate(), 20)
            results.append((out.decode(), await proc.wait()))
            proc.kill_group()  # what a timeout or a cancel does
        assert victim.poll() is None, "the daemon SIGKILLed a process group the step named"
        assert results == [("grabbed 0\n", 3)] * 40, results
    finally:
        victim.kill()
        victim.wait()


@pytest.mark.parametrize("reply", [b"{}\n", b'{"pid": "7"}\n', b'{"pid": 0}\n', b'{"pid": true}\n', b"[7]\n",
                                   b"not json\n", b'{"error": "no stage"}\n'])
async def test_a_malformed_reply_to_a_spawn_is_an_error_for_that_step_and_ends_its_connection(reply):
    # Only ollie's own processes answer on a spawn's socket, but a reply without a pid was a KeyError out of the
    # spawn (a traceback, not the step's error), and a pid of 0 the daemon's own process group to kill.
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with theirs:
        theirs.setblocking(False)
        theirs.sendall(reply)  # the supervisor's answer, waiting before the request is written
        with pytest.raises(SandboxError, match="malformed reply"):
            await spawn_module._converse(mine, b'{"argv": ["true"]}\n', "true")
        loop = asyncio.get_running_loop()
        assert await asyncio.wait_for(loop.sock_recv(theirs, 100), 10) == b'{"argv": ["true"]}\n'
        # Closed: a supervisor seeing EOF kills the step it may have started.
        assert await asyncio.wait_for(loop.sock_recv(theirs, 100), 10) == b""
