"""Confinement beyond Landlock, tried the way a model can (execute_code through the execute server).

A read-only `.git` (private mount namespace), the seccomp filter (MPTCP, UDP,
unix sockets, raw/packet sockets, io_uring, user namespaces) and dropped
capabilities. Everything here runs as root on the project's machines, which is
when capabilities and raw sockets matter most.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from ollie.sandbox.rules import landlock_abi
from ollie.tools.execute.server import ExecuteServer

pytestmark = pytest.mark.skipif(landlock_abi() < 4, reason="needs Landlock ABI >= 4")

SESSION = "1700000000000000000-c0ffee"
BUNDLED = (Path(__file__).resolve().parents[2] / "sandbox.yaml").read_text()


def git(cwd: Path, *args: str) -> str:
    """Run git (unsandboxed, as the user would) in `cwd`; its stdout."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def snapshot(path: Path) -> dict[str, bytes]:
    """Every file under `path` (or `path` itself) by relative name: content, to compare byte for byte."""
    if path.is_file():
        return {".": path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """work = {CWD}, a git repository with one commit; scratch = {TMPDIR}."""
    dirs = {name: tmp_path / name for name in ("work", "scratch")}
    for directory in dirs.values():
        directory.mkdir()
    monkeypatch.setenv("TMPDIR", str(dirs["scratch"]))
    work = dirs["work"]
    git(work, "init", "-q")
    (work / "tracked.txt").write_text("one\n")
    git(work, "add", "tracked.txt")
    git(work, "commit", "-qm", "first commit")
    return dirs


def make_server(cwd: Path, scratch: Path) -> ExecuteServer:
    """The execute server of one session, as the Core builds it."""
    return ExecuteServer(cwd=cwd, session_id=SESSION, lock_dir=scratch / "locks")


@pytest.fixture
def server(layout: dict[str, Path]) -> ExecuteServer:
    """The session's execute server in the repository."""
    return make_server(layout["work"], layout["scratch"])


def set_default_policy(text: str) -> None:
    """Replace the user's sandbox.yaml (the session's default policy)."""
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "ollie"
    config.mkdir(parents=True, exist_ok=True)
    (config / "sandbox.yaml").write_text(text)


async def run_code(server: ExecuteServer, code: str, language: str = "bash", **extra) -> str:
    """One execute_code call, as a model would request it; the result text."""
    result = await server.call("execute_code", {"steps": [{"code": code, "language": language}], **extra})
    return result.text


# The default policy does not grant ~/.gitconfig, and git treats an unreadable one as fatal.
GIT_ENV = "export GIT_CONFIG_GLOBAL=/dev/null\n"
GIT_ATTACKS = GIT_ENV + r"""
echo '[core]
    fsmonitor = "touch /tmp/pwned-fsmonitor"' >> .git/config && echo PWNED config
printf '#!/bin/sh\ntouch /tmp/pwned-hook\n' > .git/hooks/pre-commit && echo PWNED hook
touch .git/newfile && echo PWNED newfile
mkdir .git/newdir && echo PWNED newdir
git config core.fsmonitor 'touch /tmp/pwned' && echo PWNED git-config
mv .git/config .git/config.old && echo PWNED rename-inside
mv .git .git-moved && echo PWNED rename-git
rm -rf .git; test -d .git/objects || echo PWNED removed
mkdir -p fake/hooks && mv fake .git && echo PWNED replaced
python3 -c 'import os; open("cfg", "w").write("[core]\n"); os.replace("cfg", ".git/config")' && echo PWNED replace
echo fine > written.txt && echo wrote-elsewhere
"""


async def test_git_dir_is_read_only_but_git_still_reads(server, layout):
    work = layout["work"]
    before = snapshot(work / ".git")
    text = await run_code(server, GIT_ATTACKS)
    assert "PWNED" not in text, text
    assert snapshot(work / ".git") == before
    assert (work / "written.txt").read_text() == "fine\n", text
    (work / "tracked.txt").write_text("two\n")
    text = await run_code(server, GIT_ENV + "git status --short; git diff; git log --oneline")
    assert "M tracked.txt" in text and "+two" in text and "first commit" in text, text
    assert snapshot(work / ".git") == before


async def test_worktree_git_file_is_read_only(layout, tmp_path):
    # The main repository stays outside the sandbox; the worktree is the project.
    worktree = tmp_path / "wt"
    git(layout["work"], "worktree", "add", "-q", str(worktree))
    pointer = worktree / ".git"
    assert pointer.is_file()
    before = pointer.read_bytes()
    server = make_server(worktree, layout["scratch"])
    code = GIT_ENV + ("echo 'gitdir: /tmp/evil' > .git && echo PWNED pointer; rm -f .git;"
                      " test -f .git || echo PWNED removed; mv .git moved && echo PWNED moved; echo ok > inside.txt")
    text = await run_code(server, code)
    assert "PWNED" not in text and "Read-only file system" in text, text
    assert pointer.read_bytes() == before
    assert (worktree / "inside.txt").read_text() == "ok\n"


async def test_the_repository_a_worktree_points_at_is_read_only_where_steps_write(layout, tmp_path):
    """The project is a worktree of a repository beside it, in a directory the user's policy lets steps write: that
    repository's hooks would run with the user's next commit, so its `.git` is read-only too (one hop from the
    worktree's `.git` file; a deeper `.git` is not looked for)."""
    src = tmp_path / "src"
    main = src / "main"
    main.mkdir(parents=True)
    git(main, "init", "-q")
    git(main, "commit", "-q", "--allow-empty", "-m", "first commit")
    git(main, "worktree", "add", "-q", str(src / "wt"))
    set_default_policy(BUNDLED.replace('rwx: ["{CWD}", "{TMPDIR}"]', f'rwx: ["{{CWD}}", "{{TMPDIR}}", "{src}"]'))
    text = await run_code(make_server(src / "wt", layout["scratch"]),
                          f"echo x > {main}/.git/hooks/pre-commit && echo PWNED hook; echo ok > {main}/beside.txt")
    assert "PWNED" not in text and not (main / ".git" / "hooks" / "pre-commit").exists(), text
    assert (main / "beside.txt").read_text() == "ok\n", text


SOCKETS = r"""
import errno, socket, sys
def attempt(name, make, use=None):
    try:
        sock = make()
        if use:
            use(sock)
        print("OPEN", name)
    except OSError as exc:
        print("denied", name, errno.errorcode.get(exc.errno, exc.errno))
port = int(sys.argv[1]) if len(sys.argv) > 1 else {port}
attempt("mptcp", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262),
        lambda s: s.connect(("127.0.0.1", port)))
attempt("mptcp6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM, 262))
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM),
        lambda s: s.sendto(b"udp-hello", ("127.0.0.1", {udp_port})))
attempt("udp6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM))
attempt("ping", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP))
attempt("sctp", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132))
attempt("tcp", lambda: socket.create_connection(("127.0.0.1", port), timeout=3))
"""


@pytest.fixture
def listeners():
    """A TCP listener and a UDP receiver on 127.0.0.1: (tcp port, udp socket)."""
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(0.5)
    yield tcp.getsockname()[1], udp
    tcp.close()
    udp.close()


def received(udp: socket.socket) -> bytes:
    """What the UDP receiver got (b"" when nothing came)."""
    try:
        return udp.recv(100)
    except TimeoutError:
        return b""


async def test_mptcp_and_udp_denied_under_nonet(server, listeners):
    port, udp = listeners
    text = await run_code(server, SOCKETS.format(port=port, udp_port=udp.getsockname()[1]), "python3",
                          sandbox="nonet")
    for name in ("mptcp", "mptcp6", "udp", "udp6", "ping", "sctp"):
        assert f"denied {name} EPERM" in text, text
    assert "denied tcp" in text and "OPEN" not in text, text
    assert received(udp) == b""


async def test_mptcp_and_udp_denied_under_port_rules(server, listeners):
    port, udp = listeners
    set_default_policy(BUNDLED.replace("mode: proxy", "mode: open").replace(
        "unrestricted: true", "unrestricted: false").replace(
        "connect_tcp: []", f"connect_tcp: [{port}]"))
    text = await run_code(server, SOCKETS.format(port=port, udp_port=udp.getsockname()[1]), "python3")
    for name in ("mptcp", "mptcp6", "udp", "udp6", "ping", "sctp"):
        assert f"denied {name} EPERM" in text, text
    assert "OPEN tcp" in text, text  # the allowed port still connects
    assert received(udp) == b""


async def test_udp_works_when_the_network_is_unrestricted(server, listeners):
    port, udp = listeners
    set_default_policy(BUNDLED.replace("mode: proxy", "mode: open"))
    text = await run_code(server, SOCKETS.format(port=port, udp_port=udp.getsockname()[1]), "python3")
    assert "OPEN udp" in text and "OPEN tcp" in text, text
    assert "denied mptcp EPERM" in text, text  # MPTCP is never needed: TCP is there
    assert received(udp) == b"udp-hello"


UNIX = r"""
import socket
a, b = socket.socketpair()
a.sendall(b"pair"); print("socketpair", b.recv(4).decode())
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect({path!r})
    s.sendall(b"hello from the sandbox")
    print("CONNECTED")
except OSError as exc:
    print("refused", exc.errno)
"""


@pytest.fixture
def unix_server(layout):
    """A unix socket server in {TMPDIR} (readable and writable by the sandbox); yields (path, received, thread)."""
    path = layout["scratch"] / "agent.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen(4)
    listener.settimeout(10)
    got: list[bytes] = []

    def serve() -> None:
        try:
            conn, _ = listener.accept()
            got.append(conn.recv(100))
            conn.close()
        except OSError:
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path, got, thread
    # close() does not wake an accept() blocked in another thread (it waited out its 10 s when nobody connected);
    # shutdown() does (Linux: EINVAL), so the thread ends at once.
    with contextlib.suppress(OSError):
        listener.shutdown(socket.SHUT_RDWR)
    listener.close()
    thread.join(timeout=10)
    assert not thread.is_alive()


async def test_unix_socket_servers_are_unreachable(server, unix_server):
    path, got, _ = unix_server
    text = await run_code(server, UNIX.format(path=str(path)), "python3")
    assert "socketpair pair" in text and "refused 1" in text and "CONNECTED" not in text, text
    text = await run_code(server, f"python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect(\"{path}\")' "
                                  "&& echo CONNECTED")
    assert "CONNECTED" not in text, text
    assert got == []


async def test_unix_sockets_allowed_by_policy(server, unix_server):
    path, got, thread = unix_server
    allowing = BUNDLED.replace("unix: false", "unix: true")
    assert allowing != BUNDLED
    set_default_policy(allowing)
    text = await run_code(server, UNIX.format(path=str(path)), "python3")
    assert "CONNECTED" in text, text
    await asyncio.to_thread(thread.join, 10)
    assert got == [b"hello from the sandbox"]


async def test_unix_sockets_allowed_by_policy_never_reach_the_hosts_abstract_ones(server, layout):
    # The abstract namespace is the network namespace's, which a step of `network.mode: open` shares with the host
    # (a desktop's D-Bus, X11's @/tmp/.X11-unix/X0, a container runtime's shim): no file, so no Landlock path rule.
    if landlock_abi() < 6:
        pytest.skip("Landlock scopes abstract unix sockets from ABI 6")
    set_default_policy(BUNDLED.replace("unix: false", "unix: true").replace("mode: proxy", "mode: open"))
    name = f"\0ollie-test-{layout['work'].parent.name}"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(name)
        listener.listen(1)
        text = await run_code(server, UNIX.format(path=name), "python3")
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()
    assert "refused 1" in text and "CONNECTED" not in text, text


KERNEL = r"""
import ctypes, errno, os, socket, struct
for line in open("/proc/self/status"):
    if line.split(":")[0] in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"):
        print(line.strip().replace("\t", " "))
for name, args in (("packet", (socket.AF_PACKET, socket.SOCK_RAW, 0x0300)),
                   ("packet-dgram", (socket.AF_PACKET, socket.SOCK_DGRAM, 0x0300)),
                   ("raw", (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)),
                   ("raw6", (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)),
                   ("vsock", (40, socket.SOCK_STREAM, 0)), ("alg", (38, socket.SOCK_SEQPACKET, 0)),
                   ("netlink-audit", (socket.AF_NETLINK, socket.SOCK_RAW, 9))):
    try:
        socket.socket(*args)
        print("OPEN", name)
    except OSError as exc:
        print("denied", name)
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
fd = libc.syscall(425, 8, params)  # io_uring_setup(8, &params) on x86-64 and arm64
print("io_uring", "OPEN" if fd >= 0 else "denied " + errno.errorcode[ctypes.get_errno()])
# Syscall numbers: x86-64, else arm64's generic table.
x86 = os.uname().machine == "x86_64"
# A task-clock counter of its own, user space only: what perf_event_paranoid 2 lets anyone open.
perf = ctypes.create_string_buffer(struct.pack("IIQQQQQIIQ", 1, 64, 1, 0, 0, 0, 1 << 5 | 1 << 6, 0, 0, 0))
# Each but the first three works for anyone where the filter is missing (userfaultfd in user mode only).
for name, number, args in (("ptrace", 101 if x86 else 117, (0, 0, 0, 0)),  # PTRACE_TRACEME
                           ("keyctl", 250 if x86 else 219, (0, -3, 0)),  # the session keyring's id
                           ("bpf", 321 if x86 else 280, (0, 0, 0)), ("clone3", 435, (0, 0)),
                           ("process_vm_readv", 310 if x86 else 270, (os.getpid(), 0, 0, 0, 0, 0)),
                           ("userfaultfd", 323 if x86 else 282, (os.O_CLOEXEC | 1,)),  # UFFD_USER_MODE_ONLY
                           ("add_key", 248 if x86 else 217, (b"user", b"k", b"v", 1, -2)),  # the process keyring
                           ("perf_event_open", 298 if x86 else 241, (perf, 0, -1, -1, 0))):
    result = libc.syscall(number, *args)
    print("call", name, result if result >= 0 else errno.errorcode[ctypes.get_errno()])
"""


async def test_no_capabilities_raw_sockets_or_io_uring_even_as_root(server):
    text = await run_code(server, KERNEL, "python3")
    for field in ("CapPrm", "CapEff", "CapBnd", "CapAmb", "CapInh"):
        assert f"{field}: 0000000000000000" in text, text
    assert "NoNewPrivs: 1" in text and "Seccomp: 2" in text, text
    assert "OPEN" not in text and text.count("denied") == 8, text
    assert "io_uring denied EPERM" in text, text
    for name in ("ptrace", "keyctl", "bpf", "process_vm_readv", "userfaultfd", "add_key", "perf_event_open"):
        assert f"call {name} EPERM" in text, text
    assert "call clone3 ENOSYS" in text, text  # so libc falls back to clone(), whose flags the filter sees


async def test_other_syscall_abis_are_killed(server):
    if os.uname().machine != "x86_64":
        pytest.skip("the x32 ABI exists on x86-64 only")
    # getpid through the x32 ABI (syscall number | 0x40000000) would dodge a filter written for x86-64 numbers.
    text = await run_code(server, "python3 -c 'import ctypes; ctypes.CDLL(None).syscall(0x40000000 + 39)';"
                                  " echo status=$?")
    assert "status=159" in text, text  # 128 + SIGSYS: killed by the filter's bad-arch action


async def test_no_new_namespaces(server):
    text = await run_code(server, "unshare -U true && echo USERNS; unshare -n true && echo NETNS;"
                                  " unshare -m true && echo MOUNTNS; unshare -Ur true && echo ROOTMAP; echo done")
    assert "done" in text and "NS" not in text and "ROOTMAP" not in text, text


async def test_launcher_fallback_confines_the_same_way(server, layout, monkeypatch, tmp_path):
    from ollie.sandbox import spawn as spawn_module

    broken = tmp_path / "broken_server.py"
    broken.write_text("raise SystemExit(3)\n")
    fallback = spawn_module.ForkServer(broken)
    monkeypatch.setattr(spawn_module, "_server", fallback)
    try:
        before = snapshot(layout["work"] / ".git")
        text = await run_code(server, "touch .git/hooks/pre-commit && echo PWNED; exec grep -E 'CapEff|Seccomp:'"
                                      " /proc/self/status")
        assert "PWNED" not in text and "CapEff:\t0000000000000000" in text and "Seccomp:\t2" in text, text
        assert snapshot(layout["work"] / ".git") == before
    finally:
        fallback.close()
