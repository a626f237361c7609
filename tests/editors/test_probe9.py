import threading
from pathlib import Path
from ollie.testing import Reply
from .test_nvim_tui import start_nvim


def test_probe(tmp_path: Path, scripted_llm):
    srv = scripted_llm("openai")
    story = threading.Event()
    srv.script(
        Reply.tool_calls(("execute_code", {"steps": [{"code": "curl -sS https://example.com -o /dev/null; echo rc=$?", "language": "bash"}]})),
        Reply.text("The network is refused."),
        Reply(text="A long story.", hold=story),
        Reply.text("first queued answer"),
        Reply.text("second queued answer"),
    )
    tmux = start_nvim(tmp_path, srv.env(approval="ask"), {"notes.txt": "my notes\n"})
    try:
        tmux.wait(lambda s: "my notes" in s, "nvim")
        tmux.keys(":Ollie fetch pypi", "Enter")
        s = tmux.keep("p0", tmux.wait(lambda s: "Reject with feedback" in s, "q", 60)); print(s)
        tmux.keys("1", "Enter")
        s = tmux.keep("p1", tmux.wait(lambda s: "4: Deny" in s, "q", 60)); print(s)
        tmux.keys("4", "Enter")
        s = tmux.keep("p2", tmux.wait(lambda s: "(end)" in s, "end", 60)); print(s)
        tmux.keys(":Ollie tell a story", "Enter")
        tmux.wait(lambda s: "A long story." in s, "story")
        tmux.keys(":OllieChat", "Enter")
        tmux.keys("first follow-up", literal=True); tmux.keys("Escape", "Enter")
        tmux.wait(lambda s: "queued: first follow-up" in s, "q1")
        tmux.keys("i"); tmux.keys("second follow-up", literal=True); tmux.keys("Escape", "Enter")
        s = tmux.keep("p3", tmux.wait(lambda s: "queued: second follow-up" in s, "q2")); print(s)
        tmux.keys("C-c")
        import time; time.sleep(4)
        s = tmux.keep("p4", tmux.screen()); print(s)
    finally:
        story.set()
        tmux.close()
    for r in srv.chat_requests[1:]:
        print("TOOL RESULT:", str(r.body["messages"][-1]["content"])[:1500])
