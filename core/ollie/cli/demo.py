"""`ollie demo`: one `ollie -p` turn in a scratch workspace against the scripted model (no real LLM)."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

from ollie.cli import PYTHON_M

SAMPLE_NAME = "hello.py"
SAMPLE = '''"""A sample file for the ollie demo."""


def greet(name: str) -> str:
    """Say hello."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    print(greet("world"))
'''
PROMPT = f"What does {SAMPLE_NAME} do?"
ANSWER = (
    f"{SAMPLE_NAME} defines `greet(name)`, which returns a greeting, and when run as a script "
    "it prints \"Hello, world!\"."
)
LABEL = "scripted model (no real LLM)"
TIMEOUT_S = 60.0


def run_demo() -> int:
    """Run the demo; 0 when the whole round trip (model, sandboxed tool, answer) worked."""
    from ollie.testing import Reply, ScriptedLLMServer
    from ollie.tools.execute.sessiondirs import SessionDirs, sweep_unowned

    srv = ScriptedLLMServer("openai").start()
    srv.script(Reply(text="Let me read the file.",
                     tool_calls=[("call_tool", {"calls": [{"tool": "file_read", "args": [SAMPLE_NAME]}]})]),
               Reply.text(ANSWER))
    # A demo killed (kill -9) left its scratch dirs: the next one removes those whose demo is gone (no owner lock).
    sweep_unowned(Path(tempfile.gettempdir()), "ollie-demo-")
    scratch = SessionDirs(Path(tempfile.mkdtemp(prefix="ollie-demo-")))
    scratch.claim()
    try:
        root = scratch.root
        workspace = root / "workspace"
        workspace.mkdir()
        (workspace / SAMPLE_NAME).write_text(SAMPLE, encoding="utf-8")
        # Private XDG dirs: the demo neither reads the user's config nor leaves a session behind.
        env = {k: v for k, v in os.environ.items() if not k.startswith("OLLIE_")}
        for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            env[var] = str(root / var.lower())
        env.update(srv.env())
        print(f"== ollie demo: {LABEL} ==\nworkspace {workspace}\n\nyou> {PROMPT}\n", flush=True)
        # Its steps (on stderr) and answer (on stdout) as one transcript, in the order they came.
        ran = subprocess.run([*PYTHON_M, "ollie.cli", "-p", PROMPT, "--cwd", str(workspace)], env=env,
                             timeout=TIMEOUT_S, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        code = ran.returncode
        # Not `ollie: session <id>`: that session goes with the scratch dirs, nothing to resume.
        print(re.sub(r"^ollie: session \S+\n", "", ran.stdout, flags=re.M), end="", flush=True)
        srv.assert_done()
    except (subprocess.TimeoutExpired, AssertionError) as exc:
        print(f"demo: FAILED — {exc}")
        return 1
    finally:
        srv.stop()
        scratch.remove()
    if code != 0:
        print(f"demo: FAILED — `ollie -p` exited {code}")
        return 1
    print(f"demo: OK — terminal, engine, sandboxed tool and {LABEL} all worked")
    return 0
