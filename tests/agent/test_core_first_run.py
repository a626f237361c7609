"""A Core on its first run: an unreachable backend ends the turn at once; config switches never break a turn."""

from __future__ import annotations

import asyncio
import socket
import threading

from agentkit import ToyServer, drain, roles, wait_state, write_agent

from ollie.agent import setup
from ollie.testing import Reply

# The seed's backoff: before, an unreachable server cost 5 + 10 + 20 s of retries.
REAL_BACKOFF = {"backoff_base_s": 5.0, "drop_backoff_base_s": 2.0}


def closed_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


async def test_nothing_listening_ends_the_first_turn_at_once_with_what_to_do(scripted_llm, make_core):
    srv = scripted_llm("openai")
    core = await make_core(srv, toy=ToyServer(), limits=REAL_BACKOFF,
                           env={"OLLIE_BACKEND": "ollama", "OLLIE_OLLAMA_URL": closed_url(), "OLLIE_MODEL": "qwen3"})
    sub = core.bus.subscribe()
    result = await core.submit("hello")  # no retry (REAL_BACKOFF would wait): checked below, by its event
    assert result.stop == "error"
    assert "ollama serve" in result.error and "ollama pull qwen3" in result.error
    assert "OLLIE_BACKEND" in result.error
    events = drain(sub)
    assert roles(events, "limitretry") == []
    assert roles(events, "error")[-1].content == result.error


async def test_an_unknown_host_is_not_retried(scripted_llm, make_core):
    srv = scripted_llm("openai")
    core = await make_core(srv, toy=ToyServer(), limits=REAL_BACKOFF,
                           env={"OLLIE_OPENAI_URL": "http://ollie-test.invalid/v1"})
    sub = core.bus.subscribe()
    result = await core.submit("hello")  # no retry (REAL_BACKOFF would wait): checked below, by its event
    assert result.stop == "error" and "OLLIE_OPENAI_URL" in result.error
    assert roles(drain(sub), "limitretry") == []


async def test_a_url_without_scheme_is_reported_on_the_first_turn_naming_the_variable(scripted_llm, make_core):
    srv = scripted_llm("openai")
    core = await make_core(srv, toy=ToyServer(), env={"OLLIE_BACKEND": "ollama", "OLLIE_OLLAMA_URL": "localhost:11434"})
    assert core.backend is None and "OLLIE_OLLAMA_URL" in core.backend_error
    result = await core.submit("hello")
    assert result.stop == "error" and "OLLIE_OLLAMA_URL='localhost:11434'" in result.error
    health = await core.backend_health()
    assert health["ok"] is False and "OLLIE_OLLAMA_URL" in health["error"]


async def test_backend_health_is_checked_once_and_again_after_a_switch(scripted_llm, make_core):
    srv = scripted_llm("openai")
    core = await make_core(srv, toy=ToyServer())
    health = await core.backend_health()
    assert (health["ok"], health["reachable"], health["modelPresent"], health["keySet"]) == (True, True, True, True)
    await core.backend_health()
    assert [r.path for r in srv.requests] == ["/v1/models"]  # cached
    await core.submit("/model not-there")
    health = await core.backend_health()
    assert (health["ok"], health["modelPresent"]) == (False, False)
    assert "not-there" in health["error"]


async def test_a_turn_the_model_answered_drops_the_failure_its_health_check_had_cached(scripted_llm, make_core,
                                                                                       monkeypatch):
    # VS Code's "cannot be reached" banner stayed over the answer: at the turn's end it asked the health again, and the
    # daemon gave the failure it had checked a second before the server came up (reused for FAILED_HEALTH_REUSE_S).
    monkeypatch.setattr(setup, "FAILED_HEALTH_REUSE_S", 600.0)
    url = closed_url()
    core = await make_core(scripted_llm("openai"), toy=ToyServer(), env={"OLLIE_OPENAI_URL": f"{url}/v1"})
    assert (await core.backend_health())["ok"] is False
    srv = scripted_llm("openai", port=int(url.rsplit(":", 1)[1]))
    srv.script(Reply.text("up now"))
    assert (await core.submit("hello")).reply == "up now"
    assert (await core.backend_health())["ok"] is True


async def test_a_turn_stopped_after_the_model_answered_drops_the_cached_failure_before_its_end_is_said(
        scripted_llm, make_core, monkeypatch):
    # A turn the user stopped once the answer streamed (or one a queued prompt ran) left the failure cached: the
    # editor asked again at its end and kept pointing at the setting, the server up. Dropped before the end is
    # published: the editor's ask at the end sees the server up.
    monkeypatch.setattr(setup, "FAILED_HEALTH_REUSE_S", 600.0)
    url = closed_url()
    core = await make_core(scripted_llm("openai"), toy=ToyServer(), env={"OLLIE_OPENAI_URL": f"{url}/v1"})
    assert (await core.backend_health())["ok"] is False
    srv = scripted_llm("openai", port=int(url.rsplit(":", 1)[1]))
    held = threading.Event()  # the answer streams until the test has stopped it
    srv.script(Reply.text("up now, and going on", chunk_size=4, hold=held))
    sub = core.bus.subscribe()
    turn = asyncio.create_task(core.submit("hello"))
    while (await sub.get()).role != "assistant":
        pass
    health_at_end = asyncio.get_running_loop().create_future()

    async def ask_at_end() -> None:
        while (event := await sub.get()).role != "turn":
            pass
        health_at_end.set_result((event.content, await core.backend_health()))

    asker = asyncio.create_task(ask_at_end())
    assert core.interrupt("the user pressed Stop") is True
    held.set()
    assert (await turn).stop == "interrupted"
    await asker
    stop, health = health_at_end.result()
    assert stop == "interrupted" and health["ok"] is True, health


async def test_a_config_context_length_is_the_limit(scripted_llm, make_core, agents_dir):
    srv = scripted_llm("openai")
    write_agent(agents_dir, "small", contextLength=5000)
    srv.script(Reply.text("ok"))
    core = await make_core(srv, toy=ToyServer(), agent="small")
    await core.submit("hi")
    assert core.context_info()["limit"] == 5000


async def test_switching_backend_during_a_turn_leaves_the_turn_intact(scripted_llm, make_core):
    srv = scripted_llm("openai")
    other = scripted_llm("openai")
    held = threading.Event()  # the turn runs on until the switch is made, however slow the machine
    srv.script(Reply.text("one two three four five six seven eight", chunk_size=4, delay=0.05, hold=held))
    other.script(Reply.text("from the new backend"))
    core = await make_core(srv, toy=ToyServer(), env={"OLLIE_OPENAI_URL": srv.url})
    sub = core.bus.subscribe()
    turn = asyncio.create_task(core.submit("first"))
    await wait_state(core, "thinking")
    while not roles(drain(sub), "assistant"):
        await asyncio.sleep(0.01)
    core.set_env("OLLIE_OPENAI_URL", other.url)
    await core.submit("/backend openai")
    await core.submit("/model scripted-model")
    assert not turn.done()
    held.set()
    result = await turn
    assert (result.stop, result.reply) == ("end", "one two three four five six seven eight")
    assert (await core.submit("second")).reply == "from the new backend"
