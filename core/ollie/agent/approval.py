"""Approval modes: which tool steps run at once, which are put to the user first, which are refused.

Edits ask under `ask`; commands under `ask` and `auto-edit` unless read-only (a conservative allow-list) or their
prefix was allowed always; reads never. With no `StepApprover` a step that would ask is refused.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import re
import shlex
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args

import attrs

from ollie import beneath
from ollie.agent.steps import (
    BUILTIN_KINDS,
    OWN_NAMES,
    STATE_TOOLS,
    Diff,
    KindLookup,
    Location,
    StepKind,
    ToolStep,
    describe,
    found_script,
    not_ours_step,
    runs_as_ours,
    step_ids,
)
from ollie.config import APPROVAL_MODES
from ollie.env import env_seconds
from ollie.escapes import escaped
from ollie.sandbox import netsaved
from ollie.tools.execute.args import ArgumentError, CallRequest, CodeRequest, PipeRequest, ScriptCall, parse_request
from ollie.tools.execute.elevation import DENIED as ELEVATION_DENIED
from ollie.tools.execute.elevation import NOBODY, outside_parts, step_of
from ollie.tools.execute.fileargs import FileArgsError, parse_file_call

if TYPE_CHECKING:  # the egress proxy is imported by the first call that asks about a host, not at start
    from ollie.sandbox.egress import NetAsk
    from ollie.tools.documents import EditorDocuments
    from ollie.tools.execute.args import CodeStep, ExecuteRequest
    from ollie.tools.execute.tool import ToolScript

T = TypeVar("T")
# "allow_session" answers only a network question: that host:port for the rest of this session (StepQuestion.outcomes).
Outcome = Literal["allow_once", "allow_session", "allow_always", "reject", "reject_with_feedback"]
OUTCOMES: tuple[str, ...] = get_args(Outcome)

NEVER_ASK: frozenset[str] = frozenset({"read", "search", "think", "fetch"})
EDIT_KINDS: frozenset[str] = frozenset({"edit", "delete", "move"})
# Tools whose second word names what they do (`npm test`, `git commit`): the prefix keeps both.
SUBCOMMAND_TOOLS: frozenset[str] = frozenset({
    "git", "npm", "npx", "yarn", "pnpm", "cargo", "go", "uv", "pip", "pip3", "docker", "kubectl", "make", "poetry",
    "bun", "deno", "dotnet", "mvn", "gradle",
})
DIFF_PREVIEW_MAX_BYTES = 512 * 1024
PREVIEWED = frozenset({"file_write", "file_edit"})  # the tools whose new text a question previews
# A call of more steps is judged in a thread (toolround.OFF_LOOP_BYTES is its arguments' size past which it is described
# there; 64 edits come to about that).
OFF_LOOP_STEPS = 64
# A call with more steps to ask about is asked once (`_together`); up to this many, each with its own diff preview.
TOGETHER_PAST = 5
# A batch question's diff previews (`diffs`): of its first this many edits, up to the first past the bytes left.
BATCH_DIFFS = 32
BATCH_DIFF_BYTES = 2 * DIFF_PREVIEW_MAX_BYTES
# A question nobody answers (the user away, an editor that never shows it) ends as a refusal after this long.
QUESTION_TIMEOUT_ENV = "OLLIE_QUESTION_TIMEOUT_S"
DEFAULT_QUESTION_TIMEOUT_S = 600.0


@attrs.frozen(eq=False, repr=False, slots=False)
class StepQuestion:
    """One step put to the user: its id, kind, title, files, diff preview and (for a command) its prefix."""

    id: str
    kind: StepKind
    title: str
    locations: tuple[Location, ...] = ()
    diff: Diff | None = None
    # A batch question's previews of its file edits and writes, in order; `diffs_more` counts its edits left without one.
    diffs: tuple[Diff, ...] = ()
    diffs_more: int = 0
    prefix: str = ""
    # A network question's connection: {"host", "port", "scheme": "http" (a plain HTTP request) | "connect" (a tunnel)}.
    network: dict[str, Any] | None = None
    # What the step runs outside the sandbox, exactly (a program, or a tool call as a command line): this question
    # covers the elevation too, so the user is asked once (and, as an elevation is, every time: no "always").
    outside: tuple[str, ...] = ()
    # An execute_code step's programs, whole: its title shows the first line of the first.
    code: str = ""
    # Whether "Allow always" would let this very step go unasked next time: not a command with shell syntax no rule
    # covers (`curl -w '%{http_code}'`, `cd a && make`), which it would ask about again at once.
    lasting: bool = True

    def to_wire(self) -> dict[str, Any]:
        """The `step` object of `ollie/permission` (docs/PROTOCOL.md)."""
        out: dict[str, Any] = {
            "id": self.id, "kind": self.kind, "title": self.title,
            "locations": [{"path": loc.path, **({"line": loc.line} if loc.line else {})} for loc in self.locations],
        }
        if self.diff is not None:
            out["diff"] = self.diff.to_wire()
        if self.diffs or self.diffs_more:
            out["diffs"] = [d.to_wire() for d in self.diffs]
        if self.diffs_more:
            out["diffsMore"] = self.diffs_more
        if self.prefix:
            out["prefix"] = self.prefix
        if self.network is not None:
            out["network"] = dict(self.network)
        # The model's text with its controls and bidi overrides as escapes: an editor obeys a U+202E, so what the
        # user read would not be what runs.
        if self.outside:
            out["outside"] = [escaped(what) for what in self.outside]
        if self.code:
            out["code"] = escaped(self.code)
        return out

    def diffs_more_text(self) -> str:
        """What a batch question says of its edits left without a preview ("" when none)."""
        n = self.diffs_more
        return f"({n} more edit{'s' if n != 1 else ''} not previewed)" if n else ""

    def always_label(self) -> str:
        """What "Allow always" covers: a command's prefix, a host:port, an MCP entry, else the step kind."""
        if self.network is not None:
            return f"connections to {self.prefix} in this and later sessions"
        if self.id.startswith("mcp/"):
            return "this server entry of this workspace, from now on"
        if self.prefix.startswith("mcp__") and self.prefix.count("__") >= 2:  # an MCP tool, named as its step is
            _, server, tool = self.prefix.split("__", 2)
            return f"`{server}: {tool}` calls"
        return f"`{self.prefix}` commands" if self.prefix else f"{self.kind} steps"

    def takes_feedback(self) -> bool:
        """Whether a rejection's feedback can reach the model (a network question's with its `[network]` line): an MCP
        server's answer reaches only the server start, an agent switch's no turn, so neither offers it."""
        return not self.id.startswith(("mcp/", "agent/"))

    def is_steps(self) -> bool:
        """Whether the question is about a step the turn shows (not a connection, a server, an agent switch or an
        elevation no step names): a card of its own ends with the answer."""
        return self.network is None and not self.id.startswith(("mcp/", "agent/", "elevate/"))

    def outcomes(self) -> tuple[str, ...]:
        """The answers this question offers, in order: "allow for this session" a network question's alone, "always"
        none that leaves the sandbox or that it would not cover."""
        return tuple(o for o in OUTCOMES if (o != "allow_session" or self.network is not None)
                     and (o != "allow_always" or (not self.outside and self.lasting))
                     and (o != "reject_with_feedback" or self.takes_feedback()))

    def always_text(self) -> str:
        """`always_label` with how long it lasts, for a question's text."""
        lasting = self.network is not None or self.id.startswith("mcp/")  # (their labels say how long)
        return self.always_label() + ("" if lasting else " in this session")


@dataclass(eq=False, repr=False)
class Answer:
    """The user's answer to one question; `feedback` goes to the model with a rejection."""

    outcome: Outcome
    feedback: str = ""


StepApprover = Callable[[StepQuestion], "Awaitable[Answer] | Answer"]


def check_mode(mode: object) -> str:
    """`mode` when it is an approval mode; ValueError naming the modes otherwise."""
    if not isinstance(mode, str) or mode not in APPROVAL_MODES:
        raise ValueError(f"unknown approval mode {mode!r} (one of {', '.join(APPROVAL_MODES)})")
    return mode


def _covered(code: str, always: set[str]) -> bool:
    """Whether "Allow always" rules cover `code`: each of its piped parts only reads or starts with an allowed
    prefix, and it has no other shell syntax (`pytest && rm -rf src`, or a second line, is no `pytest` command) nor
    variables set before it (`PATH=. mkdir` runs the workspace's `./mkdir`)."""
    from ollie.tools.execute.readers import SHELL_SYNTAX, is_read_only_command, without_stderr_joined
    line = without_stderr_joined(code)  # `pytest 2>&1 | tail` is still pytest's
    if not line or SHELL_SYNTAX.search(line):
        return False
    return all(is_read_only_command(part) or (f"command:{command_prefix(part)}" in always
                                              and not re.match(r"\s*[A-Za-z_]\w*=", part)) for part in line.split("|"))


def command_prefix(code: str) -> str:
    """The first word or two of a command (`pytest`, `npm test`): what "Allow always" allows."""
    try:
        words = shlex.split(code.strip().splitlines()[0]) if code.strip() else []
    except ValueError:
        words = code.split()
    words = [w for w in words if not re.fullmatch(r"[A-Za-z_]\w*=.*", w)] or words  # `FOO=1 cmd`: the command
    if not words:
        return ""
    if words[0] in SUBCOMMAND_TOOLS and len(words) > 1 and re.fullmatch(r"[a-z][\w:.-]*", words[1]):
        return f"{words[0]} {words[1]}"
    return words[0]


@dataclass(eq=False, repr=False)
class _Plan:
    """A step and the commands it runs (empty for a non-command step)."""

    question: StepQuestion
    commands: list[str] = field(default_factory=list)
    script: ScriptCall | None = None
    outside: list[str] = field(default_factory=list)  # its elevated parts, as the execute server names each
    # A tool's call (an MCP server's, a user's script): its arguments reach no shell, so "always" covers the tool.
    argv: bool = False
    parts: list[_Plan] = field(default_factory=list)  # a batch's steps asked together (`_together`)
    # A step before it in its call may write files, not as a preview knows (a user's script): asked or not, it changes
    # what a later edit edits, so no edit from here on is previewed.
    after_writes: bool = False


class ApprovalGate:
    """Decides each step of a tool call under the session's approval mode; asks `approver` when it must."""

    def __init__(self, *, mode: Callable[[], str], always: Callable[[], list[str]], remember: Callable[[str], None],
                 cwd: Callable[[], Path], kind_of: KindLookup | None = None,
                 documents: Callable[[], EditorDocuments | None] = lambda: None,
                 elevation: Callable[[], str] = lambda: "allow",
                 parse: Callable[[str, dict[str, Any]], ExecuteRequest] = parse_request,
                 scripts: Callable[[str, dict[str, Any]], Callable[[str], ToolScript] | None] = lambda *_: None) -> None:
        self._mode = mode
        self._always = always
        self._remember = remember
        self._cwd = cwd
        self._documents = documents  # the editor's open documents: an edit's preview is of the text it edits
        self._kind_of = kind_of
        self._parse = parse  # the executor's one parse of a call, shared with its classifiers and its run
        # A call's script lookup, as the executor runs it (None: names are ollie's own tools, as a bare gate's are).
        self._scripts = scripts
        # The lookup each call was judged by, by call id, until the call runs (`judged`): the run finds no script
        # again, so none a step planted meanwhile runs as the one judged.
        self._judged: dict[str, Callable[[str], ToolScript]] = {}
        self._elevation = elevation  # the agent's `elevation`: whether an elevated step is put to the user, or refused
        # The elevated parts a call's question allowed, by call id, until the call runs (`allowed_outside`).
        self._outside: dict[str, list[str]] = {}
        self._elevations = 0  # elevations no step names, asked so far (their questions' ids)
        self.approver: StepApprover | None = None
        # Why a call's file writes would be refused whatever the user answers (the sandbox, the file's mode): then
        # it is refused without a question. None: every question is asked.
        self.write_refusal: Callable[[str, dict[str, Any]], Awaitable[str | None]] | None = None
        # Every connection the session's steps made through the egress proxy (`/network`; this process only).
        self.net_log: list[dict] = []
        # "Allow for this session" answers: "host:port" -> the step that asked. Never saved: a resumed session (a new
        # gate, after a daemon restart too) asks again, as a user who allowed it "for this session" expects.
        self.net_session: dict[str, str] = {}
        self.on_ask: Callable[[StepQuestion, Answer], None] | None = None
        # The steps refused because nobody could approve them (no approver), each with the mode that would run it
        # unasked ("" when none would: it leaves the sandbox): `ollie -p` says them and exits non-zero.
        self.unapproved: list[tuple[StepQuestion, str]] = []

    async def check(self, call_id: str, tool: str, args: dict[str, Any],
                    steps: Sequence[ToolStep] | None = None) -> str | None:
        """None when the call may run, else the text the model gets as its result (rejected or refused). `steps`: the
        call's, as its `call` event describes them (else described here)."""
        self._outside.pop(call_id, None)  # a model's call id may come again: no earlier answer carries over
        self._judged.pop(call_id, None)
        mode = self._mode()
        if mode == "auto":
            return None
        judge = partial(self._asked_plans, mode, call_id, tool, args, steps)
        # A batch of 2,000 edits is judged in a thread: on the loop it held every session's for a second.
        plans, count = judge() if steps is not None and len(steps) <= OFF_LOOP_STEPS else await asyncio.to_thread(judge)
        asks = mode != "read-only" and self.approver is not None and bool(plans)
        if asks and self.write_refusal is not None and (why := await self.write_refusal(tool, args)) is not None:
            # No answer could let it write: the user is not bothered, nor led to think it happened.
            self._judged.pop(call_id, None)
            return f"refused, without asking the user (no answer could allow it); nothing was written: {why}"
        if asks and len(plans) > TOGETHER_PAST and not any(p.outside for p in plans):  # (an elevation: on its own)
            plans = [self._together(plans)]
        outside: list[str] = []
        previews: dict[str, Diff | None] = {}  # asked one by one before any runs: each edits what those before leave
        for plan in plans:
            refusal = await self._decide(mode, plan, outside, previews, count)
            if refusal is not None:
                self._judged.pop(call_id, None)  # it does not run
                return refusal
        if outside:
            self._outside[call_id] = outside
        return None

    def judged(self, call_id: str) -> Callable[[str], ToolScript] | None:
        """The script lookup `call_id`'s steps were judged by, for its run (None: it judged none)."""
        return self._judged.pop(call_id, None)

    def allowed_outside(self, call_id: str) -> list[str]:
        """What the user allowed `call_id` to run outside the sandbox in its step's question (each part once)."""
        return self._outside.pop(call_id, [])

    async def _decide(self, mode: str, plan: _Plan, outside: list[str], previews: dict[str, Diff | None],
                      steps: int) -> str | None:
        q = plan.question
        if mode == "read-only":
            return (f"refused: this session is in read-only mode, so {q.title!r} was not run. Do not change "
                    "anything: plan instead (say what you would change and why); the user can switch modes "
                    "with /approval.")
        if plan.outside and self._elevation() == "deny":  # refused whatever the answer: nobody is asked
            return ELEVATION_DENIED
        if self.approver is None:
            runs = "auto-edit" if q.kind in EDIT_KINDS else "auto"  # the least that runs it (as -p's stderr says)
            self.unapproved.append((q, runs))
            return (f"refused: {q.title!r} needs the user's approval (approval mode {mode!r}) and nobody can give "
                    f"it here; run with an approval mode that allows it: `ollie -p --approval {runs}`.")
        if plan.parts:
            q = await _with_diffs(q, plan.parts, self._cwd(), self._documents())
        elif (q.kind in EDIT_KINDS or plan.script is not None) and not plan.after_writes and not plan.argv:
            q = await _with_diff(q, plan.script, self._cwd(), self._documents(), previews)
        if plan.outside and self._elevation() == "ask":  # one question for both: what runs, and that it runs outside
            # The code is shown once: as what runs outside, when that is all of it.
            q = attrs.evolve(q, outside=tuple(plan.outside), code="" if q.code == "\n\n".join(plan.outside) else q.code)
        # A no to one step: those allowed before it do not run either (the user saw "allowed: Edit a.py"), nor is the
        # model to take them for done (a batch asked as one says so in its title).
        whole = steps > 1 and not plan.parts
        answer, refusal = await self._asked(q, f"\nNone of this call's {steps} steps ran: a call runs whole or not at "
                                               "all." if whole else "")
        if answer.outcome == "allow_always":
            for rule in self._rules(plan):
                self._remember(rule)
        if refusal is None:
            outside.extend(q.outside)
        return refusal

    async def ask_outside(self, what: str) -> str | None:
        """Put `what` (about to run outside the sandbox, its step's approval asked nothing) to the user, as its step's
        question: None when they allow it, else why it may not run (the execute server's elevation approver)."""
        self._elevations += 1
        step_id, kind, title = step_of(what) or (f"elevate/{self._elevations}", "execute", "Run outside the sandbox")
        return (await self._asked(StepQuestion(step_id, kind, title, outside=(what,))))[1]

    async def confirm(self, question: StepQuestion) -> bool:
        """Whether the user allowed `question` (no step's: an agent switch) in time; False when nobody can answer."""
        return (await self._asked(question))[1] is None

    async def _asked(self, q: StepQuestion, also: str = "") -> tuple[Answer, str | None]:
        """The user's answer to `q` (one it did not offer is a no) and None when it allows the step, else the text
        the model gets (`also` after its first line when the user said no); each answer told to `on_ask`."""
        if self.approver is None:
            self.unapproved.append((q, ""))
            return Answer("reject"), NOBODY
        answer, answered = await within_question_timeout(self.approver(q), Answer("reject"))
        if answer.outcome not in q.outcomes():  # one it did not offer (a plain client's button title): a no, said so
            answer = Answer("reject")
        if self.on_ask is not None:
            self.on_ask(q, answer)
        if not answered:
            return answer, (f"rejected: nobody answered whether {q.title!r} may run within {question_timeout_s():g} s "
                            f"(${QUESTION_TIMEOUT_ENV}); it was not run.")
        if answer.outcome in ("allow_once", "allow_always"):
            return answer, None
        text = f"rejected: the user did not allow {q.title!r}; it was not run.{also}"
        if answer.outcome == "reject_with_feedback" and answer.feedback.strip():
            text += f"\nThe user's feedback: {answer.feedback.strip()}"
        return answer, text

    def net_ask(self, call_id: str, title: str) -> NetAsk:
        """How a running call's steps ask about a host outside the network allow-list (sandbox/egress.py).

        Every mode asks (the policy, not the mode, says which hosts go unasked) but `read-only`, which denies, as
        does a session nobody can ask. "Allow for this session" holds for the session's later steps (`net_session`),
        "allow always" is saved for later sessions too (netsaved.py). `title`: the running step's, as announced.
        """
        from ollie.sandbox.egress import NetAsk  # the proxy's module loads with the first tool call, not at start

        allowed = set(self.net_allowed())
        if self._mode() == "read-only" or self.approver is None:
            return NetAsk(ask=None, session_allowed=allowed, saved=netsaved.saved, step=title, log=self.net_log)
        approver, feedback = self.approver, {}

        async def ask(host: str, port: int, process: str, scheme: str) -> str:
            # The step as the user saw it, not its process (`bash <scratch dir>/step1.sh`: a path nobody knows).
            question = StepQuestion(f"{call_id}/net/{host}:{port}", "fetch",
                                    f"connect to {host}:{port} (network; step: {title})",
                                    prefix=f"{host}:{port}", network={"host": host, "port": port, "scheme": scheme})
            answer = await maybe_await(approver(question))
            if self.on_ask is not None:
                self.on_ask(question, answer)
            if answer.outcome == "allow_always":
                self._remember(f"net:{host}:{port}")
                return "always"
            if answer.outcome == "allow_session":
                self.net_session.setdefault(f"{host}:{port}", title)
                return "session"
            if answer.outcome == "reject_with_feedback" and answer.feedback.strip():  # the model hears why
                feedback[f"{host}:{port}"] = answer.feedback.strip()
            return "once" if answer.outcome == "allow_once" else "deny"

        return NetAsk(ask=ask, session_allowed=allowed, saved=netsaved.saved, remember=netsaved.remember, step=title,
                      log=self.net_log, feedback=feedback)

    def net_allowed(self) -> dict[str, str]:
        """The "host:port"s this session's answers let its steps reach unasked (besides the policy's), and why."""
        why = {key: f'"Allow for this session" (asked by: {step})' for key, step in self.net_session.items()}
        for rule in self._always():
            if rule.startswith("net:"):
                why[rule.removeprefix("net:")] = '"Always allow" (also in later sessions)'
        return why

    def _needs_asking(self, mode: str, plan: _Plan) -> bool:
        from ollie.tools.execute.readers import is_read_only_command  # loaded by a first call, not with the engine
        kind = plan.question.kind
        always = set(self._always()) if mode != "read-only" else set()  # read-only changes nothing, "always" or not
        if not plan.argv:  # a tool script's kind is its own word: a script not ollie's is asked about whatever it says
            if kind in NEVER_ASK:
                return False
            if kind in EDIT_KINDS:
                return mode in ("ask", "read-only") and f"kind:{kind}" not in always
            if plan.script is not None and plan.script.tool in STATE_TOOLS:
                return False
        # A command (or a tool script, whatever it is named: `cat` of the model's is no reader): read-only ones and
        # allowed prefixes go. A pipe's stages beside a script of the model's: each by a rule of its own (round 70: the
        # first stage's allowed `touch seen | <the model's script>`).
        pending = [c for c in plan.commands if not (
            f"command:{command_prefix(c)}" in always and (len(plan.commands) == 1 or _covered(c, always)) if plan.argv
            else is_read_only_command(c) or _covered(c, always))]
        return bool(pending) and mode in ("ask", "auto-edit", "read-only")

    def _rules(self, plan: _Plan) -> list[str]:
        if plan.question.kind in EDIT_KINDS and not plan.argv:
            return [f"kind:{plan.question.kind}"]
        # The one prefix the question named ("Allow always (`touch` commands)"), not every program's in the step.
        return [f"command:{plan.question.prefix}"] if plan.question.prefix else []

    def _asked_plans(self, mode: str, call_id: str, tool: str, args: dict[str, Any],
                     steps: Sequence[ToolStep] | None) -> tuple[list[_Plan], int]:
        """The call's steps that `mode` puts to the user (or refuses), each with its question; how many steps it has."""
        if steps is None:
            steps = describe(tool, args, self._cwd(), kind_of=self._kind_of)
        return [plan for plan in self._plans(call_id, tool, args, steps) if self._needs_asking(mode, plan)], len(steps)

    def _together(self, plans: list[_Plan]) -> _Plan:
        """One question for a batch's steps that ask, answered for all of them (a person approves the model's call,
        not each of its 2,000 edits): each step's command line in `code`, exactly what runs; "always" when each step's
        is the same rule (then the question's kind or prefix names it)."""
        first = plans[0].question
        kinds: set[StepKind] = {p.question.kind for p in plans}
        prefixes = {p.question.prefix for p in plans}
        rules = {tuple(self._rules(p)) for p in plans}
        # One line each (an argument's line break as `\n`): a text's own lines drew calls the batch does not make.
        lines = [escaped(p.question.code or (shlex.join([p.script.tool, *p.script.args]) if p.script else p.question.title),
                         keep="\t") for p in plans]
        question = StepQuestion(
            first.id, kinds.pop() if len(kinds) == 1 else "other", f"{first.title} and {len(plans) - 1:,} more steps",
            tuple(loc for p in plans for loc in p.question.locations), prefix=prefixes.pop() if len(prefixes) == 1 else "",
            code="\n".join(lines), lasting=len(rules) == 1 and all(p.question.lasting for p in plans))
        return _Plan(question, parts=plans)

    def _plans(self, call_id: str, tool: str, args: dict[str, Any], steps: Sequence[ToolStep]) -> list[_Plan]:
        from ollie.agent.steps import WRITE_KINDS
        from ollie.tools.execute.readers import READER_SCRIPTS, is_read_only_command
        ids = step_ids(call_id, len(steps))  # a question names the step the events show
        try:
            request = self._parse(tool, args) if tool in ("execute_code", "pipe", "call_tool") else None
        except ArgumentError:
            return []  # the executor refuses it with the reason; asking about it helps nobody
        resolve = self._scripts(tool, args) if request is not None else None
        if resolve is not None:
            self._judged[call_id] = resolve
        ours = partial(runs_as_ours, resolve)

        def judged_line(call: ScriptCall) -> str:
            # A script of the model's by its path: its `touch` is no `touch` command she allowed always (round 70).
            theirs = None if ours(call.tool) else found_script(resolve, call.tool)
            return shlex.join([str(theirs.path) if theirs else call.tool, *call.args])

        plans: list[_Plan] = []
        outside = outside_parts(request)
        writes = False
        for n, step in enumerate(steps):
            plan = _Plan(StepQuestion(ids[n], step.kind, step.title, step.locations),
                         outside=outside[n] if n < len(outside) else [], after_writes=writes)
            if request is None:
                plan.script = ScriptCall(tool, tuple(str(v) for v in args.values() if isinstance(v, str)))
                if tool.startswith("mcp__") and args:  # its title shows one text argument: the call's are all shown
                    plan.question = attrs.evolve(plan.question, code=json.dumps(args, ensure_ascii=False, indent=2))
            elif isinstance(request, CallRequest):
                plan.script = call = request.calls[n]
                if call.tool in OWN_NAMES and not ours(call.tool):
                    # Found ahead of ollie's own (a project's tools dir, which a step writes): the model's script,
                    # its kind its own word, never the name's.
                    theirs = not_ours_step(call, found_script(resolve, call.tool))
                    plan.question = attrs.evolve(plan.question, kind=theirs.kind, title=theirs.title)
                if call.tool not in BUILTIN_KINDS or not ours(call.tool):
                    # A user's script: its title cuts the command line at 60 characters.
                    plan.question = attrs.evolve(plan.question, code=shlex.join([call.tool, *call.args]))
            elif isinstance(request, CodeRequest):
                plan.commands = [_judged(s) for s in request.code_steps()]
                plan.question = attrs.evolve(plan.question, code="\n\n".join(s.code for s in request.code_steps()))
            elif isinstance(request, PipeRequest):
                # A bundled reader as a stage (file_read, file_grep) reads like `cat` or `grep` would.
                plan.commands = [_judged(s) if not isinstance(s, ScriptCall) else judged_line(s)
                                 for s in request.stages
                                 if not (isinstance(s, ScriptCall) and s.tool in READER_SCRIPTS and ours(s.tool))]
                # Whole, as an execute_code step's: the title shows each stage's first line, cut.
                plan.question = attrs.evolve(plan.question, code="\n\n".join(
                    shlex.join([s.tool, *s.args]) if isinstance(s, ScriptCall) else s.code for s in request.stages))
                # A stage that is a script of the model's (a `cat` it planted in a project's tools dir) is no reader,
                # whatever its name: asked about as a command (round 69's left: it ran unasked, with write grants).
                plan.argv = any(isinstance(s, ScriptCall) and not ours(s.tool) for s in request.stages)
            script = plan.script
            # (An executor's script not ours is the model's; an MCP server's tool, no script, keeps its kind.)
            if script is not None and ((request is not None and not ours(script.tool))
                                       or plan.question.kind not in EDIT_KINDS | NEVER_ASK
                                       and script.tool not in BUILTIN_KINDS.keys() | STATE_TOOLS):
                plan.commands, plan.argv = [judged_line(script)], True
            if plan.commands and (plan.argv or plan.question.kind not in EDIT_KINDS | NEVER_ASK):
                pending = [c for c in plan.commands if plan.argv or not is_read_only_command(c)]
                prefix = command_prefix(pending[0]) if pending else ""
                # (No one rule allows a pipe with a stage of the model's script: no "always" is offered for it.)
                lasting = not prefix or (len(pending) == 1 if plan.argv else _covered(pending[0], {f"command:{prefix}"}))
                plan.question = attrs.evolve(plan.question, prefix=prefix, lasting=lasting)
            plans.append(plan)
            writes |= step.kind in WRITE_KINDS and (script is None or script.tool not in PREVIEWED | STATE_TOOLS)
        return plans


def _judged(step: CodeStep) -> str:
    """The command line a code step is judged as: a bash step's text; another language's name (a perl stage reading as
    `printf "%s", system "..."` is no shell line)."""
    return step.code if step.language.name == "bash" else step.language.name


async def _with_diff(q: StepQuestion, script: ScriptCall | None, cwd: Path, documents: EditorDocuments | None,
                     batch: dict[str, Diff | None]) -> StepQuestion:
    """The question with a diff preview when the new text can be known before running (file_write, file_edit);
    `batch`: the last preview of each file its call's earlier edits changed (None: not known), which this one edits."""
    if script is None or script.tool not in PREVIEWED:
        return q
    try:
        call = parse_file_call(script.tool, script.args)  # the path the tool will act on, parsed as it does
    except FileArgsError:
        return q
    if not beneath.inside(cwd, call.path):
        return q  # the daemon reads nothing outside the workspace, not even for a preview
    # A call's second edit of a file edits what its first left, not the disk's text (which showed another change);
    # the file tools follow links (`realpath`), so an edit through one edits the file it leads to (only a key here).
    key = await asyncio.to_thread(os.path.realpath, cwd / call.path)
    seen, earlier = key in batch, batch.get(key)
    batch[key] = None  # until this preview is made
    if seen and earlier is None:
        return q  # an earlier edit of it has no preview: what this one edits is not known
    old = earlier.new_text if earlier is not None else await _editor_text(documents, cwd / call.path)
    if old is None and earlier is None:
        try:
            old = await _read_small(cwd, call.path)
        except (OSError, UnicodeDecodeError):
            return q  # there, but too big, binary or no regular file: no preview, never one of a new file
    if call.tool == "file_write":
        if call.content == "-":
            return q  # the text comes on stdin: not known here
        new = call.content or ""
    else:
        if old is None or not call.old or old.count(call.old) != 1 and not (call.all and call.old in old):
            return q  # it fails: not found, or found twice without `--all`
        # The result's size before it is made (here, unsandboxed, on the loop): `--all` of one character made 5 GB.
        grows = (old.count(call.old) if call.all else 1) * (len(call.new or "") - len(call.old))
        if len(old) + grows > DIFF_PREVIEW_MAX_BYTES:
            return q
        new = old.replace(call.old, call.new or "", -1 if call.all else 1)
    batch[key] = Diff(q.locations[0].path if q.locations else call.path, old, new)
    return attrs.evolve(q, diff=batch[key])


async def _with_diffs(q: StepQuestion, parts: list[_Plan], cwd: Path, documents: EditorDocuments | None) -> StepQuestion:
    """A batch's question with previews of its first BATCH_DIFFS file edits and writes, as one's (`_with_diff`), up to
    the first whose texts pass what is left of BATCH_DIFF_BYTES (a 256-edit batch of big files is read no further), one
    a file (what its edits of it do, each on what the one before left); `diffs_more` counts its edits left without one."""
    edits = [p for p in parts if p.script is not None and p.script.tool in PREVIEWED and not p.argv]
    shown: dict[str, Diff] = {}
    previewed, batch = 0, dict[str, Diff | None]()
    for part in edits[:BATCH_DIFFS]:
        if part.after_writes:
            break
        diff = (await _with_diff(part.question, part.script, cwd, documents, batch)).diff
        if diff is None:
            continue
        if (first := shown.get(diff.path)) is not None:  # one diff a file: what the batch's edits of it do together
            diff = Diff(diff.path, first.old_text, diff.new_text)
        if sum(len(d.old_text or "") + len(d.new_text or "") for d in {**shown, diff.path: diff}.values()) > BATCH_DIFF_BYTES:
            break
        shown[diff.path], previewed = diff, previewed + 1
    return attrs.evolve(q, diffs=tuple(shown.values()), diffs_more=len(edits) - previewed)


async def _editor_text(documents: EditorDocuments | None, path: Path) -> str | None:
    """The editor's text of an open file (the user's unsaved text, which the edit changes: the disk's lacked what they
    typed, and an edit of it was asked about with no diff), when not too big for a preview."""
    try:
        held = None if documents is None else await documents.text(path)
    except Exception:  # a preview is no reason to fail the step: the disk's text is shown instead
        return None
    return held[0] if held is not None and len(held[0].encode()) <= DIFF_PREVIEW_MAX_BYTES else None


async def _read_small(root: Path, path: str) -> str | None:
    """The file's text for a preview, through the chokepoint (None: absent); OSError for a symlink, FIFO, device or big
    file."""
    try:
        return await beneath.read_text(root, path, DIFF_PREVIEW_MAX_BYTES)
    except FileNotFoundError:
        return None


async def maybe_await(value: Awaitable[T] | T) -> T:
    """`value`, awaited when a callback returned an awaitable (front ends pass plain or async callbacks)."""
    return await value if inspect.isawaitable(value) else value  # type: ignore[return-value]


def question_timeout_s() -> float:
    """How long a question to the user waits for an answer (`$OLLIE_QUESTION_TIMEOUT_S`, default 600)."""
    return env_seconds(QUESTION_TIMEOUT_ENV, DEFAULT_QUESTION_TIMEOUT_S)


async def within_question_timeout(asking: Awaitable[T] | T, denied: T) -> tuple[T, bool]:
    """(the user's answer, True), or (`denied`, False) once nobody answered within `question_timeout_s()`.

    The question itself is cancelled then: the daemon withdraws it from the editor, the terminal stops waiting.
    """
    try:
        async with asyncio.timeout(question_timeout_s()):
            return await maybe_await(asking), True
    except TimeoutError:
        return denied, False
