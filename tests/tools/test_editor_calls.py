"""The editor tools inside call_tool: offered only with an editor, run beside file_read, failures as tool errors."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ollie.agent.core import Core
from ollie.tools.editor.knowledge import Diagnostic, EditorUnavailable, OpenFile, Span, Symbol
from ollie.tools.execute.server import ExecuteServer

from .conftest import Workspace, tool


class Editor:
    """An editor answering from fixed data (the daemon's real one is tested through the wire in tests/lsp)."""

    def __init__(self, work: Path, *, fail: str = "", hang: bool = False) -> None:
        self.work, self.fail, self.hang = work, fail, hang
        self.asked: list[tuple[str, object]] = []

    async def _maybe_fail(self) -> None:
        if self.hang:
            await asyncio.Event().wait()
        if self.fail:
            raise EditorUnavailable(self.fail)

    async def diagnostics(self, paths: list[Path] | None) -> list[Diagnostic]:
        await self._maybe_fail()
        return [Diagnostic(self.work / "a.py", 1, 5, "error", "undefined name 'x'", "pyflakes")]

    async def definition(self, path: Path, line: int, column: int) -> list[Span]:
        await self._maybe_fail()
        self.asked.append(("definition", (path, line, column)))
        return [Span(self.work / "a.py", 1, 1)] if path.name == "a.py" else []

    async def references(self, path: Path, line: int, column: int) -> list[Span]:
        return []

    async def symbols(self, query: str) -> list[Symbol]:
        self.asked.append(("symbols", query))
        m = self.work / "m.py"
        return [Symbol("add", "method", m, 2, 1, "Maths"), Symbol("add", "function", m, 5, 1),
                Symbol("adder", "function", m, 8, 1)]

    async def open_files(self) -> list[OpenFile]:
        return [OpenFile(self.work / "a.py", focused=True)]


def call_tool_info(server: ExecuteServer) -> tuple[str, list[str]]:
    info = next(i for i in server.list_tools() if i.name == "call_tool")
    return info.description, info.parameters["properties"]["calls"]["items"]["properties"]["tool"].get("enum", [])


async def test_offered_only_with_an_editor_and_run_beside_file_read(ws: Workspace) -> None:
    (ws.work / "a.py").write_text("print(x)\n")
    server = ws.server()
    description, names = call_tool_info(server)
    assert "editor_" not in description and not [n for n in names if n.startswith("editor_")]
    refused = await tool(server, "editor_diagnostics")
    assert refused.is_error and "no editor that answers it is connected" in refused.text

    server.set_editor(Editor(ws.work))
    description, names = call_tool_info(server)
    assert {"editor_diagnostics", "editor_open_files", "file_read"} <= set(names)
    assert "- editor_definition: Where a symbol is defined" in description
    calls = [{"tool": "editor_diagnostics", "args": ["a.py"]}, {"tool": "file_read", "args": ["a.py"]},
             {"tool": "editor_open_files"}]
    args = {"calls": calls}
    assert server.classify_parallel("call_tool", args) == "read"
    assert server.classify_tier("call_tool", {"calls": [{"tool": "editor_definition", "args": ["a.py", "1", "1"]}]}) \
        == "cold"
    result = await server.call("call_tool", args)
    assert not result.is_error, result.text
    assert result.text == ("[call 1 editor_diagnostics] exit 0\na.py:1:5: error: undefined name 'x' [pyflakes]\n"
                           "1 error in 1 file\n[call 2 file_read] exit 0\n     1\tprint(x)\n"
                           "[call 3 editor_open_files] exit 0\na.py (focused)")

    server.set_editor(None)
    assert "editor_" not in call_tool_info(server)[0]


async def test_failures_are_error_sections_never_a_hang(ws: Workspace) -> None:
    server = ws.server()
    server.set_editor(Editor(ws.work, fail="the editor could not answer ollie/editor/diagnostics: boom"))
    failed = await tool(server, "editor_diagnostics")
    assert failed.is_error
    assert failed.text == "[call 1 editor_diagnostics] error: the editor could not answer ollie/editor/diagnostics: boom"
    outside = await tool(server, "editor_definition", "../outside/secret.txt", "1", "1")
    assert outside.is_error and "outside the workspace" in outside.text
    bad = await tool(server, "editor_definition", "a.py")
    assert bad.is_error and "give PATH LINE COLUMN" in bad.text
    elevated = await server.call("call_tool", {"calls": [{"tool": "editor_open_files", "elevated": True}]})
    assert elevated.is_error and "drop `elevated`" in elevated.text
    piped = await server.call("pipe", {"stages": [{"tool": "editor_open_files"}, {"code": "wc -l"}]})
    assert piped.is_error and "no pipe stages" in piped.text

    server.set_editor(Editor(ws.work, hang=True))
    started = asyncio.get_running_loop().time()
    hung = await tool(server, "editor_diagnostics", timeout=0.3)
    assert hung.is_error and "did not answer within 0.3 s" in hung.text
    assert asyncio.get_running_loop().time() - started < 10  # the editor never answers


async def test_an_agents_tool_list_applies_to_the_editor_tools(ws: Workspace) -> None:
    server = ws.server()
    server.set_restrictions(None, ["file_read", "editor_diagnostics"])
    server.set_editor(Editor(ws.work))
    assert [n for n in call_tool_info(server)[1] if n.startswith("editor_")] == ["editor_diagnostics"]
    refused = await tool(server, "editor_symbols", "x")
    assert refused.is_error and "not allowed for this agent" in refused.text


async def test_the_core_offers_them_from_the_next_request_and_withdraws_them(scripted_llm, tmp_path: Path) -> None:
    srv = scripted_llm("openai")
    work = tmp_path / "work"
    work.mkdir()
    core = await Core.create(cwd=work, env=srv.env(), sessions_dir=tmp_path / "sessions")
    try:
        def offered() -> bool:
            return "editor_diagnostics" in next(t for t in core.runtime.tools if t.name == "call_tool").description

        assert not offered()
        core.set_editor(Editor(work))
        assert offered() and core._host.post_edit is not None
        await core.switch_agent("default")  # a fresh runtime keeps them
        assert offered()
        core.set_editor(None)
        assert not offered() and core._host.post_edit is None
    finally:
        await core.close()


async def test_the_symbol_form_asks_at_the_name_of_each_match_and_takes_a_container(ws: Workspace) -> None:
    (ws.work / "m.py").write_text("class Maths:\n    def add(self, a, b):\n        return a + b\n\ndef add(a, b):\n"
                                  "    return a + b\n")
    server = ws.server()
    editor = Editor(ws.work)
    server.set_editor(editor)
    result = await tool(server, "editor_definition", "--symbol=Maths.add")
    assert not result.is_error, result.text
    assert editor.asked == [("symbols", "add"), ("definition", (ws.work / "m.py", 2, 9))]
    # The editor knew no definition there: the symbol's own place is the answer.
    assert result.text == "[call 1 editor_definition] exit 0\nm.py:2:9: def add(self, a, b):"
    both = await tool(server, "editor_definition", "--symbol=add")
    assert both.text.endswith("m.py:2:9: def add(self, a, b):\nm.py:5:5: def add(a, b):")
    missing = await tool(server, "editor_references", "--symbol=subtract")
    assert not missing.is_error and "no symbol named `subtract` in the workspace" in missing.text


async def test_an_answer_past_the_output_limit_is_cut_on_a_character_and_said_so(ws: Workspace) -> None:
    class Many(Editor):
        async def symbols(self, query: str) -> list[Symbol]:
            return [Symbol("é" * 1001, "function", self.work / "m.py", n, 1) for n in range(1, 50)]

    server = ws.server()
    server.set_editor(Many(ws.work))
    result = await server.call("call_tool", {"calls": [{"tool": "editor_symbols", "args": ["é"]}]})
    assert not result.is_error, result.text
    body, _, note = result.text.partition("\n[note] ")
    assert note.startswith("stdout truncated: only the first 64 KB") and "\ufffd" not in body
    assert 60_000 < len(body.encode()) <= 64 * 1024 + 100  # the call's header line too
