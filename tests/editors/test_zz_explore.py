import os, sys, threading, re
from pathlib import Path
from ollie.testing import Reply
from .test_nvim_tui import start_nvim, assert_clean, choice

def test_inject_feedback(tmp_path: Path, scripted_llm):
    srv = scripted_llm("openai")
    srv.script(Reply(text="Reading the code carefully. " * 30, delay=0.05, chunk_size=12),
               Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["calc.py", "a - b", "a + b  # fixed"]}]})),
               Reply.text("No comment then."), Reply.text("Queued one answered."))
    tmux = start_nvim(tmp_path, srv.env(approval="ask"), {"calc.py": "def add(a, b):\n    return a - b\n"})
    try:
        tmux.wait(lambda s: "return a - b" in s, "nvim")
        tmux.keys(":Ollie fix add", "Enter")
        tmux.wait(lambda s: "Reading the code" in s, "stream", 60)
        tmux.keys(":OllieChat", "Enter")
        tmux.type("also keep it short", "C-j")
        tmux.keep("i1", tmux.wait(lambda s: "keep it short" in s, "inject"))
        tmux.type("then explain", "Escape", "Enter")
        tmux.keep("i2", tmux.wait(lambda s: "queued" in s, "queued"))
        asked = tmux.keep("i3", tmux.wait(lambda s: "Allow once" in s, "ask", 60))
        tmux.keys(choice(asked, "Feedback") if "Feedback" in asked else choice(asked, "Deny"), "Enter")
        tmux.keep("i4", tmux.wait(lambda s: "eedback" in s.splitlines()[-1] or "eedback" in s, "fb prompt"))
        tmux.type("no comment please", "Enter")
        tmux.keep("i5", tmux.wait(lambda s: "Queued one answered." in s and "(end)" in s, "end", 60))
        for m in srv.chat_requests[2].body["messages"][-3:]:
            print(repr(m.get("content"))[:300])
    finally:
        tmux.close()
