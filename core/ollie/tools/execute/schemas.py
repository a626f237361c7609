"""The three executors as a model sees them: names, descriptions, and JSON Schemas derived from `args`."""

from __future__ import annotations

from typing import Any

from ollie.shapes import json_schema
from ollie.tools.execute.args import CallRequest, CodeRequest, CodeStep, PipeRequest, ScriptCall
from ollie.tools.execute.languages import LANGUAGES
from ollie.tools.execute.tool import ToolScript


def _without_elevation(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "properties": {k: v for k, v in schema["properties"].items() if k != "elevated"}}


EXECUTE_CODE_DESCRIPTION = (
    "Run inline programs in the working directory, sandboxed. `steps` run in order and stop at "
    "the first failure; a step {\"parallel\": [...]} runs its steps at the same time. Languages: "
    + ", ".join(LANGUAGES)
    + ". The result shows each step's exit status, stdout and stderr. Output beyond the cap "
    "is cut with a note. Prefer call_tool's file tools for reading and editing files."
)

EXECUTE_CODE_SCHEMA = json_schema(CodeRequest)

PIPE_DESCRIPTION = (
    "Run a pipeline: each stage's stdout becomes the next stage's stdin, like `a | b | c` in a "
    "shell. A stage is a tool script {\"tool\": name, \"args\": [...]} or inline code "
    "{\"code\": ..., \"language\": ...}. The result is the last stage's stdout plus every "
    "stage's stderr and exit status."
)

PIPE_SCHEMA = json_schema(PipeRequest)
# A stage is either call, never elevated.
PIPE_SCHEMA["properties"]["stages"]["items"] = {
    "anyOf": [_without_elevation(json_schema(ScriptCall)), _without_elevation(json_schema(CodeStep))]}


def _script_line(script: ToolScript) -> str:
    line = f"- {script.name}: {script.description or '(no description)'}"
    if script.args:
        args = script.args.replace("\n", "\n      ")
        line += f"\n    args: {args}"
    return line


def call_tool_description(scripts: list[ToolScript]) -> str:
    """call_tool's description, listing every available tool script with its description and args."""
    listing = "\n".join(_script_line(s) for s in scripts) or "(no tool scripts are available)"
    return (
        "Run tool scripts by name, sandboxed, in the working directory. Each call is "
        "{\"tool\": name, \"args\": [strings]}; calls run in order and stop at the first failure, "
        "and consecutive read-only tools run at the same time. Paths are relative to the "
        "working directory. Available tools:\n" + listing
    )


def call_tool_schema(names: list[str]) -> dict[str, Any]:
    """call_tool's JSON Schema; `tool` is an enum of the available script names."""
    schema = json_schema(CallRequest)
    if names:
        schema["properties"]["calls"]["items"]["properties"]["tool"]["enum"] = names
    return schema
