"""Red team: the Python fast path (bundled tools run by the fork server's pre-imported interpreter).

A hostile workspace plants what a Python start would pick up (`sitecustomize.py`,
`.pth` files, modules shadowing the stdlib or the tools' own helper); a hostile model
prepares the step before (a FIFO on the tools' stdin, a symlinked tool name). None of
it may run, and the worker's memory must hold no key of the daemon's environment.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from ollie.sandbox.rules import landlock_abi
from ollie.sandbox.spawn import fork_server, spawn_sandboxed
from ollie.tools.execute.server import ExecuteServer
from tests.procs import new_mark

pytestmark = pytest.mark.skipif(landlock_abi() < 1, reason="needs a kernel with Landlock")

SESSION = "1700000000000000000-pyrun0"
PLANTED = ("sitecustomize.py", "usercustomize.py", "_toolkit.py", "argparse.py", "json.py", "re.py", "pathlib.py",
           "difflib.py", "shutil.py", "tempfile.py", "codecs.py", "encodings.py", "locale.py")


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose every planted module writes `ran-<name>` into it when imported."""
    root = tmp_path / "work"
    root.mkdir()
    (tmp_path / "scratch").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "scratch"))
    for name in PLANTED:
        (root / name).write_text(f"open({str(root / ('ran-' + name))!r}, 'w').close()\n")
    (root / "evil.pth").write_text(f"import os; open({str(root / 'ran-pth')!r}, 'w').close()\n")
    (root / "ten.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    return root


async def test_a_hostile_workspace_runs_nothing_in_a_bundled_tool(work: Path, tmp_path: Path):
    server = ExecuteServer(cwd=work, session_id=SESSION, lock_dir=tmp_path / "locks")
    calls = [{"tool": "file_read", "args": ["ten.txt"]}, {"tool": "file_grep", "args": ["line 7", "."]},
             {"tool": "file_glob", "args": ["*.txt"]}]
    result = await server.call("call_tool", {"calls": calls})
    assert not result.is_error, result.text
    assert "line 10" in result.text and "ten.txt" in result.text
    assert sorted(p.name for p in work.glob("ran-*")) == []


async def test_the_worker_holds_no_key_of_the_daemons_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    key = f"sk-KEY{new_mark()}Q"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("OLLIE_STORE", f"postgresql://u:{key}@db/x")
    await asyncio.to_thread(fork_server().close)  # the next spawn starts it again, from this environment
    work = tmp_path / "w"
    work.mkdir()
    script = work / "scan.py"
    # Its own environ and every readable page of its memory (the fork server's, copied): no daemon key there.
    script.write_text(
        "import re, sys\n"
        "found = set(re.findall(rb'sk-KEY[0-9]{12}Q', open('/proc/self/environ', 'rb').read()))\n"
        "with open('/proc/self/maps') as maps, open('/proc/self/mem', 'rb', buffering=0) as mem:\n"
        "    for line in maps:\n"
        "        f = line.split()\n"
        "        if 'r' not in f[1] or (len(f) > 5 and f[5] in ('[vvar]', '[vsyscall]')):\n"
        "            continue\n"
        "        a, b = (int(x, 16) for x in f[0].split('-'))\n"
        "        try:\n"
        "            mem.seek(a)\n"
        "            found.update(re.findall(rb'sk-KEY[0-9]{12}Q', mem.read(b - a)))\n"
        "        except OSError:\n"
        "            pass\n"
        "print(sorted(found))\n")
    from ollie.sandbox.policy import load_policy

    policy = load_policy("default", cwd=work, env={"TMPDIR": str(tmp_path)})
    python = os.path.realpath(sys.executable)
    own = f"sk-KEY{new_mark()}Q"  # the step's own: proves the scan sees what is there
    proc = await spawn_sandboxed([python, "-I", str(script)], policy=policy, cwd=work,
                                 env={"PATH": "/usr/bin:/bin", "LC_ALL": "C", "OWN": own}, python=(str(script), []))
    out, err, _ = await asyncio.wait_for(proc.communicate(limit_bytes=1 << 20), 30)
    assert await proc.wait() == 0, err
    assert out.decode().strip() == str([own.encode()])
