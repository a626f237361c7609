"""Readable tool steps on the wire (protocol v2): the `tool` object of call/step/tool events, statuses, diffs."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from ollie.paths import config_dir
from ollie.testing import Reply
from tests.procs import eventually

from .conftest import Daemon


def user_tool(name: str, header: str, body: str) -> None:
    """A user tool script in the private config's tools dir (the daemon finds it there)."""
    tools = config_dir() / "tools"
    tools.mkdir(parents=True, exist_ok=True)
    script = tools / name
    script.write_text(f"#!/bin/sh\n# description: {name} for the tests\n{header}\n{body}\n")
    script.chmod(0o755)


def one(tool: str, *args: str) -> tuple[str, dict[str, Any]]:
    """A call_tool call of one tool script."""
    return ("call_tool", {"calls": [{"tool": tool, "args": list(args)}]})


def code(text: str, language: str = "bash") -> tuple[str, dict[str, Any]]:
    """An execute_code call of one step."""
    return ("execute_code", {"steps": [{"code": text, "language": language}]})


async def run_turn(daemon: Daemon, llm: Any, *calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Run one turn whose model makes `calls` (each in its own reply, in order); its call/step/tool events."""
    llm.script(*[Reply(tool_calls=[call]) for call in calls], Reply.text("done"))
    result = await daemon.request("ollie/submit", {"text": "go"})
    assert result["stop"] == "end", result
    return [e for e in daemon.session_events(result["session"]) if e["role"] in ("call", "step", "tool")]


async def started(start_daemon: Any, llm: Any) -> Daemon:
    """A daemon (`start_daemon`'s, or a session of `shared_daemon`'s) whose session runs every step without asking
    (approval is another test's subject)."""
    daemon = await start_daemon(env=llm.env())
    await daemon.request("ollie/setApproval", {"approval": "auto"})
    return daemon


def by_role(events: list[dict[str, Any]], role: str) -> list[dict[str, Any]]:
    return [e for e in events if e["role"] == role]


async def test_every_kind_gets_a_readable_title_and_the_same_id_from_pending_to_completed(start_daemon, llm):
    user_tool("drop_file", "# ollie:kind delete", 'rm -f -- "$1"; echo dropped')
    user_tool("shrug", "", "echo shrug")
    daemon = await started(start_daemon, llm)
    (daemon.workspace / "hello.py").write_text("print('hello')\n")
    (daemon.workspace / "old.txt").write_text("old\n")
    (daemon.workspace / "src").mkdir()
    events = await run_turn(
        daemon, llm,
        one("file_read", "hello.py"),
        one("file_edit", "hello.py", "hello", "howdy"),
        one("file_grep", "TODO", "src"),
        code("python3 hello.py"),
        one("reasoning_think", "plan the next step"),
        one("drop_file", "old.txt"),
        one("shrug"),
    )
    calls, tools = by_role(events, "call"), by_role(events, "tool")
    assert [(e["tool"]["kind"], e["tool"]["title"]) for e in calls] == [
        ("read", "Read hello.py"),
        ("edit", "Edit hello.py"),
        ("search", "Search for `TODO` in src/"),
        ("execute", "Run `python3 hello.py`"),
        ("think", "Think"),
        ("delete", "Delete old.txt (drop_file)"),
        ("other", "Run `shrug`"),
    ]
    assert all(e["tool"]["status"] == "pending" for e in calls)
    assert calls[0]["tool"]["locations"] == [{"path": "hello.py"}]
    # Same ids on both ends, in order; every step ends completed; each one went in_progress in between.
    ids = [e["tool"]["id"] for e in calls]
    assert len(set(ids)) == len(ids) and [e["tool"]["id"] for e in tools] == ids
    assert [e["tool"]["status"] for e in tools] == ["completed"] * len(ids)
    assert {e["tool"]["id"] for e in by_role(events, "step") if e["tool"]["status"] == "in_progress"} == set(ids)
    # v1 fields stay: name and the raw arguments on `call`, the result text on `tool`.
    assert calls[3]["name"] == "execute_code" and '"python3 hello.py"' in calls[3]["content"]
    assert "howdy" in tools[3]["content"]


async def test_diffs_come_with_every_writer_whatever_made_the_change(shared_daemon, llm):
    daemon = await started(shared_daemon, llm)
    ws = daemon.workspace
    (ws / "app.py").write_text("x = 1\ny = 2\n")
    (ws / "notes.txt").write_text("alpha\nbeta\n")
    script = "from pathlib import Path\nPath('made.txt').write_text('made by python\\n')\n"
    events = await run_turn(
        daemon, llm,
        one("file_read", "app.py"),
        one("file_edit", "app.py", "y = 2", "y = 3"),
        code("sed -i 's/beta/gamma/' notes.txt"),
        code(script, "python"),
        code("echo nothing changes"),
    )
    read, edit, sed, python, echo = by_role(events, "tool")
    assert "diffs" not in read["tool"], "a read takes no snapshot and carries no diffs"
    assert edit["tool"]["diffs"] == [{"path": "app.py", "oldText": "x = 1\ny = 2\n", "newText": "x = 1\ny = 3\n"}]
    assert sed["tool"]["diffs"] == [{"path": "notes.txt", "oldText": "alpha\nbeta\n", "newText": "alpha\ngamma\n"}]
    assert python["tool"]["diffs"] == [{"path": "made.txt", "oldText": None, "newText": "made by python\n"}]
    assert echo["tool"]["diffs"] == []
    # The call events announce no diffs: they are known when the step ends.
    assert all("diffs" not in e["tool"] for e in by_role(events, "call"))


async def test_a_call_tool_batch_is_several_steps_with_their_own_ids_and_statuses(shared_daemon, llm):
    daemon = await started(shared_daemon, llm)
    (daemon.workspace / "a.txt").write_text("a\n")
    batch = ("call_tool", {"calls": [{"tool": "file_read", "args": ["a.txt"]},
                                     {"tool": "file_write", "args": ["b.txt", "bee\n"]},
                                     {"tool": "file_read", "args": ["missing.txt"]},
                                     {"tool": "file_read", "args": ["a.txt"]}]})
    events = await run_turn(daemon, llm, batch)
    (call,), (tool,) = by_role(events, "call"), by_role(events, "tool")
    call_id = call["tool"]["id"]
    assert [s["id"] for s in call["steps"]] == [f"{call_id}.{n}" for n in (1, 2, 3, 4)]
    assert [s["title"] for s in call["steps"]] == ["Read a.txt", "Write b.txt", "Read missing.txt", "Read a.txt"]
    assert call["tool"]["kind"] == "edit"  # the batch as a whole: its most consequential kind
    assert [s["id"] for s in tool["steps"]] == [s["id"] for s in call["steps"]]
    # Per inner call, from the execute server's sections (`[call 3 file_read] exit 1`).
    assert [s["status"] for s in tool["steps"]] == ["completed", "completed", "failed", "completed"], tool["content"]
    assert tool["tool"]["status"] == "failed" and tool["tool"]["id"] == call_id
    # The write's diff goes to the inner step that names the file; the reads carry none.
    assert tool["steps"][1]["diffs"] == [{"path": "b.txt", "oldText": None, "newText": "bee\n"}]
    assert "diffs" not in tool["steps"][0]


async def test_an_interrupted_parallel_batch_ends_every_step_failed(start_daemon, llm):
    user_tool("slow_look", "# ollie:parallel read\n# ollie:kind read", "sleep 30")
    daemon = await started(start_daemon, llm)
    llm.script(Reply(tool_calls=[one("slow_look", "a"), one("slow_look", "b"), one("file_read", "nothing.txt")]),
               Reply.text("after"))
    turn = asyncio.create_task(daemon.request("ollie/submit", {"text": "look"}))
    await daemon.wait_events(lambda evs: len([e for e in evs if e["role"] == "step"]) >= 2)
    await daemon.request("ollie/interrupt", {})
    result = await turn
    assert result["stop"] == "interrupted"
    events = [e for e in daemon.session_events(result["session"]) if e["role"] in ("call", "tool")]
    calls, tools = by_role(events, "call"), by_role(events, "tool")
    assert len(calls) == 3
    assert sorted(e["tool"]["id"] for e in tools) == sorted(e["tool"]["id"] for e in calls)
    final = {e["tool"]["id"]: e["tool"]["status"] for e in tools}
    slow = [e["tool"]["id"] for e in calls if e["tool"]["title"].endswith("(slow_look)")]
    assert len(slow) == 2 and all(final[i] == "failed" for i in slow)
    assert all(e["tool"]["status"] in ("completed", "failed") for e in tools)
    assert (await daemon.request("ollie/submit", {"text": "go on"}))["stop"] == "end"


async def test_no_checkpoints_for_a_home_like_cwd_says_why_once(shared_daemon, llm):
    daemon = await started(shared_daemon, llm)
    # The daemon's $HOME (this process's): a CWD that is not a project is never scanned.
    await daemon.request("ollie/setCwd", {"cwd": os.environ.get("HOME", "/")})
    llm.script(Reply(tool_calls=[code("true")]), Reply.text("one"), Reply.text("two"))
    first = await daemon.request("ollie/submit", {"text": "a"})
    await daemon.request("ollie/submit", {"text": "b"})
    events = daemon.session_events(first["session"])
    warnings = [e for e in events if e["role"] == "info" and "no checkpoints" in e["content"]]
    assert len(warnings) == 1, warnings
    (tool,) = by_role(events, "tool")
    assert "diffs" not in tool["tool"]



async def test_a_broken_sandbox_policy_is_shown_as_the_daemon_starts_and_steps_refuse_until_it_is_fixed(
        start_daemon, llm):
    policy = config_dir() / "sandbox.yaml"
    policy.parent.mkdir(parents=True, exist_ok=True)
    policy.write_text("network:\n  enabled: maybe\n")
    said = f"ollie: {policy}: key 'network.enabled': expected a boolean, got a string; fix the file: no step runs"
    daemon = await start_daemon(env=llm.env())
    # Before any prompt, the way a broken agent config is shown (window/showMessage).
    await eventually(lambda: any(m.message.startswith(said) for m in daemon.client.messages), "the policy's problem")
    *_, refused = [e for e in await run_turn(daemon, llm, code("echo r${x}an")) if e["role"] == "tool"]
    assert "key 'network.enabled'" in refused["content"] and "ran" not in refused["content"], refused
    policy.unlink()  # the bundled policy again
    *_, ran = [e for e in await run_turn(daemon, llm, code("echo r${x}an")) if e["role"] == "tool"]
    assert "ran" in ran["content"], ran
