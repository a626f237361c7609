"""The VS Code extension in real VS Code (code-server + headless Chromium), against the real daemon and scripted LLM."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parents[2] / "editors" / "vscode"
E2E_DIR = Path(os.environ.get("OLLIE_E2E_DIR", EXTENSION / ".e2e"))


def _require_harness() -> None:
    code_server = E2E_DIR / "cs" / "node_modules" / ".bin" / "code-server"
    for needed in (code_server, Path("/usr/bin/chromium"), EXTENSION / "node_modules" / "esbuild"):
        if not needed.exists():
            pytest.fail(f"{needed} is missing: run scripts/setup.d/30-vscode.sh (scripts/test does)")


@pytest.fixture(scope="module")
def vsix(tmp_path_factory) -> Path:
    """The extension built for production and packaged as a .vsix."""
    _require_harness()
    node = shutil.which("node")
    subprocess.run([node, "esbuild.mjs", "--production"], cwd=EXTENSION, check=True, timeout=120)
    out = tmp_path_factory.mktemp("vsix") / "ollie.vsix"
    subprocess.run([sys.executable, "scripts/make_vsix.py", "--out", str(out)], cwd=EXTENSION, check=True, timeout=60)
    return out


def test_vsix_holds_the_manifest_and_the_bundles(vsix):
    """The package has what VS Code installs from: the manifest, package.json and both bundles, no source maps."""
    names = set(zipfile.ZipFile(vsix).namelist())
    for name in ("extension.vsixmanifest", "[Content_Types].xml", "extension/package.json",
                 "extension/dist/extension.js", "extension/dist/webview.js", "extension/media/chat.css"):
        assert name in names
    assert not [n for n in names if n.endswith(".map")]


@pytest.mark.timeout(330)
def test_chat_streams_shows_tools_and_stops_in_real_vscode(vsix, tmp_path):
    """A prompt in the chat view streams a markdown answer with a tool block; Stop interrupts a slow reply."""
    daemon = Path(sys.executable).parent / "ollie-lsp"
    assert daemon.exists(), f"{daemon} missing: ollie is not installed in this venv"
    env = dict(os.environ, OLLIE_PYTHON=sys.executable, OLLIE_LSP=str(daemon), OLLIE_E2E_DIR=str(E2E_DIR),
               OLLIE_E2E_ARTIFACTS=str(tmp_path / "artifacts"), OLLIE_E2E_TOTAL_MS="300000")
    done = subprocess.run([shutil.which("node"), "test/e2e/run.mjs", "--vsix", str(vsix)], cwd=EXTENSION, env=env,
                          capture_output=True, text=True, timeout=320)
    output = done.stdout + done.stderr
    logs = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                     for p in sorted((tmp_path / "artifacts").glob("*.log")))
    assert done.returncode == 0 and "E2E PASSED" in done.stdout, f"{output[-5000:]}\n{logs}"
    assert "Stop interrupted the turn" in output
