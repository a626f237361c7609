"""A reply cut at the model's output token limit ends the turn with stop "max_tokens": the user and the model know."""

from __future__ import annotations

import json

import pytest
from agentkit import drain, roles

from ollie.testing import Reply


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "ollama"])
async def test_a_reply_cut_at_the_token_limit_says_so_and_runs_no_cut_call(scripted_llm, make_core, workdir, fmt):
    srv = scripted_llm(fmt)
    # Each format's own length stop (OpenAI/Ollama `length`, Anthropic `max_tokens`), here with a tool call that
    # may have been cut mid-arguments: it must not run.
    srv.script(Reply.cut("Here is the first half of the",
                         tool_calls=[("execute_code", {"steps": [{"code": "echo x > ran.txt"}]})]),
               Reply.text("the rest"))
    core = await make_core(srv)
    sub = core.bus.subscribe()
    result = await core.submit("write a long answer")
    assert (result.stop, result.reply) == ("max_tokens", "Here is the first half of the")
    assert not (workdir / "ran.txt").exists() and core.tool_call_count == 0
    assert [e.content for e in roles(drain(sub), "turn")] == ["start", "max_tokens"]
    # The model is told on its next request that its reply was cut (and that its calls did not run).
    await core.submit("go on")
    sent = json.dumps(srv.chat_requests[-1].body)
    assert "this reply was cut off here: it reached the output token limit" in sent
    assert "its tool calls were not run" in sent
