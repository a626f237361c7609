"""The editor's knowledge as agent tools: the daemon asks the client (ollie/editor/*) and the model reads the answers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import attrs
from lsprotocol import types

from ollie.testing import Reply

from .conftest import Daemon

EDITOR_TOOLS = ["editor_definition", "editor_diagnostics", "editor_open_files", "editor_references", "editor_symbols"]


def batch(*calls: tuple[str, list[str]]) -> Reply:
    """One call_tool call running `calls` (tool, args) as a batch."""
    return Reply.tool_calls(("call_tool", {"calls": [{"tool": t, "args": a} for t, a in calls]}))


def told(llm: Any, request: int = -1) -> str:
    """The last tool result the model read in chat request `request`."""
    return llm.chat_requests[request].body["messages"][-1]["content"]


def call_tool_spec(llm: Any, request: int = 0) -> dict[str, Any]:
    """The call_tool function as the model was offered it in chat request `request`."""
    tools = llm.chat_requests[request].body.get("tools") or []
    return next(t["function"] for t in tools if t["function"]["name"] == "call_tool")


def never_asked(daemon: Daemon) -> list[Any]:
    """Record approval questions (there must be none for the editor tools)."""
    asked: list[Any] = []

    @daemon.client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_request(params: types.ShowMessageRequestParams) -> None:
        asked.append(params)

    return asked


async def test_every_editor_tool_answers_in_one_parallel_batch_with_workspace_paths_only(start_daemon, llm, tmp_path):
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    app, util = ws / "src" / "app.ts", ws / "src" / "util.ts"
    app.write_text("import { add } from './util';\nconst n: number = add(1, 2);\n")
    util.write_text("// maths\nexport function add(a: number, b: number) {\n  return a + b;\n}\n")
    outside = tmp_path / "elsewhere" / "lib.d.ts"
    seen: dict[str, list[Any]] = {}
    running = {"now": 0, "most": 0}
    three_asked = asyncio.Event()

    async def answer(method: str, params: Any, result: dict[str, Any]) -> dict[str, Any]:
        seen.setdefault(method, []).append(params)
        running["now"] += 1
        running["most"] = max(running["most"], running["now"])
        if running["now"] >= 3:
            three_asked.set()
        # Held until three calls are asked at once (a daemon asking one at a time never gets there: most stays 1).
        await asyncio.wait_for(three_asked.wait(), 30)
        running["now"] -= 1
        return result

    llm.script(
        batch(("editor_diagnostics", []), ("editor_definition", ["src/app.ts", "2", "19"]),
              ("editor_references", ["--symbol=add"]), ("editor_symbols", ["add"]), ("editor_open_files", []),
              ("file_read", ["src/app.ts"])),
        Reply.text("done"),
    )
    daemon = await start_daemon(env=llm.env(approval="ask"), init_options={"editorTools": True}, workspace=ws)
    asked = never_asked(daemon)
    client = daemon.client

    @client.feature("ollie/editor/diagnostics")
    async def diagnostics(params: Any) -> dict[str, Any]:
        return await answer("diagnostics", params, {"diagnostics": [
            {"path": str(app), "line": 2, "column": 7, "severity": "error",
             "message": "Type 'string' is not assignable to type 'number'.", "source": "ts", "code": 2322},
            {"path": str(util), "line": 1, "column": 1, "severity": "hint", "message": "a hint"},
            {"path": str(outside), "line": 1, "column": 1, "severity": "error", "message": "SECRET outside"},
        ]})

    @client.feature("ollie/editor/definition")
    async def definition(params: Any) -> dict[str, Any]:
        return await answer("definition", params, {"locations": [
            {"path": str(util), "line": 2, "column": 17, "endLine": 2, "endColumn": 20},
            {"path": str(outside), "line": 9, "column": 1},
        ]})

    @client.feature("ollie/editor/references")
    async def references(params: Any) -> dict[str, Any]:
        return await answer("references", params, {"locations": [
            {"path": str(util), "line": 2, "column": 17}, {"path": str(app), "line": 1, "column": 10},
            {"path": str(app), "line": 2, "column": 19}, {"path": str(outside), "line": 3, "column": 3},
        ]})

    @client.feature("ollie/editor/symbols")
    async def symbols(params: Any) -> dict[str, Any]:
        return await answer("symbols", params, {"symbols": [
            # The symbol's range starts at `export`: the daemon asks at the name itself.
            {"name": "add", "kind": "function", "path": str(util), "line": 2, "column": 1},
            {"name": "addAll", "kind": "function", "path": str(util), "line": 9, "column": 1, "container": "Maths"},
            {"name": "add", "kind": "function", "path": str(outside), "line": 1, "column": 1},
        ]})

    @client.feature("ollie/editor/openFiles")
    async def open_files(params: Any) -> dict[str, Any]:
        return await answer("openFiles", params, {"files": [
            {"path": str(app), "focused": True, "dirty": True}, {"path": str(util), "focused": False, "dirty": False},
            {"path": str(outside), "focused": False, "dirty": True},
        ]})

    result = await daemon.request("ollie/submit", {"text": "look around"})
    assert result["stop"] == "end", result

    # Offered like any tool script, listed in call_tool's description and enum.
    spec = call_tool_spec(llm)
    assert set(EDITOR_TOOLS) <= set(spec["parameters"]["properties"]["calls"]["items"]["properties"]["tool"]["enum"])
    assert "- editor_diagnostics: Errors and warnings" in spec["description"]

    # What the client was asked: absolute paths, 1-based positions; the symbol form through symbols first.
    assert seen["diagnostics"] == [{}]
    assert seen["definition"] == [{"path": str(app), "line": 2, "column": 19}]
    assert seen["symbols"][0] == {"query": "add"}
    assert {"path": str(util), "line": 2, "column": 17} in seen["references"]
    assert seen["openFiles"] == [{}]
    # The reads of one batch ran at the same time (asked while others were still waiting for their answer).
    assert running["most"] >= 3

    text = told(llm)
    assert "SECRET" not in text and "elsewhere" not in text and str(tmp_path) not in text
    assert ("src/app.ts:2:7: error: Type 'string' is not assignable to type 'number'. [ts 2322]\n"
            "1 error in 1 file") in text
    assert "a hint" not in text  # information and hints only with --all
    assert "src/util.ts:2:17: export function add(a: number, b: number) {" in text
    assert "src/app.ts:1:10: import { add } from './util';" in text
    assert "function add  src/util.ts:2:1" in text and "function addAll  src/util.ts:9:1  (in Maths)" in text
    assert "src/app.ts (focused, unsaved changes)\nsrc/util.ts\n" in text
    assert "[call 6 file_read] exit 0" in text
    assert not asked

    # Readable steps: kind read/search, titles a person would write.
    call = next(e for e in daemon.events if e["role"] == "call")
    assert [(s["kind"], s["title"]) for s in call["steps"]] == [
        ("read", "Diagnostics for the workspace"), ("search", "Definition at src/app.ts:2:19"),
        ("search", "References to `add`"), ("search", "Find symbols matching `add`"),
        ("read", "List the files open in the editor"), ("read", "Read src/app.ts")]
    done = next(e for e in daemon.events if e["role"] == "tool")
    assert {s["status"] for s in done["steps"]} == {"completed"}


async def test_without_editor_tools_nothing_is_offered_and_an_empty_list_of_options_is_no_options(start_daemon, llm):
    llm.script(batch(("editor_diagnostics", [])), Reply.text("ok"))
    # Neovim sends an empty Lua table as `[]`.
    daemon = await start_daemon(env=llm.env(), init_options=[])
    asked: list[Any] = []

    @daemon.client.feature("ollie/editor/diagnostics")
    def diagnostics(params: Any) -> dict[str, Any]:
        asked.append(params)
        return {"diagnostics": []}

    assert (await daemon.request("ollie/submit", {"text": "check"}))["stop"] == "end"
    spec = call_tool_spec(llm)
    assert "editor_" not in json.dumps(spec)
    assert "no editor that answers it is connected" in told(llm)
    assert asked == []
    assert daemon.client.messages == []  # `[]` drew no warning


async def _editing_daemon(start_daemon: Any, llm: Any, new: str, *, settle_ms: int,
                          wait_ms: int) -> tuple[Daemon, Path]:
    """A daemon with editor tools whose model edits `= 1` in a.ts into `new`; (the daemon, a.ts)."""
    llm.script(
        Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["a.ts", "= 1", new]}]})),
        Reply.text("edited"),
    )
    env = {**llm.env(), "OLLIE_EDITOR_DIAGNOSTICS_SETTLE_MS": str(settle_ms),
           "OLLIE_EDITOR_DIAGNOSTICS_WAIT_MS": str(wait_ms)}
    daemon = await start_daemon(env=env, init_options={"editorTools": True})
    target = daemon.workspace / "a.ts"
    target.write_text("let unused = 0;\nconst n: number = 1;\n")
    return daemon, target


async def test_post_edit_diagnostics_show_the_model_only_the_errors_its_edit_made(start_daemon, llm):
    daemon, target = await _editing_daemon(start_daemon, llm, "= 'one'", settle_ms=50, wait_ms=3000)
    asked: list[Any] = []

    @daemon.client.feature("ollie/editor/diagnostics")
    def diagnostics(params: Any) -> dict[str, Any]:
        # Like a language server: what it says follows the file's content now.
        asked.append(params)
        found = [{"path": str(target), "line": 1, "column": 5, "severity": "error", "message": "old problem"}]
        if "'one'" in target.read_text():
            found.append({"path": str(target), "line": 2, "column": 7, "severity": "error", "source": "ts",
                          "message": "Type 'string' is not assignable to type 'number'."})
        return {"diagnostics": found}

    result = await daemon.request("ollie/submit", {"text": "edit"})
    assert result["reply"] == "edited", (result, [e for e in daemon.events if e["role"] in ("error", "tool")])
    assert target.read_text() == "let unused = 0;\nconst n: number = 'one';\n"
    text = told(llm)
    assert text.endswith("[editor] 1 new error after this change:\n"
                         "a.ts:2:7: error: Type 'string' is not assignable to type 'number'. [ts]")
    assert "old problem" not in text
    # Asked before the edit (the baseline) and after it, for the changed file only.
    assert len(asked) >= 2 and all(p == {"paths": [str(target.resolve())]} for p in asked)
    # The step's own result (its `tool` event) says the same as what the model read.
    done = [e for e in daemon.events if e["role"] == "tool"][-1]
    assert done["content"].endswith("[ts]") and done["tool"]["kind"] == "edit"


async def test_an_edit_that_changes_no_diagnostic_ends_the_wait_once_the_editor_says_they_are_current(
        start_daemon, llm):
    # A long wait: without the editor's word the check would ask on for the whole minute (the answer never changes).
    daemon, target = await _editing_daemon(start_daemon, llm, "= 2", settle_ms=100, wait_ms=60_000)
    asked: list[Any] = []

    @daemon.client.feature("ollie/editor/diagnostics")
    def diagnostics(params: Any) -> dict[str, Any]:
        asked.append(params)  # answered at once, for the file as it is now
        return {"diagnostics": [{"path": str(target), "line": 1, "column": 5, "severity": "error",
                                 "message": "old problem"}], "upToDate": params["paths"]}

    result = await asyncio.wait_for(daemon.request("ollie/submit", {"text": "edit"}), 30)
    assert result["reply"] == "edited" and "= 2" in target.read_text()
    assert "[editor]" not in told(llm)  # nothing new to say
    # Asked before the step and once after it (at once: no settle time), then done: not asked on for the minute.
    assert len(asked) == 2, asked


async def test_a_client_that_times_out_or_fails_gives_the_model_a_clear_error_and_the_turn_goes_on(start_daemon, llm):
    llm.script(
        batch(("editor_diagnostics", ["a.ts"])),
        batch(("editor_definition", ["a.ts", "1", "1"]), ("editor_symbols", ["x"])),
        Reply.tool_calls(("call_tool", {"calls": [{"tool": "file_edit", "args": ["a.ts", "one", "two"]}]})),
        Reply.text("still here"),
    )
    # Time enough for the answers that come (a loaded machine is slow to give them), not for the one that never does.
    env = {**llm.env(), "OLLIE_EDITOR_TIMEOUT_MS": "2000", "OLLIE_EDITOR_DIAGNOSTICS_SETTLE_MS": "50"}
    daemon = await start_daemon(env=env, init_options={"editorTools": True})
    (daemon.workspace / "a.ts").write_text("one\n")

    release = asyncio.Event()

    @daemon.client.feature("ollie/editor/diagnostics")
    async def diagnostics(params: Any) -> dict[str, Any]:
        await release.wait()  # never in time
        return {"diagnostics": []}

    @daemon.client.feature("ollie/editor/definition")
    def definition(params: Any) -> dict[str, Any]:
        raise RuntimeError("no language server for this file")

    @daemon.client.feature("ollie/editor/symbols")
    def symbols(params: Any) -> dict[str, Any]:
        return {"symbols": "not a list"}

    # Bounded by the timeouts (three asks never answered), not by the client's never.
    result = await asyncio.wait_for(daemon.request("ollie/submit", {"text": "try"}), 60)
    assert result == {"session": result["session"], "reply": "still here", "stop": "end"}
    assert told(llm, 1) == ("[call 1 editor_diagnostics] error: the editor did not answer ollie/editor/diagnostics "
                            "within 2 s")
    second = told(llm, 2)
    assert "[call 1 editor_definition] error: the editor could not answer ollie/editor/definition:" in second
    assert "no language server for this file" in second
    # Both reads of the batch ran (side by side) and failed, each with its own reason.
    assert "[call 2 editor_symbols] error: the editor's answer to ollie/editor/symbols has no `symbols` list" in second
    # The edit went through; its diagnostics check gave up quietly (the editor did not answer).
    assert (daemon.workspace / "a.ts").read_text() == "two\n"
    assert "[editor]" not in told(llm, 3)
    tools = [e for e in daemon.events if e["role"] == "tool"]
    assert [e["tool"]["status"] for e in tools] == ["failed", "failed", "completed"]
    release.set()  # the late answers arrive, and the daemon only logs them
    assert (await daemon.request("ollie/state", {}))["state"] == "idle"



def test_the_options_parser_reads_editor_tools_and_takes_an_empty_list_as_none() -> None:
    from ollie_lsp.options import InitOptions, parse_init_options

    def parsed(value: object) -> tuple[dict[str, object], list[str]]:  # InitOptions has no __eq__ (cold start)
        options, problems = parse_init_options(value)
        return attrs.asdict(options), problems

    assert parsed({"editorTools": True}) == (attrs.asdict(InitOptions(editor_tools=True)), [])
    assert parsed([]) == (attrs.asdict(InitOptions()), [])
    options, problems = parse_init_options({"editorTools": "yes"})
    assert not options.editor_tools and problems == [
        "initializationOptions.editorTools: expected a boolean, got a string; ignored"]
    assert parse_init_options([1])[1]  # a non-empty array is still a bad value


def test_answers_are_read_leniently_entry_by_entry() -> None:
    from ollie.tools.editor.knowledge import Diagnostic
    from ollie_lsp.editortools import parse_diagnostic, parse_list, parse_symbol

    method = "ollie/editor/diagnostics"
    # Neovim encodes an empty Lua table as `{}`.
    assert parse_list({"diagnostics": {}}, "diagnostics", parse_diagnostic, method) == []
    got = parse_list({"diagnostics": [
        {"path": "file:///ws/a%20b.ts", "line": 3, "column": 2, "severity": "fatal", "message": "m", "code": 2322},
        {"path": "relative.ts", "line": 1, "column": 1, "severity": "error", "message": "dropped"},
        {"path": "/ws/a.ts", "line": 0, "column": 1, "severity": "error", "message": "dropped"},
        "not an object",
    ]}, "diagnostics", parse_diagnostic, method)
    assert got == [Diagnostic(Path("/ws/a b.ts"), 3, 2, "information", "m", "", "2322")]
    symbol = parse_symbol({"name": "add", "kind": "Function", "path": "/ws/u.ts", "line": 2, "column": 1})
    assert symbol is not None and symbol.kind == "function" and symbol.container == ""
