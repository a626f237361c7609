"""The official TypeScript SDK's client agrees with ollie acp on a prompt with a tool call and the mode option."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from ollie.testing import Reply
from tests.pictures import png

TS_DIR = Path(__file__).parent / "ts"
SDK = TS_DIR / "node_modules" / "@agentclientprotocol" / "sdk"
PICTURE = png(3, 3, (0, 0, 255))


async def test_the_typescript_client_sees_the_tool_step_and_the_reply(llm, tmp_path, _private_dirs) -> None:
    if not SDK.is_dir() or shutil.which("node") is None:
        pytest.fail("node or @agentclientprotocol/sdk is missing: run scripts/setup.d/40-acp.sh (scripts/test does)")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "hello.py").write_text("print('hi')\n")
    (workspace / "shot.png").write_bytes(PICTURE)
    llm.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_read", "args": ["hello.py"]},
                                                         {"tool": "file_read", "args": ["shot.png"]}]})),
               Reply.text("It prints hi."))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OLLIE_")}, **llm.env()}
    proc = await asyncio.create_subprocess_exec(
        "node", str(TS_DIR / "prompt_with_tool.mjs"), str(workspace), sys.executable, "-m", "ollie_acp",
        cwd=TS_DIR, env=env, stdout=asyncio.subprocess.PIPE)
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0
    seen = json.loads(out.decode().strip().splitlines()[-1])
    assert seen["init"]["protocolVersion"] == 1 and seen["init"]["agentCapabilities"]["loadSession"] is True
    assert seen["stopReason"] == "end_turn"
    starts = [u for u in seen["updates"] if u["sessionUpdate"] == "tool_call"]
    hello = str(workspace.resolve() / "hello.py")  # absolute, as the spec wants
    assert [(s["kind"], s["title"], s["locations"][0]["path"]) for s in starts] == [
        ("read", "Read hello.py", hello), ("read", "Read shot.png", str(workspace.resolve() / "shot.png"))]
    # The `mode` slot offers the approval modes only; the agent selector is not in it.
    in_mode = [o for o in seen["configOptions"] if o.get("category") == "mode"]
    assert [(o["id"], [v["value"] for v in o["options"]]) for o in in_mode] == [
        ("mode", ["ask", "auto-edit", "auto", "read-only"])]
    assert {o["id"]: o.get("category") for o in seen["configOptions"]}["agent"] == "_ollie_agent"
    assert [m["id"] for m in seen["modes"]["availableModes"]] == ["ask", "auto-edit", "auto", "read-only"]
    assert {o["id"]: o["currentValue"] for o in seen["changedOptions"]}["mode"] == "read-only"
    updates = [u for u in seen["updates"] if u["sessionUpdate"] in ("current_mode_update", "config_option_update")]
    assert updates[0]["sessionUpdate"] == "current_mode_update" and updates[0]["currentModeId"] == "read-only"
    done = [u for u in seen["updates"] if u["sessionUpdate"] == "tool_call_update" and u.get("status")]
    assert done[-1]["status"] == "completed"
    # The image the model was shown reaches the client as the step's image content, in the SDK's own shape.
    image = {"type": "image", "mimeType": "image/png", "data": base64.b64encode(PICTURE).decode()}
    assert {"type": "content", "content": image} in done[-1]["content"], done[-1]["content"]
    text = "".join(u["content"]["text"] for u in seen["updates"] if u["sessionUpdate"] == "agent_message_chunk")
    assert text == "It prints hi."
