"""The history renders like the live chat: a cut-off reply survives a resume, resumed steps carry their `tool`."""

from __future__ import annotations

import asyncio
from typing import Any

from ollie.agent.history import INTERRUPTED_REPLY
from ollie.agent.toolround import INTERRUPTED_RESULT
from ollie.testing import Reply

from .conftest import Daemon, noted_agent_env

# ~30 s unless interrupted (3 s could end before a loaded machine's interrupt came).
SLOW_TEXT = "The answer begins here and goes on for quite a while before it is done. " * 40


async def resumed(start_daemon: Any, llm: Any, first: Daemon, session: str) -> Daemon:
    """`session` loaded into a new daemon, after the first one shut down (a restart of the editor)."""
    await first.client.shutdown_session()
    second = await start_daemon(env=llm.env(), workspace=first.workspace)
    loaded = await second.request("ollie/session/load", {"session": session})
    assert loaded["session"] == session
    return second


def streamed_text(daemon: Daemon, session: str) -> str:
    """The assistant text the client saw streamed."""
    return "".join(e["content"] for e in daemon.session_events(session) if e["role"] == "assistant")


async def test_an_interrupted_reply_is_kept_marked_and_resumed(start_daemon, llm):
    llm.script(Reply(text=SLOW_TEXT, chunk_size=5, delay=0.05))
    daemon = await start_daemon(env=llm.env())
    session = (await daemon.request("ollie/state", {}))["session"]
    submit = asyncio.ensure_future(daemon.request("ollie/submit", {"text": "explain"}))
    await daemon.wait_events(lambda evs: sum(e["role"] == "assistant" for e in evs) >= 4)
    assert (await daemon.request("ollie/interrupt", {}))["interrupted"] is True
    result = await submit
    assert result["stop"] == "interrupted"
    seen = streamed_text(daemon, session)
    assert seen and len(seen) < len(SLOW_TEXT)
    assert result["reply"] == seen, "the submit answers with what was streamed"

    second = await resumed(start_daemon, llm, daemon, session)
    context = await second.request("ollie/context", {"session": session})
    *_, prompt, reply = context["messages"]
    assert prompt["role"] == "user" and prompt["content"].endswith("explain")
    assert reply == {"role": "assistant", "content": f"{seen}\n\n{INTERRUPTED_REPLY}", "interrupted": True}

    # The model hears of the cut-off reply with the next prompt (and the roles still alternate).
    llm.script(Reply.text("sorry, where was I"))
    done = await second.request("ollie/submit", {"session": session, "text": "go on"})
    assert done["stop"] == "end"
    sent = llm.chat_requests[-1].body["messages"]
    assert (sent[-2]["role"], sent[-2]["content"]) == ("assistant", f"{seen}\n\n{INTERRUPTED_REPLY}")
    assert sent[-1]["role"] == "user" and sent[-1]["content"].endswith("go on")

    # An interrupt during a tool: the call keeps its result (interrupted) and its step ends failed.
    llm.script(Reply(tool_calls=[("execute_code", {"steps": [{"code": "sleep 30", "language": "bash"}]})]))
    submit = asyncio.ensure_future(second.request("ollie/submit", {"session": session, "text": "wait"}))
    await second.wait_events(lambda evs: any(e["role"] == "step" for e in evs))
    assert (await second.request("ollie/interrupt", {"session": session}))["interrupted"] is True
    assert (await submit)["stop"] == "interrupted"
    *_, call, result = (await second.request("ollie/context", {"session": session}))["messages"]
    (step,) = [e["tool"] for e in second.session_events(session) if e["role"] == "tool"]
    assert step["status"] == "failed" and call["tool_calls"][0]["tool"] == result["tool"] == step
    assert result["content"] == INTERRUPTED_RESULT and "interrupted" not in call


def step_of(event: dict[str, Any]) -> dict[str, Any]:
    """A live `tool` event's step as the history has it (see `saved`)."""
    return saved(event["tool"])


def saved(step: dict[str, Any]) -> dict[str, Any]:
    """A live step as the history has it: the files its diffs named (when any) instead of the diffs."""
    files = {"files": [d["path"] for d in step["diffs"]]} if step.get("diffs") else {}
    return {**{k: v for k, v in step.items() if k != "diffs"}, **files}


async def test_resumed_steps_carry_the_tool_objects_of_the_live_events(start_daemon, llm):
    daemon = await start_daemon(env=llm.env())
    session = (await daemon.request("ollie/state", {}))["session"]
    ws = daemon.workspace
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\nprint(add(1, 2))\n")
    batch = ("call_tool", {"calls": [{"tool": "file_read", "args": ["calc.py"]},
                                     {"tool": "file_read", "args": ["missing.py"]}]})
    llm.script(
        Reply(tool_calls=[("call_tool", {"calls": [{"tool": "file_edit",
                                                    "args": ["calc.py", "return a - b", "return a + b"]}]})]),
        Reply(tool_calls=[batch]),
        Reply(tool_calls=[("execute_code", {"steps": [{"code": "exit 3", "language": "bash"}]})]),
        Reply.text("fixed"),
    )
    result = await daemon.request("ollie/submit", {"text": "fix add"})
    assert result["stop"] == "end"
    live = [e for e in daemon.session_events(session) if e["role"] == "tool"]
    edit, both, failing = live
    # gf on the edit step opens calc.py at the line the edit replaced.
    assert edit["tool"]["locations"] == [{"path": "calc.py", "line": 2}]
    assert edit["tool"]["status"] == "completed" and both["tool"]["status"] == "failed"
    assert [s["status"] for s in both["steps"]] == ["completed", "failed"]
    assert failing["tool"]["status"] == "failed"

    await check_history(daemon, session, live)
    second = await resumed(start_daemon, llm, daemon, session)
    await check_history(second, session, live)


async def check_history(client: Daemon, session: str, live: list[dict[str, Any]]) -> None:
    """The history's steps are the live `tool` events' (their diffs' files, not diffs), on the calls and results."""
    messages = (await client.request("ollie/context", {"session": session}))["messages"]
    results = [m for m in messages if m["role"] == "tool"]
    calls = [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    assert [r["tool"] for r in results] == [step_of(e) for e in live]
    assert [c["tool"] for c in calls] == [r["tool"] for r in results], "a call and its result: one step"
    assert results[1]["steps"] == [saved(s) for s in live[1]["steps"]]
    assert "steps" not in results[0] and "steps" not in calls[0]
    assert [c["id"] for c in calls] == [r["tool_call_id"] for r in results]
    # A page holding only the last result still knows its call (paging pairs across the whole history).
    total = (await client.request("ollie/context", {"session": session}))["total"]
    page = await client.request("ollie/context", {"session": session, "offset": total - 2, "limit": 1})
    assert page["messages"][0]["role"] == "tool" and page["messages"][0]["tool"] == step_of(live[-1])


async def test_a_prompt_with_a_lone_surrogate_is_answered_saved_and_resumed(start_daemon, llm):
    # JSON's "\ud800" (a client's broken UTF-16) decodes to a str with no UTF-8: strict encoders made the request
    # body and every save of the session fail, so it could take no other turn and lost what followed.
    llm.script(Reply.text("first answer"), Reply.text("second answer"))
    daemon = await start_daemon(env=llm.env())
    first = await daemon.request("ollie/submit", {"text": "a \ud800 b"})
    assert (first["stop"], first["reply"]) == ("end", "first answer"), first
    session = first["session"]
    second = await daemon.request("ollie/submit", {"session": session, "text": "and then"})
    assert (second["stop"], second["reply"]) == ("end", "second answer"), second
    sent = [m["content"] for m in llm.chat_requests[-1].body["messages"] if m["role"] == "user"]
    assert sent[-2].endswith("a ? b") and sent[-1].endswith("and then"), sent

    resumed_daemon = await resumed(start_daemon, llm, daemon, session)
    context = await resumed_daemon.request("ollie/context", {"session": session})
    assert [m["content"] for m in context["messages"]][-4:] == [sent[-2], "first answer", sent[-1], "second answer"]


async def test_a_resumed_prompt_shows_as_typed_with_ollie_s_notes_apart(start_daemon, llm, tmp_path):
    """A preTurn hook's output joins the prompt the model reads; the history, resumed in a new daemon too, gives the
    prompt as the user typed it and the note apart (Bug: the chat drew the hook's output, and `@environment`'s git
    status, as if the user had typed it)."""
    env = noted_agent_env(tmp_path, llm)
    daemon = await start_daemon(env=env, init_options={"agent": "noted"})
    session = (await daemon.request("ollie/state", {}))["session"]
    assert (await daemon.request("ollie/submit", {"text": "fix __init__.py"}))["reply"] == "done"
    note = "[preTurn hook]\nrun the tests first"
    assert llm.chat_requests[-1].body["messages"][-1]["content"] == f"fix __init__.py\n\n{note}", "the model reads it"
    await daemon.client.shutdown_session()
    second = await start_daemon(env=env, workspace=daemon.workspace, init_options={"agent": "noted"})
    await second.request("ollie/session/load", {"session": session})
    prompt = next(m for m in (await second.request("ollie/context", {"session": session}))["messages"]
                  if m["role"] == "user")
    assert prompt["content"] == "fix __init__.py" and prompt["notes"] == note, prompt
