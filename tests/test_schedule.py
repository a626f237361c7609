"""The suite's schedule (tests/conftest.py, scripts/test): VS Code and slow files first, the others biggest first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pytest_in(tmp_path: Path, hooks: str, *options: str) -> subprocess.CompletedProcess[str]:
    """Run pytest on tmp_path's test files with only `hooks` from tests/conftest.py (PYTHONPATH: the repository): no
    pyproject.toml, no plugins but those `options` name, its temporary files under tmp_path (in the shared
    /tmp/pytest-of-USER they deleted the oldest runs' trees, a failed run's screenshots among them: ~20 s in CI)."""
    (tmp_path / "conftest.py").write_text(f"from tests.conftest import {hooks}  # noqa: F401\n")
    command = [sys.executable, "-m", "pytest", "-c", os.devnull, "-p", "no:cacheprovider", *options,
               "--basetemp", str(tmp_path / "tmp"),
               "--rootdir", str(tmp_path), str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=100)


def under_xdist(tmp_path: Path, workers: int) -> subprocess.CompletedProcess[str]:
    """Run tmp_path's test files as scripts/test does, on `workers` workers, verbose."""
    return pytest_in(tmp_path, "pytest_collection_modifyitems, pytest_xdist_make_scheduler", "-v", "-p", "xdist.plugin",
                     "-n", str(workers), "--dist", "loadfile", "--no-loadscope-reorder")


def test_files_with_a_slow_test_come_first_then_the_others_by_their_number_of_tests(tmp_path: Path):
    """The order xdist hands files out in (scripts/test keeps it): a slow file named last in collection runs first."""
    (tmp_path / "test_a_few.py").write_text("def test_one(): pass\n\ndef test_two(): pass\n")
    (tmp_path / "test_b_many.py").write_text("def test_one(): pass\n\ndef test_two(): pass\n\ndef test_three(): pass\n")
    (tmp_path / "test_c_slow.py").write_text("import pytest\n\n@pytest.mark.slow\ndef test_one(): pass\n\n"
                                             "def test_two(): pass\n")
    done = pytest_in(tmp_path, "pytest_collection_modifyitems", "--collect-only", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    files = list(dict.fromkeys(line.split("::")[0] for line in done.stdout.splitlines() if "::" in line))
    assert files == ["test_c_slow.py", "test_b_many.py", "test_a_few.py"], done.stdout


def test_the_real_vscode_tests_run_first_in_two_lanes_and_other_files_each_on_one_worker(tmp_path: Path):
    """Under `--dist loadfile` (scripts/test): the VS Code windows before the rest, dealt to two workers (lanes 0, 1,
    1, 0: a lane's windows one at a time), every other file on one worker."""
    (tmp_path / "test_a_many.py").write_text("".join(f"def test_{n}(): pass\n\n" for n in range(6)))
    (tmp_path / "test_b_mixed.py").write_text("def test_vscode_window(): pass\n\ndef test_neovim(): pass\n")
    (tmp_path / "test_vscode_c.py").write_text("".join(f"def test_{n}(): pass\n\n" for n in range(3)))
    done = under_xdist(tmp_path, 3)
    assert done.returncode == 0, done.stdout + done.stderr
    # "[gw1] [ 10%] PASSED test_b_mixed.py::test_vscode_window"
    ran = [line.split() for line in done.stdout.splitlines() if " PASSED " in line]
    worker = {words[-1]: words[0] for words in ran}
    windows = ["test_vscode_c.py::test_0", "test_vscode_c.py::test_1", "test_vscode_c.py::test_2",
               "test_b_mixed.py::test_vscode_window"]
    lanes = [worker[test] for test in windows]
    assert lanes[0] == lanes[3] != lanes[1] == lanes[2], done.stdout
    assert len({worker[f"test_a_many.py::test_{n}"] for n in range(6)}) == 1, done.stdout


def test_a_worker_killed_mid_run_fails_its_test_and_the_rest_of_its_file_still_runs(tmp_path: Path):
    """A worker killed (-9) in a file handed out after it had finished others: its test fails once, the file's other
    tests run on its replacement, the run ends failed (it hung: the finished files were handed out again)."""
    for name in "abcdef":
        (tmp_path / f"test_{name}.py").write_text("".join(f"def test_{n}(): pass\n\n" for n in range(3)))
    (tmp_path / "test_z_crash.py").write_text(
        "import os, signal\n\ndef test_killed(): os.kill(os.getpid(), signal.SIGKILL)\n\ndef test_after(): pass\n")
    done = under_xdist(tmp_path, 2)
    assert done.returncode == 1, done.stdout + done.stderr
    # Its progress line once ("[gw0] [ 75%] FAILED ..."; the summary's line is as long as CI=true makes it).
    assert done.stdout.count("] FAILED test_z_crash.py::test_killed") == 1, done.stdout
    assert " PASSED test_z_crash.py::test_after" in done.stdout, done.stdout
    assert "1 failed, 19 passed" in done.stdout, done.stdout
