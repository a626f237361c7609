"""The suite's schedule (tests/conftest.py, scripts/test): files of slow tests first, then the others, biggest first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_files_with_a_slow_test_come_first_then_the_others_by_their_number_of_tests(tmp_path: Path):
    """The order xdist hands files out in (scripts/test keeps it): a slow file named last in collection runs first."""
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_collection_modifyitems  # noqa: F401\n")
    (tmp_path / "test_a_few.py").write_text("def test_one(): pass\n\ndef test_two(): pass\n")
    (tmp_path / "test_b_many.py").write_text("def test_one(): pass\n\ndef test_two(): pass\n\ndef test_three(): pass\n")
    (tmp_path / "test_c_slow.py").write_text("import pytest\n\n@pytest.mark.slow\ndef test_one(): pass\n\n"
                                             "def test_two(): pass\n")
    # Only the hook from tests/conftest.py (PYTHONPATH: the repository): no pyproject.toml, no plugins.
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-c", os.devnull, "-p", "no:cacheprovider",
               "--rootdir", str(tmp_path), str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    files = list(dict.fromkeys(line.split("::")[0] for line in done.stdout.splitlines() if "::" in line))
    assert files == ["test_c_slow.py", "test_b_many.py", "test_a_few.py"], done.stdout
