"""set_session_id moves the session: the old file is gone, tools see the new id, the plan file follows."""

from __future__ import annotations

from agentkit import drain, roles

from ollie.agent.taskstate import plan_path, read_plan_step
from ollie.sessions import persist
from ollie.testing import Reply

NEW_ID = "1800000000000000000-00000a"

PLAN = ("call_tool", {"calls": [{"tool": "task_add", "args": ["write the tests", "ship it"]}]})
SHOW_ENV = ("execute_code", {"steps": [{"language": "bash",
                                        "code": 'echo "id=$OLLIE_SESSION_ID"; cat "$OLLIE_PLAN_FILE"'}]})


async def test_set_session_id_moves_the_file_the_plan_and_the_tools_id(scripted_llm, make_core):
    srv = scripted_llm("openai")
    srv.script(Reply.tool_calls(PLAN), Reply.text("planned"), Reply.tool_calls(SHOW_ENV), Reply.text("shown"))
    core = await make_core(srv, toy=None)  # the real execute server: tools run sandboxed
    old_id = core.session_id
    await core.submit("plan it")
    old_file = persist.SessionFile(core.sessions_dir, old_id).path
    old_plan = plan_path(old_id)
    assert old_file.exists() and "write the tests" in old_plan.read_text()

    core.set_session_id(NEW_ID)
    assert not old_file.exists()
    assert not old_plan.exists() and "write the tests" in plan_path(NEW_ID).read_text()
    assert read_plan_step(plan_path(core.session_id)) == "write the tests"

    sub = core.bus.subscribe()
    await core.submit("show the env")
    output = roles(drain(sub), "tool")[0].content
    assert f"id={NEW_ID}" in output and "write the tests" in output
    saved = persist.load(core.sessions_dir, NEW_ID)
    assert [m.content for m in saved.messages if m.role == "user"] == ["plan it", "show the env"]


async def test_a_session_runs_in_one_core_at_a_time_and_is_free_once_closed(scripted_llm, make_core):
    import pytest

    from ollie.sessions.errors import LiveElsewhereError

    srv = scripted_llm("openai", check=False)
    first = await make_core(srv)
    second = await make_core(srv)
    with pytest.raises(LiveElsewhereError, match=f"session {first.session_id} is open in another"):
        await make_core(srv, session_id=first.session_id)  # resuming it
    with pytest.raises(LiveElsewhereError):
        second.set_session_id(first.session_id)  # or moving another session onto its id
    assert second.session_id != first.session_id
    taken = first.session_id
    await first.close()
    second.set_session_id(taken)
    assert second.session_id == taken
