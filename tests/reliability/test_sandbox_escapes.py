"""Sandbox escapes tried the way a model can: execute_code / call_tool through the execute server, default policy."""

from __future__ import annotations

import asyncio
import ctypes
import os
from pathlib import Path

import pytest

from ollie.tools.execute.server import ExecuteServer

SESSION = "1700000000000000000-e5cape"


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """work = {CWD}, scratch = {TMPDIR}; `outside/secret` is granted by nothing."""
    dirs = {name: tmp_path / name for name in ("work", "scratch", "outside")}
    for directory in dirs.values():
        directory.mkdir()
    (dirs["outside"] / "secret").write_text("secret\n")
    monkeypatch.setenv("TMPDIR", str(dirs["scratch"]))
    return dirs


@pytest.fixture
def server(layout: dict[str, Path]) -> ExecuteServer:
    """The execute server of one session, as the Core builds it."""
    return ExecuteServer(cwd=layout["work"], session_id=SESSION, lock_dir=layout["scratch"] / "locks")


async def run_code(server: ExecuteServer, code: str, language: str = "bash", **extra) -> str:
    """One execute_code call, as a model would request it; the result text."""
    result = await server.call("execute_code", {"steps": [{"code": code, "language": language}], **extra})
    return result.text


def untouched(layout: dict[str, Path]) -> None:
    """Nothing outside was created or changed."""
    assert (layout["outside"] / "secret").read_text() == "secret\n"
    assert sorted(p.name for p in layout["outside"].iterdir()) == ["secret"]


ESCAPES = {
    "dotdot": "echo pwned > ../outside/new; echo pwned >> ../outside/secret",
    "symlink": "ln -s ../outside link && echo pwned > link/new; echo pwned >> link/secret",
    "proc self root": "echo pwned > /proc/self/root{outside}/new; echo pwned >> /proc/self/root{outside}/secret",
    "hard link": "ln {outside}/secret hard && echo pwned >> hard",
    "cd / then write": "cd / && echo pwned > .{outside}/new; cd {outside} && echo pwned >> secret",
    "rename out": "echo x > mine && mv mine {outside}/new",
    "truncate and delete": "truncate -s 0 {outside}/secret; rm -f {outside}/secret",
}


@pytest.mark.parametrize("name", list(ESCAPES))
async def test_shell_escapes_fail(server, layout, name):
    text = await run_code(server, ESCAPES[name].format(outside=layout["outside"]))
    untouched(layout)
    assert "denied" in text.lower() or "not permitted" in text.lower() or "exit" in text.lower(), text


async def test_python_os_open_on_protected_paths_fails(server, layout):
    code = f"""
import os
for path, flags in ((r"{layout['outside']}/new", os.O_WRONLY | os.O_CREAT),
                    (r"{layout['outside']}/secret", os.O_RDONLY),
                    ("/etc/passwd", os.O_WRONLY | os.O_APPEND),
                    ("/usr/bin/env", os.O_WRONLY)):
    try:
        os.close(os.open(path, flags, 0o600))
        print("OPENED", path)
    except OSError as exc:
        print("refused", path, exc.errno)
"""
    text = await run_code(server, code, "python3")
    assert "OPENED" not in text and text.count("refused") == 4, text
    untouched(layout)


# Runs each of a program's `tries` and prints DONE or refused for it.
_TRY_EACH = """
for name, attempt in tries.items():
    try:
        attempt()
        print("DONE", name)
    except OSError as exc:
        print("refused", name, exc.errno)
"""


_OPENAT2 = """
import ctypes, os
class How(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]
def openat2(path, flags, mode):
    libc = ctypes.CDLL(None, use_errno=True)
    how = How(flags, mode, 0)
    if libc.syscall(437, -100, path.encode(), ctypes.byref(how), ctypes.sizeof(how)) < 0:  # 437 on every arch
        raise OSError(ctypes.get_errno(), "openat2")
def fchmodat2(path, mode):  # Linux 6.6: chmod's call with flags, whose number older libseccomp releases do not know
    if ctypes.CDLL(None, use_errno=True).syscall(452, -100, path.encode(), mode, 0) < 0:
        raise OSError(ctypes.get_errno(), "fchmodat2")
"""


async def test_o_path_handles_and_proc_fd_links_reach_nothing_outside(server, layout):
    # Landlock does not check an O_PATH open: the handle exists, but what is opened through it (relative to
    # it, or through its /proc/self/fd magic link) is checked where the file really is.
    code = f"""
import os
fd = os.open(r"{layout['outside']}", os.O_PATH | os.O_DIRECTORY)
tries = {{
    "openat read": lambda: os.close(os.open("secret", os.O_RDONLY, dir_fd=fd)),
    "openat create": lambda: os.close(os.open("new", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd)),
    "proc fd read": lambda: os.close(os.open(f"/proc/self/fd/{{fd}}/secret", os.O_RDONLY)),
    "proc fd create": lambda: os.close(os.open(f"/proc/self/fd/{{fd}}/new", os.O_WRONLY | os.O_CREAT, 0o600)),
    "proc fd chmod": lambda: os.chmod(f"/proc/self/fd/{{fd}}", 0o777),
    "link out of it": lambda: os.link("secret", "stolen", src_dir_fd=fd),
    "rename into it": lambda: (open("mine", "w").close(), os.rename("mine", "new", dst_dir_fd=fd)),
}}
"""
    text = await run_code(server, code + _TRY_EACH, "python3")
    assert "DONE" not in text and text.count("refused") == 7, text
    assert not (layout["work"] / "stolen").exists()
    untouched(layout)


async def test_no_set_user_or_group_id_file_is_left_in_the_workspace(server, layout):
    # As root, tool code (no capabilities, but the owner) made a setuid-root shell in the workspace: anyone who
    # can reach it is root, outside the sandbox. Every call that sets a mode refuses the bits; plain modes still go.
    shell = "cp /bin/sh sh; chmod 4755 sh; chmod g+s sh; install -m 2755 /bin/sh sh2; chmod 700 sh && echo plain-chmod-ok"
    code = """
import os
tries = {
    "creat": lambda: os.open("x", os.O_CREAT | os.O_WRONLY, 0o4755),
    "tmpfile": lambda: os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o2755),
    "mknod": lambda: os.mknod("y", 0o104755),
    "fchmod": lambda: os.fchmod(os.open("z", os.O_CREAT | os.O_WRONLY, 0o755), 0o4755),
    "openat2": lambda: openat2("o2", os.O_CREAT | os.O_WRONLY, 0o4755),  # its mode is in memory seccomp cannot read
    "fchmodat2": lambda: fchmodat2(os.open("w", os.O_CREAT | os.O_WRONLY, 0o755) and "w", 0o4755),
}
"""
    text = await run_code(server, shell) + await run_code(server, _OPENAT2 + code + _TRY_EACH, "python3")
    assert "plain-chmod-ok" in text and "DONE" not in text and text.count("refused") == 6, text
    for path in layout["work"].iterdir():
        assert not path.stat().st_mode & 0o6000, (path, oct(path.stat().st_mode))


async def test_no_hard_link_is_made_in_a_step(server, layout):
    # The checkpoints take a step's changes from inotify events, which a write through a second name in another
    # dir (or outside the tree) does not make there: tool code makes no hard link at all (EXDEV, as across mounts).
    (layout["work"] / "app.py").write_text("app\n")
    code = f"""
import os
tries = {{
    "beside": lambda: os.link("app.py", "twin"),
    "in its temp dir": lambda: os.link("app.py", {str(layout["scratch"] / "twin")!r}),
    "a temp file named": lambda: os.link(f"/proc/self/fd/{{os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o644)}}", "anon"),
}}
"""
    text = await run_code(server, "ln app.py twin2 || echo ln-refused") + await run_code(server, code + _TRY_EACH,
                                                                                        "python3")
    assert "ln-refused" in text and "DONE" not in text and text.count(" 18\n") + text.endswith(" 18") == 3, text
    assert sorted(p.name for p in layout["work"].iterdir()) == ["app.py"]
    assert not (layout["scratch"] / "twin").exists()


async def test_file_tools_refuse_paths_outside(server, layout):
    result = await server.call("call_tool", {"calls": [{"tool": "file_write", "args": ["../outside/new", "pwned"]}]})
    assert result.is_error, result.text
    (layout["work"] / "link").symlink_to(layout["outside"])
    result = await server.call("call_tool", {"calls": [{"tool": "file_write", "args": ["link/new", "pwned"]}]})
    assert result.is_error, result.text
    untouched(layout)


async def test_writing_inside_still_works(server, layout):
    await run_code(server, "echo fine > inside.txt")
    assert (layout["work"] / "inside.txt").read_text() == "fine\n"


CONNECT = """
import socket, sys
for port in map(int, sys.argv[1:]) if len(sys.argv) > 1 else {ports}:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
        print("connected", port)
    except OSError as exc:
        print("refused", port, exc.errno)
"""


async def test_network_connect_is_refused_when_the_policy_restricts_it(server, layout, listeners, tmp_path):
    allowed, other = listeners
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "ollie"
    config.mkdir(parents=True, exist_ok=True)
    bundled = (Path(__file__).resolve().parents[2] / "sandbox.yaml").read_text()
    restricted = bundled.replace("mode: proxy", "mode: open").replace(
        "unrestricted: true", "unrestricted: false").replace(
        "connect_tcp: []", f"connect_tcp: [{allowed}]")
    assert restricted != bundled
    (config / "sandbox.yaml").write_text(restricted)
    text = await run_code(server, CONNECT.format(ports=[allowed, other]), "python3")
    assert f"connected {allowed}" in text and f"refused {other}" in text, text
    nonet = await run_code(server, CONNECT.format(ports=[allowed]), "python3", sandbox="nonet")
    assert f"refused {allowed}" in nonet, nonet


async def test_parallel_steps_get_the_same_walls(server, layout):
    result = await server.call("execute_code", {"steps": [{"parallel": [
        {"code": f"echo a > {layout['outside']}/a"}, {"code": f"echo b > {layout['outside']}/b"}]}]})
    assert result.is_error
    await asyncio.sleep(0)
    untouched(layout)


_IPC = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
host, left = int(sys.argv[1]), int(sys.argv[2])
seen = libc.shmget(host, 0, 0)
print("host segment", "READ " + ctypes.string_at(libc.shmat(seen, None, 0), 6).decode() if seen >= 0 else "unseen")
print("leftover", "SEEN" if libc.shmget(left, 0, 0) >= 0 else "unseen")
print("left", libc.shmget(left, 1 << 20, 0o1000 | 0o600) >= 0, libc.msgget(left, 0o1000 | 0o600) >= 0)
"""


async def test_a_step_reaches_no_ipc_object_outside_it_and_leaves_none_behind(server, layout):
    # SysV shared memory, message queues and semaphores are named by a number, not a path: Landlock does not see
    # them. Without an IPC namespace of its own a step read (and wrote) the segments of the user's other programs
    # (root's, as root), and one it left behind outlived it, its memory no longer the step's (and the next step,
    # of any session, found it).
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    host, left = 0x0117_0000 + os.getpid() % 0x10000, 0x0217_0000 + os.getpid() % 0x10000
    segment = libc.shmget(host, 4096, 0o1000 | 0o600)
    assert segment >= 0
    ctypes.memmove(libc.shmat(segment, None, 0), b"SECRET", 6)
    try:
        step = f"cat > ipc.py <<'PY'\n{_IPC}\nPY\npython3 ipc.py {host} {left}; python3 ipc.py {host} {left}"
        text = await run_code(server, step)
        assert text.count("host segment unseen") == 2 and "READ" not in text, text
        assert "leftover unseen" in text and "left True True" in text, text  # a fresh namespace, where it may
        assert "leftover SEEN" in text, text  # the step's own processes share one namespace
        assert libc.shmget(left, 0, 0) < 0 and libc.msgget(left, 0) < 0  # gone with the step
        assert "leftover unseen" in await run_code(server, f"python3 ipc.py {host} {left}")
    finally:
        libc.shmctl(segment, 0, None)  # IPC_RMID
        if (made := libc.shmget(left, 0, 0)) >= 0:
            libc.shmctl(made, 0, None)
        if (made := libc.msgget(left, 0)) >= 0:
            libc.msgctl(made, 0, None)


async def test_a_step_holds_no_lease_that_stalls_anothers_open(server, layout):
    # A lease on a file the step may write (its owner's, as root any) made every open of that file by another
    # process wait for the step to give it up, up to the kernel's lease-break-time (45 s) each time, the step
    # ignoring the SIGIO that asks: the daemon's reads and writes of the workspace, the editor's, the user's git.
    (layout["work"] / "app.py").write_text("app\n")
    code = """
import fcntl, os, signal, time
signal.signal(signal.SIGIO, signal.SIG_IGN)
fd = os.open("app.py", os.O_WRONLY)
try:
    fcntl.fcntl(fd, 1024, fcntl.F_WRLCK)  # F_SETLEASE
    print("lease taken")
except OSError as exc:
    print("lease refused", exc.errno)
open("ready", "w").close()
while not os.path.exists("go"):
    time.sleep(0.01)
"""
    step = asyncio.ensure_future(run_code(server, code, "python3"))
    try:
        while not (layout["work"] / "ready").exists():
            assert not step.done(), step.result()
            await asyncio.sleep(0.01)
        # Non-blocking: a lease makes the open fail at once (EWOULDBLOCK) where a plain one would wait.
        os.close(os.open(layout["work"] / "app.py", os.O_RDONLY | os.O_NONBLOCK))
    finally:
        (layout["work"] / "go").touch()
        text = await step
    assert "lease refused 1" in text, text
