"""Exploration only (not committed)."""
import json, sys, os
from pathlib import Path
from ollie.testing import Reply
from .test_nvim_tui import start_nvim, quit_nvim
from . import screens

OUT = Path("/tmp/newuser8-x/shots"); OUT.mkdir(parents=True, exist_ok=True)

def snap(tmux, name):
    (OUT / f"{name}.txt").write_text(tmux.screen())
    screens.png(tmux.screen(colours=True), OUT / f"{name}.png", (1000, 560))

def test_explore(tmp_path, scripted_llm):
    srv = scripted_llm("openai")
    srv.script(Reply(tool_calls=[("mcp__planted__add", {"a": 20, "b": 22})]), Reply(text="It is 42."),
               Reply(tool_calls=[("mcp__mine__create_issue", {"title": "bug"})]), Reply(text="Filed."))
    server = Path(__file__).parents[1] / "mcp" / "server.py"
    cfg = tmp_path / "cfg"; (cfg / "ollie").mkdir(parents=True)
    (cfg / "ollie" / "mcp.json").write_text(json.dumps({"mcpServers": {"mine": {"command": sys.executable, "args": [str(server)]}}}))
    planted = json.dumps({"mcpServers": {"planted": {"command": sys.executable, "args": [str(server)]}}})
    env = {**srv.env(approval="ask"), "XDG_CONFIG_HOME": str(cfg)}
    tmux = start_nvim(tmp_path, env, {"calc.py": "print(20 + 22)\n", ".mcp.json": planted}, size=(100, 30))
    try:
        tmux.wait(lambda s: "print(20 + 22)" in s, "nvim to start")
        tmux.keys(":OllieMcp", "Enter")
        try:
            tmux.wait(lambda s: "mine" in s and "planted" in s, "mcp list", timeout=20)
        finally:
            snap(tmux, "1-mcp-list")
        tmux.keys("Escape")
        import time; time.sleep(1); snap(tmux, "1b-after-escape")
        tmux.keys(":Ollie add them")
        time.sleep(0.5); snap(tmux, "1c-typed")
        tmux.keys("Enter")
        try:
            tmux.wait(lambda s: "Allow once" in s, "q", timeout=30)
        finally:
            snap(tmux, "2-ws-question")
        tmux.keys("2", "Enter")  # allow always?
        try:
            tmux.wait(lambda s: "It is 42." in s, "answer", timeout=30)
        finally:
            snap(tmux, "3-answer")
        tmux.keys(":Ollie file a bug", "Enter")
        try:
            tmux.wait(lambda s: "Allow once" in s, "q2", timeout=30)
        finally:
            snap(tmux, "4-tool-question")
        tmux.keys("1", "Enter")
        try:
            tmux.wait(lambda s: "Filed." in s, "answer2", timeout=30)
        finally:
            snap(tmux, "5-filed")
        tmux.keys(":Ollie /network", "Enter")
        try:
            tmux.wait(lambda s: "network" in s.split("Filed.")[-1], "network", timeout=20)
        finally:
            snap(tmux, "6-network")
        tmux.keys(":Ollie /mcp", "Enter")
        try:
            tmux.wait(lambda s: "ready" in s.split("Filed.")[-1], "mcp", timeout=20)
        finally:
            snap(tmux, "7-mcp")
    finally:
        tmux.close()
