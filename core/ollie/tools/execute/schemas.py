"""The three executors as a model sees them: names, descriptions and JSON Schemas."""

from __future__ import annotations

from typing import Any

from ollie.tools.execute.languages import LANGUAGES
from ollie.tools.execute.tool import ToolScript

DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 600.0

_TIMEOUT = {
    "type": "number",
    "description": f"Seconds for the whole call (default {DEFAULT_TIMEOUT:g}, at most {MAX_TIMEOUT:g}). "
    "On timeout every process of the call is killed.",
    "exclusiveMinimum": 0,
    "maximum": MAX_TIMEOUT,
}
_SANDBOX = {
    "type": "string",
    "description": "Name of the sandbox policy (default: the session's, normally \"default\": "
    "read most of the system, write only the working directory and the temp dir).",
}
_LANGUAGE = {
    "type": "string",
    "enum": list(LANGUAGES),
    "description": "Interpreter for `code` (default bash). awk/sed/jq read the piped input; "
    "ed reads `code` as its commands; bc evaluates with -l.",
}
_CODE = {"type": "string", "description": "The program text."}
_ELEVATED = {
    "type": "boolean",
    "description": "Run outside the sandbox (bash only). Use only when the task truly needs it, "
    "e.g. writing outside the working directory.",
}

_CODE_STEP: dict[str, Any] = {
    "type": "object",
    "properties": {"code": _CODE, "language": _LANGUAGE, "elevated": _ELEVATED},
    "required": ["code"],
    "additionalProperties": False,
}
_PARALLEL_GROUP: dict[str, Any] = {
    "type": "object",
    "properties": {
        "parallel": {
            "type": "array",
            "description": "Code steps that run at the same time.",
            "items": _CODE_STEP,
            "minItems": 1,
        }
    },
    "required": ["parallel"],
    "additionalProperties": False,
}

EXECUTE_CODE_DESCRIPTION = (
    "Run inline programs in the working directory, sandboxed. `steps` run in order and stop at "
    "the first failure; a step {\"parallel\": [...]} runs its steps at the same time. Languages: "
    + ", ".join(LANGUAGES)
    + ". The result shows each step's exit status, stdout and stderr. Output beyond the cap "
    "is cut with a note. Prefer call_tool's file tools for reading and editing files."
)

EXECUTE_CODE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "steps": {
            "type": "array",
            "description": "Programs to run, in order. Example: "
            "[{\"code\": \"ls -la\", \"language\": \"bash\"}]",
            "items": {"anyOf": [_CODE_STEP, _PARALLEL_GROUP]},
            "minItems": 1,
        },
        "timeout": _TIMEOUT,
        "sandbox": _SANDBOX,
    },
    "required": ["steps"],
    "additionalProperties": False,
}

PIPE_DESCRIPTION = (
    "Run a pipeline: each stage's stdout becomes the next stage's stdin, like `a | b | c` in a "
    "shell. A stage is a tool script {\"tool\": name, \"args\": [...]} or inline code "
    "{\"code\": ..., \"language\": ...}. The result is the last stage's stdout plus every "
    "stage's stderr and exit status."
)

PIPE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "stages": {
            "type": "array",
            "description": "Example: [{\"tool\": \"file_grep\", \"args\": [\"TODO\", \"--path=src/\"]}, "
            "{\"code\": \"wc -l\"}]",
            "items": {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {
                            "tool": {"type": "string", "description": "A tool script's name."},
                            "args": {"type": "array", "items": {"type": "string"}},
                        },
                        "required": ["tool"],
                        "additionalProperties": False,
                    },
                    {
                        "type": "object",
                        "properties": {"code": _CODE, "language": _LANGUAGE},
                        "required": ["code"],
                        "additionalProperties": False,
                    },
                ]
            },
            "minItems": 1,
        },
        "timeout": _TIMEOUT,
        "sandbox": _SANDBOX,
    },
    "required": ["stages"],
    "additionalProperties": False,
}


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
    tool: dict[str, Any] = {"type": "string", "description": "The tool script's name (see the list above)."}
    if names:
        tool["enum"] = names
    return {
        "type": "object",
        "properties": {
            "calls": {
                "type": "array",
                "description": "Example: [{\"tool\": \"file_read\", \"args\": [\"src/main.py\"]}]",
                "items": {
                    "type": "object",
                    "properties": {
                        "tool": tool,
                        "args": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": "Command-line arguments, as listed for the tool.",
                        },
                        "elevated": _ELEVATED | {"description": "Run this call outside the sandbox."},
                    },
                    "required": ["tool"],
                    "additionalProperties": False,
                },
                "minItems": 1,
            },
            "timeout": _TIMEOUT,
            "sandbox": _SANDBOX,
        },
        "required": ["calls"],
        "additionalProperties": False,
    }
