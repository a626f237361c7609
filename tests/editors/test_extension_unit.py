"""The VS Code extension's unit tests (node --test over its pure modules, transpiled by esbuild: lint's tsc type-checks
them): no window, so not on the real VS Code worker (tests/conftest.py goes by the file's name)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parents[2] / "editors" / "vscode"


def _npm() -> str:
    npm = shutil.which("npm")
    if not npm:
        pytest.fail("npm not found: the VS Code extension needs node >= 20 and npm")
    if not (EXTENSION / "node_modules" / ".bin" / "esbuild").exists():
        pytest.fail("editors/vscode/node_modules is missing: run scripts/setup.d/30-vscode.sh")
    return npm


@pytest.mark.slow  # node starts a process per test file: seconds
def test_extension_unit_tests_pass():
    """The unit tests build, and every node:test unit test passes."""
    done = subprocess.run([_npm(), "test"], cwd=EXTENSION, capture_output=True, text=True, timeout=110)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    passed = int(re.search(r"^# pass (\d+)$", output, re.M).group(1))
    assert re.search(r"^# fail 0$", output, re.M), output[-4000:]
    assert passed >= 30, f"only {passed} unit tests ran:\n{output[-2000:]}"
