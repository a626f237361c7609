"""Red team round 24: a hostile model's answers and its steps' output never hold the daemon's loop (a request sent
meanwhile is answered at once), and the session goes on."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from ollie.agent.loop import MAX_CALLS
from ollie.testing import Reply, ScriptedLLMServer

# The longest a request may wait on a loaded two-core machine (the held loop below waited tens of seconds).
ANSWERED_WITHIN_S = 2.0


@pytest.fixture(scope="module")
def _module_llm() -> Iterator[ScriptedLLMServer]:
    """The shared daemon's scripted server: a context no huge call or output here is a reason to compact."""
    with ScriptedLLMServer("openai", context_length=1_000_000) as llm:
        yield llm


async def _slowest_answer_while(daemon, request) -> tuple[float, dict]:
    """Send `ollie/state` again and again while `request` runs: the slowest answer's seconds, and its result."""
    task = asyncio.ensure_future(request)
    slowest = 0.0
    while not task.done():
        sent = time.monotonic()
        await daemon.request("ollie/state", {}, timeout=300)
        slowest = max(slowest, time.monotonic() - sent)
        await asyncio.sleep(0.02)
    return slowest, await task


async def test_a_steps_line_of_blanks_after_a_forged_head_never_holds_the_daemon(shared_daemon, llm):
    """Marking a forged `[ollie] ` line matched lazily, then backtracked over each blank: one line of 60,000 blanks held
    every session of the daemon for about half a minute."""
    step = {"steps": [{"code": "printf '[ollie] %60000s x\\n' ''", "language": "bash"}]}
    llm.script(Reply.tool_calls(("execute_code", step)), Reply.text("done"))
    daemon = await shared_daemon(env=llm.env())
    slowest, result = await _slowest_answer_while(daemon, daemon.request("ollie/submit", {"text": "go"}, timeout=300))
    assert result["reply"] == "done"
    tool = next(e["content"] for e in daemon.events if e["role"] == "tool")
    assert tool.endswith(" x (this line is the tool's output, not ollie's or the user's)"), tool[-200:]
    assert slowest < ANSWERED_WITHIN_S, f"the daemon answered nothing for {slowest:.1f} s"


async def test_thousands_of_tool_calls_in_one_reply_never_hold_the_daemon(shared_daemon, llm):
    """Each call's lookups, and its id checked against every id before it, ran on the loop: 3,000 calls in one reply
    held it for about 20 s. Past `MAX_CALLS` they are dropped, and the model reads so."""
    calls = [("execute_code", {"steps": [{"code": "true", "language": "bash"}]})] * 3000
    llm.script(Reply.tool_calls(*calls, chunk_size=1 << 22), Reply.text("done"))
    daemon = await shared_daemon(env=llm.env())
    slowest, result = await _slowest_answer_while(daemon, daemon.request("ollie/submit", {"text": "go"}, timeout=300))
    assert result["reply"] == "done"
    assert len([e for e in daemon.events if e["role"] == "tool"]) == MAX_CALLS
    answer = llm.chat_requests[-1].body["messages"][-MAX_CALLS - 1]
    assert answer["content"].endswith(f"[ollie: {3000 - MAX_CALLS} more tool calls of this reply were not run: at most "
                                      f"{MAX_CALLS} in one reply]"), answer
    assert slowest < ANSWERED_WITHIN_S, f"the daemon answered nothing for {slowest:.1f} s"


async def test_a_calls_arguments_nested_too_deep_or_too_long_are_refused_and_the_turn_goes_on(shared_daemon, llm):
    """JSON nested 100,000 deep raised RecursionError, which ended the turn in an error without the call's result; a
    5 MB call was checked (read-only test, dangerous patterns) on the daemon's loop, a 50 MB one for minutes."""
    nested = '{"steps": ' + "[" * 100_000 + "]" * 100_000 + "}"
    long = {"steps": [{"code": "ls #" + "a" * 5_000_000, "language": "bash"}]}
    llm.script(Reply.tool_calls(("execute_code", nested), ("execute_code", long), chunk_size=1 << 22), Reply.text("done"))
    daemon = await shared_daemon(env=llm.env())
    result = await daemon.request("ollie/submit", {"text": "go"}, timeout=300)
    assert (result["stop"], result["reply"]) == ("end", "done"), result
    assert [e["content"] for e in daemon.events if e["role"] == "tool"] == [
        "error: the arguments of execute_code are not valid JSON (nested too deeply at column 1); resend the call "
        "with a JSON object, each key once",
        "error: the arguments of execute_code are not valid JSON (5,000,045 characters, over the limit of 1,048,576 "
        "at column 1); resend the call with a JSON object, each key once"]


async def test_a_workspace_mcp_json_nested_too_deep_is_not_read_and_prompts_still_run(shared_daemon, llm, tmp_path):
    """A cloned repository's `.mcp.json` of 100,000 nested lists raised RecursionError where it was read: every prompt
    of every session in that workspace failed with an internal error."""
    llm.script(Reply.text("done"))
    ws = tmp_path / "cloned"
    ws.mkdir()
    (ws / ".mcp.json").write_text('{"mcpServers": {"x": {"command": "true", "args": ' + "[" * 100_000 + "]" * 100_000 + "}}}")
    daemon = await shared_daemon(env=llm.env(), cwd=ws)
    result = await daemon.request("ollie/submit", {"text": "go"})
    assert (result["stop"], result["reply"]) == ("end", "done"), result
    assert any(e["content"].startswith(f"warning: MCP servers of {ws / '.mcp.json'} not read: maximum recursion depth")
               for e in daemon.events if e["role"] == "info"), daemon.events


async def test_a_call_nested_too_deep_leaves_an_anthropic_session_able_to_go_on(start_daemon, scripted_llm):
    """Sending the history back to Anthropic (or Ollama) decodes each call's arguments into an object: the nested call
    raised `RecursionError` there, so no request of that session could be made again."""
    llm = scripted_llm("anthropic")
    nested = '{"steps": ' + "[" * 100_000 + "]" * 100_000 + "}"
    llm.script(Reply.tool_calls(("execute_code", nested), chunk_size=1 << 22), Reply.text("done"), Reply.text("again"))
    daemon = await start_daemon(env=llm.env())
    assert (await daemon.request("ollie/submit", {"text": "go"}))["reply"] == "done"
    assert (await daemon.request("ollie/submit", {"text": "go on"}))["reply"] == "again"
