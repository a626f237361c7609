"""call_tool: script lookup and headers, argument injection per language, locks, tiers, restrictions."""

from __future__ import annotations

import asyncio
import os

import pytest

from ollie import paths
from ollie.tools.execute.server import new_dispatcher
from ollie.tools.execute.tool import parse_header

from .conftest import Workspace, installed, stdout_of, tool

SLOW = """\
#!/usr/bin/env bash
# description: record when it ran
# ollie:parallel {mode}
echo "$1 start $(date +%s.%N)" >> "times-$1"
sleep 0.5
echo "$1 end $(date +%s.%N)" >> "times-$1"
"""


def _interval(ws: Workspace, label: str) -> tuple[float, float]:
    lines = (ws.work / f"times-{label}").read_text().split("\n")
    return float(lines[0].split()[2]), float(lines[1].split()[2])


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


@pytest.mark.parametrize("name", ["../x", "a/b", "/etc/passwd", "..", "x..y", ""])
async def test_unsafe_names_are_refused(ws: Workspace, name: str) -> None:
    (ws.root / "x").write_text("#!/usr/bin/env bash\necho escaped\n")
    result = await tool(ws.server(), name)
    assert result.is_error
    assert "escaped" not in result.text
    assert "tool name" in result.text or "tool script" in result.text or "calls[0].tool: must not be empty" in result.text


async def test_unknown_tool_and_nothing_runs(ws: Workspace) -> None:
    ws.script("marker", "#!/usr/bin/env bash\ntouch ran\n")
    calls = [{"tool": "marker"}, {"tool": "no_such_tool"}]
    result = await ws.server().call("call_tool", {"calls": calls})
    assert result.is_error and "no tool script named 'no_such_tool'" in result.text
    assert not (ws.work / "ran").exists()


async def test_arguments_reach_each_language(ws: Workspace) -> None:
    ws.script("args_sh", '#!/usr/bin/env bash\nprintf "<%s>" "$@"\n')
    ws.script("args_py.py", "import sys\nprint(sys.argv[1:])\n", executable=False)
    ws.script("args_pl", '#!/usr/bin/perl -w\nprint join("|", @ARGV), "\\n";\n')
    server = ws.server()
    assert stdout_of(await tool(server, "args_sh", "a b", "c")) == "<a b><c>"
    assert stdout_of(await tool(server, "args_py", "x y", "z")) == "['x y', 'z']"
    assert stdout_of(await tool(server, "args_pl", "p", "q r")) == "p|q r"


async def test_filter_languages_take_arguments_as_input_files(ws: Workspace) -> None:
    (ws.work / "data.txt").write_text("apple\nbanana\ncherry\n")
    (ws.work / "data.json").write_text('{"name": "ollie"}')
    ws.script("count.awk", "{ n++ } END { print n }\n")
    ws.script("upper", "#!/bin/sed -f\ns/an/AN/g\n")
    ws.script("pick.jq", ".name\n")
    ws.script("calc.bc", "2^10\n")
    server = ws.server()
    assert stdout_of(await tool(server, "count", "data.txt")) == "3"
    assert stdout_of(await tool(server, "upper", "data.txt")) == "apple\nbANANa\ncherry"
    assert stdout_of(await tool(server, "pick", "data.json")) == '"ollie"'
    assert stdout_of(await tool(server, "calc")) == "1024"


async def test_ed_script_edits_the_file_named_by_its_argument(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    # ed's buffer is a tmpfile() in /tmp whatever TMPDIR says (here a private dir): the sandbox
    # mounts the session's temp dir there for it.
    (ws.work / "conf.txt").write_text("debug = false\n")
    ws.script("enable_debug.ed", ",s/false/true/\nw\nq\n")
    server = ws.server(session_id=f"ed-{ws.root.name}", lock_dir=ws.scratch / "locks")
    result = await tool(server, "enable_debug", "conf.txt")
    assert not result.is_error, result.text
    assert (ws.work / "conf.txt").read_text() == "debug = true\n"


@pytest.mark.skipif(not installed("lua"), reason="lua is not installed on this machine")
async def test_lua_scripts_get_arg(ws: Workspace) -> None:
    ws.script("args_lua.lua", "print(arg[1] .. '|' .. arg[2])\n")
    assert stdout_of(await tool(ws.server(), "args_lua", "a", "b")) == "a|b"


def test_header_fields_are_parsed() -> None:
    text = (
        "#!/usr/bin/env -S python3 -I\n"
        "# description: Do a thing.\n"
        "# args: PATH [--n=N]\n"
        "#   PATH: the file\n"
        "# ollie:parallel read\n"
        "# ollie:tier cold\n"
        "\n"
        "# description: not part of the header\n"
    )
    fields = parse_header(text)
    assert fields == {
        "description": "Do a thing.",
        "args": "PATH [--n=N]\nPATH: the file",
        "parallel": "read",
        "tier": "cold",
    }
    assert parse_header("-- description: lua style\n-- ollie:tier warm\nprint(1)\n") == {
        "description": "lua style",
        "tier": "warm",
    }


async def test_tools_path_order_and_listing(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    first, user = ws.root / "first", paths.config_dir() / "tools"
    first.mkdir()
    user.mkdir(parents=True)
    (first / "file_read").write_text("#!/usr/bin/env bash\n# description: shadowing reader\necho mine\n")
    (user / "user_tool").write_text("#!/usr/bin/env bash\n# description: from the user dir\necho user\n")
    (user / "_helper.py").write_text("print('not a tool')\n")
    monkeypatch.setenv("OLLIE_TOOLS_PATH", f"{first}:{ws.tools}")
    server = ws.server()
    assert stdout_of(await tool(server, "file_read", "x")) == "mine"
    assert stdout_of(await tool(server, "user_tool")) == "user"
    info = {t.name: t for t in server.list_tools()}["call_tool"]
    assert "- file_read: shadowing reader" in info.description
    assert "- user_tool: from the user dir" in info.description
    assert "- file_edit: Replace an exact piece of text" in info.description
    assert "_helper" not in info.description
    names = info.parameters["properties"]["calls"]["items"]["properties"]["tool"]["enum"]
    assert "user_tool" in names and "task_add" in names and "_helper" not in names


async def test_parallel_read_calls_overlap(ws: Workspace) -> None:
    ws.script("slow_read", SLOW.format(mode="read"))
    calls = [{"tool": "slow_read", "args": [label]} for label in ("a", "b", "c")]
    result = await ws.server().call("call_tool", {"calls": calls})
    assert not result.is_error, result.text
    a, b, c = (_interval(ws, label) for label in "abc")
    assert _overlap(a, b) and _overlap(b, c) and _overlap(a, c)


async def test_concurrent_read_calls_share_the_lock(ws: Workspace) -> None:
    ws.script("slow_read", SLOW.format(mode="read"))
    server = ws.server()
    results = await asyncio.gather(*(tool(server, "slow_read", label) for label in ("a", "b")))
    assert not any(r.is_error for r in results)
    assert _overlap(_interval(ws, "a"), _interval(ws, "b"))


@pytest.mark.parametrize("mode", ["write", "global"])
async def test_write_and_global_calls_serialize(ws: Workspace, mode: str) -> None:
    ws.script("slow_read", SLOW.format(mode="read"))
    ws.script("slow_other", SLOW.format(mode=mode) if mode == "write" else SLOW.replace("# ollie:parallel {mode}\n", ""))
    server = ws.server()
    results = await asyncio.gather(
        tool(server, "slow_other", "w1"), tool(server, "slow_other", "w2"), tool(server, "slow_read", "r")
    )
    assert not any(r.is_error for r in results), [r.text for r in results]
    w1, w2, r = (_interval(ws, label) for label in ("w1", "w2", "r"))
    assert not _overlap(w1, w2)
    assert not _overlap(w1, r) and not _overlap(w2, r)


async def test_other_sessions_do_not_share_locks(ws: Workspace) -> None:
    ws.script("slow_write", SLOW.format(mode="write"))
    one, two = ws.server(session_id="one"), ws.server(session_id="two")
    await asyncio.gather(tool(one, "slow_write", "x"), tool(two, "slow_write", "y"))
    assert _overlap(_interval(ws, "x"), _interval(ws, "y"))


async def test_lock_files_live_under_the_session_tmp_dir(ws: Workspace) -> None:
    ws.script("quick", "#!/usr/bin/env bash\n# ollie:parallel read\necho ok\n")
    server = ws.server()
    await tool(server, "quick")
    assert (ws.scratch / f"ollie-{os.geteuid()}" / "s1" / "tools.lock").exists()
    custom = ws.root / "locks"
    await tool(ws.server(lock_dir=custom), "quick")
    assert (custom / "tools.lock").exists()


async def test_a_failed_call_stops_the_later_ones(ws: Workspace) -> None:
    ws.script("fail", "#!/usr/bin/env bash\necho bad >&2; exit 4\n")
    ws.script("mark", "#!/usr/bin/env bash\ntouch marked\n")
    result = await ws.server().call("call_tool", {"calls": [{"tool": "fail"}, {"tool": "mark"}]})
    assert result.is_error
    assert "[call 1 fail] exit 4\n[stderr]\nbad" in result.text
    assert "[call 2 mark] skipped: an earlier call failed" in result.text
    assert not (ws.work / "marked").exists()


async def test_elevated_call_runs_outside_the_sandbox(ws: Workspace) -> None:
    ws.script("put", '#!/usr/bin/env bash\necho hi > "$1"\n')
    target = ws.outside / "put.txt"
    server = ws.server()
    confined = await tool(server, "put", str(target))
    assert confined.is_error and "Read-only file system" in confined.text and not target.exists()
    elevated = await server.call("call_tool", {"calls": [{"tool": "put", "args": [str(target)], "elevated": True}]})
    assert not elevated.is_error and target.read_text() == "hi\n"


async def test_parallel_and_tier_classification(ws: Workspace) -> None:
    ws.script("warm_tool", "#!/usr/bin/env bash\n# ollie:tier warm\n# ollie:parallel write\necho\n")
    ws.script("plain", "#!/usr/bin/env bash\necho\n")
    server = ws.server()

    def calls(*names: str) -> dict:
        return {"calls": [{"tool": n} for n in names]}

    assert server.classify_parallel("call_tool", calls("file_read", "file_grep", "file_glob")) == "read"
    assert server.classify_parallel("call_tool", calls("file_read", "file_edit")) == "write"
    assert server.classify_parallel("call_tool", calls("file_read", "plain")) == "global"
    assert server.classify_parallel("call_tool", calls("no_such_tool")) == "global"
    assert server.classify_parallel("execute_code", {"steps": [{"code": "ls"}]}) == "global"
    assert server.classify_parallel("pipe", {"stages": [{"code": "ls"}]}) == "global"
    assert server.classify_tier("call_tool", calls("file_read")) == "cold"
    assert server.classify_tier("call_tool", calls("memory_recall")) == "cold"
    assert server.classify_tier("call_tool", calls("warm_tool")) == "warm"
    assert server.classify_tier("call_tool", calls("file_read", "warm_tool")) == "warm"
    assert server.classify_tier("call_tool", calls("plain")) == "hot"
    assert server.classify_tier("call_tool", calls("reasoning_think")) == "hot"
    assert server.classify_tier("execute_code", {"steps": [{"code": "ls"}]}) == "hot"


async def test_restrictions_hide_and_refuse(ws: Workspace) -> None:
    server = ws.server()
    server.set_restrictions(["call_tool"], ["file_read"])
    tools = server.list_tools()
    assert [t.name for t in tools] == ["call_tool"]
    assert "- file_read:" in tools[0].description and "file_write" not in tools[0].description
    refused = await server.call("execute_code", {"steps": [{"code": "true"}]})
    assert refused.is_error and "not allowed" in refused.text
    denied = await tool(server, "file_write", "x", "y")
    assert denied.is_error and "not allowed" in denied.text
    assert not (ws.work / "x").exists()
    server.set_restrictions(None, None)
    assert len(server.list_tools()) == 3


async def test_new_dispatcher_routes_to_the_execute_server(ws: Workspace) -> None:
    dispatcher = new_dispatcher(cwd=ws.work, session_id="d1", env={"GREETING": "hello"})
    names = [t.name for t in dispatcher.list_tools()]
    assert names == ["execute_code", "call_tool", "pipe"]
    result = await dispatcher.dispatch("execute_code", {"steps": [{"code": "echo $GREETING"}]})
    assert (result.text, result.is_error) == ("[step 1 bash] exit 0\nhello", False)
    await dispatcher.aclose()
