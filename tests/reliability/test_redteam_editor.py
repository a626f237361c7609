"""Red team: the editor tools, attacked with hostile workspace content through the real daemon.

The daemon reads the line shown beside each definition or reference itself, outside
the sandbox. A language server fed a hostile workspace answers locations the
workspace chose; a parallel step may swap a directory for a symlink meanwhile.
Neither may make the daemon read outside the workspace, nor hang it on a FIFO.
"""

from __future__ import annotations

import os
from typing import Any

from ollie.testing import Reply
from tests.lsp.conftest import llm, start_daemon  # noqa: F401  (fixtures)

SECRET = "SECRET_KEY=hunter2"


def call(tool: str, args: list[str], timeout: int = 5) -> Reply:
    """One call_tool call of one editor tool, with its timeout."""
    return Reply.tool_calls(("call_tool", {"calls": [{"tool": tool, "args": args}], "timeout": timeout}))


def told(llm: Any, request: int) -> str:  # noqa: F811
    """The tool result the model read in chat request `request`."""
    return llm.chat_requests[request].body["messages"][-1]["content"]


def _release(fifo: Any) -> None:
    """End a read a broken daemon may have blocked in (EOF), so that it can still exit after a failure."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass  # no reader: nothing is blocked


async def test_the_lines_beside_locations_come_only_from_regular_files_really_in_the_workspace(
        start_daemon, llm, tmp_path):  # noqa: F811
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "lib").mkdir()
    util = ws / "src" / "util.ts"
    util.write_text("// maths\nexport function add(a: number, b: number) {\n  return a + b;\n}\n")
    (ws / "lib" / "helper.ts").write_text("export const helper = 1;\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "helper.ts").write_text(f"{SECRET}\n")
    # A FIFO the model made in an earlier step (mkfifo): nobody ever writes to it.
    os.mkfifo(ws / "src" / "pipe.ts")

    llm.script(call("editor_references", ["src/util.ts", "2", "17"]), call("editor_definition", ["--symbol=add"]),
               Reply.text("done"))
    daemon = await start_daemon(env=llm.env(), init_options={"editorTools": True}, workspace=ws)

    @daemon.client.feature("ollie/editor/references")
    async def references(params: Any) -> dict[str, Any]:
        return {"locations": [{"path": str(ws / "src" / "pipe.ts"), "line": 1, "column": 1},
                              {"path": str(util), "line": 2, "column": 17}]}

    @daemon.client.feature("ollie/editor/symbols")
    async def symbols(params: Any) -> dict[str, Any]:
        # `helper` is no match for `add`, but its path is checked (and found inside) while picking.
        return {"symbols": [{"name": "add", "kind": "function", "path": str(util), "line": 2, "column": 1},
                            {"name": "helper", "kind": "constant", "path": str(ws / "lib" / "helper.ts"),
                             "line": 1, "column": 14}]}

    @daemon.client.feature("ollie/editor/definition")
    async def definition(params: Any) -> dict[str, Any]:
        # Meanwhile a parallel step swaps lib/ for a symlink to a directory outside.
        (ws / "lib").rename(ws / "lib.old")
        (ws / "lib").symlink_to(outside)
        return {"locations": [{"path": str(ws / "lib" / "helper.ts"), "line": 1, "column": 1}]}

    try:
        result = await daemon.request("ollie/submit", {"text": "look"}, timeout=60)
    finally:
        _release(ws / "src" / "pipe.ts")
    assert result["stop"] == "end", result
    # The FIFO is listed, not read: the answer comes (a read would block until the call's 5 s timeout, "the editor
    # did not answer"), with the regular file's line beside its location.
    fifo = told(llm, 1)
    assert "src/pipe.ts:1:1" in fifo and "src/util.ts:2:17: export function add(a: number, b: number) {" in fifo
    assert "did not answer" not in fifo, fifo
    # The swapped directory's file is not read through the symlink.
    swapped = told(llm, 2)
    assert SECRET not in swapped and "hunter2" not in swapped, swapped
