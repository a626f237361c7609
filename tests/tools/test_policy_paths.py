"""The file tools learn the sandbox policy's paths from a sealed memfd (`$OLLIE_SANDBOX_PATHS`), not from the
environment: a grant list of any size works, and nothing the step or the workspace does changes what they allow."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ollie import paths

from .conftest import Workspace, code, tool

TOOLS = Path(__file__).parents[2] / "tools"
SEALED = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


def _grants_past_2_mib(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """600 writable grants of ~3,800 characters each (2.2 MiB a list) in the user's sandbox.yaml; the dirs made.

    Under {XDG_CACHE_HOME}, a deep dir: a sandbox.yaml past 1 MiB is not read.
    """
    deep = root / "grants" / "/".join(f"{level:02d}{'d' * 248}" for level in range(14))
    monkeypatch.setenv("XDG_CACHE_HOME", str(deep))
    names = [f"{n:03d}{'x' * 200}" for n in range(600)]
    for name in names:
        (deep / name).mkdir(parents=True)
    monkeypatch.setenv("OLLIE_CONFIG_DIR", str(root / "config"))
    (root / "config").mkdir()
    policy = paths.bundled("sandbox.yaml").read_text()
    listed = "".join(f'"{{XDG_CACHE_HOME}}/{name}", ' for name in names)
    (root / "config" / "sandbox.yaml").write_text(policy.replace('rw: ["', f'rw: [{listed}"', 1))
    return [deep / name for name in names]


async def test_the_file_tools_work_under_a_grant_list_past_2_mib(ws: Workspace, monkeypatch) -> None:
    # The lists were passed in OLLIE_SANDBOX_READ/WRITE: past the kernel's 128 KiB for one environment string no step
    # started (E2BIG), and so a list past 64 KiB was passed empty, refusing every path to the file tools.
    leaves = _grants_past_2_mib(ws.root, monkeypatch)
    assert len(json.dumps([str(leaf) for leaf in leaves])) > 2 << 20
    (granted := leaves[457] / "notes.txt").write_text("granted text\n")
    server = ws.server()
    read = await tool(server, "file_read", str(granted))
    assert not read.is_error and "granted text" in read.text, read.text[:2000]
    edited = await tool(server, "file_edit", str(granted), "granted text", "edited text")
    assert not edited.is_error, edited.text[:2000]
    assert granted.read_text() == "edited text\n"
    ran = await code(server, f"cat {granted}; echo ran")
    assert "edited text\nran" in ran.text, ran.text[:2000]
    # What no grant names is still refused, by the tools' own check, naming a bounded few of the paths.
    for refused in (await tool(server, "file_read", str(ws.outside / "secret.txt")),
                    await tool(server, "file_write", str(ws.root / "grants" / "new.txt"), "x")):
        assert refused.is_error and "outside the sandbox's" in refused.text and " more)" in refused.text, refused.text[:9000]
        assert len(refused.text) < 9000 and "\tsecret" not in refused.text
        assert "paths (/" in refused.text, refused.text[:9000]  # a first path named, however long
    assert not (ws.root / "grants" / "new.txt").exists()


async def test_a_step_can_neither_change_its_policy_paths_nor_hand_a_tool_forged_ones(ws: Workspace) -> None:
    (ws.work / "a.txt").write_text("in the workspace\n")
    forged = json.dumps({"read": ["/"], "write": ["/"]})
    step = f"""
fd=$OLLIE_SANDBOX_PATHS
head -c 9 /proc/self/fd/$fd; echo
printf '%s' '{forged}' >&$fd && echo WROTE
: > /proc/self/fd/$fd && echo TRUNCATED
python3 -c 'import os; os.ftruncate(int(os.environ["OLLIE_SANDBOX_PATHS"]), 0)' 2>/dev/null && echo SHRUNK
python3 -c "import json, os; print('intact', '/' not in json.loads(os.pread($fd, 1 << 24, 0))['read'])"
# The step's own run of a tool inherits the sealed descriptor: the check holds there too.
python3 -I {TOOLS}/file_read {ws.outside}/secret.txt
# /proc is the step's own procfs, which a path check cannot tell from the host's: the tools refuse it.
python3 -I {TOOLS}/file_read /proc/self/status
printf '%s' '{forged}' > "$TMPDIR/forged"
OLLIE_SANDBOX_PATHS=9 python3 -I {TOOLS}/file_read a.txt 9<"$TMPDIR/forged"
echo done
"""
    result = await code(ws.server(), step)
    assert '\n{"read": \n' in result.text and "done" in result.text and "intact True" in result.text, result.text
    for name in ("WROTE", "TRUNCATED", "SHRUNK", "\tsecret"):
        assert f"{name}\n" not in result.text, result.text
    assert f"{ws.outside}/secret.txt: outside the sandbox's readable paths" in result.text, result.text
    assert "/proc/self/status: outside the sandbox's readable paths" in result.text, result.text
    # An unsealed descriptor listing "/" is refused as anything malformed is: every path.
    assert "a.txt: outside the sandbox's readable paths ()" in result.text, result.text


def _memfd(data: bytes, seals: int) -> int:
    fd = os.memfd_create("paths", os.MFD_ALLOW_SEALING)
    os.write(fd, data)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    return fd


@pytest.mark.parametrize(("data", "seals", "named"), [
    (b'{"read": ["/"], "write": ["/"]}', SEALED & ~fcntl.F_SEAL_WRITE, None),  # writable still
    (b'{"read": ["/"], "write": "/"}', SEALED, None),
    (b'{"read": ["/", 7], "write": ["/"]}', SEALED, None),
    (b'{"read": ["/"]}', SEALED, None),
    (b'["/"]', SEALED, None),
    (b"/:/tmp", SEALED, None),
    (b"", SEALED, None),
    (b'{"read": ["/"], "write": ["/"]}', SEALED, "x"),
    (b'{"read": ["/"], "write": ["/"]}', SEALED, "99"),  # no such descriptor
])
def test_anything_but_a_sealed_list_of_paths_refuses_every_path(ws: Workspace, data, seals, named) -> None:
    (target := ws.work / "a.txt").write_text("text\n")
    fd = _memfd(data, seals)
    try:
        env = {**os.environ, "OLLIE_SANDBOX_PATHS": named or str(fd)}
        for argv in (["file_read", str(target)], ["file_write", str(target), "changed"]):
            done = subprocess.run([sys.executable, "-I", str(TOOLS / argv[0]), *argv[1:]], env=env, pass_fds=[fd],
                                  capture_output=True, text=True, timeout=60, check=False)
            assert done.returncode == 1 and "outside the sandbox's" in done.stderr, done
    finally:
        os.close(fd)
    assert target.read_text() == "text\n"
    # The same descriptor, sealed and well formed, lets the path through.
    good = _memfd(json.dumps({"read": [str(ws.work)], "write": []}).encode(), SEALED)
    try:
        env = {**os.environ, "OLLIE_SANDBOX_PATHS": str(good)}
        done = subprocess.run([sys.executable, "-I", str(TOOLS / "file_read"), str(target)], env=env,
                              pass_fds=[good], capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0 and "text" in done.stdout, done
    finally:
        os.close(good)
