"""pipe: stdout of each stage into the next, tool and code stages mixed, failures and refusals."""

from __future__ import annotations

from .conftest import Workspace


async def test_tool_stage_into_code_stages(ws: Workspace) -> None:
    (ws.work / "src").mkdir()
    (ws.work / "src" / "a.py").write_text("# TODO one\nx = 1\n# TODO two\n")
    (ws.work / "src" / "b.py").write_text("# TODO three\n")
    stages = [
        {"tool": "file_grep", "args": ["TODO", "--path=src/"]},
        {"code": "wc -l"},
        {"code": "print(int(input()) * 10)", "language": "python3"},
    ]
    result = await ws.server().call("pipe", {"stages": stages})
    assert not result.is_error, result.text
    assert result.text.splitlines() == [
        "[stage 1 file_grep] exit 0",
        "[stage 2 bash] exit 0",
        "[stage 3 python3] exit 0",
        "30",
    ]


async def test_code_into_jq_and_into_a_tool(ws: Workspace) -> None:
    stages = [
        {"code": "echo '{\"files\": [\"a\", \"b\"]}'"},
        {"code": ".files | join(\",\")", "language": "jq"},
        {"tool": "file_write", "args": ["out.txt", "-"]},
    ]
    result = await ws.server().call("pipe", {"stages": stages})
    assert not result.is_error, result.text
    assert (ws.work / "out.txt").read_text() == '"a,b"\n'


async def test_a_failing_stage_marks_the_pipe_failed_but_later_stages_run(ws: Workspace) -> None:
    stages = [{"code": "echo partial; echo broke >&2; exit 2"}, {"code": "tr a-z A-Z"}]
    result = await ws.server().call("pipe", {"stages": stages})
    assert result.is_error
    assert "[stage 1 bash] exit 2\n[stderr]\nbroke" in result.text
    assert result.text.endswith("[stage 2 bash] exit 0\nPARTIAL")


async def test_stage_that_cannot_start_stops_the_pipe(ws: Workspace) -> None:
    stages = [{"code": "echo x"}, {"code": "e f\n", "language": "ed"}, {"code": "cat"}]
    result = await ws.server().call("pipe", {"stages": stages})
    assert result.is_error
    assert "cannot take piped input" in result.text
    assert "[stage 3] skipped" in result.text


async def test_dangerous_stage_refuses_the_whole_pipe(ws: Workspace) -> None:
    stages = [{"code": "touch ran"}, {"code": "xargs sudo rm"}]
    result = await ws.server().call("pipe", {"stages": stages})
    assert result.is_error and "refused" in result.text
    assert not (ws.work / "ran").exists()


async def test_bad_stage_and_elevation_in_a_pipe_are_errors(ws: Workspace) -> None:
    server = ws.server()
    bad = await server.call("pipe", {"stages": [{"echo": "x"}]})
    assert bad.is_error and 'must be {"tool"' in bad.text
    elevated = await server.call("pipe", {"stages": [{"code": "ls", "elevated": True}]})
    assert elevated.is_error and "stages[0].elevated: unknown key" in elevated.text
    unsafe = await server.call("pipe", {"stages": [{"tool": "../evil"}]})
    assert unsafe.is_error and "invalid tool name" in unsafe.text


async def test_pipe_timeout_kills_the_running_stage(ws: Workspace) -> None:
    stages = [{"code": "echo hi"}, {"code": "sleep 30"}, {"code": "cat"}]
    result = await ws.server().call("pipe", {"stages": stages, "timeout": 0.5})
    assert result.is_error
    assert "[stage 2 bash] timed out after 0.5 s" in result.text
    assert "[stage 3] skipped" in result.text
