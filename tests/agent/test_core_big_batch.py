"""A big `call_tool` batch is described once, parsed once, both off the loop, and its tools looked up once per
lookup: each was O(calls) on the loop (2,000 edits froze every session for seconds)."""

from __future__ import annotations

import json
import threading

from ollie.agent import steps, toolround
from ollie.testing import Reply
from ollie.tools.execute import parsed

CALLS = 50


async def test_a_batch_of_edits_is_described_and_parsed_once_off_the_loop(scripted_llm, make_core, workdir,
                                                                          monkeypatch):
    monkeypatch.setenv("OLLIE_APPROVAL", "auto")
    for i in range(CALLS):
        (workdir / f"f{i}.txt").write_text("old\n")
    described, parses, looked_up = [], [], []
    script_step, parse_request, found_under = steps._script_step, parsed.parse_request, parsed._found_under

    def counted_step(call, *args):
        described.append(threading.get_ident())
        return script_step(call, *args)

    def counted_parse(*args):
        parses.append(threading.get_ident())
        return parse_request(*args)

    def counted_lookup(dirs, script):
        looked_up.append(script.name)
        return found_under(dirs, script)

    monkeypatch.setattr(steps, "_script_step", counted_step)
    monkeypatch.setattr(parsed, "parse_request", counted_parse)
    monkeypatch.setattr(parsed, "_found_under", counted_lookup)
    srv = scripted_llm("openai")
    new = "new " * 100  # the batch's arguments are past OFF_LOOP_BYTES
    batch = {"calls": [{"tool": "file_edit", "args": [f"f{i}.txt", "old", new]} for i in range(CALLS)]}
    assert len(json.dumps(batch)) > toolround.OFF_LOOP_BYTES
    srv.script(Reply.tool_calls(("call_tool", batch)), Reply.text("edited"))
    core = await make_core(srv)
    assert (await core.submit("edit them")).reply == "edited"
    assert all((workdir / f"f{i}.txt").read_text() == f"{new}\n" for i in range(CALLS))
    loop = threading.get_ident()
    # Its `call` event's steps serve its network questions' title too (no preTool hook can change the arguments).
    assert len(described) == CALLS and loop not in described, f"{len(described)} described for {CALLS} calls"
    # Parsed as it was classified; the run and the tier classifier reuse that parse.
    assert len(parses) == 1 and loop not in parses, parses
    # The parallel and tier classifiers and the run: one lookup each, however many calls name the tool.
    assert 0 < len(looked_up) <= 3, f"{len(looked_up)} tool lookups for {CALLS} calls"
