"""Approval modes: which tool steps run at once, which are put to the user first, which are refused.

Edits ask under `ask`; commands under `ask` and `auto-edit` unless read-only (a conservative allow-list) or their
prefix was allowed always; reads never. With no `StepApprover` a step that would ask is refused.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ollie.agent.previews import PREVIEWED, with_diff, with_diffs
from ollie.agent.questions import (
    QUESTION_TIMEOUT_ENV,
    Answer,
    StepApprover,
    StepQuestion,
    maybe_await,
    question_timeout_s,
    within_question_timeout,
)
from ollie.agent.steps import (
    BUILTIN_KINDS,
    OWN_NAMES,
    STATE_TOOLS,
    Diff,
    KindLookup,
    StepKind,
    ToolStep,
    describe,
    found_script,
    not_ours_step,
    runs_as_ours,
    step_ids,
)
from ollie.config import APPROVAL_MODES
from ollie.escapes import escaped
from ollie.sandbox import netsaved
from ollie.tools.execute.args import ArgumentError, CallRequest, CodeRequest, PipeRequest, ScriptCall, parse_request
from ollie.tools.execute.elevation import DENIED as ELEVATION_DENIED
from ollie.tools.execute.elevation import NOBODY, outside_parts, step_of

if TYPE_CHECKING:  # the egress proxy is imported by the first call that asks about a host, not at start
    from ollie.sandbox.egress import NetAsk
    from ollie.tools.documents import EditorDocuments
    from ollie.tools.execute.args import CodeStep, ExecuteRequest
    from ollie.tools.execute.tool import ToolScript


NEVER_ASK: frozenset[str] = frozenset({"read", "search", "think", "fetch"})
EDIT_KINDS: frozenset[str] = frozenset({"edit", "delete", "move"})
# Tools whose second word names what they do (`npm test`, `git commit`): the prefix keeps both.
SUBCOMMAND_TOOLS: frozenset[str] = frozenset({
    "git", "npm", "npx", "yarn", "pnpm", "cargo", "go", "uv", "pip", "pip3", "docker", "kubectl", "make", "poetry",
    "bun", "deno", "dotnet", "mvn", "gradle",
})
# A call of more steps is judged in a thread (toolround.OFF_LOOP_BYTES is its arguments' size past which it is described
# there; 64 edits come to about that).
OFF_LOOP_STEPS = 64
# A call with more steps to ask about is asked once (`_together`); up to this many, each with its own diff preview.
TOGETHER_PAST = 5


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

    async def check(self, call_id: str, tool: str, args: dict[str, Any], steps: Sequence[ToolStep] | None = None,
                    scripts: Callable[[str], ToolScript] | None = None) -> str | None:
        """None when the call may run, else the text the model gets as its result (rejected or refused). `steps`: the
        call's, as its `call` event describes them (else described here); `scripts`: the script lookup they were
        described by (else one of its own), which the call's run then runs."""
        self._outside.pop(call_id, None)  # a model's call id may come again: no earlier answer carries over
        self._judged.pop(call_id, None)
        mode = self._mode()
        if mode == "auto":
            return None
        judge = partial(self._asked_plans, mode, call_id, tool, args, steps, scripts)
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
            edits = [(p.question, p.script, p.after_writes) for p in plan.parts
                     if p.script is not None and p.script.tool in PREVIEWED and not p.argv]
            q = await with_diffs(q, edits, self._cwd(), self._documents())
        elif (q.kind in EDIT_KINDS or plan.script is not None) and not plan.after_writes and not plan.argv:
            q = await with_diff(q, plan.script, self._cwd(), self._documents(), previews)
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

    def _asked_plans(self, mode: str, call_id: str, tool: str, args: dict[str, Any], steps: Sequence[ToolStep] | None,
                     scripts: Callable[[str], ToolScript] | None) -> tuple[list[_Plan], int]:
        """The call's steps that `mode` puts to the user (or refuses), each with its question; how many steps it has."""
        if steps is None:
            steps = describe(tool, args, self._cwd(), kind_of=self._kind_of)
        return [plan for plan in self._plans(call_id, tool, args, steps, scripts)
                if self._needs_asking(mode, plan)], len(steps)

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

    def _plans(self, call_id: str, tool: str, args: dict[str, Any], steps: Sequence[ToolStep],
               scripts: Callable[[str], ToolScript] | None) -> list[_Plan]:
        from ollie.agent.steps import WRITE_KINDS
        from ollie.tools.execute.readers import READER_SCRIPTS, is_read_only_command
        ids = step_ids(call_id, len(steps))  # a question names the step the events show
        try:
            request = self._parse(tool, args) if tool in ("execute_code", "pipe", "call_tool") else None
        except ArgumentError:
            return []  # the executor refuses it with the reason; asking about it helps nobody
        resolve = (scripts or self._scripts(tool, args)) if request is not None else None
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
