"""The engine's recorder: a real Core's session kept current in a real registry, from the Core's events."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentkit import ToyServer

from ollie.agent.recorder import Recorder, record
from ollie.sessions.errors import TitleTooLongError
from ollie.sessions.registry import Registry
from ollie.sessions.types import Channel, Scope, TurnResult
from ollie.testing import Reply

USER = "alice"


@pytest.fixture
def registry(tmp_path: Path):
    reg = Registry(tmp_path / "registry.db")
    yield reg
    reg.close()


async def test_a_recorded_session_is_created_then_stamped_by_each_turn(scripted_llm, make_core, registry):
    srv = scripted_llm("openai")
    srv.script(Reply.text("hello"))
    core = await make_core(srv, toy=ToyServer())
    recorder = await record(core, channel=Channel.CLI, registry=lambda: registry, user=USER, title="first")
    await recorder.drained()
    info = registry.get(Scope(user_id=USER), core.session_id)
    assert (info.agent_id, info.channel, info.kind, info.title) == ("default", "cli", "chat", "first")
    assert info.last_turn_started_at is None and info.last_turn_result == TurnResult.NONE

    await core.submit("hi")
    await recorder.drained()
    info = registry.get(Scope(user_id=USER), core.session_id)
    assert info.last_turn_started_at is not None and info.last_turn_completed_at is not None
    assert info.last_turn_result == TurnResult.END
    # A command is no turn: it leaves the stamps alone.
    await core.submit("/help")
    await core.close()
    await recorder.close()
    assert registry.get(Scope(user_id=USER), core.session_id).last_turn_completed_at == info.last_turn_completed_at


async def test_the_recorder_is_handed_turn_events_only(scripted_llm, make_core, registry):
    # It keeps only `turn` ones: handed every delta, 50 streaming sessions woke 50 recorders per delta.
    srv = scripted_llm("openai")
    srv.script(Reply.text("a streamed reply"))
    core = await make_core(srv, toy=ToyServer())
    recorder = await record(core, channel=Channel.CLI, registry=lambda: registry, user=USER)
    everything = core.bus.subscribe()
    sub = recorder._sub
    assert sub is not None
    handed: list[str] = []
    put = sub._put
    sub._put = lambda event: (handed.append(event.role if event else "end"), put(event))[-1]  # type: ignore[method-assign]
    await core.submit("hi")
    await recorder.drained()
    assert handed == ["turn", "turn"] and everything.pending() > 2
    assert registry.get(Scope(user_id=USER), core.session_id).last_turn_result == TurnResult.END
    await core.close()
    await recorder.close()


async def test_a_resumed_session_keeps_its_record(scripted_llm, make_core, registry):
    srv = scripted_llm("openai", check=False)
    core = await make_core(srv, toy=ToyServer())
    first = await record(core, channel=Channel.LSP, registry=lambda: registry, user=USER, kind="task")
    await first.close()
    created = registry.get(Scope(user_id=USER), core.session_id)
    again = await record(core, channel=Channel.CLI, registry=lambda: registry, user=USER)
    await again.close()
    info = registry.get(Scope(user_id=USER), core.session_id)
    assert (info.created_at, info.channel, info.kind) == (created.created_at, "lsp", "task")
    assert info.last_active is not None and info.last_active > created.last_active


@pytest.mark.parametrize("fresh", [False, True])
async def test_an_unusable_registry_leaves_the_session_running_unrecorded_and_the_turn_says_so(
        scripted_llm, make_core, tmp_path, fresh):
    """The one rule of every front end: the session runs on and its turn is told, once (it was silent: a log line)."""
    from agentkit import drain, roles

    srv = scripted_llm("openai")
    srv.script(Reply.text("still here"), Reply.text("and here"))
    core = await make_core(srv, toy=ToyServer())
    (tmp_path / "blocked").write_text("a file where the data dir should be")
    recorder = Recorder(core, channel=Channel.CLI, registry=lambda: Registry(tmp_path / "blocked" / "r.db"))
    assert await recorder.open(fresh=fresh) is None
    sub = core.bus.subscribe()
    assert (await core.submit("hi")).reply == "still here"
    await recorder.drained()
    assert (await core.submit("again")).reply == "and here"
    errors = [e.content for e in roles(drain(sub), "error")]
    assert len(errors) == 1 and errors[0].startswith(f"session {core.session_id} is not recorded in the session list"
                                                      " (the registry cannot be written: "), errors
    assert errors[0].endswith("it runs on, but no session list shows it to resume"), errors
    await recorder.close()


async def test_a_record_the_registry_refuses_is_an_error(scripted_llm, make_core, registry):
    srv = scripted_llm("openai", check=False)
    core = await make_core(srv, toy=ToyServer())
    recorder = Recorder(core, channel=Channel.LSP, registry=lambda: registry, user=USER)
    with pytest.raises(TitleTooLongError):
        await recorder.open(title="x" * 1001)
    await recorder.close()
    assert registry.page(Scope(user_id=USER))[0] == []
