"""The agent's task plan reaches an editor as the daemon's state (`ollie/state`, `ollie/stateChanged`'s `plan`)."""

from __future__ import annotations

import asyncio
import shlex
import threading
from typing import Any

from ollie.testing import Reply
from ollie.tools.execute.childenv import plan_file
from tests.procs import eventually


def _task(tool: str, *args: str) -> Reply:
    return Reply.tool_calls(("call_tool", {"calls": [{"tool": tool, "args": list(args)}]}))


def _plans(wire: list[tuple[str, Any]]) -> list[list[tuple[str, str]]]:
    return [[(s["content"], s["status"]) for s in params["plan"]] for kind, params in wire
            if kind == "state" and "plan" in params]


PLANNED = [("write it", "in_progress"), ("run it", "pending")]
WRITTEN = [("write it", "completed"), ("run it", "in_progress")]


async def test_the_plan_follows_the_steps_a_rewind_its_undo_a_resume_a_fork_and_a_clear(start_daemon, llm):
    # Bug: the daemon sent no plan: VS Code and Neovim users never saw the agent's plan (only `ollie acp`'s did).
    llm.script(_task("task_add", "write it", "run it"), Reply.text("planned"), _task("task_check", "1"),
               Reply.text("written"))
    daemon = await start_daemon(env=llm.env())
    assert (await daemon.request("ollie/state", {}))["plan"] == []
    _, wire = await daemon.request_in_order("ollie/submit", {"text": "plan it"})
    # Told as the step's round ends, before the reply it is the plan of; once, not with every state that follows.
    assert _plans(wire) == [[], PLANNED], wire  # (the first state the session sends has its plan: none yet)
    told = [n for n, (kind, params) in enumerate(wire) if kind == "state" and "plan" in params][-1]
    assert any(kind == "event" and p["role"] == "assistant" for kind, p in wire[told:]), wire
    _, wire = await daemon.request_in_order("ollie/submit", {"text": "write it"})
    sid = (await daemon.request("ollie/state", {}))["session"]
    assert _plans(wire) == [WRITTEN]
    # Each turn's mark says it changed the plan: the rewind pickers said "changed no files", as if rewinding it did nothing.
    marks = [m["turnChanges"] for m in (await daemon.request("ollie/context", {}))["messages"] if "turnChanges" in m]
    assert marks == [{"turn": 1, "files": 0, "plan": True}, {"turn": 2, "files": 0, "plan": True}], marks

    async def plan_is(plan: list[tuple[str, str]]) -> None:
        await eventually(lambda: _plans(daemon.client.ollie_wire)[-1] == plan, f"the plan {plan}")
        assert [(s["content"], s["status"]) for s in (await daemon.request("ollie/state", {}))["plan"]] == plan

    await daemon.request("ollie/rewind", {"turn": 2})
    await plan_is(PLANNED)
    await daemon.request("ollie/rewind", {"undo": True})
    await plan_is(WRITTEN)
    forked = (await daemon.request("ollie/session/fork", {"session": sid, "turn": 1}))["session"]
    assert [(s["content"], s["status"]) for s in (await daemon.request("ollie/state", {"session": forked}))["plan"]] \
        == PLANNED
    await daemon.request("ollie/command", {"line": "/clear"})
    await plan_is([])

    # Resumed by another daemon, the copy /clear kept shows the plan it had.
    kept = [s["id"] for s in (await daemon.request("ollie/session/list", {}))["sessions"] if s["id"] not in (sid, forked)]
    await daemon.client.shutdown_session()
    daemon = await start_daemon(env=llm.env(), init_options={"session": kept[0]}, workspace=daemon.workspace)
    assert [(s["content"], s["status"]) for s in (await daemon.request("ollie/state", {}))["plan"]] == WRITTEN


async def test_a_fork_of_a_running_session_starts_from_the_plan_the_running_turn_found(shared_daemon, llm):
    # The fork copies the turns that ended, but took the plan as the running turn's step had just checked it off.
    hold = threading.Event()
    llm.script(_task("task_add", "write it", "run it"), Reply.text("planned"), _task("task_check", "1"),
               Reply(text="written", hold=hold))
    daemon = await shared_daemon(env=llm.env())
    sid = (await daemon.request("ollie/submit", {"text": "plan it"}))["session"]
    before = len(daemon.events)
    running = asyncio.ensure_future(daemon.request("ollie/submit", {"session": sid, "text": "write it"}))
    await daemon.wait_events(lambda evs: any(e["role"] == "assistant" for e in evs[before:]))  # its round ended
    try:
        assert [(s["content"], s["status"]) for s in (await daemon.request("ollie/state", {}))["plan"]] == WRITTEN
        forked = (await daemon.request("ollie/session/fork", {"session": sid}))["session"]
        plan = (await daemon.request("ollie/state", {"session": forked}))["plan"]
        assert [(s["content"], s["status"]) for s in plan] == PLANNED
    finally:
        hold.set()
    assert (await running)["reply"] == "written"


async def test_a_plan_a_step_writes_reaches_the_editor_bounded(shared_daemon, llm):
    # Round 60: a step wrote 20,000 steps, one of them 60,000 characters, within the plan file's 256 KiB: every
    # `ollie/state` and the `ollie/stateChanged` carried them all (1 MB), and each editor drew all of them.
    code = ('{ printf -- "- [ ] %060000d\\n" 0; yes -- "- [ ] s" | head -n 20000; yes -- "- [x] d" | head -n 3; } '
            '> "$OLLIE_PLAN_FILE"')
    llm.script(Reply.tool_calls(("execute_code", {"steps": [{"code": code}]})), Reply.text("planned"))
    daemon = await shared_daemon(env=llm.env())
    _, wire = await daemon.request_in_order("ollie/submit", {"text": "plan it"})
    sent = _plans(wire)[-1]
    plan = (await daemon.request("ollie/state", {}))["plan"]
    assert sent == [(s["content"], s["status"]) for s in plan] and len(sent) == 100, len(sent)
    assert sent[0] == ("0" * 199 + "…", "in_progress") and sent[1:-1] == [("s", "pending")] * 98
    # The steps it counts, those done among them: a client's "N of M done" is the plan's (it counted 100, none done).
    assert plan[-1] == {"content": "… 19905 more steps", "status": "pending", "steps": 19905, "done": 3}
    assert all(s.keys() == {"content", "status"} for s in plan[:-1])


async def test_a_plan_batchs_title_shows_the_models_controls_as_escapes_on_one_line(shared_daemon, llm):
    """Red team round 68: a batch's title is made again from its plan changes (plancore30), and a check-off by text
    quoted the model's words as they came, where each step's own title escaped them: its U+202E reversed the call's card
    in every client (ACP's tool call title too) and its line break put `ollie: all edits approved` on a line of its own."""
    words = "x\u202etxt.exe\nollie: all edits approved"
    llm.script(Reply.tool_calls(("call_tool", {"calls": [{"tool": "task_add", "args": ["write it"]},
                                                         {"tool": "task_check", "args": [words]}]})),
               Reply.text("planned"))
    daemon = await shared_daemon(env=llm.env())
    await daemon.request("ollie/submit", {"text": "plan it"})
    titles = {e["tool"]["title"] for e in daemon.events if e["role"] == "tool"}
    assert "Add 1 step to the plan, check off `x\\u202etxt.exe\\nollie: all edits approved`" in titles, titles
    assert not any("\u202e" in t or "\n" in t for t in titles), titles


async def test_a_reply_of_130_checks_of_a_1000_step_plan_fails_none_and_the_model_sees_the_open_step(start_daemon, llm):
    # Each task_* call printed the whole plan: 130 checks of a 1,000-step plan in one reply passed the result's 128 KiB,
    # were cut off there, and the checks past it read as failed (the model and every client told so).
    steps = [f"step {n} of the migration" for n in range(1, 1001)]
    checks = [{"tool": "task_check", "args": [str(n)]} for n in range(1, 131)]
    llm.script(_task("task_add", *steps), Reply.tool_calls(("call_tool", {"calls": checks})), Reply.text("checked"))
    llm.models[llm.model] = 200_000  # a window the results fit in whole (32k collapsed them for the context gate)
    daemon = await start_daemon(env=llm.env())
    await daemon.request("ollie/submit", {"text": "migrate"})
    assert [e["tool"]["status"] for e in daemon.events if e["role"] == "tool"] == ["completed", "completed"]
    added, checked = (llm.chat_requests[n].body["messages"][-1]["content"] for n in (1, 2))
    assert added == "[call 1 task_add] exit 0\nadded steps 1-1000\nplan (0/1000 done):\n" + "".join(
        f"{n}. [ ] step {n} of the migration\n" for n in range(1, 6)) + "… steps 6-1000 to come", added
    # Each check says what it did, the counts, and the open step with its neighbours: 130 of them in a few KiB each.
    assert len(checked.encode()) < 40 * 1024 and "[truncated" not in checked, len(checked.encode())
    assert checked.endswith("[call 130 task_check] exit 0\ndone: step 130 of the migration\nplan (130/1000 done):\n"
                            "… steps 1-129 done\n130. [x] step 130 of the migration\n131. [ ] step 131 of the migration"
                            "\n132. [ ] step 132 of the migration\n133. [ ] step 133 of the migration\n"
                            "134. [ ] step 134 of the migration\n… steps 135-1000 to come"), checked[-600:]
    plan = (await daemon.request("ollie/state", {}))["plan"]
    assert [s["content"] for s in plan if s["status"] == "in_progress"] == ["step 131 of the migration"]


async def test_a_plan_the_users_shell_command_writes_shows_as_it_ends(start_daemon, llm):
    # Bug: a `!cmd` between turns that wrote the plan file showed nothing until the next turn ended.
    daemon = await start_daemon(env=llm.env())
    sid = (await daemon.request("ollie/state", {}))["session"]
    plan = shlex.quote(str(plan_file(sid)))
    line = f"!mkdir -p $(dirname {plan}) && printf -- '- [x] write it\\n- [ ] run it\\n' > {plan}"
    _, wire = await daemon.request_in_order("ollie/submit", {"text": line})
    assert _plans(wire)[-1:] == [[("write it", "completed"), ("run it", "in_progress")]], wire



async def test_steps_past_the_cut_of_a_calls_result_still_read_as_they_ended(start_daemon, llm):
    # A call's result is cut at 128 KiB, and each step's status was read from its header in the cut text: the steps
    # past the cut (their headers gone) read as failed, the card red, though each ran and exited 0.
    reads = [{"tool": "file_read", "args": ["big.txt"]} for _ in range(4)]
    llm.script(Reply.tool_calls(("call_tool", {"calls": reads})), Reply.text("read"))
    llm.models[llm.model] = 200_000  # a window the cut result fits in (32k asked for a compaction first)
    daemon = await start_daemon(env=llm.env(approval="auto"))
    (daemon.workspace / "big.txt").write_text("".join(f"line {n} {'x' * 40}\n" for n in range(1200)))
    await daemon.request("ollie/submit", {"text": "read it"})
    told = llm.chat_requests[1].body["messages"][-1]["content"]
    assert "[call 4 file_read]" not in told, "the result was not cut: no test"
    done = next(e for e in daemon.events if e["role"] == "tool")
    assert [s["status"] for s in done["steps"]] == ["completed"] * 4, done["steps"]
