"""Elevated steps pass the agent's elevation gate: allowed, refused, or put to an approver each time."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from pathlib import Path

import pytest

from ollie.tools.base import Approver
from ollie.tools.execute.server import ExecuteServer

from .conftest import Workspace, code, stdout_of


def gated(ws: Workspace, mode: str, approver: Approver | None) -> ExecuteServer:
    """An execute server whose elevated steps pass the `mode` gate, asking `approver`."""
    server = ws.server()
    server.set_elevation(mode, approver)
    return server


async def test_a_bare_server_lets_elevated_steps_run(ws: Workspace):
    target = ws.outside / "bare.txt"
    result = await code(ws.server(), f"echo x > {target}", elevated=True)
    assert not result.is_error, result.text
    assert target.exists()


async def test_deny_refuses_without_running(ws: Workspace):
    server = gated(ws, "deny", None)
    target = ws.outside / "denied.txt"
    result = await code(server, f"echo x > {target}", elevated=True)
    assert result.is_error and '"elevation": "deny"' in result.text
    assert not target.exists()
    assert not (await code(server, "echo inside > in.txt")).is_error, "sandboxed steps still run"


async def test_ask_shows_the_code_and_obeys_the_answer(ws: Workspace):
    asked: list[str] = []
    answers = iter(["rejected: the user did not allow it", None])

    async def approver(what: str) -> str | None:
        asked.append(what)
        return next(answers)

    server = gated(ws, "ask", approver)
    target = ws.outside / "asked.txt"
    declined = await code(server, f"echo x > {target}", elevated=True)
    assert declined.is_error and "the user did not allow it" in declined.text
    assert not target.exists()
    approved = await code(server, f"echo x > {target}", elevated=True)
    assert not approved.is_error, approved.text
    assert target.read_text() == "x\n"
    assert asked == [f"echo x > {target}"] * 2
    await code(server, "echo sandboxed > s.txt")
    assert len(asked) == 2, "only elevated steps are put to the approver"


async def test_ask_with_nobody_to_ask_refuses(ws: Workspace):
    server = gated(ws, "ask", None)
    result = await code(server, f"echo x > {ws.outside / 'n.txt'}", elevated=True)
    assert result.is_error and "nobody can give it" in result.text
    assert not (ws.outside / "n.txt").exists()


async def test_an_elevated_tool_call_names_the_script_and_its_arguments(ws: Workspace):
    asked: list[str] = []

    async def approver(what: str) -> str:
        asked.append(what)
        return "rejected: declined"

    ws.script("touch_it", "#!/bin/bash\n# description: touch a file\ntouch \"$1\"\n")
    server = gated(ws, "ask", approver)
    target = ws.outside / "t x.txt"
    result = await server.call("call_tool", {"calls": [{"tool": "touch_it", "args": [str(target)], "elevated": True}]})
    assert result.is_error and "declined" in result.text
    assert asked == [f"touch_it '{target}'"]
    assert not target.exists()


def test_unknown_mode_is_rejected(ws: Workspace):
    with pytest.raises(ValueError, match="ask, allow, deny"):
        ws.server().set_elevation("sometimes", None)


async def test_a_tool_script_changed_while_the_user_decides_is_refused(ws: Workspace):
    target = ws.outside / "swapped.txt"
    script = ws.script("deploy", f"#!/bin/sh\necho deployed > {ws.outside}/deployed.txt\n")

    async def approver(what: str) -> None:
        # Tool code (or anything else) rewrites the script after it was shown and before it runs.
        script.write_text(f"#!/bin/sh\necho pwned > {target}\n")
        return None

    server = gated(ws, "ask", approver)
    result = await server.call("call_tool", {"calls": [{"tool": "deploy", "args": [], "elevated": True}]})
    assert result.is_error and "changed after it was approved" in result.text, result.text
    assert not target.exists() and not (ws.outside / "deployed.txt").exists()


async def test_an_elevated_program_is_kept_where_sandboxed_code_cannot_write(ws: Workspace):
    server = ws.server()
    # The program reports where it lives; a sandboxed step then tries to write there.
    found = await code(server, 'echo "$0"', elevated=True)
    program = stdout_of(found).strip()
    assert "/private/" in program and not program.startswith(str(ws.work))
    private = Path(program).parent.parent
    probe = await code(server, f"touch '{private}/x' && echo WROTE; ls '{private}' && echo LISTED")
    assert "WROTE" not in stdout_of(probe) and "LISTED" not in stdout_of(probe), probe.text


def test_each_question_takes_the_step_that_runs_its_code_the_same_code_each_in_turn():
    from ollie.tools.execute import elevation

    first, second, third = ("c.1", "execute", "A"), ("c.2", "execute", "B"), ("c.3", "execute", "C")
    leaving = [("echo x", first), ("echo y", second), ("echo x", third)]
    token = elevation.steps.set(lambda: leaving)
    try:
        assert [elevation.step_of(w) for w in ("echo x", "echo y", "echo x", "echo x")] == [first, second, third, None]
    finally:
        elevation.steps.reset(token)


@pytest.mark.parametrize("swap", ["mkfifo tools/deploy", "truncate -s 64M tools/deploy"])
async def test_a_tool_script_another_sessions_step_swaps_for_a_fifo_or_a_huge_file_is_read_capped_never_waited_on(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, swap: str,
):
    # Round 35: the tools dir lies in the project (OLLIE_TOOLS_PATH inside it, Known limits). While the user decides
    # on an elevated call, another session's step swaps the script: a FIFO's open by name held the whole daemon's loop
    # (no other session, no editor request served), a huge file was read whole into the daemon's memory.
    tools = ws.work / "tools"
    tools.mkdir()
    monkeypatch.setenv("OLLIE_TOOLS_PATH", str(tools))
    (tools / "deploy").write_text(f"#!/bin/sh\necho deployed > {ws.outside}/deployed.txt\n")
    (tools / "deploy").chmod(0o755)
    other = ws.server(session_id="s2")
    released, held = threading.Event(), threading.Event()

    def unblock() -> None:
        # Only the old code's open of the FIFO waits for a writer: give it one, so the test fails rather than hangs.
        if not released.wait(30):
            held.set()
            with contextlib.suppress(OSError), open(tools / "deploy", "wb"):
                pass

    async def approver(what: str) -> None:
        swapped = await code(other, f"rm tools/deploy && {swap} && echo swapped")
        assert stdout_of(swapped).strip() == "swapped", swapped.text
        threading.Thread(target=unblock, daemon=True).start()
        return None

    server = gated(ws, "ask", approver)
    result = await server.call("call_tool", {"calls": [{"tool": "deploy", "args": [], "elevated": True}]})
    released.set()
    assert not held.is_set(), "the daemon's loop waited on the FIFO"
    assert result.is_error and ("not a regular file" in result.text or "larger than" in result.text), result.text
    assert not (ws.outside / "deployed.txt").exists()


async def test_the_time_an_elevation_question_waits_is_not_taken_from_the_call_s_timeout(ws: Workspace):
    # Asked during the call (unlike a step's approval, before it), the wait counted against its timeout: a person who
    # answered after it had passed got "timed out" for a step that never ran.
    loop = asyncio.get_running_loop()
    past_timeout = loop.create_future()

    async def approver(what: str) -> str | None:
        loop.call_later(1.5, past_timeout.set_result, None)  # the answer comes after the call's 1 s
        await past_timeout
        return None

    result = await code(gated(ws, "ask", approver), "echo ran", elevated=True, timeout=1)
    assert not result.is_error and stdout_of(result).strip() == "ran", result.text


async def test_a_part_the_calls_question_allowed_runs_once_unasked_and_is_asked_again_after(ws: Workspace):
    """What the user allowed in the call's own question runs once without a second question, not every time the same
    text comes again (the allowance was for the steps shown)."""
    from ollie.tools.execute import elevation

    asked: list[str] = []

    async def approver(what: str) -> str:
        asked.append(what)
        return "rejected: declined"

    ws.script("touch_it", "#!/bin/bash\n# description: append a line\necho x >> \"$1\"\n")
    target = ws.outside / "twice.txt"
    what = f"touch_it {target}"
    token = elevation.allowed.set([what])
    try:
        call = {"tool": "touch_it", "args": [str(target)], "elevated": True}
        result = await gated(ws, "ask", approver).call("call_tool", {"calls": [call, call]})
    finally:
        elevation.allowed.reset(token)
    assert asked == [what], result.text
    assert target.read_text() == "x\n"


async def test_a_part_the_calls_question_allowed_lets_no_other_part_run_unasked(ws: Workspace):
    """The allowance is for the text the user saw: a step that runs anything else outside is asked about, however many
    parts the call's question allowed."""
    from ollie.tools.execute import elevation

    asked: list[str] = []

    async def approver(what: str) -> str:
        asked.append(what)
        return "rejected: declined"

    ws.script("touch_it", "#!/bin/bash\n# description: append a line\necho x >> \"$1\"\n")
    shown, other = ws.outside / "shown.txt", ws.outside / "other.txt"
    token = elevation.allowed.set([f"touch_it {shown}"])
    try:
        call = {"tool": "touch_it", "args": [str(other)], "elevated": True}
        result = await gated(ws, "ask", approver).call("call_tool", {"calls": [call]})
    finally:
        elevation.allowed.reset(token)
    assert asked == [f"touch_it {other}"], result.text
    assert not other.exists()


async def test_an_elevated_tool_script_runs_no_program_planted_on_a_workspace_path_entry(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch):
    """Outside the sandbox a tool script's interpreter and its commands are looked up on the trusted PATH: a step writes
    the workspace's `.venv/bin`, which the session's PATH may name first."""
    venv_bin = ws.work / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    marker = ws.outside / "planted-ran"
    for name in ("bash", "python3"):
        (venv_bin / name).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (venv_bin / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{venv_bin}:{os.environ['PATH']}")
    ws.script("show_path", "#!/usr/bin/env bash\n# description: show PATH\necho \"PATH=$PATH\"\npython3 -c pass\n")
    call = {"tool": "show_path", "args": [], "elevated": True}
    result = await gated(ws, "allow", None).call("call_tool", {"calls": [call]})
    assert "PATH=" in result.text and str(venv_bin) not in result.text, result.text
    assert not marker.exists()
