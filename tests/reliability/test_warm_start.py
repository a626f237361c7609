"""Warm start (`ollie-lsp --warm`): a preloader forks each client's daemon; nothing crosses a sandbox or a user.

Real processes throughout: the launcher an editor would start, the preloader it starts, the forked
daemons, a real sandboxed step, and raw clients that try the preloader's socket as an attacker would.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.lspwire import LSPProcess
from ollie.testing import Reply
from ollie_lsp import warm
from tests.procs import children_of, new_mark, process_gone, processes_with, wait_until
from tests.reliability.conftest import DAEMON, daemon_env

GONE_WITHIN_S = 6.0
PR_SET_NO_NEW_PRIVS = 38


def no_new_privs() -> None:
    """preexec_fn: the child runs under no_new_privs, as every process in ollie's sandbox does."""
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private XDG_RUNTIME_DIR; every preloader started under it is ended afterwards."""
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    yield run
    for pid in processes_with(str(run)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def launch(workdir: Path, runtime: Path) -> Iterator[Any]:
    """`launch(srv, **env)`: an initialized `ollie-lsp --warm` (what the editor starts); killed at teardown."""
    started: list[LSPProcess] = []

    def make(srv: Any, *, preexec_fn: Any = None, **extra: str) -> LSPProcess:
        client = LSPProcess([*DAEMON, "--warm"], env=daemon_env({**srv.env(), **extra}), preexec_fn=preexec_fn)
        started.append(client)
        client.initialize(workdir)
        return client

    yield make
    for client in started:
        if client.alive():
            client.proc.kill()
            client.proc.wait(10)


def preloader_pid(runtime: Path) -> int | None:
    """The pid of the preloader listening under `runtime`, once it listens."""
    sockets = list((runtime / "ollie").glob("warm-*.sock"))
    if not sockets:
        return None
    found = [pid for pid in processes_with(str(sockets[0])) if b"ollie_lsp.preloader" in _cmdline(pid)]
    return found[0] if found else None


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def started_preloader(launch: Any, scripted_llm: Any, runtime: Path) -> int:
    """A first (cold) start, which leaves a listening preloader behind; its pid."""
    first = launch(scripted_llm("openai"))
    wait_until(lambda: preloader_pid(runtime) is not None, "the first start left no listening preloader")
    first.shutdown()
    pid = preloader_pid(runtime)
    assert pid is not None
    return pid


def turn_text(client: LSPProcess, text: str) -> str:
    result = client.request("ollie/submit", {"text": text}, timeout=60)
    assert result["stop"] == "end", result
    return result["reply"]


def test_a_warm_start_is_a_fork_of_the_preloader_with_the_clients_own_environment(
        launch, scripted_llm, runtime, workdir):
    preloader = started_preloader(launch, scripted_llm, runtime)
    # The preloader was started with the first client's environment: the second client's must win.
    srv = scripted_llm("openai").script(Reply.text("from the second server"))
    client = launch(srv, OLLIE_LSP_COALESCE_MS="0")
    daemons = children_of(preloader)
    assert len(daemons) == 1, "the second start did not fork the preloader"
    daemon = daemons[0]
    assert daemon not in children_of(client.pid)
    assert Path(os.readlink(f"/proc/{daemon}/cwd")) == Path.cwd()
    assert turn_text(client, "hi") == "from the second server"
    assert srv.chat_requests, "the turn did not reach the client's own backend"
    assert client.shutdown() == 0, client.stderr_text()[-2000:]
    assert process_gone(daemon, within=GONE_WITHIN_S), "the daemon outlived its launcher's exit"
    assert preloader_pid(runtime) == preloader, "the preloader should stay for the next start"


def test_killing_the_launcher_ends_its_daemon_and_the_daemons_steps(launch, scripted_llm, runtime):
    preloader = started_preloader(launch, scripted_llm, runtime)
    mark = new_mark()
    srv = scripted_llm("openai").script(Reply.tool_calls(("execute_code", {
        "steps": [{"code": f"exec sleep 60.{mark}"}], "timeout": 120})))
    client = launch(srv)
    (daemon,) = children_of(preloader)
    client.request_async("ollie/submit", {"text": "run the long step"})
    wait_until(lambda: processes_with(mark), "the step never started")
    client.proc.kill()  # the editor's child killed: SIGKILL, nothing forwarded
    assert process_gone(daemon, within=GONE_WITHIN_S), "the daemon outlived its killed launcher"
    wait_until(lambda: not processes_with(mark), "the step outlived the daemon", timeout=3.0)
    assert preloader_pid(runtime) == preloader


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_the_launcher_reaches_the_daemon_and_its_status_comes_back(
        launch, scripted_llm, runtime, signum):
    preloader = started_preloader(launch, scripted_llm, runtime)
    client = launch(scripted_llm("openai"))
    (daemon,) = children_of(preloader)
    os.kill(client.pid, signum)
    # As when the client leaves: the daemon closes its sessions and ends with 0, and so does the launcher.
    assert client.proc.wait(GONE_WITHIN_S) == 0, client.stderr_text()[-2000:]
    assert process_gone(daemon, within=2.0)


def test_a_confined_launcher_starts_cold_and_never_reaches_the_preloader(launch, scripted_llm, runtime):
    preloader = started_preloader(launch, scripted_llm, runtime)
    srv = scripted_llm("openai").script(Reply.text("cold"))
    client = launch(srv, preexec_fn=no_new_privs)
    assert children_of(preloader) == [], "a process under no_new_privs got a daemon from the preloader"
    assert turn_text(client, "hi") == "cold"  # served by the launcher itself
    client.shutdown()


GOOD_BODY = json.dumps({"argv": ["--stdio"], "cwd": "/", "env": {}, "umask": 18}).encode()


def raw_request(path: Path, *, preexec_fn: Any = None, body: bytes = GOOD_BODY) -> str:
    """Connect to the preloader as a plain program would and hand it stdio and `body`; the first line it answers."""
    code = f"""
import json, os, socket, struct, sys
sock = socket.socket(socket.AF_UNIX)
sock.connect({str(path)!r})
body = {body!r}
try:
    socket.send_fds(sock, [struct.pack("!I", len(body)) + body], [0, 1, 2])
except BrokenPipeError:  # refused at once, before the request was read
    pass
print(sock.makefile().readline().strip() or "EOF", file=sys.stderr)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                          preexec_fn=preexec_fn, stdin=subprocess.DEVNULL)
    return done.stderr.strip().splitlines()[-1]


def test_the_preloader_refuses_a_process_under_no_new_privs(launch, scripted_llm, runtime):
    preloader = started_preloader(launch, scripted_llm, runtime)
    path = next((runtime / "ollie").glob("warm-*.sock"))
    answer = raw_request(path, preexec_fn=no_new_privs)
    assert answer.startswith("refused") and "no_new_privs" in answer, answer
    assert children_of(preloader) == []
    # The same request from a plain process is served (so the refusal above is the check, not a broken request).
    assert raw_request(path).startswith("pid ")


def recording_listener(path: Path, got: Path, *, preexec_fn: Any = None) -> subprocess.Popen[str]:
    """A process listening on `path`, once it listens; it writes what its first connection sent to `got`."""
    listener = subprocess.Popen([sys.executable, "-c", f"""
import socket
listener = socket.socket(socket.AF_UNIX)
listener.bind({str(path)!r})
listener.listen(1)
print("listening", flush=True)
conn, _ = listener.accept()
msg, fds, _, _ = socket.recv_fds(conn, 65536, 3)
open({str(got)!r}, "w").write(f"{{len(fds)}} fds {{len(msg)}} bytes")
"""], stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=preexec_fn, text=True)
    assert listener.stdout is not None and listener.stdout.readline().strip() == "listening", listener.communicate()
    return listener


def test_a_launcher_refuses_a_preloader_under_no_new_privs(launch, scripted_llm, runtime, workdir, tmp_path):
    # Something in a sandbox listening where the preloader would: it must get neither the editor's pipes nor env.
    path = warm.socket_path()
    got = tmp_path / "got.txt"
    fake = recording_listener(path, got, preexec_fn=no_new_privs)
    try:
        srv = scripted_llm("openai").script(Reply.text("served cold"))
        client = launch(srv)
        assert turn_text(client, "hi") == "served cold"
        assert "confined" in client.stderr_text(), client.stderr_text()[-2000:]
        client.shutdown()
        # It connected, checked, and hung up without a byte or an fd sent.
        wait_until(got.exists, "the fake preloader saw no connection")
        assert got.read_text() == "0 fds 0 bytes"
    finally:
        fake.kill()
        fake.wait(10)


def test_a_sandboxed_step_allowed_unix_sockets_cannot_get_a_daemon_from_the_preloader(
        launch, scripted_llm, runtime, tmp_path):
    # The hostile model's way out: its step may open unix sockets (a policy allowing them) and knows the path.
    preloader = started_preloader(launch, scripted_llm, runtime)
    path = next((runtime / "ollie").glob("warm-*.sock"))
    bundled = (Path(__file__).resolve().parents[2] / "sandbox.yaml").read_text()
    allowing = bundled.replace("unix: false", "unix: true")
    assert allowing != bundled
    (Path(os.environ["XDG_CONFIG_HOME"]) / "ollie").mkdir(parents=True, exist_ok=True)
    (Path(os.environ["XDG_CONFIG_HOME"]) / "ollie" / "sandbox.yaml").write_text(allowing)
    probe = f"""
import json, socket, struct
try:
    sock = socket.socket(socket.AF_UNIX)
    sock.connect({str(path)!r})
    body = json.dumps({{"argv": ["--stdio"], "cwd": "/", "env": {{}}, "umask": 18}}).encode()
    socket.send_fds(sock, [struct.pack("!I", len(body)) + body], [0, 1, 2])
    answer = sock.makefile().readline().strip() or "EOF"
except OSError as exc:
    answer = "os-error " + str(exc.errno)
print("=".join(["PRELOADER", answer]))  # the marker is only whole in the output, not in this code
"""
    srv = scripted_llm("openai").script(
        Reply.tool_calls(("execute_code", {"steps": [{"code": probe, "language": "python"}]})), Reply.text("done"))
    client = launch(srv)
    (daemon,) = children_of(preloader)
    turn_text(client, "try the preloader")
    last = json.dumps(srv.chat_requests[-1].body)  # the step's output, as the model was shown it
    answer = next((line for line in last.split("\\n") if "PRELOADER=" in line), "")
    assert "PRELOADER=" in answer, last[-2000:]
    assert "PRELOADER=pid" not in answer and ("refused" in answer or "os-error" in answer), answer
    assert children_of(preloader) == [daemon], "the sandboxed step got a daemon of its own"
    client.shutdown()


def test_the_code_key_changes_when_an_installed_package_changes(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.setattr(warm.sysconfig, "get_path", lambda name: str(site))
    before = warm.code_key()
    assert warm.code_key() == before
    time.sleep(0.01)
    (site / "newpkg").mkdir()  # pip installing a package adds entries: the directory's mtime moves
    assert warm.code_key() != before


def test_the_code_key_changes_with_what_the_interpreter_reads_at_start_up(monkeypatch):
    # A preloader started under another PYTHONPATH or locale imported other code or decodes otherwise.
    before = warm.code_key()
    for name, value in (("PYTHONPATH", "/elsewhere"), ("LC_ALL", "C"), ("PYTHONSAFEPATH", "1")):
        monkeypatch.setenv(name, value)
        assert warm.code_key() != before, name
        before = warm.code_key()
    monkeypatch.setenv("OLLIE_LSP_API_KEY", "sk-other")  # what only the daemon reads: the same preloader
    assert warm.code_key() == before


def test_a_runtime_dir_others_can_write_is_refused(tmp_path):
    run = tmp_path / "run"
    (run / "ollie").mkdir(parents=True)
    os.chmod(run / "ollie", 0o777)
    with pytest.raises(warm.WarmUnavailable, match="not a directory of this user's alone"):
        warm.runtime_dir({"XDG_RUNTIME_DIR": str(run)})
    os.chmod(run / "ollie", 0o700)
    assert warm.runtime_dir({"XDG_RUNTIME_DIR": str(run)}) == run / "ollie"


def test_an_idle_preloader_ends_and_removes_its_socket(launch, scripted_llm, runtime):
    first = launch(scripted_llm("openai"), OLLIE_LSP_WARM_IDLE_S="1")
    wait_until(lambda: preloader_pid(runtime) is not None, "the first start left no listening preloader")
    preloader = preloader_pid(runtime)
    assert preloader is not None
    client = launch(scripted_llm("openai"))
    (daemon,) = children_of(preloader)
    time.sleep(1.5)  # idle time counts only once no daemon of its own runs
    assert preloader_pid(runtime) == preloader, "the preloader ended while its daemon still ran"
    client.shutdown()
    first.shutdown()
    assert process_gone(daemon, within=GONE_WITHIN_S)
    assert process_gone(preloader, within=5.0), "the idle preloader did not end"
    assert list((runtime / "ollie").glob("warm-*")) == [], "the socket or its lock file was left"


def test_a_killed_preloader_is_replaced_by_the_next_start(launch, scripted_llm, runtime):
    preloader = started_preloader(launch, scripted_llm, runtime)
    os.kill(preloader, signal.SIGKILL)
    assert process_gone(preloader, within=5.0)
    assert list((runtime / "ollie").glob("warm-*.sock")), "the killed preloader's socket file should be left"
    srv = scripted_llm("openai").script(Reply.text("cold again"))
    client = launch(srv)  # connection refused: served cold, and a new preloader started
    assert turn_text(client, "hi") == "cold again"
    wait_until(lambda: preloader_pid(runtime) not in (None, preloader), "no new preloader replaced the killed one")
    client.shutdown()
    replacement = preloader_pid(runtime)
    assert replacement is not None
    client = launch(scripted_llm("openai"))
    assert len(children_of(replacement)) == 1, "the replacement did not serve the next start"
    client.shutdown()


# Red team (docs/SECURITY.md attacks 15-17): bad input, a stalled request, a planted runtime dir.

def test_a_malformed_request_is_refused_and_the_preloader_keeps_serving(launch, scripted_llm, runtime):
    preloader = started_preloader(launch, scripted_llm, runtime)
    path = next((runtime / "ollie").glob("warm-*.sock"))
    for body in (
        b"[]",  # JSON, but not an object
        b"[" * 5000 + b"]" * 5000,  # deeper than the parser's recursion limit
        json.dumps({"argv": "--stdio", "cwd": 1, "env": [], "umask": "18"}).encode(),
        json.dumps({"argv": ["--stdio"], "cwd": "/", "env": {"A": "x\0y"}, "umask": 18}).encode(),
        b"\xff\xfe not utf-8",
    ):
        assert raw_request(path, body=body).startswith("refused"), body[:80]
        assert preloader_pid(runtime) == preloader, f"the preloader died of {body[:80]!r}"
    assert children_of(preloader) == [], "a malformed request got a daemon"
    assert raw_request(path).startswith("pid "), "the preloader stopped serving after malformed requests"


def test_a_warm_daemon_keeps_nothing_of_the_first_clients_environment(launch, scripted_llm, runtime):
    # The preloader started under the first client's environment, which it (and every fork's initial
    # environment block, /proc/PID/environ) kept: another project's API key; the C library read TZ once.
    first = launch(scripted_llm("openai"), TZ="UTC0", OPENAI_API_KEY="sk-first-project")
    wait_until(lambda: preloader_pid(runtime) is not None, "the first start left no listening preloader")
    first.shutdown()
    preloader = preloader_pid(runtime)
    assert b"sk-first-project" not in Path(f"/proc/{preloader}/environ").read_bytes()
    # An environment of a megabyte (an editor's can be large) arrives in pieces: all of it is read.
    big = {f"OLLIE_TEST_BIG_{n}": "x" * 100_000 for n in range(10)}
    client = launch(scripted_llm("openai").script(Reply.text("saved")), TZ="JST-9", **big)
    (daemon,) = children_of(preloader or 0)
    assert b"sk-first-project" not in Path(f"/proc/{daemon}/environ").read_bytes()
    turn_text(client, "hi")
    listing = client.request("ollie/submit", {"text": "/sessions"}, timeout=60)["reply"]
    sid, shown = next((line.split(None, 2)[1:] for line in listing.splitlines() if line.startswith("*")), ("", ""))
    seconds = int(sid.split("-", 1)[0]) / 1e9
    assert shown.strip() == time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds + 9 * 3600)), listing
    client.shutdown()


def test_a_stalled_request_does_not_hold_up_other_launchers(launch, scripted_llm, runtime):
    # A launcher stopped (SIGSTOP, a swapped-out machine) half-way through its request, or one that drips it.
    preloader = started_preloader(launch, scripted_llm, runtime)
    path = next((runtime / "ollie").glob("warm-*.sock"))
    with socket.socket(socket.AF_UNIX) as stalled:
        stalled.connect(str(path))
        socket.send_fds(stalled, [warm.HEADER.pack(1000) + b"{"], [0, 1, 2])
        client = launch(scripted_llm("openai").script(Reply.text("not held up")))
        assert len(children_of(preloader)) == 1, "the next launcher was not served warm"
        # Served while the stalled request still waits for the rest (one at a time, it was refused first).
        stalled.setblocking(False)
        with pytest.raises(BlockingIOError):
            stalled.recv(100)
        assert turn_text(client, "hi") == "not held up"
    client.shutdown()


def test_a_planted_runtime_dir_gets_neither_a_file_made_nor_the_editors_environment(
        launch, scripted_llm, runtime, tmp_path):
    # Tool code that can write the runtime dir (a workspace at /tmp, which holds the /tmp/ollie-UID fallback)
    # plants symlinks: the lock to a file it wants made outside its sandbox, the socket to another service of
    # the user's (a plain process: the peer checks pass) that would get the editor's pipes and API keys.
    (runtime / "ollie").mkdir(mode=0o700)
    path = warm.socket_path()
    victim = tmp_path / "made-outside"
    os.symlink(victim, f"{path}.lock")
    service = tmp_path / "service.sock"
    got = tmp_path / "got.txt"
    other = recording_listener(service, got)
    try:
        os.symlink(service, path)
        client = launch(scripted_llm("openai").script(Reply.text("served cold")))
        assert turn_text(client, "hi") == "served cold"
        client.shutdown()
        with contextlib.suppress(subprocess.TimeoutExpired):
            other.wait(0.5)
        assert not got.exists() or got.read_text() == "0 fds 0 bytes", got.read_text()
        wait_until(lambda: not processes_with(str(path)) or preloader_pid(runtime) is not None,
                   "the started preloader neither listened nor ended")
        assert not victim.exists(), "the preloader made a file through a planted symlink"
    finally:
        other.kill()
        other.wait(10)


def test_a_stopped_preloader_is_given_up_and_its_late_fork_never_serves(launch, scripted_llm, runtime):
    # A preloader that does not answer (stopped, hung) must not leave the editor waiting, and what it forks once
    # it runs again must not become a second daemon on the client's pipes.
    preloader = started_preloader(launch, scripted_llm, runtime)
    os.kill(preloader, signal.SIGSTOP)
    try:
        srv = scripted_llm("openai").script(Reply.text("cold, not stuck"), Reply.text("still the only daemon"))
        started = time.monotonic()
        client = launch(srv, OLLIE_LSP_WARM_WAIT_S="0.5")
        assert time.monotonic() - started < 8, "the launcher waited on the stopped preloader"
        assert "no answer from the preloader" in client.stderr_text(), client.stderr_text()[-2000:]
    finally:
        os.kill(preloader, signal.SIGCONT)
    assert turn_text(client, "hi") == "cold, not stuck"
    # Running again, the preloader takes the request left in its queue and forks; the fork reads no "ok" and ends.
    wait_until(lambda: not children_of(preloader), "the late fork outlived the launcher's refusal", timeout=10)
    assert turn_text(client, "again") == "still the only daemon"
    assert client.shutdown() == 0, client.stderr_text()[-2000:]


def test_a_start_in_a_removed_directory_serves_cold_from_home(scripted_llm, runtime, tmp_path, workdir):
    # An editor whose directory was deleted under it: the launcher cannot hand a cwd over, and the cold start
    # it falls back to crashed on Path.cwd().
    gone = tmp_path / "gone"
    gone.mkdir()
    srv = scripted_llm("openai").script(Reply.text("served anyway"))
    command = f'cd "{gone}" && rmdir "{gone}" && exec "$0" "$@"'
    client = LSPProcess(["sh", "-c", command, *DAEMON, "--warm"], env=daemon_env(srv.env()))
    try:
        client.initialize(workdir)
        assert turn_text(client, "hi") == "served anyway"
        assert "no working directory" in client.stderr_text(), client.stderr_text()[-2000:]
        assert client.shutdown() == 0, client.stderr_text()[-2000:]
    finally:
        if client.alive():
            client.proc.kill()


def test_the_preloaders_converter_goes_to_the_first_server_only():
    from ollie_lsp import server

    server.prebuild_converter()  # what the preloader does before it listens
    built = server._prebuilt[0]
    first, second = server.build_server(), server.build_server()
    assert first.protocol._converter is built, "the fork built a converter of its own"
    assert second.protocol._converter is not built, "two servers shared one converter"


def test_a_lock_file_removed_before_it_is_locked_is_not_taken(tmp_path, monkeypatch):
    # An ending preloader removes its lock file; one that opened it just before, and locks it now, guards nothing:
    # a third preloader would lock the new file and serve on the same socket path beside it.
    from ollie_lsp import preloader

    path = tmp_path / "warm-key.sock"
    taken = preloader.take_lock(path)
    assert taken is not None
    os.close(taken)
    lock = preloader.fcntl.flock

    def removed_first(fd: int, operation: int) -> None:
        os.unlink(f"{path}.lock")
        lock(fd, operation)

    monkeypatch.setattr(preloader.fcntl, "flock", removed_first)
    assert preloader.take_lock(path) is None
