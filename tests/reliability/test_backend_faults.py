"""Backend faults in the middle of a turn (after a real tool round): the turn recovers, or ends cleanly."""

from __future__ import annotations

import httpx
import pytest
from faultproxy import ClosingProxy

from ollie.backend.openai import OpenAIBackend
from ollie.testing import Reply
from tests.agent.agentkit import drain, roles

ROUND_ONE = ("execute_code", {"steps": [{"code": "echo round-one-output"}]})


def assert_round_one_kept(core) -> None:
    """The tool round before the fault is in the history exactly once, with its real output."""
    tools = [m for m in core.session.messages if m.role == "tool"]
    assert len(tools) == 1 and "round-one-output" in tools[0].content, tools


def short_timeout_backend(srv, read_s: float):
    """A backend factory: the real OpenAI backend on `srv`, with a short read timeout."""
    def factory(name, model):
        return OpenAIBackend(model=srv.model, api_key="sk-x", base_url=srv.url,
                             timeout=httpx.Timeout(connect=5.0, read=read_s, write=5.0, pool=5.0))
    return factory


FAULTS = {
    "429": lambda: Reply.error(429, retry_after=0),
    "500": lambda: Reply.error(500),
    "dropped stream (connection broken)": lambda: Reply.drop(after=3),
    "dropped stream (no terminator)": lambda: Reply.drop(after=3, abort=False),
    "in-stream overload error": lambda: Reply.stream_error(after=2, status=529),
}


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_fault_mid_turn_is_retried_and_the_turn_recovers(scripted_llm, make_core, fault):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(ROUND_ONE), FAULTS[fault](), Reply.text("recovered after the fault"))
    core = await make_core(srv)
    sub = core.bus.subscribe()
    result = await core.submit("do the thing")
    assert (result.stop, result.reply) == ("end", "recovered after the fault"), result
    events = drain(sub)
    assert len(roles(events, "limitretry")) == 1
    assert not roles(events, "error")
    assert_round_one_kept(core)
    assert [m.content for m in core.session.messages if m.role == "assistant" and m.content] == [
        "recovered after the fault"]


@pytest.mark.parametrize("fault", ["500", "dropped stream (connection broken)"])
async def test_a_fault_that_persists_ends_the_turn_cleanly_and_the_session_goes_on(scripted_llm, make_core, fault):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(ROUND_ONE), *[FAULTS[fault]() for _ in range(3)], Reply.text("next turn works"))
    core = await make_core(srv, limits={"max_retries": 2})
    sub = core.bus.subscribe()
    result = await core.submit("do the thing")
    assert result.stop == "error" and "gave up after 2 retries" in result.error, result
    errors = roles(drain(sub), "error")
    assert [e.content for e in errors] == [result.error]
    assert "Traceback" not in result.error
    assert_round_one_kept(core)
    assert (await core.submit("again")).reply == "next turn works"


async def test_a_slow_stream_past_the_read_timeout_is_retried(scripted_llm, make_core):
    srv = scripted_llm("openai")
    # 3 s between frames, past a 1 s read timeout that a loaded machine's fast replies still meet (0.2 s was tight).
    srv.script(Reply.tool_calls(ROUND_ONE), Reply(text="s l o w " * 4, chunk_size=2, delay=3.0),
               Reply.text("fast this time"))
    core = await make_core(srv, backend_factory=short_timeout_backend(srv, 1.0))
    sub = core.bus.subscribe()
    result = await core.submit("do the thing")
    assert (result.stop, result.reply) == ("end", "fast this time"), result
    retries = roles(drain(sub), "limitretry")
    assert len(retries) == 1 and retries[0].name == "transient"
    assert_round_one_kept(core)


async def test_a_slow_stream_every_time_ends_with_a_clear_error(scripted_llm, make_core):
    srv = scripted_llm("openai", check=False)  # the slow replies are still being written when the test ends
    srv.script(Reply.tool_calls(ROUND_ONE), *[Reply(text="slow " * 4, chunk_size=2, delay=3.0) for _ in range(2)])
    core = await make_core(srv, backend_factory=short_timeout_backend(srv, 1.0), limits={"max_retries": 1})
    result = await core.submit("do the thing")
    assert result.stop == "error" and "gave up after 1 retries" in result.error
    assert "the answer stalled past the read timeout; gave up" in result.error, result.error
    assert_round_one_kept(core)


async def test_a_server_that_closes_the_socket_mid_turn(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(ROUND_ONE), Reply.text("through after the hang-up"))
    proxy = await ClosingProxy(int(srv.url.rsplit(":", 1)[1].split("/")[0]), close_on={2}).start()
    try:
        env = {"OLLIE_OPENAI_URL": f"http://127.0.0.1:{proxy.port}/v1"}
        core = await make_core(srv, env=env)
        sub = core.bus.subscribe()
        result = await core.submit("do the thing")
    finally:
        await proxy.stop()
    assert proxy.closed == 1
    assert (result.stop, result.reply) == ("end", "through after the hang-up"), result
    assert len(roles(drain(sub), "limitretry")) == 1
    assert_round_one_kept(core)


async def test_a_server_that_always_closes_the_socket_ends_the_turn_with_an_error(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(ROUND_ONE))
    proxy = await ClosingProxy(int(srv.url.rsplit(":", 1)[1].split("/")[0]), close_on={2, 3, 4}).start()
    try:
        core = await make_core(srv, env={"OLLIE_OPENAI_URL": f"http://127.0.0.1:{proxy.port}/v1"},
                               limits={"max_retries": 2})
        result = await core.submit("do the thing")
    finally:
        await proxy.stop()
    assert result.stop == "error" and result.error.startswith("the model request failed: ") and "gave up" in result.error, result
    assert_round_one_kept(core)
