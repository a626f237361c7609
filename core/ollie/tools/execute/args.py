"""Reading an executor's arguments from the model, with errors that say what to fix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ollie.errors import OllieError
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


def timeout_of(args: dict[str, Any]) -> float:
    """The call's timeout in seconds (default 30); bad values are errors, big ones are capped."""
    value = args.get("timeout", DEFAULT_TIMEOUT)
    if value is None:
        return DEFAULT_TIMEOUT
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ArgumentError(f"timeout must be a positive number of seconds, got {value!r}")
    return min(float(value), MAX_TIMEOUT)


def sandbox_of(args: dict[str, Any], default: str) -> str:
    """The sandbox policy name for the call."""
    value = args.get("sandbox") or default
    if not isinstance(value, str):
        raise ArgumentError("sandbox must be a policy name (a string)")
    return value


def code_step(value: Any, where: str, *, allow_elevated: bool = True) -> CodeStep:
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


def steps_of(args: dict[str, Any]) -> list[CodeStep | ParallelGroup]:
    """execute_code's `steps`: code steps and `{parallel: [...]}` groups."""
    _no_extra(args, {"steps", "timeout", "sandbox"}, "execute_code")
    steps: list[CodeStep | ParallelGroup] = []
    for n, value in enumerate(_list(args.get("steps"), "steps"), 1):
        where = f"steps[{n - 1}]"
        if isinstance(value, dict) and "parallel" in value:
            _no_extra(value, {"parallel"}, where)
            items = _list(value["parallel"], f"{where}.parallel")
            steps.append(ParallelGroup(tuple(code_step(v, f"{where}.parallel[{i}]") for i, v in enumerate(items))))
        else:
            steps.append(code_step(value, where))
    return steps


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


def script_call(value: Any, where: str, *, allow_elevated: bool = True) -> ScriptCall:
    """A `{tool, args, elevated}` object."""
    obj = _object(value, where)
    _no_extra(obj, {"tool", "args", "elevated"} if allow_elevated else {"tool", "args"}, where)
    tool = obj.get("tool")
    if not isinstance(tool, str) or not tool:
        raise ArgumentError(f"{where}.tool must be a tool script's name")
    return ScriptCall(tool, _string_args(obj.get("args"), where), _flag(obj, "elevated", where))


def calls_of(args: dict[str, Any]) -> list[ScriptCall]:
    """call_tool's `calls`."""
    _no_extra(args, {"calls", "timeout", "sandbox"}, "call_tool")
    return [script_call(v, f"calls[{i}]") for i, v in enumerate(_list(args.get("calls"), "calls"))]


def stages_of(args: dict[str, Any]) -> list[CodeStep | ScriptCall]:
    """pipe's `stages`: tool calls and code steps (no elevation inside a pipe)."""
    _no_extra(args, {"stages", "timeout", "sandbox"}, "pipe")
    stages: list[CodeStep | ScriptCall] = []
    for i, value in enumerate(_list(args.get("stages"), "stages")):
        where = f"stages[{i}]"
        if isinstance(value, dict) and "tool" in value:
            stages.append(script_call(value, where, allow_elevated=False))
        elif isinstance(value, dict) and "code" in value:
            stages.append(code_step(value, where, allow_elevated=False))
        else:
            raise ArgumentError(f"{where} must be {{\"tool\": ..., \"args\": [...]}} or {{\"code\": ..., \"language\": ...}}")
    return stages
