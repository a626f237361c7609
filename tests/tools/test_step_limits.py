"""A step's limits, with real steps: its memory (cgroup, else RLIMIT_AS), the OOM killer's preference for it,
the size of the files it writes, and a disk nearly full, each said plainly in the step's result."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ollie import paths
from ollie.errors import ConfigError
from ollie.sandbox import cgroup
from ollie.sandbox.policy import load_policy
from ollie.sandbox.rules import landlock_abi
from ollie.sandbox.sizes import ram_bytes, size_bytes

from .conftest import Workspace, code

pytestmark = pytest.mark.skipif(landlock_abi() < 1, reason="needs a kernel with Landlock")


def limit(**limits: str) -> None:
    """Make the user's sandbox.yaml the bundled one with these `limits:` entries."""
    text = paths.bundled("sandbox.yaml").read_text()
    entries = "".join(f"  {key}: {value}\n" for key, value in limits.items())
    user = paths.config_dir() / "sandbox.yaml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(text.replace("limits:\n", "limits:\n" + entries, 1).replace("  memory: 50%\n", "", 1)
                    .replace("  file_size: 8G", "  # file_size", 1) if limits else text)


def test_sizes_and_defaults(tmp_path):
    policy = load_policy(cwd=tmp_path)
    assert policy.max_memory == ram_bytes() // 2 and policy.max_file_size == 8 << 30
    assert [size_bytes(text) for text in ("512M", "1.5G", "64k", "1024", "0")] == [
        512 << 20, 3 << 29, 64 << 10, 1024, 0]
    for bad in ("lots", "-1G", "150%", "12Q", "1M"):
        limit(memory=bad)
        with pytest.raises(ConfigError, match="key 'limits.memory'"):
            load_policy(cwd=tmp_path)
    limit(file_size="50%")  # a share of the RAM makes no sense for a file
    with pytest.raises(ConfigError, match="key 'limits.file_size'"):
        load_policy(cwd=tmp_path)


async def test_a_step_over_its_memory_limit_is_killed_and_told_why(ws: Workspace):
    limit(memory="64M")
    hog = "x = bytearray(512 << 20); print('allocated')"
    result = await code(ws.server(), hog, language="python")
    assert result.is_error and "allocated" not in result.text, result.text
    assert "the step reached its memory limit (limits.memory: 64 MiB" in result.text, result.text
    # The daemon (this process) is untouched, and a step within the limit runs.
    assert not (await code(ws.server(), "x = bytearray(8 << 20); print('fine')", language="python")).is_error


async def test_the_oom_killer_prefers_every_step_over_the_daemon(ws: Workspace):
    result = await code(ws.server(), "cat /proc/self/oom_score_adj; echo 0 > /proc/self/oom_score_adj; "
                                     "sh -c 'cat /proc/self/oom_score_adj'")
    # Its children inherit it, and it cannot lower it (/proc is read-only to steps).
    assert result.text.split("\n")[1:3] == ["1000", "1000"], result.text
    assert Path("/proc/self/oom_score_adj").read_text().strip() != "1000"  # the daemon's own is left alone
    elevated = await code(ws.server(), "cat /proc/self/oom_score_adj", elevated=True)
    assert "1000" in elevated.text, elevated.text


def test_without_a_memory_cgroup_each_process_gets_rlimit_as(tmp_path):
    # limits.py as the tool process runs it where no memory cgroup is writable.
    probe = f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("limits", {str(Path(cgroup.__file__).with_name("limits.py"))!r})
limits = importlib.util.module_from_spec(spec); spec.loader.exec_module(limits)
limits.apply({{"memory": 256 << 20}}, None)
try:
    bytearray(512 << 20)
    print("allocated")
except MemoryError:
    print("MemoryError")
"""
    done = subprocess.run([sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "MemoryError", (done.stdout, done.stderr)


async def test_a_file_past_the_size_limit_fails_with_a_clear_note(ws: Workspace):
    limit(file_size="1000K")  # said as it was written (it read "1e+03 KiB")
    shell = await code(ws.server(), "head -c 3M /dev/zero > big.bin; echo after")
    assert "the step wrote a file past its size limit (limits.file_size: 1000 KiB" in shell.text, shell.text
    assert (ws.work / "big.bin").stat().st_size == 1000 << 10
    python = await code(ws.server(), "open('py.bin', 'wb').write(bytes(3 << 20))", language="python")
    assert python.is_error and "File too large" in python.text, python.text
    assert "limits.file_size: 1000 KiB" in python.text
    assert not (await code(ws.server(), "head -c 512K /dev/zero > small.bin")).is_error


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 4 MiB tmpfs mounted in the test's dir (needs root's mount)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs: {mounted.stderr.decode().strip()}")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


async def test_a_disk_nearly_full_is_reported_in_the_step_result(ws: Workspace, small_disk: Path):
    server = ws.server()
    server.set_cwd(small_disk)
    almost = await code(server, "head -c 3950K /dev/zero > fill.bin")
    assert f"the disk holding {small_disk} is nearly full" in almost.text, almost.text
    full = await code(server, "head -c 1M /dev/zero > more.bin")
    assert "No space left on device" in full.text and "nearly full" in full.text, full.text
    os.remove(small_disk / "fill.bin")
    assert "nearly full" not in (await code(server, "echo roomy")).text
