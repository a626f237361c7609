"""A big `call_tool` batch is described once and its tools looked up once per lookup, not once per inner call: each
of those was O(calls) on the loop (2,000 edits froze every session for seconds)."""

from __future__ import annotations

from ollie.agent import steps
from ollie.testing import Reply
from ollie.tools.execute import parsed

CALLS = 50


async def test_a_batch_of_edits_is_described_once_and_each_tool_looked_up_once(scripted_llm, make_core, workdir,
                                                                              monkeypatch):
    monkeypatch.setenv("OLLIE_APPROVAL", "auto")
    for i in range(CALLS):
        (workdir / f"f{i}.txt").write_text("old\n")
    described, looked_up = [], []
    script_step, found_under = steps._script_step, parsed._found_under

    def counted_step(call, *args):
        described.append(call.tool)
        return script_step(call, *args)

    def counted_lookup(dirs, script):
        looked_up.append(script.name)
        return found_under(dirs, script)

    monkeypatch.setattr(steps, "_script_step", counted_step)
    monkeypatch.setattr(parsed, "_found_under", counted_lookup)
    srv = scripted_llm("openai")
    batch = [{"tool": "file_edit", "args": [f"f{i}.txt", "old", "new"]} for i in range(CALLS)]
    srv.script(Reply.tool_calls(("call_tool", {"calls": batch})), Reply.text("edited"))
    core = await make_core(srv)
    assert (await core.submit("edit them")).reply == "edited"
    assert all((workdir / f"f{i}.txt").read_text() == "new\n" for i in range(CALLS))
    # Its `call` event's steps serve its network questions' title too (no preTool hook can change the arguments).
    assert len(described) == CALLS, f"{len(described)} inner calls described for {CALLS}"
    # The parallel and tier classifiers and the run: one lookup each, however many calls name the tool.
    assert 0 < len(looked_up) <= 3, f"{len(looked_up)} tool lookups for {CALLS} calls"
