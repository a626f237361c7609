"""The executors' arguments, declared once (`ollie.shapes`): read from the model once into a typed request,
and the JSON Schema the model sees (`schemas`); errors name the field to fix.

The request is all the rest of the execute path reads: the runners, the
parallel-safety and tier classifiers, the danger check and the elevation gate.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Annotated, Any

import attrs

from ollie.errors import OllieError
from ollie.shapes import Check, Invalid, expected, parse
from ollie.tools.execute.fileargs import FILE_TOOLS, FileArgsError, parse_file_call
from ollie.tools.execute.languages import LANGUAGES, Language, language

EXECUTORS = ("execute_code", "call_tool", "pipe")  # the tools whose arguments these are
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 600.0
# The most calls of one call_tool batch: a sandboxed process each, which this many finish well within the default
# timeout on a loaded machine (2,000 edits ran out of it after 600 to 1,000, and their result was too big to keep).
MAX_CALLS = 256


class ArgumentError(OllieError):
    """The model's arguments do not fit the executor's schema."""


def _code(value: object) -> str:
    code = parse(str, value)
    if not code.strip():
        raise Invalid([((), "must not be empty")])
    return code


def _language(value: object) -> Language:
    try:
        return language(parse(str, value) if value else "bash")
    except OllieError as exc:
        raise Invalid([((), str(exc))]) from None


def _argv(value: object) -> tuple[str, ...]:
    """One string, or an array of strings (a number is taken as its text), as command-line words."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list):
        raise expected("an array of strings", value)
    problems = [((i,), expected("a string", v).problems[0][1]) for i, v in enumerate(value)
                if isinstance(v, bool) or not isinstance(v, (str, int, float))]
    if problems:
        raise Invalid(problems)
    return tuple(map(str, value))


def _seconds(value: object) -> float:
    # A longer timeout is capped rather than refused; null means the default.
    return DEFAULT_TIMEOUT if value is None else min(parse(float, value), MAX_TIMEOUT)


def _policy_name(value: object) -> str | None:
    # "" and null: the session's policy.
    return None if value is None else parse(str, value) or None


Code = Annotated[str, Check(parse=_code, doc="The program text.")]
LanguageName = Annotated[Language, Check(
    parse=_language, schema={"type": "string", "enum": list(LANGUAGES)},
    doc="Interpreter for `code` (default bash). awk/sed/jq read the piped input; ed reads `code` as its commands; "
        "bc evaluates with -l.")]
Elevated = Annotated[bool, Check(doc="Run outside the sandbox (bash only). Use only when the task truly needs it, "
                                     "e.g. writing outside the working directory.")]
ToolName = Annotated[str, Check(min_length=1, doc="The tool script's name (see call_tool's list).")]
Argv = Annotated[tuple[str, ...], Check(parse=_argv, doc="Command-line arguments, as listed for the tool.")]


@attrs.frozen(eq=False, repr=False)
class CodeStep:
    """One inline program: text, language, and whether it runs outside the sandbox."""

    code: Code
    language: LanguageName = LANGUAGES["bash"]
    elevated: Elevated = False

    def __attrs_post_init__(self) -> None:
        if self.elevated and self.language.name != "bash":
            raise ValueError(f"only bash steps can be elevated (got {self.language.name})")


@attrs.frozen(eq=False, repr=False)
class ParallelGroup:
    """Code steps that run at the same time."""

    parallel: Annotated[tuple[CodeStep, ...], Check(min_length=1, doc="Code steps that run at the same time.")]

    @property
    def steps(self) -> tuple[CodeStep, ...]:
        """The group's steps."""
        return self.parallel


@attrs.frozen(repr=False)
class ScriptCall:
    """One tool-script call: name, string arguments, elevation."""

    tool: ToolName
    args: Argv = ()
    elevated: Annotated[bool, Check(doc="Run this call outside the sandbox.")] = False


def _script_call(value: object) -> ScriptCall:
    call = parse(ScriptCall, value)
    if call.tool in FILE_TOOLS:
        # Parsed here, once: the daemon, the editor lookup and the tool process all act on this one path.
        # Arguments that do not parse go as they are: the daemon acts on no path of theirs, the tool says why.
        with contextlib.suppress(FileArgsError):
            return attrs.evolve(call, args=parse_file_call(call.tool, call.args).argv())
    return call


def _step(value: object) -> CodeStep | ParallelGroup:
    return parse(ParallelGroup if isinstance(value, Mapping) and "parallel" in value else CodeStep, value)


def _stage(value: object) -> CodeStep | ScriptCall:
    """A pipe's stage: a tool-script call or a code step, never elevated."""
    if not isinstance(value, Mapping) or not ("tool" in value or "code" in value):
        raise Invalid([((), 'must be {"tool": ..., "args": [...]} or {"code": ..., "language": ...}')])
    if "elevated" in value:
        raise Invalid([(("elevated",), "unknown key")])
    return _script_call(value) if "tool" in value else parse(CodeStep, value)


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ExecuteRequest:
    """One executor call as parsed: its timeout (capped) and the sandbox it names (None: the session's)."""

    timeout: Annotated[float, Check(parse=_seconds, gt=0, doc=(
        f"Seconds for the whole call (default {DEFAULT_TIMEOUT:g}, at most {MAX_TIMEOUT:g}). "
        "On timeout every process of the call is killed."))] = DEFAULT_TIMEOUT
    sandbox: Annotated[str | None, Check(parse=_policy_name, doc=(
        'Name of the sandbox policy (default: the session\'s, normally "default": read most of the system, '
        "write only the working directory and the temp dir)."))] = None

    def code_steps(self) -> list[CodeStep]:
        """Every inline program, in order (what the danger check reads)."""
        return []

    def script_calls(self) -> list[ScriptCall]:
        """Every tool-script call, in order (what the classifiers and the resolver read)."""
        return []


@attrs.frozen(kw_only=True, eq=False, repr=False)
class CodeRequest(ExecuteRequest):
    """execute_code: code steps and parallel groups, in order."""

    steps: Annotated[tuple[Annotated[CodeStep | ParallelGroup, Check(parse=_step)], ...], Check(
        min_length=1, doc='Programs to run, in order. Example: [{"code": "ls -la", "language": "bash"}]')]

    def code_steps(self) -> list[CodeStep]:
        """Every code step, parallel groups unpacked."""
        return [s for step in self.steps for s in (step.steps if isinstance(step, ParallelGroup) else (step,))]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class CallRequest(ExecuteRequest):
    """call_tool: tool-script calls, in order."""

    calls: Annotated[tuple[Annotated[ScriptCall, Check(parse=_script_call)], ...], Check(
        min_length=1, max_length=MAX_CALLS, doc='Example: [{"tool": "file_read", "args": ["src/main.py"]}]. '
        f'At most {MAX_CALLS}: a change to more files is one execute_code step (sed -i, a script), or several batches')]

    def script_calls(self) -> list[ScriptCall]:
        """The calls."""
        return list(self.calls)


@attrs.frozen(kw_only=True, eq=False, repr=False)
class PipeRequest(ExecuteRequest):
    """pipe: stages, each a tool-script call or a code step."""

    stages: Annotated[tuple[Annotated[CodeStep | ScriptCall, Check(parse=_stage)], ...], Check(
        min_length=1, doc='Example: [{"tool": "file_grep", "args": ["TODO", "--path=src/"]}, {"code": "wc -l"}]')]

    def code_steps(self) -> list[CodeStep]:
        """The code stages."""
        return [s for s in self.stages if isinstance(s, CodeStep)]

    def script_calls(self) -> list[ScriptCall]:
        """The tool-script stages."""
        return [s for s in self.stages if isinstance(s, ScriptCall)]


# The longest arguments of one call (a model writes a few hundred KB at most in one answer), and what stands for longer
# ones in the session (a hostile server's 50 MB call was checked on the daemon's loop for minutes, saved, sent back).
MAX_ARGUMENTS_CHARS = 1 << 20
_CUT = "[ollie: arguments not kept: "


def cut_arguments(text: str) -> str:
    """`text`, or past the limit a short stand-in that `loads_arguments` refuses, saying how long they were."""
    return text if len(text) <= MAX_ARGUMENTS_CHARS else f"{_CUT}{len(text):,} characters]"


def loads_arguments(text: str) -> Any:
    """A tool call's JSON arguments; a key given twice is an error (two readers could take different ones)."""

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise json.JSONDecodeError(f"the key {key!r} appears twice", text, 0)
            seen[key] = value
        return seen

    if (text := cut_arguments(text)).startswith(_CUT):
        raise json.JSONDecodeError(f"{text[len(_CUT):-1]}, over the limit of {MAX_ARGUMENTS_CHARS:,}", "", 0)
    try:
        return json.loads(text or "{}", object_pairs_hook=unique)
    except RecursionError:  # JSON nested 100,000 deep: it ended the turn without the call's result
        raise json.JSONDecodeError("nested too deeply", "", 0) from None


REQUESTS: dict[str, type[ExecuteRequest]] = {"execute_code": CodeRequest, "call_tool": CallRequest,
                                             "pipe": PipeRequest}


def parse_request(tool: str, args: dict[str, Any]) -> ExecuteRequest:
    """`args` of executor `tool` (execute_code, call_tool or pipe) as a typed request; ArgumentError says what to fix."""
    if tool not in REQUESTS:
        raise ArgumentError(f"unknown executor {tool!r}")
    try:
        return parse(REQUESTS[tool], args)
    except Invalid as bad:
        raise ArgumentError(str(bad)) from None
