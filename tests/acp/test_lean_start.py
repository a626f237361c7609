"""`ollie acp`'s start-up path: a chat-only first prompt loads no argparse, no tool-call machinery, no fork planning;
the agent runs in the `ollie` console script's own interpreter."""

from __future__ import annotations

import sys
from pathlib import Path

from ollie.testing import Reply

# `ollie acp` as an editor starts it (no arguments), with an audit hook in the agent's own process that logs the
# watched modules as they load.
_WATCHED = """
import os, runpy, sys
log, pid = sys.argv.pop(1), os.getpid()
WATCHED = ("argparse", "ollie.tools.execute.validation", "ollie.tools.execute.executors", "ollie.agent.fork",
           "ollie.agent.core")
def note(line):
    with open(log, "a") as f:
        f.write(line + "\\n")
def hook(event, args):
    if event == "import" and os.getpid() == pid and args[0] in WATCHED:
        note(args[0])
sys.addaudithook(hook)
runpy.run_module("ollie_acp", run_name="__main__", alter_sys=True)
"""


async def test_a_first_prompt_loads_no_argparse_nor_the_executors(
        start_agent, llm, tmp_path: Path) -> None:
    log = tmp_path / "modules.log"
    llm.script(Reply.text("hello"))
    agent = await start_agent(env=llm.env(), command=[sys.executable, "-c", _WATCHED, str(log)])
    sid = await agent.new()
    assert (await agent.prompt(sid, "hi")).stop_reason == "end_turn"
    assert agent.client.text(sid) == "hello"
    lines = log.read_text().split("\n")
    assert "ollie.agent.core" in lines  # the hook sees the engine load
    # Nor what only a session/fork plans with.
    assert [m for m in lines if m in ("argparse", "ollie.tools.execute.validation", "ollie.tools.execute.executors",
                                      "ollie.agent.fork")] == []


# The `ollie` console script's interpreter, with an audit hook: what it imported before the agent's module, and
# whether it exec'd.
_BEFORE_AGENT = """
import sys
seen, execs = [], []
def hook(event, args):
    if event == "import":
        seen.append(args[0])
    elif event == "os.exec":
        execs.append(args[0])
sys.addaudithook(hook)
from ollie.cli import main
try:
    main(["acp", "--version"])
except SystemExit:
    pass
print("exec'd:", *execs)
print("imported:", *seen[:seen.index("ollie_acp")])
"""


def test_ollie_acp_runs_the_agent_in_its_own_interpreter_before_argparse_or_pathlib(tmp_path: Path) -> None:
    import subprocess

    # It exec'd `python -P -m ollie_acp`: a second interpreter's start (~13 ms of CPU) before an editor's first chunk.
    done = subprocess.run([sys.executable, "-c", _BEFORE_AGENT], capture_output=True, text=True, timeout=60,
                          check=True, cwd=tmp_path)
    answer, execs, before = done.stdout.splitlines()
    assert answer.startswith("ollie-acp ")  # the agent's own parser answered
    assert execs == "exec'd:"
    imported = before.split()[1:]
    assert "ollie.cli" in imported
    assert not {"argparse", "pathlib", "re", "typing"} & set(imported)  # the terminal's, which no first chunk needs
