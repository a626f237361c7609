"""Sessions and configuration through the Core: resume, agent/backend/model switching, params, commands."""

from __future__ import annotations

import asyncio
import re

import pytest
from agentkit import ToyServer, drain, roles, sent_messages, write_agent

from ollie.backend.types import GenerationParams
from ollie.errors import ConfigError
from ollie.sessions import persist
from ollie.testing import Reply
from tests.stalls import LoopTicks, StalledWalk


async def test_a_resumed_session_continues_where_it_stopped(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(("slow_read", {"tag": "a"})), Reply.text("first answer"))
    core = await make_core(srv, toy=ToyServer())
    await core.submit("remember the number 7")
    session_id = core.session_id
    usage = core.usage_info()
    await core.close()
    assert persist.exists(core.sessions_dir, session_id)

    srv.script(Reply.text("it was 7"))
    resumed = await make_core(srv, toy=ToyServer(), session_id=session_id)
    assert resumed.session_id == session_id and resumed.usage_info() == usage
    assert (await resumed.submit("what was the number?")).reply == "it was 7"
    sent = [(m["role"], m.get("content")) for m in sent_messages(srv, -1)]
    assert sent[1] == ("user", "remember the number 7")
    assert sent[-2:] == [("assistant", "first answer"), ("user", "what was the number?")]
    assert len(persist.load(resumed.sessions_dir, session_id).messages) == 6


async def test_an_unknown_session_id_starts_a_new_session_with_it(scripted_llm, make_core):
    srv = scripted_llm("openai", check=False)
    core = await make_core(srv, toy=ToyServer(), session_id="1700000000000000000-abcdef")
    assert core.session_id == "1700000000000000000-abcdef" and core.session.messages == []
    with pytest.raises(ValueError):
        await make_core(srv, toy=ToyServer(), session_id="../../etc/passwd")


async def test_switching_agent_builds_a_fresh_runtime_and_clears_the_session(scripted_llm, make_core, agents_dir):
    write_agent(agents_dir, "other", prompt="You are OTHER.", model="other-model", maxSteps=7,
                temperature=0.25)
    srv = scripted_llm("openai", models={"scripted-model": 32000, "other-model": 8000})
    srv.script(Reply.text("as default"), Reply.text("as other"))
    core = await make_core(srv, toy=ToyServer())
    await core.submit("hello")
    core.switch_model("picked-before")  # dropped by the switch: the new agent's config names its model
    old_runtime = core.runtime
    before = list(core.session.messages)
    output = (await core.submit("/agent other")).reply
    assert output.startswith("agent: other (session cleared")
    # The conversation before is kept as a session of its own, in the agent it ran, to resume (it was lost).
    kept = re.search(r'^the previous conversation is saved as "hello" \((\S+)\): resume it with `/resume', output, re.M)
    assert kept, output
    copy = persist.load(core.sessions_dir, kept[1])
    assert copy.messages == before and copy.agent == "default" and copy.title == "hello"
    assert core.agent_name == "other" and core.runtime is not old_runtime
    assert core.runtime.dispatcher is not old_runtime.dispatcher
    assert core.session.messages == [] and core.max_steps == 7 and core.model_name == "other-model"
    await core.submit("hi")
    body = srv.chat_requests[-1].body
    assert body["model"] == "other-model" and body["temperature"] == 0.25
    assert body["messages"] == [{"role": "system", "content": "You are OTHER."}, {"role": "user", "content": "hi"}]
    saved = persist.load(core.sessions_dir, core.session_id)
    assert (saved.agent, saved.backend, saved.model) == ("other", "", "")  # a resume runs other-model, not the pick
    with pytest.raises(ConfigError):
        await core.switch_agent("missing")
    assert core.agent_name == "other" and core.system_prompt() == "You are OTHER."


async def test_an_agent_without_tools_offers_none(scripted_llm, make_core, agents_dir):
    write_agent(agents_dir, "chat", tools=False)
    srv = scripted_llm("openai")
    srv.script(Reply.text("just talk"))
    core = await make_core(srv, toy=ToyServer(), agent="chat")
    assert core.tools() == []
    await core.submit("hi")
    assert not srv.chat_requests[0].body.get("tools")


async def test_backend_model_and_params_switching(scripted_llm, make_core):
    srv = scripted_llm("openai", models={"scripted-model": 32000, "m2": 4000})
    srv.script(Reply.text("one"))
    core = await make_core(srv, toy=ToyServer())
    assert sorted(await core.list_models()) == ["m2", "scripted-model"]
    core.switch_model("m2")
    core.set_generation_params(GenerationParams(temperature=0.5, max_tokens=99))
    await core.submit("hi")
    body = srv.chat_requests[-1].body
    assert body["model"] == "m2" and body["temperature"] == 0.5
    assert core.context_info()["limit"] == 4000
    from ollie.backend.errors import BackendConfigError

    with pytest.raises(BackendConfigError):
        await core.switch_backend("anthropic")  # no key in this environment
    assert core.backend_name == "local"  # an OpenAI-compatible server on this machine, named so
    await core.switch_backend("openai")
    assert core.model_name == "scripted-model"


async def test_commands_through_the_core(scripted_llm, make_core, tmp_path):
    srv = scripted_llm("openai")
    srv.script(Reply.text("answer"))
    core = await make_core(srv, toy=ToyServer())
    sub = core.bus.subscribe()
    await core.submit("question")
    assert (await core.submit("/maxsteps 4")).reply == "max steps: 4" and core.max_steps == 4
    assert "slow_read" in (await core.submit("/tools")).reply
    assert (await core.submit("/sp")).reply == core.system_prompt()
    assert (await core.submit("/rn my title")).reply == "session renamed to 'my title'"
    assert persist.load(core.sessions_dir, core.session_id).title == "my title"
    assert (await core.submit("/clear")).stop == "command"
    assert core.session.messages == [] and persist.load(core.sessions_dir, core.session_id).messages == []
    assert (await core.submit("!echo from-shell")).reply == "from-shell"
    events = drain(sub)
    assert any(e.role == "exec" and e.content == "from-shell" for e in events)
    assert core.queue("later") == 1 and (await core.submit("/queued")).reply.endswith("1. later")


async def test_rename_and_kill_callbacks(scripted_llm, make_core):
    srv = scripted_llm("openai", check=False)
    core = await make_core(srv, toy=ToyServer())
    titles, killed = [], []
    async def on_rename(title):
        titles.append(title)

    async def on_kill():
        killed.append(core.session_id)

    core.on_rename, core.on_kill = on_rename, on_kill
    await core.rename("via daemon")
    assert titles == ["via daemon"] and core.session.title == ""
    await core.submit("/kill")
    assert killed == [core.session_id]
    result = await core.submit("after kill")
    assert result.stop == "error" and "closed" in result.error


async def test_set_cwd_rejects_a_missing_directory(scripted_llm, make_core, tmp_path):
    srv = scripted_llm("openai", check=False)
    core = await make_core(srv)
    with pytest.raises(ValueError):
        await core.set_cwd(tmp_path / "nope")
    await core.set_cwd(tmp_path)  # the tools follow: test_commands_core.py::test_cwd_moves_shell_commands_and_tools
    assert core.cwd == tmp_path.resolve()
    sub = core.bus.subscribe()
    await core.set_cwd(tmp_path)
    assert roles(drain(sub), "state")


async def test_set_cwd_walks_the_directory_off_the_loop(scripted_llm, make_core, tmp_path):
    # The walk (an lstat a name: an NFS or FUSE workspace may stall on each) ran on the loop every session shares.
    core = await make_core(scripted_llm("openai", check=False))
    deep = tmp_path.joinpath(*["d"] * 300)
    deep.mkdir(parents=True)
    ticks = LoopTicks()
    await asyncio.sleep(0)
    before = ticks.count
    await core.set_cwd(deep)
    during = ticks.stop() - before
    assert core.cwd == deep.resolve() and during > 0, "the loop served nothing while the cwd was walked"


async def test_opening_a_session_walks_its_cwd_off_the_loop(scripted_llm, make_core, tmp_path, monkeypatch):
    # The opening resolved the cwd on the loop every session shares: a hung NFS or FUSE workspace froze them all.
    work = tmp_path / "nfs"
    work.mkdir()
    stall = StalledWalk(monkeypatch, work)
    core = await stall.walked_off_the_loop(make_core(scripted_llm("openai", check=False), cwd=work))
    assert core.cwd == work


async def test_the_session_is_saved_after_every_tool_round(scripted_llm, make_core):
    import asyncio

    from agentkit import wait_state

    srv = scripted_llm("openai")
    srv.script(
        Reply.tool_calls(("slow_read", {"tag": "first"})),
        Reply.tool_calls(("slow_write", {"delay": 30})),
    )
    core = await make_core(srv, toy=ToyServer())
    turn = asyncio.create_task(core.submit("work"))
    await wait_state(core, "calling: slow_write")
    # Mid-turn, the file already holds the finished first round, and the reply calling the running tool.
    saved = persist.load(core.sessions_dir, core.session_id)
    assert [m.role for m in saved.messages] == ["user", "assistant", "tool", "assistant"]
    assert saved.messages[2].content == "slow_read first done"
    assert [c.name for c in saved.messages[3].tool_calls] == ["slow_write"]
    core.interrupt()
    await turn


async def test_a_teammates_always_answers_do_not_hold_for_another_user(scripted_llm, make_core, monkeypatch):
    # A shared session's "always" answers are its owner's: a team member resuming it was not asked about the steps they
    # cover (a fork drops them; a resume kept them). His own answers hold for him and are not saved over hers.
    from ollie.agent.questions import Answer, StepQuestion

    srv = scripted_llm("openai")
    step = Reply.tool_calls(("execute_code", {"steps": [{"code": "touch made"}]}))
    srv.script(step, Reply(text="one"), step, Reply(text="two"), step, Reply(text="three"))
    core = await make_core(srv)
    asked: list[StepQuestion] = []

    def approve(question: StepQuestion) -> Answer:
        asked.append(question)
        return Answer("allow_always")

    monkeypatch.setenv("OLLIE_APPROVAL", "ask")  # both users' mode
    core.step_approver = approve
    await core.submit("first")  # the owner allows such steps always
    owners = list(core.session.approval_always)
    assert len(asked) == 1 and owners
    core.shared_by("alice")  # as the recorder marks a team member's resume
    await core.submit("second")
    assert len(asked) == 2  # asked: her answer is not his
    await core.submit("third")
    assert len(asked) == 2  # his own answer holds for him...
    assert core.session.approval_always == owners  # ...and is not saved into her session
