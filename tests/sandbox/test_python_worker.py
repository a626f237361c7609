"""The pre-imported Python worker (pyrun.py): a script run without exec is confined exactly like one exec'd.

Each probe runs twice through the real fork server: as `python3 -I script args`
(exec) and through the worker (`python=`), and both must see the same world.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from ollie.sandbox.rules import landlock_abi
from ollie.sandbox.spawn import fork_server, spawn_sandboxed
from tests.procs import new_mark, process_gone, processes_with, wait_for_processes, wait_no_processes, wait_until

pytestmark = pytest.mark.skipif(landlock_abi() < 1, reason="needs a kernel with Landlock")

PYTHON = os.path.realpath(sys.executable)

# What a script sees of its process: compared between exec and the worker.
SELF = """
import json, os, sys
data = sys.stdin.read()
print(json.dumps({
    "argv": sys.argv, "cwd": os.getcwd(), "name": __name__, "file": __file__, "stdin": data,
    # The policy's paths (a memfd whose number the spawn's other fds decide) aside.
    "env": {k: v for k, v in os.environ.items() if k != "OLLIE_SANDBOX_PATHS"},
    "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd") if fd != os.environ["OLLIE_SANDBOX_PATHS"]),
    "paths": os.readlink("/proc/self/fd/" + os.environ["OLLIE_SANDBOX_PATHS"]).startswith("/memfd:"),
    "encoding": [sys.stdin.encoding, sys.stdout.encoding, sys.stderr.encoding],
    "errors": [sys.stdin.errors, sys.stdout.errors, sys.stderr.errors],
    "worker": sys.flags.no_site == 1,  # the fork server runs -S; `python3 -I` imports site
    "sigint": str(__import__("signal").getsignal(2)), "sigpipe": int(__import__("signal").getsignal(13)),
    "sigterm": int(__import__("signal").getsignal(15)),
}))
sys.stderr.write("to stderr\\n")
sys.exit(3)
"""

# Signal dispositions only, for a fork server started with SIGINT, SIGQUIT and SIGHUP ignored.
SIGNALS = ('import json, signal\n'
           'print(json.dumps([str(signal.getsignal(2)), int(signal.getsignal(3)), int(signal.getsignal(1))]))\n')

# Every layer, probed from inside: paths, .git, unix sockets, capabilities, seccomp, the PID namespace.
CONFINEMENT = """
import json, os, socket, sys
outside, work = sys.argv[1], os.getcwd()
def attempt(action):
    try:
        action()
    except OSError as exc:
        return type(exc).__name__
    return "allowed"
def write(path):
    with open(path, "w") as handle:
        handle.write("x")
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
print(json.dumps({
    "read outside": attempt(lambda: open(os.path.join(outside, "secret")).read()),
    "write outside": attempt(lambda: write(os.path.join(outside, "planted"))),
    "write .git": attempt(lambda: write(os.path.join(work, ".git", "config"))),
    "write work": attempt(lambda: write(os.path.join(work, "made"))),
    "unix socket": attempt(lambda: socket.socket(socket.AF_UNIX)),
    "CapEff": status["CapEff"].strip(), "CapBnd": status["CapBnd"].strip(),
    "NoNewPrivs": status["NoNewPrivs"].strip(), "Seccomp": status["Seccomp"].strip(),
    "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
}))
"""


async def run(ws, source: str, args: list[str], *, worker: bool, stdin: bytes | None = None,
              env: dict[str, str] | None = None, name: str = "probe.py") -> tuple[int, str, str]:
    """Run `source` as a script file in the workspace, by exec or by the worker; (status, stdout, stderr)."""
    script = ws.work / name
    script.write_text(source)
    proc = await spawn_sandboxed([PYTHON, "-I", str(script), *args], policy=ws.default_policy(), cwd=ws.work,
                                 env=env or ws.env, stdin=stdin, python=(str(script), args) if worker else None)
    out, err, _ = await asyncio.wait_for(proc.communicate(limit_bytes=1 << 22), 20)
    return await proc.wait(), out.decode(), err.decode()


# The locales a step may run under: the C locale (UTF-8 mode), ollie's default, and ones the
# interpreter coerces (LANG=C, a locale not installed) where it adds LC_CTYPE: those are exec'd.
LOCALES = [({"LC_ALL": "C"}, True), ({"LANG": "C.UTF-8"}, True), ({"LANG": "C"}, False),
           ({"LANG": "xx_NONE.UTF-8"}, False), ({}, False)]


@pytest.mark.parametrize(("locale_env", "in_worker"), LOCALES,
                         ids=lambda v: ",".join(f"{k}={x}" for k, x in v.items()) if isinstance(v, dict) else "")
async def test_the_worker_runs_a_script_as_python3_I_would(ws, locale_env, in_worker):
    args = ["a b", "--flag=1", "ü"]
    env = {"PATH": ws.env["PATH"], "TMPDIR": ws.env["TMPDIR"], **locale_env}
    by_exec = await run(ws, SELF, args, worker=False, stdin=b"input \xff\n", env=env)
    by_worker = await run(ws, SELF, args, worker=True, stdin=b"input \xff\n", env=env)
    assert by_exec[0] == by_worker[0] == 3
    assert by_exec[2] == by_worker[2] == "to stderr\n"
    seen_exec, seen_worker = json.loads(by_exec[1]), json.loads(by_worker[1])
    assert (seen_exec.pop("worker"), seen_worker.pop("worker")) == (False, in_worker)
    assert seen_worker == seen_exec
    assert seen_worker["argv"] == [str(ws.work / "probe.py"), *args] and seen_worker["fds"] == [0, 1, 2, 3]
    assert seen_worker["paths"]


async def test_an_uncaught_exception_is_a_traceback_and_status_1(ws):
    source = "import sys\nprint('before', flush=True)\nraise ValueError('boom')\n"
    status, out, err = await run(ws, source, [], worker=True)
    assert (status, out) == (1, "before\n")
    assert err.startswith("Traceback (most recent call last):") and err.endswith("ValueError: boom\n")


async def test_the_worker_is_confined_exactly_like_an_exec(ws):
    (ws.work / ".git").mkdir()
    (ws.work / ".git" / "config").write_text("[core]\n")
    by_exec = await run(ws, CONFINEMENT, [str(ws.outside)], worker=False)
    by_worker = await run(ws, CONFINEMENT, [str(ws.outside)], worker=True)
    assert by_exec[0] == by_worker[0] == 0, (by_exec, by_worker)
    seen_exec, seen_worker = json.loads(by_exec[1]), json.loads(by_worker[1])
    # Under exec the script is PID 2 below its init; the worker's script is the namespace's PID 1 itself.
    assert seen_exec.pop("processes") == [1, 2] and seen_worker.pop("processes") == [1]
    assert seen_worker == seen_exec
    assert seen_worker == {
        "read outside": "PermissionError", "write outside": "OSError", "write .git": "OSError",
        "write work": "allowed", "unix socket": "PermissionError", "CapEff": "0000000000000000",
        "CapBnd": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2",
    }  # outside the writable paths and .git: read-only mounts, EROFS, a plain OSError
    assert not (ws.outside / "planted").exists() and (ws.work / ".git" / "config").read_text() == "[core]\n"


async def test_a_script_the_sandbox_cannot_read_fails_to_start_as_an_exec_would(ws):
    hidden = ws.outside / "tool.py"
    hidden.write_text("print('ran')\n")
    with pytest.raises(PermissionError):
        await spawn_sandboxed([PYTHON, "-I", str(hidden)], policy=ws.default_policy(), cwd=ws.work, env=ws.env,
                              python=(str(hidden), []))


async def test_what_a_worker_step_started_dies_with_it(ws):
    mark = new_mark()
    source = ("import subprocess\n"
              f"subprocess.Popen(['sleep', '1000.{mark}'], start_new_session=True,\n"
              "                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
              "print('left it running')\n")
    status, out, _ = await run(ws, source, [], worker=True)
    assert (status, out) == (0, "left it running\n")
    assert await wait_no_processes(f"1000.{mark}") == []


async def test_a_worker_step_killed_at_its_timeout_takes_its_children_along(ws):
    mark = new_mark()
    script = ws.work / "hang.py"
    script.write_text(f"import subprocess, time\nsubprocess.Popen(['sleep', '1000.{mark}'])\ntime.sleep(60)\n")
    proc = await spawn_sandboxed([PYTHON, "-I", str(script)], policy=ws.default_policy(), cwd=ws.work,
                                 env=ws.env, python=(str(script), []))
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(proc.communicate(limit_bytes=1000), 0.5)
    assert await asyncio.wait_for(proc.wait(), 30) == -9
    assert await wait_no_processes(f"1000.{mark}") == []


HANG = "import subprocess, time\nsubprocess.Popen(['sleep', '1000.{mark}'])\nprint('up', flush=True)\ntime.sleep(60)\n"


async def _hanging_worker_step(ws, mark: str):
    script = ws.work / "hang.py"
    script.write_text(HANG.format(mark=mark))
    proc = await spawn_sandboxed([PYTHON, "-I", str(script)], policy=ws.default_policy(), cwd=ws.work,
                                 env=ws.env, python=(str(script), []))
    await wait_for_processes(f"1000.{mark}")
    return proc


async def test_a_worker_step_dies_with_its_supervisor_even_sigkilled(ws):
    mark = new_mark()
    proc = await _hanging_worker_step(ws, mark)
    supervisor = int(Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    os.kill(supervisor, signal.SIGKILL)  # no sweep runs: PDEATHSIG on the script (PID 1) ends the namespace
    assert await wait_no_processes(f"1000.{mark}") == []
    assert process_gone(proc.pid)
    proc.close()


async def test_a_step_gets_sigint_sigquit_and_sighup_back_from_a_daemon_that_ignores_them(ws):
    """A daemon a shell started with `&` (its fork server too) ignores SIGINT and SIGQUIT, a `nohup`ed one SIGHUP: a
    step, exec'd or in the worker, has them as python3 run at a prompt does. The exec'd one kept them ignored, unlike
    the worker (whose test above failed only in a suite started that way); both kept SIGHUP ignored."""
    await asyncio.to_thread(fork_server().close)  # the next step starts a fork server with the dispositions below
    ignored = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP)}
    try:
        env = {"PATH": ws.env["PATH"], "TMPDIR": ws.env["TMPDIR"], "LC_ALL": "C"}
        seen = [await run(ws, SIGNALS, [], worker=worker, env=env) for worker in (False, True)]
    finally:
        for sig, was in ignored.items():
            signal.signal(sig, was)
        await asyncio.to_thread(fork_server().close)
    assert seen == [(0, '["<built-in function default_int_handler>", 0, 0]\n', "")] * 2


async def test_closing_the_fork_server_ends_a_running_worker_step(ws):
    mark = new_mark()
    proc = await _hanging_worker_step(ws, mark)
    await asyncio.to_thread(fork_server().close)  # what the daemon's shutdown does
    assert processes_with(f"1000.{mark}") == [] and process_gone(proc.pid)
    proc.close()


async def test_a_worker_steps_mount_namespace_outlives_its_process_until_the_status(ws):
    # The script is the step's last process: its exit would tear the namespace down (an RCU grace period)
    # before its supervisor could send the status. The supervisor holds it meanwhile.
    mark = new_mark()
    proc = await _hanging_worker_step(ws, mark)
    supervisor = int(Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    namespace = os.readlink(f"/proc/{proc.pid}/ns/mnt")
    assert namespace != os.readlink("/proc/self/ns/mnt")

    def held() -> bool:
        for fd in Path(f"/proc/{supervisor}/fd").iterdir():
            try:  # the supervisor opens and closes its own fds meanwhile
                if os.readlink(fd) == namespace:
                    return True
            except FileNotFoundError:
                continue
        return False

    wait_until(held, "the supervisor never held the step's mount namespace")
    proc.kill_group()
    assert await asyncio.wait_for(proc.wait(), 30) == -9
    proc.close()


# Scans the process's own memory for other steps' markers; the pattern's own text does not match itself.
MEMORY_SCAN = r"""
import re
pattern = re.compile(rb"MARK[0-9]{12}Q")
found = set()
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", buffering=0) as mem:
    for line in maps:
        fields = line.split()
        if "r" not in fields[1] or (len(fields) > 5 and fields[5] in ("[vvar]", "[vsyscall]")):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        try:
            mem.seek(start)
            chunk = mem.read(end - start)
        except OSError:
            continue
        found.update(m.decode() for m in pattern.findall(chunk))
print(" ".join(sorted(found)) or "none")
"""


async def test_a_worker_step_holds_nothing_of_other_steps(ws):
    # Another session's step: its env, argv and program text carry a marker, by exec and by the worker.
    # Several at once: more than the fork server keeps spare supervisors for.
    marker = f"MARK{new_mark()}Q"
    others = await asyncio.gather(*(run(ws, f"print('{marker}')\n", [marker], worker=worker,
                                        env={**ws.env, "OTHER_SESSION": marker}, name=f"other{n}.py")
                                    for n, worker in enumerate([False, True] * 4)))
    assert [status for status, _, _ in others] == [0] * 8, others
    own = f"MARK{new_mark()}Q"  # the scanning step's own: proves the scan sees what is there
    seen = set()
    for _ in range(4):  # through spare supervisors and freshly forked ones alike
        status, out, err = await run(ws, MEMORY_SCAN, [], worker=True, name="scan.py", env={**ws.env, "OWN": own})
        assert status == 0, err
        seen.update(out.split())
    assert seen == {own}


def test_the_fork_server_runs_only_ollies_own_python_tools_in_the_worker(tmp_path):
    from ollie import paths
    from ollie.tools.execute.languages import language, script_invocation

    python3 = language("python3")
    bundled = paths.bundled("tools") / "file_read"
    copy = tmp_path / "file_read"
    copy.write_bytes(bundled.read_bytes())
    # The python3 found on PATH is ollie's own through a link (a venv's, Debian's python3 -> python3.11): it was
    # taken for another Python, and the tools were exec'd (a pyenv shim hid that where root ran the suite).
    (path := tmp_path / "bin").mkdir()
    (path / "python3").symlink_to(sys.executable)
    own = script_invocation(python3, ("-I",), bundled, ["x"], search_path=str(path), piped_input=None)
    assert own.python == (str(bundled), ("x",)) and own.argv[-2:] == [str(bundled), "x"]
    # A user's script may need site-packages or flags: it is exec'd, never run by the fork server's interpreter.
    assert script_invocation(python3, ("-I",), copy, ["x"], search_path=str(path), piped_input=None).python is None
    assert script_invocation(python3, ("-I", "-u"), bundled, [], search_path=str(path), piped_input=None).python is None


@pytest.mark.parametrize("name", ["file_read", "file_glob"])
async def test_a_bundled_tool_gives_the_same_answer_through_the_worker(ws, tmp_path, monkeypatch, name):
    from ollie import paths
    from ollie.tools.execute.server import ExecuteServer

    (ws.work / "ten.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    server = ExecuteServer(cwd=ws.work, session_id="1700000000000000000-worker", lock_dir=tmp_path / "locks")
    for args in (["ten.txt"], [str(ws.outside / "secret")], ["*.txt"]):
        request = {"calls": [{"tool": name, "args": args}]}
        by_worker = await server.call("call_tool", request)
        # The same script from the user's own tools dir (her config's: trusted as a reader, narrowed to read-only as
        # ollie's are; one in OLLIE_TOOLS_PATH is the model's, round 69) is exec'd by `python3 -I`.
        user_tools = paths.config_dir() / "tools"
        user_tools.mkdir(parents=True, exist_ok=True)
        for helper in ("_toolkit.py", name):
            (user_tools / helper).write_bytes((Path(__file__).resolve().parents[2] / "tools" / helper).read_bytes())
        (user_tools / name).chmod(0o755)
        by_exec = await ExecuteServer(cwd=ws.work, session_id="1700000000000000000-worker",
                                      lock_dir=tmp_path / "locks").call("call_tool", request)
        for helper in ("_toolkit.py", name):
            (user_tools / helper).unlink()
        # The policy grants the user's tools dir too, and a refusal lists the readable paths.
        assert (by_worker.text, by_worker.is_error) == (by_exec.text.replace(f"{user_tools}, ", ""), by_exec.is_error)
    assert "line 10" in (await server.call("call_tool", {"calls": [{"tool": "file_read", "args": ["ten.txt"]}]})).text


def test_the_compiled_cache_is_used_only_while_a_file_is_unchanged(tmp_path):
    from ollie.sandbox import pyrun

    (tmp_path / "_helper.py").write_text("VALUE = 1\n")
    (tmp_path / "tool").write_text("#!/usr/bin/env -S python3 -I\nimport _helper\n")
    saved = dict(pyrun._compiled), pyrun._tools_dir
    try:
        pyrun.preload(str(tmp_path))
        gc.unfreeze()  # preload froze this test process's objects: give them back to the collector
        tool = str(tmp_path.resolve() / "tool")
        assert pyrun.compile_script(tool) is pyrun._compiled[tool][1]
        spec = pyrun._Helpers.find_spec("_helper")
        assert spec is not None and spec.origin == str(tmp_path.resolve() / "_helper.py")
        assert pyrun._Helpers.find_spec("json") is None and pyrun._Helpers.find_spec("tool") is None
        (tmp_path / "tool").write_text("#!/usr/bin/env -S python3 -I\nimport _helper  # changed\n")
        (tmp_path / "_helper.py").write_text("VALUE = 22\n")  # a new size: mtimes are coarse (a clock tick)
        fresh = pyrun.compile_script(tool)
        assert fresh is not None and fresh is not pyrun._compiled[tool][1]
        assert pyrun._Helpers.find_spec("_helper") is None  # imported from the file again
        (tmp_path / "broken").write_text("def (:\n")
        assert pyrun.compile_script(str(tmp_path / "broken")) is None  # the real interpreter reports it
    finally:
        pyrun._compiled.clear()
        pyrun._compiled.update(saved[0])
        pyrun._tools_dir = saved[1]
