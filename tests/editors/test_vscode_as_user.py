"""Real VS Code (code-server + headless Chromium) and its daemon run by a normal user, not root
(`tests/asuser.py`): the daily loop, where root's powers would hide what fails for everyone else."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from ollie.testing import Reply
from tests.asuser import _as, ollie_lsp_for, os_user, python_for
from tests.tools.test_os_users import ALICE, home_of, shared  # noqa: F401  (the fixture)

from .conftest import E2E_DIR, EXTENSION


def run_e2e_as(name: str, scenario: str, vsix: Path, home: Path, server_env: dict[str, str], *,
               release: tuple[str, threading.Event], total_ms: int = 300000) -> str:
    """Run the e2e `scenario` as user `name` in an environment of her own, in `home`/e2e (made beforehand, left for
    the caller to remove); sets `release`'s event once the scenario logs its text. Its output (an assertion error
    holds its end and its logs)."""
    user = os_user(name)
    mine = home / "e2e"
    package = shutil.copy(vsix, home.parent / "ollie.vsix")  # hers to read (pytest's tmp dirs are root's, 0700)
    os.chmod(package, 0o644)
    daemon = ollie_lsp_for(name, home)
    env = {"HOME": str(home), "PATH": f"{daemon.parent}:/usr/local/bin:/usr/bin:/bin",
           "LANG": "C.UTF-8", "SHELL": "/bin/bash", "TMPDIR": str(home.parent), "OLLIE_E2E_DIR": str(E2E_DIR),
           "OLLIE_E2E_WORK": str(mine), "OLLIE_E2E_ARTIFACTS": str(mine / "artifacts"), "OLLIE_E2E_TOTAL_MS": str(total_ms),
           "OLLIE_PYTHON": python_for(name), "OLLIE_LSP": str(daemon),
           "OLLIE_E2E_SERVER_ENV": json.dumps(server_env),
           **{f"XDG_{d.upper()}_HOME": str(home / d) for d in ("config", "data", "state")}}
    command = [*_as(user), "env", "-i", *(f"{k}={v}" for k, v in env.items()),
               shutil.which("node") or "node", f"test/e2e/{scenario}", "--vsix", str(package), "--keep"]
    text, event = release
    lines: list[str] = []
    with subprocess.Popen(command, cwd=EXTENSION, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if text in line:
                event.set()
        proc.wait(timeout=60)
    output = "".join(lines)
    logs = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                     for p in sorted((mine / "artifacts").glob("*.log")))
    assert proc.returncode == 0 and "E2E PASSED" in output, f"{output[-5000:]}\n{logs}"
    return output


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_the_daily_loop_as_a_normal_user_in_real_vscode(vsix, shared, scripted_llm, tmp_path):  # noqa: F811
    """As a normal user, auto-save off: an approved edit shows in the open buffer and is saved with her unsaved line
    there (its question says so before she answers), the approved test command runs it, Undo takes back the edit
    alone, an unsaved buffer the agent did not touch stays unsaved; an edit she rejects is not made, its card alone
    saying so (the step said it again, in red); Stop ends a turn while it streams; the edit of an open file only root
    may write is refused, saying why; a prompt queued while a turn streams runs after it, editing her file in root's
    directory; after a window reload the chat shows that turn's changed files (one undone from there), the step she
    rejected as rejected by her (it was a red failure, its card gone), the one whose question the reload ended as not
    finished and its turn as the reload's end (red, and "Turn interrupted" as if she stopped it), and goes on in its
    session. Screenshots: user-*.png."""
    srv = scripted_llm("openai")
    queued, stopped = threading.Event(), threading.Event()
    srv.script(
        Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["calc.py", "a - b", "a + b"]}]})),
        Reply.tool_calls(("execute_code", {"steps": [{"code": "python3 test_calc.py", "language": "bash"}]})),
        Reply.text("Fixed add; the tests pass."),
        Reply.tool_calls(("call_tool", {"calls": [
            {"tool": "file_edit", "args": ["test_calc.py", "== 5,", "== 5 and add(0, 0) == 0,"]}]})),
        Reply.text("Left the test as it is."),
        Reply.text("Everything starts with add. " * 20, hold=stopped),  # held before its end: stopped mid-stream
        Reply.tool_calls(("call_tool", {"calls": [
            {"tool": "file_edit", "args": ["vendor/lib.py", "VERSION = 1", "VERSION = 2"]}]})),
        Reply.text("It is read-only: left as it is."),
        Reply.text("The fix: add returned a - b; it returns a + b now.", hold=queued),
        Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["lib/util.py", "1", "2"]}]})),
        Reply.text("Raised the limit."),
        Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["test_calc.py", "tests passed", "ok"]}]})),
        Reply.text("Nothing else: add is fixed."),
    )
    user = os_user(ALICE)
    home = home_of(ALICE, shared)
    workspace = home / "e2e" / "workspace"
    workspace.mkdir(parents=True)
    for path in (workspace.parent, workspace):
        os.chown(path, user.pw_uid, user.pw_gid)
    # Root's, in her workspace: a vendored file she may read, not write, a key she may not read, and a directory
    # holding a file of hers.
    (workspace / "vendor").mkdir()
    (workspace / "vendor" / "lib.py").write_text("VERSION = 1\n")
    (workspace / "lib").mkdir()
    (workspace / "lib" / "util.py").write_text("LIMIT = 1\n")
    os.chown(workspace / "lib" / "util.py", user.pw_uid, user.pw_gid)
    (workspace / "private.key").write_text("secret\n")
    (workspace / "private.key").chmod(0o600)
    server_env = {k: v for k, v in srv.env().items() if k != "OLLIE_APPROVAL"}  # the user's default: ask
    try:
        output = run_e2e_as(ALICE, "asuser.mjs", vsix, home, server_env, release=("waits queued", queued))
    finally:
        queued.set()
        stopped.set()
        shutil.copytree(home / "e2e" / "artifacts", tmp_path / "artifacts", dirs_exist_ok=True)
    for said in ("the approved edit showed in calc.py's buffer", "the edit she rejected was not made, its card alone saying so",
                 "Undo took back the agent's edit of calc.py alone, her line kept", "Stop ended the streaming turn",
                 "the agent's edit of a file she may not write was refused",
                 "the queued prompt ran after the turn",
                 "after the reload the step she rejected reads as rejected by her, not as a failure",
                 "after the reload the step whose question waited reads as not finished, the turn as ended by the reload",
                 "after a window reload the chat showed its session, the stopped turn too, the last turn's change "
                 "undone from it"):
        assert said in output, output[-4000:]
    ran = srv.chat_requests[2].body["messages"][-1]["content"]
    assert "tests passed" in ran and "AssertionError" not in ran, ran
    rejected = srv.chat_requests[4].body["messages"][-1]["content"]
    assert "rejected" in rejected, rejected
    refused = srv.chat_requests[7].body["messages"][-1]["content"]
    assert "read-only (no write permission), not changed" in refused, refused
    # Resumed, not a new session: the last prompt went with the whole conversation before it.
    last = [m.get("content") for m in srv.chat_requests[-1].body["messages"]]
    assert "fix add and run the tests" in str(last) and "Raised the limit." in str(last), last
