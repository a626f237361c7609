"""Executor arguments parsed once into a typed request that the classifiers, the checks and the runners share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ollie.tools.execute import parsed as parsed_module
from ollie.tools.execute import server as server_module
from ollie.tools.execute.args import (
    ArgumentError,
    CallRequest,
    CodeRequest,
    CodeStep,
    ParallelGroup,
    PipeRequest,
    ScriptCall,
    parse_request,
)
from ollie.tools.execute.languages import LANGUAGES
from ollie.tools.execute.schemas import EXECUTE_CODE_SCHEMA, PIPE_SCHEMA, call_tool_schema

from .conftest import Workspace, stdout_of, tool

ECHO = """\
#!/usr/bin/env bash
# description: say which copy ran
# ollie:parallel read
# ollie:tier {tier}
echo "{word} $*"
"""


def _calls(*names: str) -> dict[str, Any]:
    return {"calls": [{"tool": name, "args": ["x"]} for name in names]}


def test_each_executor_parses_into_its_request() -> None:
    code = parse_request("execute_code", {"steps": [{"code": "ls"}, {"parallel": [{"code": "a"}, {"code": "print(1)",
                                                     "language": "python3"}]}], "timeout": 9999, "sandbox": ""})
    assert isinstance(code, CodeRequest) and code.timeout == 600.0 and code.sandbox is None
    assert isinstance(code.steps[1], ParallelGroup) and [s.code for s in code.code_steps()] == ["ls", "a", "print(1)"]
    assert code.script_calls() == []

    call = parse_request("call_tool", {"calls": [{"tool": "t", "args": [1, "b"], "elevated": True}], "sandbox": "ro"})
    assert isinstance(call, CallRequest) and call.sandbox == "ro" and call.timeout == 30.0
    assert call.script_calls() == [ScriptCall("t", ("1", "b"), True)] and call.code_steps() == []

    pipe = parse_request("pipe", {"stages": [{"tool": "t", "args": "one"}, {"code": "wc -l"}], "timeout": 5})
    assert isinstance(pipe, PipeRequest) and pipe.timeout == 5.0
    assert pipe.script_calls() == [ScriptCall("t", ("one",))]
    assert [type(s) for s in pipe.stages] == [ScriptCall, CodeStep] and pipe.code_steps()[0].code == "wc -l"


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        # Every problem is named by its field, all at once.
        ("execute_code", {"steps": [], "timeout": "soon"}, "timeout: expected a number, got a string; steps: must not be empty"),
        ("call_tool", {"calls": [], "sandbox": 3}, "sandbox: expected a string, got an integer"),
        ("call_tool", {"calls": [{"tool": "t"}], "steps": []}, "steps: unknown key"),
        ("call_tool", {"calls": [{"tool": ""}]}, "calls[0].tool: must not be empty"),
        ("call_tool", {"calls": [{"tool": "t", "args": ["a", True]}]}, "calls[0].args[1]: expected a string, got a boolean"),
        ("pipe", {"stages": [{"code": "ls", "elevated": True}]}, "stages[0].elevated: unknown key"),
        ("execute_code", {"steps": [{"parallel": [{"code": "x", "language": "cobol"}]}]},
         "steps[0].parallel[0].language: unknown language 'cobol'"),
        ("execute_code", {"steps": [{"code": "x", "language": "python3", "elevated": True}]},
         "steps[0]: only bash steps can be elevated (got python3)"),
        ("nope", {}, "unknown executor 'nope'"),
    ],
)
def test_bad_arguments_name_what_to_fix(tool: str, args: dict[str, Any], message: str) -> None:
    with pytest.raises(ArgumentError) as raised:
        parse_request(tool, args)
    assert message in str(raised.value)


def test_the_schemas_the_model_sees_are_the_declaration_the_parser_checks() -> None:
    step, group = EXECUTE_CODE_SCHEMA["properties"]["steps"]["items"]["anyOf"]
    assert EXECUTE_CODE_SCHEMA["required"] == ["steps"] and EXECUTE_CODE_SCHEMA["additionalProperties"] is False
    assert set(step["properties"]) == {"code", "language", "elevated"} and step["required"] == ["code"]
    assert step["properties"]["language"]["enum"] == list(LANGUAGES) and group["required"] == ["parallel"]
    assert EXECUTE_CODE_SCHEMA["properties"]["timeout"]["exclusiveMinimum"] == 0
    calls = call_tool_schema(["file_read"])["properties"]["calls"]
    assert calls["minItems"] == 1 and calls["items"]["properties"]["tool"]["enum"] == ["file_read"]
    # A pipe's stages are never elevated: the schema leaves the key out and the parser refuses it.
    stages = PIPE_SCHEMA["properties"]["stages"]["items"]["anyOf"]
    assert [set(s["properties"]) for s in stages] == [{"tool", "args"}, {"code", "language"}]
    parse_request("pipe", {"stages": [{"tool": "t", "args": ["a"]}, {"code": "wc -l", "language": "bash"}]})


async def test_classifiers_and_call_share_one_parse_and_one_lookup(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    ws.script("echo_a", ECHO.format(tier="warm", word="a"))
    server = ws.server()
    parses: list[str] = []
    lookups: list[str] = []
    real_parse, real_find = parsed_module.parse_request, server_module.find_script

    def counted_parse(name: str, args: dict[str, Any]) -> Any:
        parses.append(name)
        return real_parse(name, args)

    def counted_find(name: str, dirs: list[Path]) -> Any:
        lookups.append(name)
        return real_find(name, dirs)

    monkeypatch.setattr(parsed_module, "parse_request", counted_parse)
    monkeypatch.setattr(server_module, "find_script", counted_find)
    # As a tool round does: classify, run, then classify the result's tier.
    args = _calls("echo_a", "echo_a")
    assert server.classify_parallel("call_tool", args) == "read"
    result = await server.call("call_tool", args)
    assert server.classify_tier("call_tool", args) == "warm"
    assert not result.is_error and result.text.count("a x") == 2
    assert parses == ["call_tool"] and lookups == ["echo_a"]


async def test_a_script_changed_between_calls_is_found_again(ws: Workspace, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    early = tmp_path / "early"
    early.mkdir()
    monkeypatch.setenv("OLLIE_TOOLS_PATH", f"{early}:{ws.tools}")
    server = ws.server()
    args = _calls("echo_a")
    script = ws.script("echo_a", ECHO.format(tier="warm", word="first"))
    assert stdout_of(await server.call("call_tool", args)) == "first x"
    # Edited in place: its new text and header count.
    script.write_text(ECHO.format(tier="cold", word="edited"))
    assert stdout_of(await server.call("call_tool", args)) == "edited x"
    assert server.classify_tier("call_tool", args) == "cold"
    # A script of the same name in an earlier tools dir now shadows it.
    (early / "echo_a").write_text(ECHO.format(tier="hot", word="shadow"))
    (early / "echo_a").chmod(0o755)
    assert stdout_of(await server.call("call_tool", args)) == "shadow x"
    # Removed: the call says so.
    (early / "echo_a").unlink()
    script.unlink()
    gone = await server.call("call_tool", args)
    assert gone.is_error and "no tool script named 'echo_a'" in gone.text
    assert server.classify_parallel("call_tool", args) == "global"


async def test_a_restriction_set_after_a_call_holds_for_the_same_call_again(ws: Workspace) -> None:
    ws.script("echo_a", ECHO.format(tier="hot", word="a"))
    server = ws.server()
    assert stdout_of(await tool(server, "echo_a", "x")) == "a x"
    server.set_restrictions(None, ["other"])
    refused = await tool(server, "echo_a", "x")
    assert refused.is_error and "not allowed for this agent" in refused.text


async def test_the_same_dict_changed_between_calls_runs_what_it_says_now(ws: Workspace) -> None:
    server = ws.server()
    args: dict[str, Any] = {"steps": [{"code": "echo one"}]}
    assert stdout_of(await server.call("execute_code", args)) == "one"
    args["steps"][0]["code"] = "echo two"
    assert stdout_of(await server.call("execute_code", args)) == "two"
