"""Emacs eglot with no ollie package: `Ollie: Refactor...` from the code action list runs a turn; its edit lands."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ollie.testing import Reply

from .test_nvim import file_edit

HERE = Path(__file__).resolve().parent


def test_eglot_runs_a_refactor_and_gets_the_edit(tmp_path, scripted_llm):
    emacs = shutil.which("emacs")
    if not emacs or subprocess.run([emacs, "--batch", "--eval", "(require 'eglot)"], capture_output=True).returncode:
        pytest.fail("Emacs with eglot is not installed: scripts/setup.d/26-emacs.sh installs it")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "code.py").write_text("# ollie: make mul multiply\ndef mul(a, b):\n    return a + b\n")
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(file_edit("code.py", "return a + b", "return a * b")), Reply.text("Done."))
    out = tmp_path / "eglot.json"
    env = {**os.environ, **srv.env(), "OLLIE_TEST_OUT": str(out),
           "OLLIE_TEST_SERVER_CMD": json.dumps([sys.executable, "-m", "ollie_lsp"])}
    proc = subprocess.run([emacs, "--batch", "-l", str(HERE / "eglot_refactor.el")], cwd=ws, env=env,
                          capture_output=True, text=True, timeout=120)
    assert out.exists(), f"emacs wrote no result (rc={proc.returncode})\n{proc.stderr[-3000:]}"
    result = json.loads(out.read_text())
    assert "failure" not in result, (result, proc.stderr[-3000:])
    assert "Ollie: Ask about this..." in result["titles"] and "Ollie: Explain" in result["titles"]
    assert result["buffer"].endswith("    return a * b\n")
    assert "make mul multiply" in srv.chat_requests[0].body["messages"][-1]["content"]
