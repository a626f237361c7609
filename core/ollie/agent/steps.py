"""Readable tool steps: what a tool call does, as a kind, a human title and the files it touches.

Pure: built from the call's arguments (and a user script's `ollie:kind`). The kinds are ACP's, mapped 1:1.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import attrs

from ollie.errors import OllieError
from ollie.escapes import clipped, escaped
from ollie.sandbox.networds import verdict_words
from ollie.tools.editor.specs import EDITOR_KINDS
from ollie.tools.execute.args import (
    EXECUTORS,
    ArgumentError,
    CallRequest,
    CodeRequest,
    PipeRequest,
    ScriptCall,
    loads_arguments,
    parse_request,
)
from ollie.tools.execute.fileargs import FILE_TOOLS, FileArgsError, parse_file_call
from ollie.tools.execute.tool import KindAnnotation, ToolNameError, ToolScript, find_script

if TYPE_CHECKING:
    from ollie.workspace.types import FileChange

StepKind = KindAnnotation  # the Agent Client Protocol's tool kinds, as tool scripts declare them
StepStatus = Literal["pending", "in_progress", "completed", "failed"]
KindLookup = Callable[[str], "StepKind | None"]
ScriptLookup = Callable[[str], ToolScript]  # an executor call's, as it runs (ollie.tools.execute.parsed)

# The kinds of the bundled tool scripts; other scripts declare theirs (`ollie:kind`) or are `other`.
BUILTIN_KINDS: dict[str, StepKind] = {
    "file_read": "read",
    "file_write": "edit",
    "file_edit": "edit",
    "file_glob": "search",
    "file_grep": "search",
    "memory_recall": "search",
    "reasoning_think": "think",
    **EDITOR_KINDS,
}
# The bundled tools that keep the session's plan (a user's `task_deploy` is not one of them).
PLAN_TOOLS = frozenset({"task_add", "task_check", "task_clear"})
# Bundled tools that write only ollie's own state (the plan, memory), never the workspace.
STATE_TOOLS: frozenset[str] = PLAN_TOOLS | {"memory_remember"}
# ollie's own tools' names: a script of another's bearing one is told as what it is (`not_ours_step`).
OWN_NAMES: frozenset[str] = frozenset(BUILTIN_KINDS) | STATE_TOOLS
# Kinds that may change files: the loop snapshots the workspace around them (reads cost nothing).
WRITE_KINDS: frozenset[StepKind] = frozenset({"edit", "delete", "move", "execute", "other"})
# A section header of an execute result: `[call 2 file_read] exit 1`, `[step 1 bash] timed out ...`. One line: a
# bracket that ran on to later lines made a step's output of many unclosed `[call 1 ` lines quadratic to parse.
_SECTION = re.compile(r"^\[(?:call|step|stage) (\d+) [^\]\n]*\] (.*)$", re.MULTILINE)
# file_edit's report of where it replaced: `replaced 1 occurrence in a.py at line 12:`, `... (original lines 3, 9)`.
_EDIT_LINE = re.compile(r"^replaced \d+ occurrences? in .*?(?: at line |\(original lines )(\d+)", re.MULTILINE)
# Commands in titles are cut here: a title is a line, not the program.
TITLE_COMMAND_CHARS = 60


@dataclass(frozen=True, repr=False)
class Location:
    """A file a step touches: path relative to the session CWD (absolute when outside it), optional 1-based line."""

    path: str
    line: int | None = None


@dataclass(frozen=True, repr=False)
class PlanChange:
    """What a call of one of the plan's tools does to it, as its arguments say."""

    tool: str  # task_add, task_check or task_clear
    args: tuple[str, ...] = ()  # its positional arguments: the steps added, the step checked off
    done: bool = False  # task_clear --done: the finished steps only

    def title(self) -> str:
        """The step's title: each said "Update the plan", and a turn's nine in a row told her nothing."""
        if self.tool == "task_add":
            return f"Add {len(self.args)} step{'s' * (len(self.args) != 1)} to the plan"
        if self.tool == "task_check":
            # The model's words escaped here too, as a ToolStep's title: a batch's title is made of these alone, and
            # a check-off's U+202E and line break reached every client's card as they came.
            return "Check off " + (
                (f"step {self.args[0]}" if self.args[0].isdigit() else escaped(_quote(self.args[0]), keep=""))
                if self.args else "the next step")
        return "Clear the plan's finished steps" if self.done else "Clear the plan"


@dataclass(frozen=True, repr=False)
class ToolStep:
    """One readable step: ACP tool kind, a title a person would write, the files it touches, whether it is one of the
    plan's tools (the terminal shows the checklist it leaves, not its result) and what it does to the plan."""

    kind: StepKind
    title: str
    locations: tuple[Location, ...] = field(default_factory=tuple)
    plan: PlanChange | None = None

    def __post_init__(self) -> None:
        # One line, the model's controls and bidi overrides as escapes (`\u202e`): every card and chat drew a title
        # as it was, and a U+202E in a command or a path reordered what the user read.
        object.__setattr__(self, "title", escaped(self.title, keep=""))


@attrs.frozen(eq=False, repr=False, slots=False)
class Diff:
    """One file a step changed, in ACP's diff shape; `path` relative to the session CWD, a text None when absent/binary."""

    path: str
    old_text: str | None
    new_text: str | None

    @classmethod
    def of(cls, change: FileChange) -> Diff:
        """The diff of a workspace change (without its hunks and raw bytes)."""
        return cls(change.path, change.old_text, change.new_text)

    def to_wire(self) -> dict[str, str | None]:
        """`{path, oldText, newText}`."""
        return {"path": self.path, "oldText": self.old_text, "newText": self.new_text}

    def unified(self, most: int) -> list[str]:
        """The change as unified diff lines (2 lines of context), cut after `most` with a line saying how many more."""
        import difflib  # at the first diff shown, not in the start-up path

        old, new = (self.old_text or "").splitlines(), (self.new_text or "").splitlines()
        lines = list(difflib.unified_diff(old, new, f"a/{self.path}", f"b/{self.path}", n=2, lineterm=""))
        return lines if len(lines) <= most else [*lines[:most], f"… ({len(lines) - most} more diff lines)"]

    def first_line(self) -> int:
        """The 1-based line where the new text first differs from the old (1 for a new or removed file)."""
        if self.old_text is None or self.new_text is None:
            return 1
        old, new = self.old_text.splitlines(), self.new_text.splitlines()
        same = next((n for n, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
                    min(len(old), len(new)))
        return max(1, min(same + 1, len(new)))


# What a `tool` event says of each connection (`error` only when there was one; `more` on the one record that adds
# up a step's connections past the first egress.MAX_RECORDED), and `words`, its verdict as the `[network]` lines say it.
NETWORK_FIELDS = ("host", "port", "verdict", "how", "sent", "received", "error", "more")


@attrs.frozen(eq=False, repr=False, slots=False)
class ToolState:
    """A step as the events carry it: stable id, kind, title, status, locations, and the diffs it made."""

    id: str
    kind: StepKind
    title: str
    status: StepStatus
    locations: tuple[Location, ...] = ()
    diffs: tuple[Diff, ...] | None = None
    # The files it changed past those `diffs` carry (ollie.workspace.bounds.LISTED): counted, never read.
    diffs_more: int = 0
    # The connections the call's steps made through the egress proxy (sandbox/egress.py records), once it ended.
    network: tuple[dict[str, Any], ...] = ()
    plan: PlanChange | None = None  # its ToolStep's

    def to_wire(self) -> dict[str, object]:
        """The protocol's `tool` object (`diffs` only when the step was tracked for changes, `diffsMore` when it
        changed more files than they carry, `network` when it connected out)."""
        out: dict[str, object] = {
            "id": self.id, "kind": self.kind, "title": self.title, "status": self.status,
            "locations": [{"path": loc.path, **({"line": loc.line} if loc.line else {})} for loc in self.locations],
        }
        if self.diffs is not None:
            out["diffs"] = [d.to_wire() for d in self.diffs]
            if self.diffs_more:
                out["diffsMore"] = self.diffs_more
        if self.network:
            # (`words` only beside a verdict: a record saved in another shape is passed on as it is.)
            out["network"] = [{**{k: c[k] for k in NETWORK_FIELDS if k in c},
                               **({"words": verdict_words(c["verdict"], c.get("how") or "")} if "verdict" in c else {})}
                              for c in self.network]
        return out

    def with_status(self, status: StepStatus, diffs: tuple[Diff, ...] | None = None) -> ToolState:
        """This step with a new status (and its diffs, when given)."""
        return attrs.evolve(self, status=status, diffs=diffs if diffs is not None else self.diffs)


def step_ids(call_id: str, count: int) -> list[str]:
    """The ids of one call's steps: `<call id>` for a single step, `<call id>.<n>` (from 1) for a batch's."""
    return [call_id] if count == 1 else [f"{call_id}.{n}" for n in range(1, count + 1)]


def step_states(call_id: str, steps: Sequence[ToolStep], status: StepStatus = "pending") -> list[ToolState]:
    """The states of one call's steps, with their `step_ids`."""
    return [ToolState(sid, s.kind, s.title, status, s.locations, plan=s.plan)
            for sid, s in zip(step_ids(call_id, len(steps)), steps, strict=True)]


def batch_state(call_id: str, inner: Sequence[ToolState]) -> ToolState:
    """The whole call of a several-step batch: its most consequential kind, a summary title, every location/diff."""
    writers: list[StepKind] = [s.kind for s in inner if s.kind in WRITE_KINDS]
    kind: StepKind = writers[0] if writers else inner[0].kind
    plan = [s.plan for s in inner if s.plan] if inner[0].plan else []
    more = len(inner) - max(len(plan), 1)
    title = (_plan_batch_title(plan) if plan else inner[0].title) + (f" and {more} more" if more else "")
    statuses = {s.status for s in inner}
    order: tuple[StepStatus, ...] = ("failed", "in_progress", "pending")
    found: list[StepStatus] = [st for st in order if st in statuses]
    status: StepStatus = found[0] if found else "completed"
    diffs = [d for s in inner for d in (s.diffs or ())]
    tracked = any(s.diffs is not None for s in inner)
    locations = tuple(dict.fromkeys(loc for s in inner for loc in s.locations))
    return ToolState(call_id, kind, title, status, locations, tuple(diffs) if tracked else None,
                     sum(s.diffs_more for s in inner))


def inner_statuses(result: str, count: int, *, is_error: bool = False) -> list[StepStatus]:
    """`completed` / `failed` for each of a call's `count` steps, read from its result's section headers."""
    found: dict[int, StepStatus] = {
        int(n): ("completed" if status.strip() == "exit 0" else "failed") for n, status in _SECTION.findall(result)}
    if not found:
        failed = is_error or result.lstrip().lower().startswith(
            ("error", "[ollie] interrupted", "interrupted", "refused", "[interrupted"))
        return ["failed" if failed else "completed"] * count
    if count == 1:
        return ["failed" if "failed" in found.values() else "completed"]
    return [found.get(i + 1, "failed") for i in range(count)]


def whole_state(call_id: str, inner: Sequence[ToolState]) -> ToolState:
    """The `tool` object of a call: its one step, or the batch as a whole."""
    return inner[0] if len(inner) == 1 else batch_state(call_id, inner)


def section_texts(result: str, count: int) -> list[str]:
    """Each of a call's `count` steps' part of its result (a single step: all of it; '' when not found)."""
    if count == 1:
        return [result]
    found = list(_SECTION.finditer(result))
    parts = {int(m.group(1)): result[m.end():found[i + 1].start() if i + 1 < len(found) else len(result)]
             for i, m in enumerate(found)}
    return [parts.get(n, "") for n in range(1, count + 1)]


def finished(inner: Sequence[ToolState], result: str, *, is_error: bool = False,
             statuses: Sequence[StepStatus] | None = None) -> list[ToolState]:
    """A call's steps once its result is in: each completed or failed (`statuses`, else as `result` says), an edit's
    location with its first line."""
    if statuses is None or len(statuses) != len(inner):
        statuses = inner_statuses(result, len(inner), is_error=is_error)
    parts = section_texts(result, len(inner))
    return [_edit_line(s.with_status(st), part) for s, st, part in zip(inner, statuses, parts, strict=True)]


def _edit_line(state: ToolState, output: str) -> ToolState:
    """An edit step whose output says where it replaced (file_edit's): its location gets that line (1-based)."""
    if state.kind != "edit" or state.status != "completed" or len(state.locations) != 1 or state.locations[0].line:
        return state
    match = _EDIT_LINE.search(output)
    return attrs.evolve(state, locations=(Location(state.locations[0].path, int(match.group(1))),)) if match else state


def last_writer(inner: Sequence[ToolState]) -> int:
    """The index of the last of `inner` that may write (the last one when none may): it owns the unnamed changes."""
    return ([i for i, s in enumerate(inner) if s.kind in WRITE_KINDS] or [len(inner) - 1])[-1]


def attribute(diffs: Sequence[Diff], inner: Sequence[ToolState]) -> list[tuple[Diff, ...]]:
    """Split one call's diffs over its inner steps: to the step naming the path, else to its last writer."""
    out: list[list[Diff]] = [[] for _ in inner]
    writer = last_writer(inner)
    named: dict[str, int] = {}  # path -> the first writing step naming it: one pass, not one per diff
    for i, s in enumerate(inner):
        if s.kind in WRITE_KINDS:
            for loc in s.locations:
                named.setdefault(loc.path, i)
    for diff in diffs:
        out[named.get(diff.path, writer)].append(diff)
    return [tuple(d) for d in out]


def describe(tool_name: str, args: dict[str, Any] | str, cwd: Path | str, *,
             kind_of: KindLookup | None = None, scripts: ScriptLookup | None = None) -> list[ToolStep]:
    """The steps of one tool call (one per inner call of a `call_tool` batch; never empty). `scripts`: the call's
    script lookup, when it runs now (a script of the model's under one of ollie's names is told as what it is)."""
    parsed = _as_dict(args)
    cwd = Path(cwd)
    if tool_name not in EXECUTORS:
        return [_direct(tool_name, parsed or {}, cwd, kind_of)]
    try:
        if parsed is None:
            raise ArgumentError("arguments are not a JSON object")
        request = parse_request(tool_name, parsed)
    except ArgumentError:
        title = {"execute_code": "Run code", "pipe": "Run a pipeline", "call_tool": "Call a tool"}[tool_name]
        return [ToolStep("execute" if tool_name != "call_tool" else "other", title)]
    if isinstance(request, CallRequest):
        return [_script_step(call, cwd, kind_of) if scripts is None or runs_as_ours(scripts, call.tool)
                or call.tool not in OWN_NAMES else not_ours_step(call, found_script(scripts, call.tool))
                for call in request.calls]
    if isinstance(request, PipeRequest):
        parts = [_script_command(s) if isinstance(s, ScriptCall) else _first_line(s.code) for s in request.stages]
        return [ToolStep("execute", f"Run {_quote(' | '.join(parts))}")]
    assert isinstance(request, CodeRequest)
    codes = request.code_steps()
    title = f"Run {_quote(_first_line(codes[0].code))}"
    if codes[0].language.name != "bash":
        title += f" ({codes[0].language.name})"
    if len(codes) > 1:
        title += f" and {len(codes) - 1} more step{'s' if len(codes) > 2 else ''}"
    if any(c.elevated for c in codes):
        title += " outside the sandbox"
    return [ToolStep("execute", title)]


def found_script(scripts: ScriptLookup | None, name: str) -> ToolScript | None:
    """The script `name` runs as, by the call's lookup (None: no lookup, or none found: the run fails)."""
    try:
        return None if scripts is None else scripts(name)
    except OllieError:
        return None


def runs_as_ours(scripts: ScriptLookup | None, name: str) -> bool:
    """Whether `name` runs as a tool the user trusts: ollie's own (bundled, or an editor tool) or hers (in her config's
    tools dir), never a script of that name ahead of them on the tools path (a project's, which a step writes). With no
    lookup, by its name."""
    from ollie.tools.execute.editorcalls import EDITOR_SCRIPTS  # loaded by a first call, not with the engine
    if scripts is None:
        return name in OWN_NAMES
    script = found_script(scripts, name)
    return script is not None and (script.trusted() or script is EDITOR_SCRIPTS.get(name))


def not_ours_step(call: ScriptCall, found: ToolScript | None) -> ToolStep:
    """The step of a script under one of ollie's names that is not ollie's own (the model's, in a project's tools dir):
    what runs and where it is, its kind its own word, never the name's ("Read notes.txt" of a planted `file_read`)."""
    return ToolStep(found.kind if found and found.kind else "other",  # (its title escaped, as every step's)
                    f"Run {_quote(_script_command(call))}, not ollie's own: {found.path if found else 'not found'}"
                    + (" outside the sandbox" if call.elevated else ""))


def script_kinds(dirs: list[Path]) -> KindLookup:
    """A lookup of the `ollie:kind` a tool script on `dirs` declares (cached per name; None when unknown)."""
    cache: dict[str, StepKind | None] = {}

    def lookup(name: str) -> StepKind | None:
        if name not in cache:
            try:
                cache[name] = find_script(name, dirs).kind
            except (ToolNameError, OSError):
                cache[name] = None
        return cache[name]

    return lookup


def _as_dict(args: dict[str, Any] | str) -> dict[str, Any] | None:
    if isinstance(args, dict):
        return args
    try:
        value = loads_arguments(args)
    except (json.JSONDecodeError, AttributeError):
        return None
    return value if isinstance(value, dict) else None


def _direct(tool_name: str, args: dict[str, Any], cwd: Path, kind_of: KindLookup | None) -> ToolStep:
    """A tool the model called by name (a bare MCP-style tool, not an executor)."""
    if tool_name.startswith("mcp__") and tool_name.count("__") >= 2:
        return _mcp_step(tool_name, args, kind_of)
    argv = tuple(str(v) for v in args.values() if isinstance(v, (str, int, float)) and not isinstance(v, bool))
    return _script_step(ScriptCall(tool_name, argv), cwd, kind_of)


def _mcp_step(tool_name: str, args: dict[str, Any], kind_of: KindLookup | None) -> ToolStep:
    """An MCP server's tool: `github: create_issue "title"` (its first text argument), kind from its hints."""
    _, server, tool = tool_name.split("__", 2)
    first = next((v for v in args.values() if isinstance(v, str) and v.strip()), "")
    # A bidi override an editor would obey (reordering what the user reads) as an escape, as JSON writes a control.
    title = f"{server}: {tool}" + (f" {escaped(json.dumps(_first_line(first), ensure_ascii=False))}" if first else "")
    return ToolStep((kind_of(tool_name) if kind_of else None) or "other", title)


def _script_step(call: ScriptCall, cwd: Path, kind_of: KindLookup | None) -> ToolStep:
    kind: StepKind = BUILTIN_KINDS.get(call.tool) or (kind_of(call.tool) if kind_of else None) or "other"
    positional = [a for a in call.args if not a.startswith("-")]
    options = {k: v for k, _, v in (a[2:].partition("=") for a in call.args if a.startswith("--") and "=" in a)}
    first = positional[0] if positional else ""
    suffix = " outside the sandbox" if call.elevated else ""
    if call.tool in FILE_TOOLS:
        try:
            file_call = parse_file_call(call.tool, call.args)  # the tools' own grammar: the path they act on
        except FileArgsError:
            return ToolStep(kind, f"Run {_quote(_script_command(call))}{suffix}")
        path = _relative(file_call.path, cwd)
        if call.tool == "file_read":
            line = file_call.offset if file_call.offset > 1 else None
            return ToolStep(kind, f"Read {path}" + (f" from line {line}" if line else "") + suffix,
                            (Location(path, line),))
        verb = "Write" if call.tool == "file_write" else "Edit"
        return ToolStep(kind, f"{verb} {path}{suffix}", (Location(path),))
    if call.tool == "file_grep" and first:
        where = options.get("path") or (positional[1] if len(positional) > 1 else "")
        title = f"Search for {_quote(first)}" + (f" in {_dir_label(where, cwd)}" if where else "")
        return ToolStep(kind, title + suffix, (Location(_relative(where, cwd)),) if where else ())
    if call.tool == "file_glob" and first:
        where = positional[1] if len(positional) > 1 else ""
        title = f"Find files matching {_quote(first)}" + (f" in {_dir_label(where, cwd)}" if where else "")
        return ToolStep(kind, title + suffix, (Location(_relative(where, cwd)),) if where else ())
    if call.tool == "reasoning_think":
        return ToolStep(kind, "Think")
    if call.tool in EDITOR_KINDS:
        from ollie.tools.editor.queries import describe_call  # loaded by the first editor call

        info = describe_call(call.tool, call.args, lambda given: _relative(given, cwd))
        return ToolStep(info.kind, info.title, tuple(Location(path, line) for path, line in info.locations))
    if call.tool in PLAN_TOOLS:
        change = PlanChange(call.tool, tuple(positional), done="--done" in call.args)
        return ToolStep(kind, change.title(), plan=change)
    if kind in ("read", "edit", "delete") and first and not first.startswith("-"):
        path = _relative(first, cwd)
        verb = {"read": "Read", "edit": "Edit", "delete": "Delete"}[kind]
        return ToolStep(kind, f"{verb} {path} ({call.tool}){suffix}", (Location(path),))
    return ToolStep(kind, f"Run {_quote(_script_command(call))}{suffix}")


def _plan_batch_title(changes: list[PlanChange]) -> str:
    # Each kind of change said once: "Add 139 steps to the plan and 50 more" read as 189 steps added (50 check-offs).
    by_tool: dict[str, list[PlanChange]] = {}
    for change in changes:
        by_tool.setdefault(change.tool, []).append(change)
    said = []
    for tool, same in by_tool.items():
        if tool == "task_add":
            said.append(PlanChange(tool, tuple(a for c in same for a in c.args)).title())
        elif tool == "task_check" and len(same) > 1:
            said.append(f"Check off {len(same)} steps")
        else:
            said.append(same[-1].title())
    text = ", ".join(t[0].lower() + t[1:] for t in said)
    return text[0].upper() + text[1:]


def _script_command(call: ScriptCall) -> str:
    return " ".join([call.tool, *(_shell_word(a) for a in call.args)])


def _shell_word(arg: str) -> str:
    # A plain word stays as is; text with spaces or lines is quoted (its first line only).
    if arg and not any(c.isspace() for c in arg):
        return arg
    return json.dumps(_first_line(arg))


def _relative(path: str, cwd: Path) -> str:
    """`path` relative to `cwd` when it lies inside it, else as given (absolute stays absolute)."""
    if not os.path.isabs(path):
        return os.path.normpath(path)
    try:
        rel = os.path.relpath(path, cwd)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _dir_label(path: str, cwd: Path) -> str:
    rel = _relative(path, cwd)
    return rel if rel.endswith("/") or "." in Path(rel).name else f"{rel}/"


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if len(first) > TITLE_COMMAND_CHARS:
        return clipped(first, TITLE_COMMAND_CHARS)
    return first + (" …" if len(lines) > 1 else "")


def _quote(text: str) -> str:
    return "`" + clipped(text, TITLE_COMMAND_CHARS).replace("`", "'") + "`"

