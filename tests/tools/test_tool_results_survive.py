"""What the model keeps of a tool's result: writes and edits stay hot; a long read says where to go on."""

from __future__ import annotations

import re

import pytest

from ollie.tools.execute.server import ExecuteServer

from .conftest import Workspace, stdout_of, tool


@pytest.fixture
def server(ws: Workspace) -> ExecuteServer:
    return ws.server()


def test_file_write_and_file_edit_results_are_hot(ws: Workspace, server: ExecuteServer) -> None:
    for name in ("file_write", "file_edit"):
        assert server.classify_tier("call_tool", {"calls": [{"tool": name, "args": ["a", "b", "c"]}]}) == "hot", name


async def test_a_long_file_read_stops_under_the_output_cap_and_says_where_to_continue(
        ws: Workspace, server: ExecuteServer) -> None:
    # 2000 lines of 100 characters: ~210 KB, far over the runner's 64 KiB per-stream cap.
    (ws.work / "big.txt").write_text("".join(f"{i:05d} " + "x" * 94 + "\n" for i in range(1, 2001)))
    result = await tool(server, "file_read", "big.txt")
    assert not result.is_error
    out = stdout_of(result)
    assert "truncated" not in result.text  # the tool stopped itself; the runner cut nothing
    footer = out.splitlines()[-1]
    match = re.fullmatch(r"\[lines 1-(\d+) of 2000; continue with --offset=(\d+)\]", footer)
    assert match, footer
    last, offset = int(match[1]), int(match[2])
    assert offset == last + 1 and 300 < last < 2000
    assert out.splitlines()[-2].startswith(f"{last:6}\t{last:05d} ")
    rest = stdout_of(await tool(server, "file_read", "big.txt", f"--offset={offset}"))
    assert rest.splitlines()[0].startswith(f"{offset:6}\t{offset:05d} ")
