"""Reading an executor's arguments from the model, once, into a typed request; errors say what to fix.

The request is all the rest of the execute path reads: the runners, the
parallel-safety and tier classifiers, the danger check and the elevation gate.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

from ollie.errors import OllieError
from ollie.tools.execute.fileargs import FILE_TOOLS, FileArgsError, parse_file_call
from ollie.tools.execute.languages import Language, language
from ollie.tools.execute.schemas import DEFAULT_TIMEOUT, MAX_TIMEOUT


class ArgumentError(OllieError):
    """The model's arguments do not fit the executor's schema."""


@dataclass(frozen=True)
class CodeStep:
    """One inline program: text, language, and whether it runs outside the sandbox."""

    code: str
    language: Language
    elevated: bool = False


@dataclass(frozen=True)
class ParallelGroup:
    """Code steps that run at the same time."""

    steps: tuple[CodeStep, ...]


@dataclass(frozen=True)
class ScriptCall:
    """One tool-script call: name, string arguments, elevation."""

    tool: str
    args: tuple[str, ...]
    elevated: bool = False


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ArgumentError(f"{where} must be an object, got {type(value).__name__}")
    return value


def _no_extra(obj: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(obj) - allowed)
    if extra:
        raise ArgumentError(f"{where}: unknown field(s) {', '.join(extra)}; allowed: {', '.join(sorted(allowed))}")


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise ArgumentError(f"{where} must be a non-empty array")
    return value


def _flag(obj: dict[str, Any], key: str, where: str) -> bool:
    value = obj.get(key, False)
    if not isinstance(value, bool):
        raise ArgumentError(f"{where}.{key} must be true or false")
    return value


def _code_step(value: Any, where: str, *, allow_elevated: bool = True) -> CodeStep:
    """A `{code, language, elevated}` object; elevation is bash-only."""
    obj = _object(value, where)
    _no_extra(obj, {"code", "language", "elevated"} if allow_elevated else {"code", "language"}, where)
    code = obj.get("code")
    if not isinstance(code, str) or not code.strip():
        raise ArgumentError(f"{where}.code must be a non-empty string")
    lang_name = obj.get("language") or "bash"
    if not isinstance(lang_name, str):
        raise ArgumentError(f"{where}.language must be a string")
    try:
        lang = language(lang_name)
    except OllieError as exc:
        raise ArgumentError(f"{where}: {exc}") from exc
    elevated = _flag(obj, "elevated", where)
    if elevated and lang.name != "bash":
        raise ArgumentError(f"{where}: only bash steps can be elevated (got {lang.name})")
    return CodeStep(code, lang, elevated)


def _string_args(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list):
        raise ArgumentError(f"{where}.args must be an array of strings")
    out = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise ArgumentError(f"{where}.args must hold strings, got {type(item).__name__}")
        out.append(str(item))
    return tuple(out)


def _script_call(value: Any, where: str, *, allow_elevated: bool = True) -> ScriptCall:
    """A `{tool, args, elevated}` object."""
    obj = _object(value, where)
    _no_extra(obj, {"tool", "args", "elevated"} if allow_elevated else {"tool", "args"}, where)
    tool = obj.get("tool")
    if not isinstance(tool, str) or not tool:
        raise ArgumentError(f"{where}.tool must be a tool script's name")
    args = _string_args(obj.get("args"), where)
    if tool in FILE_TOOLS:
        # Parsed here, once: the daemon, the editor lookup and the tool process all act on this one path.
        # Arguments that do not parse go as they are: the daemon acts on no path of theirs, the tool says why.
        with contextlib.suppress(FileArgsError):
            args = parse_file_call(tool, args).argv()
    return ScriptCall(tool, args, _flag(obj, "elevated", where))


def loads_arguments(text: str) -> Any:
    """A tool call's JSON arguments; a key given twice is an error (two readers could take different ones)."""

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise json.JSONDecodeError(f"the key {key!r} appears twice", text, 0)
            seen[key] = value
        return seen

    return json.loads(text or "{}", object_pairs_hook=unique)



def _timeout(args: dict[str, Any]) -> float:
    """The call's timeout in seconds (default 30); bad values are errors, big ones are capped."""
    value = args.get("timeout", DEFAULT_TIMEOUT)
    if value is None:
        return DEFAULT_TIMEOUT
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ArgumentError(f"timeout must be a positive number of seconds, got {value!r}")
    return min(float(value), MAX_TIMEOUT)


def _sandbox(args: dict[str, Any]) -> str | None:
    """The sandbox policy the call names (None: the session's)."""
    value = args.get("sandbox") or None
    if value is not None and not isinstance(value, str):
        raise ArgumentError("sandbox must be a policy name (a string)")
    return value


def _steps(args: dict[str, Any]) -> tuple[CodeStep | ParallelGroup, ...]:
    """execute_code's `steps`: code steps and `{parallel: [...]}` groups."""
    steps: list[CodeStep | ParallelGroup] = []
    for n, value in enumerate(_list(args.get("steps"), "steps")):
        where = f"steps[{n}]"
        if isinstance(value, dict) and "parallel" in value:
            _no_extra(value, {"parallel"}, where)
            items = _list(value["parallel"], f"{where}.parallel")
            steps.append(ParallelGroup(tuple(_code_step(v, f"{where}.parallel[{i}]") for i, v in enumerate(items))))
        else:
            steps.append(_code_step(value, where))
    return tuple(steps)


def _calls(args: dict[str, Any]) -> tuple[ScriptCall, ...]:
    """call_tool's `calls`."""
    return tuple(_script_call(v, f"calls[{i}]") for i, v in enumerate(_list(args.get("calls"), "calls")))


def _stages(args: dict[str, Any]) -> tuple[CodeStep | ScriptCall, ...]:
    """pipe's `stages`: tool calls and code steps (no elevation inside a pipe)."""
    stages: list[CodeStep | ScriptCall] = []
    for i, value in enumerate(_list(args.get("stages"), "stages")):
        where = f"stages[{i}]"
        if isinstance(value, dict) and "tool" in value:
            stages.append(_script_call(value, where, allow_elevated=False))
        elif isinstance(value, dict) and "code" in value:
            stages.append(_code_step(value, where, allow_elevated=False))
        else:
            raise ArgumentError(f"{where} must be {{\"tool\": ..., \"args\": [...]}} or {{\"code\": ..., \"language\": ...}}")
    return tuple(stages)


@dataclass(frozen=True)
class ExecuteRequest:
    """One executor call as parsed: its timeout and the sandbox it names (None: the session's)."""

    timeout: float
    sandbox: str | None

    def code_steps(self) -> list[CodeStep]:
        """Every inline program, in order (what the danger check reads)."""
        return []

    def script_calls(self) -> list[ScriptCall]:
        """Every tool-script call, in order (what the classifiers and the resolver read)."""
        return []


@dataclass(frozen=True)
class CodeRequest(ExecuteRequest):
    """execute_code: code steps and parallel groups, in order."""

    steps: tuple[CodeStep | ParallelGroup, ...]

    def code_steps(self) -> list[CodeStep]:
        """Every code step, parallel groups unpacked."""
        return [s for step in self.steps for s in (step.steps if isinstance(step, ParallelGroup) else (step,))]


@dataclass(frozen=True)
class CallRequest(ExecuteRequest):
    """call_tool: tool-script calls, in order."""

    calls: tuple[ScriptCall, ...]

    def script_calls(self) -> list[ScriptCall]:
        """The calls."""
        return list(self.calls)


@dataclass(frozen=True)
class PipeRequest(ExecuteRequest):
    """pipe: stages, each a tool-script call or a code step."""

    stages: tuple[CodeStep | ScriptCall, ...]

    def code_steps(self) -> list[CodeStep]:
        """The code stages."""
        return [s for s in self.stages if isinstance(s, CodeStep)]

    def script_calls(self) -> list[ScriptCall]:
        """The tool-script stages."""
        return [s for s in self.stages if isinstance(s, ScriptCall)]


def parse_request(tool: str, args: dict[str, Any]) -> ExecuteRequest:
    """`args` of executor `tool` (execute_code, call_tool or pipe) as a typed request; ArgumentError says what to fix."""
    timeout, sandbox = _timeout(args), _sandbox(args)
    if tool == "execute_code":
        _no_extra(args, {"steps", "timeout", "sandbox"}, tool)
        return CodeRequest(timeout, sandbox, _steps(args))
    if tool == "call_tool":
        _no_extra(args, {"calls", "timeout", "sandbox"}, tool)
        return CallRequest(timeout, sandbox, _calls(args))
    if tool == "pipe":
        _no_extra(args, {"stages", "timeout", "sandbox"}, tool)
        return PipeRequest(timeout, sandbox, _stages(args))
    raise ArgumentError(f"unknown executor {tool!r}")
