"""One round of tool calls: classify, batch reads concurrently, dedup, hooks, inject, truncate, cache."""

from __future__ import annotations

import asyncio
import codecs
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from ollie.agent.behind import BehindBuffers, model_note, saved_notice, user_notice
from ollie.agent.changes import ChangeTracker
from ollie.agent.events import Bus, Event
from ollie.agent.hooks import HookCaller, blocked_by, hook_note
from ollie.agent.runtime import Runtime
from ollie.agent.steps import (
    EXECUTORS,
    WRITE_KINDS,
    Diff,
    KindLookup,
    StepKind,
    StepStatus,
    ToolState,
    ToolStep,
    attribute,
    describe,
    finished,
    inner_statuses,
    last_writer,
    step_states,
    whole_state,
)
from ollie.backend.types import Image, ToolCall
from ollie.escapes import one_name
from ollie.sandbox.process import output_tap
from ollie.tools.base import ParallelClass, ToolResult
from ollie.tools.execute import elevation, parsed
from ollie.tools.execute.args import ArgumentError, loads_arguments, parse_request
from ollie.tools.execute.results import LINE_HEAD, LINE_REST

if TYPE_CHECKING:
    from ollie.sandbox.egress import NetAsk
    from ollie.tools.editor.postedit import PostEditDiagnostics
    from ollie.tools.execute.tool import ToolScript

# The result of a call an interrupt cut short (the history and its `tool` event say the same).
INTERRUPTED_RESULT = "[interrupted by the user before this call finished]"
# Heads the words the user added while a tool ran (`inject`), after its result.
INJECTED_HEAD = "[user, while this tool ran]"
# How ollie's own notes in a tool result start a line: the user's injected words, `[ollie] ` (the loop's), `[editor] `
# (post-edit errors, a buffer behind), `[<name> hook]`, `[truncated: `, `[interrupted `. A line of the tool's own
# output starting so (a file it printed, a test's output) is marked as the tool's, so none passes for ollie or the user.
# (Greedy to the line's end, its trailing blanks cut after: a lazy match backtracked over a long run of blanks, and a
# step's one line of 60,000 held the daemon for half a minute.)
_FORGED_HEAD = re.compile(rf"{LINE_HEAD}(?:{re.escape(INJECTED_HEAD)}|\[ollie[]:]|\[editor\]|\[\w+ hook\]|\[truncated:"
                          rf"|\[interrupted ){LINE_REST}", re.MULTILINE)
# A call whose arguments are longer is classified and described in a thread: a `call_tool` batch of 2,000 file edits
# (about 100 KB) parses for a second on a loaded machine, which would hold every session's loop meanwhile.
OFF_LOOP_BYTES = 16 * 1024
# The result when the session was closed under the call (`Core.close`: its editor closed or reloaded, ollie stopped):
# nobody asked for it, and the model reads this one too.
CLOSED_RESULT = "[interrupted before this call finished: the session was closed (its editor closed, or ollie stopped)]"


def own_output(text: str) -> str:
    """A tool's output with every line that starts as one of ollie's notes marked as the tool's."""
    return _FORGED_HEAD.sub(lambda m: m[0].rstrip() + " (this line is the tool's output, not ollie's or the user's)",
                            text)


def interrupted_result(exc: BaseException) -> str:
    """The result of a call an interrupt cut short: `Core.close`'s (cancelled with "close") or the user's."""
    return CLOSED_RESULT if isinstance(exc, asyncio.CancelledError) and exc.args[:1] == ("close",) else INTERRUPTED_RESULT


T = TypeVar("T")

# The most of one step's output published live (what the step keeps is capped on its own).
LIVE_OUTPUT_BYTES = 1 << 20


@dataclass(eq=False, repr=False)
class CallOutcome:
    """What one tool call produced, as recorded in the history."""

    call: ToolCall
    text: str
    is_error: bool
    tier: str = "hot"
    images: list[Image] = field(default_factory=list)  # what the tool returned besides text (an MCP server's)
    # Each step's, read before the text was cut to its cap: the headers of the steps past the cut are gone with it.
    statuses: list[StepStatus] | None = None


# A line of file_read's output: its number in the file, a tab, the line.
_NUMBERED_LINE = re.compile(r"^ *(\d+)\t", re.MULTILINE)


def truncate_utf8(text: str, limit: int) -> str:
    """Cut `text` to at most `limit` UTF-8 bytes (whole lines when it has any) and say where to read on from."""
    data = text.encode("utf-8")
    if limit <= 0 or len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", errors="ignore")
    if (end := kept.rfind("\n")) > 0:
        kept = kept[:end]  # half a line would read as a whole, wrong one
    size = len(kept.encode("utf-8"))
    if numbered := _NUMBERED_LINE.findall(kept):  # file_read's `   120\tline`: the file's own line numbers
        line = int(numbered[-1])
        where = f"through line {line} of the file; read on with file_read --offset={line + 1}"
    else:
        line = kept.count("\n") + 1
        where = (f"through line {line} of this output; read on from its line {line + 1} (byte {size + 1}): "
                 f"`sed -n '{line + 1},$p'`, `tail -c +{size + 1}`, or a narrower command (grep, head)")
    return f"{kept}\n[truncated: the result was {len(data)} bytes, {size} kept, {where}]"


def canonical_args(arguments: str) -> str:
    """A stable text form of a call's JSON arguments (for dedup and caching); unparsable text as it is."""
    try:
        return json.dumps(loads_arguments(arguments), sort_keys=True, separators=(",", ":"))
    except json.JSONDecodeError:
        return arguments


def parse_arguments(call: ToolCall) -> tuple[dict[str, Any] | None, str]:
    """The call's arguments as a dict, or (None, why) when they are not a JSON object."""
    try:
        args = loads_arguments(call.arguments)
    except json.JSONDecodeError as exc:
        return None, (f"error: the arguments of {call.name} are not valid JSON ({exc.msg} at column {exc.colno}); "
                      "resend the call with a JSON object, each key once")
    if not isinstance(args, dict):
        return None, f"error: the arguments of {call.name} must be a JSON object, got {type(args).__name__}"
    return args, ""


def _leaving(tool: str, args: dict[str, Any], inner: list[ToolState]) -> list[tuple[str, tuple[str, StepKind, str]]]:
    """The call's steps that leave the sandbox, each with what it runs there (`elevation.steps`)."""
    try:
        request = parse_request(tool, args) if tool in EXECUTORS else None
    except ArgumentError:
        return []  # the executor refuses it: nothing is asked
    return [(what, (step.id, step.kind, step.title))
            for step, parts in zip(inner, elevation.outside_parts(request), strict=False) for what in parts]


def _title(inner: Sequence[ToolState], tool: str) -> str:
    """The call's step titles joined, cut at 200 characters (a network question names its step so): 200 steps at most
    are read, however big the batch."""
    return " and ".join(step.title for step in islice(inner, 200))[:200] or tool


@dataclass(kw_only=True, eq=False, repr=False)
class ToolRound:
    """Runs the tool calls of one model reply. The read cache lives as long as the turn."""

    runtime: Runtime
    bus: Bus
    hook: HookCaller
    pop_inject: Callable[[], str]
    set_state: Callable[[str], None]
    count_call: Callable[[], None]
    cache: dict[tuple[str, str], CallOutcome]
    cwd: Path = field(default_factory=Path.cwd)
    kind_of: KindLookup | None = None
    changes: ChangeTracker | None = None
    # Asked in call order, with the call's steps and the script lookup `_prepared` described them by.
    approve: Callable[[str, str, dict[str, Any], list[ToolStep], Callable[[str], ToolScript] | None],
                      Awaitable[str | None]] | None = None
    post_edit: PostEditDiagnostics | None = None
    net_ask: Callable[[str, str], NetAsk] | None = None  # None: a host the policy omits is denied
    # What a call's approval question allowed it to run outside the sandbox (ApprovalGate.allowed_outside).
    allowed_outside: Callable[[str], list[str]] | None = None
    behind: BehindBuffers | None = None  # None: no editor buffers to keep apart from the disk
    # The script lookup a call's approval judged it by (ApprovalGate.judged): its run runs those scripts.
    judged: Callable[[str], Callable[[str], ToolScript] | None] | None = None
    # The steps of every call announced and not finished yet, by call id.
    _open: dict[str, list[ToolState]] = field(default_factory=dict, init=False)
    # The script lookup each call's card was described by, by call id: its run's when no approval judged it (`auto`),
    # so the card says what runs, and a batch's scripts are looked up once for both.
    _described: dict[str, Callable[[str], ToolScript]] = field(default_factory=dict, init=False)
    _names: dict[str, str] = field(default_factory=dict, init=False)
    # Diffs of a finished write, by call id, until its `tool` event carries them (None: not tracked).
    _diffs: dict[str, tuple[Diff, ...] | None] = field(default_factory=dict, init=False)
    # How many more files each call changed than its diffs carry (ollie.workspace.bounds.LISTED), by call id.
    _diffs_more: dict[str, int] = field(default_factory=dict, init=False)
    # The files a finished write changed under a buffer's unsaved edits, by call id, until its `tool` event is out.
    _behind: dict[str, list[str]] = field(default_factory=dict, init=False)
    # The connections each finished call made through the egress proxy, for its `tool` event and the history.
    network: dict[str, tuple[dict[str, Any], ...]] = field(default_factory=dict, init=False)
    # The checkpoints before and after each tracked write, by call id (the history diffs each step's own by them).
    trees: dict[str, tuple[str, str]] = field(default_factory=dict, init=False)
    # Each finished call's steps as its `tool` event carried them, by call id (the history keeps them).
    ended: dict[str, list[ToolState]] = field(default_factory=dict, init=False)

    async def run(self, calls: list[ToolCall]) -> list[CallOutcome]:
        """Run `calls` (see `_run`); an interrupt ends every announced step `failed` before it propagates."""
        try:
            return await self._run(calls)
        except BaseException as exc:  # an interrupt (or a bug): no step is left pending
            for call_id in list(self._open):
                self._close(call_id, self._names.get(call_id, ""), interrupted_result(exc), True)
            raise
        finally:
            # A call approved and never run (a twin of a read, a cached read, a preTool hook's block, an interrupt)
            # leaves no lookup behind: each held its parsed arguments for the session's life.
            for call in calls:
                self._described.pop(call.id, None)
                if self.judged is not None:
                    self.judged(call.id)

    # --- steps ---------------------------------------------------------------

    async def _prepared(self, call: ToolCall, args: dict[str, Any] | None) -> tuple[ParallelClass, list[ToolStep]]:
        """The call's parallel class and its steps (for `_announce`); a huge call's worked out in a thread."""

        def prepare() -> tuple[ParallelClass, list[ToolStep]]:
            # Its card tells a script of the model's under one of ollie's names as what runs, by the run's lookup.
            scripts = self.runtime.resolver(call.name, args) if args is not None else None
            if scripts is not None:
                self._described[call.id] = scripts
            steps = describe(call.name, args if args is not None else call.arguments, self.cwd, kind_of=self.kind_of,
                             scripts=scripts)
            return self.runtime.classify_parallel(call.name, args) if args is not None else "global", steps

        return prepare() if len(call.arguments) <= OFF_LOOP_BYTES else await asyncio.to_thread(prepare)

    def _announce(self, call: ToolCall, steps: list[ToolStep]) -> None:
        """The `call` event: the call's steps, pending."""
        self._open[call.id] = step_states(call.id, steps)
        self._names[call.id] = call.name
        self._publish("call", call.id, call.name, call.arguments)

    def _publish(self, role: str, call_id: str, name: str, content: str, images: Sequence[Image] = ()) -> None:
        inner = self._open.get(call_id, [])
        if not inner:
            self.bus.publish(Event(role, name, content, images=tuple(images)))
            return
        whole = whole_state(call_id, inner)
        if role == "tool" and (network := self.network.get(call_id, ())):
            whole = attrs.evolve(whole, network=tuple(dict(c) for c in network))  # the byte counts as the call ended
        self.bus.publish(Event(role, name, content, tool=whole, steps=tuple(inner) if len(inner) > 1 else (),
                               images=tuple(images)))

    def _started(self, call: ToolCall) -> None:
        """A `step` event: the call's steps are running."""
        inner = self._open.get(call.id)
        if inner:
            self._open[call.id] = [s.with_status("in_progress") for s in inner]
            self._publish("step", call.id, call.name, "")

    def _close(self, call_id: str, name: str, text: str, is_error: bool, images: Sequence[Image] = (),
               statuses: list[StepStatus] | None = None) -> None:
        """The `tool` event: each step completed or failed (from the result's sections), with its diffs and the
        images the tool returned (the user sees what the model was shown)."""
        inner = finished(self._open.get(call_id, []), text, is_error=is_error, statuses=statuses)
        diffs = self._diffs.pop(call_id, None)
        shares = attribute(diffs, inner) if diffs and inner else [() for _ in inner]
        more = self._diffs_more.pop(call_id, 0)
        self._open[call_id] = [
            s.with_status(s.status, share if diffs is not None and (s.kind in WRITE_KINDS or share) else None)
            for s, share in zip(inner, shares, strict=True)]
        if more:  # the files past the listed ones are named by no step: the last writer's, as attribute() has it
            owner = last_writer(inner)
            self._open[call_id][owner] = attrs.evolve(self._open[call_id][owner], diffs_more=more)
        self._publish("tool", call_id, name, text, images)
        self.ended[call_id] = self._open.pop(call_id, [])

    def _writes(self, calls: Sequence[ToolCall]) -> bool:
        """Whether any step of `calls` can change files (then the workspace is snapshotted around them)."""
        return self.changes is not None and any(
            s.kind in WRITE_KINDS for c in calls for s in self._open.get(c.id, []))

    async def _tracked(self, calls: Sequence[ToolCall], work: Callable[[], Awaitable[T]]) -> T:
        """Run `work`, snapshotting around it when `calls` can write; their diffs go to `_diffs`."""
        tracker = self.changes
        if tracker is None or not self._writes(calls):
            return await work()
        token = await tracker.before_step()
        result = await work()
        between, changed = await tracker.after_step(token)
        if token is None:
            return result
        writers = [c for c in calls if any(s.kind in WRITE_KINDS for s in self._open.get(c.id, []))]
        # One call: its diffs. A parallel batch: each writer gets the files it names, the last one the rest.
        diffs = [Diff.of(c) for c in changed.changes]
        shares = attribute(diffs, [whole_state(c.id, self._open[c.id]) for c in writers])
        self._diffs.update((call.id, share) for call, share in zip(writers, shares, strict=True))
        if between is not None:
            self.trees.update((call.id, between) for call in writers)
        if changed.more and writers:
            self._diffs_more[writers[-1].id] = changed.more
        await self._behind_buffers(diffs, dict(zip((c.id for c in writers), shares, strict=True)))
        return result

    async def _behind_buffers(self, diffs: list[Diff], shares: dict[str, tuple[Diff, ...]]) -> None:
        """Note, by writer, the files the step changed under a buffer's unsaved edits (`_finish` tells of them)."""
        found = await self.behind.after_step(diffs) if self.behind is not None and diffs else []
        for call_id, share in shares.items():
            if mine := [d.path for d in share if d.path in found]:
                self._behind[call_id] = mine

    # --- the round -------------------------------------------------------------

    async def _run(self, calls: list[ToolCall]) -> list[CallOutcome]:
        """Run `calls`: consecutive read-safe calls concurrently, the rest one at a time, in order."""
        outcomes: list[CallOutcome] = []
        batch: list[tuple[ToolCall, dict[str, Any], list[ToolStep]]] = []
        for call in calls:
            args, problem = parse_arguments(call)
            parallel, steps = await self._prepared(call, args)
            if args is not None and self.approve is not None:
                problem = await self.approve(call.id, call.name, args, steps, self._described.get(call.id)) or ""
            if args is not None and not problem and parallel == "read":
                batch.append((call, args, steps))
                continue
            outcomes.extend(await self._flush(batch))
            batch = []
            self._announce(call, steps)
            if args is None or problem:  # bad arguments, rejected or refused: the model gets why, nothing runs
                outcomes.append(self._finish(CallOutcome(call, problem, True)))
                continue
            self._started(call)
            await self._diagnose_before(call)
            outcome = await self._tracked([call], partial(self._lifecycle, call, args, read_safe=False))
            outcome = await self._diagnose_after(outcome)
            # A write may change what earlier reads returned.
            self.cache.clear()
            outcomes.append(self._finish(outcome))
        outcomes.extend(await self._flush(batch))
        return outcomes

    def _edited(self, call_id: str) -> list[str]:
        """The files a call's edit steps name (known before it runs)."""
        return [loc.path for s in self._open.get(call_id, []) if s.kind == "edit" for loc in s.locations]

    async def _diagnose_before(self, call: ToolCall) -> None:
        """Note the editor's diagnostics of the files the call will edit (what its new errors are measured against)."""
        paths = self._edited(call.id)
        if self.post_edit is not None and paths and self.post_edit.enabled:
            await self.post_edit.before(paths)

    async def _diagnose_after(self, outcome: CallOutcome) -> CallOutcome:
        """Append the errors the editor reports anew in the files the step changed (its diffs, else its edits)."""
        if self.post_edit is None or not self.post_edit.enabled:
            return outcome
        changed = [d.path for d in self._diffs.get(outcome.call.id) or () if d.new_text is not None]
        paths = changed + ([] if outcome.is_error else self._edited(outcome.call.id))
        note = await self.post_edit.after(paths) if paths else ""
        if note:
            outcome.text = f"{outcome.text}\n\n{note}"
        return outcome

    def _finish(self, outcome: CallOutcome) -> CallOutcome:
        behind = self._behind.pop(outcome.call.id, [])
        if behind:
            outcome.text = f"{outcome.text}\n\n{model_note(behind)}"
        self._close(outcome.call.id, outcome.call.name, outcome.text, outcome.is_error, outcome.images, outcome.statuses)
        for rel in behind:  # the user reads it under the step, right when it ended
            self.bus.emit("info", user_notice(rel))
        for rel in self.behind.saved_unsaved() if self.behind is not None else ():
            self.bus.emit("info", saved_notice(rel))
        return outcome

    async def _flush(self, batch: list[tuple[ToolCall, dict[str, Any], list[ToolStep]]]) -> list[CallOutcome]:
        """Fan a batch of read-safe calls out; identical calls share one execution."""
        if not batch:
            return []
        groups: dict[tuple[str, str], list[tuple[ToolCall, dict[str, Any]]]] = {}
        for call, args, steps in batch:
            self._announce(call, steps)
            groups.setdefault((call.name, canonical_args(call.arguments)), []).append((call, args))
        shared: dict[tuple[str, str], CallOutcome] = {}

        async def lead(key: tuple[str, str]) -> None:
            cached = self.cache.get(key)
            if cached is None:
                call, args = groups[key][0]
                for twin, _ in groups[key]:
                    self._started(twin)
                cached = await self._lifecycle(call, args, read_safe=True)
            shared[key] = cached
            if not tracked:  # a batch that may write closes its steps once the batch's diffs are known
                for call, _ in groups[key]:
                    self._close(call.id, call.name, cached.text, cached.is_error, cached.images, cached.statuses)

        async def fan_out() -> None:
            # A TaskGroup: if one call fails unexpectedly its siblings are cancelled, not left running.
            async with asyncio.TaskGroup() as group:
                for key in groups:
                    group.create_task(lead(key))

        tracked = self._writes([call for call, *_ in batch])
        await self._tracked([call for call, *_ in batch], fan_out)
        out = []
        for call, *_ in batch:
            done = shared[(call.name, canonical_args(call.arguments))]
            outcome = CallOutcome(call, done.text, done.is_error, done.tier, done.images, done.statuses)
            out.append(self._finish(outcome) if tracked else outcome)
        return out

    async def _lifecycle(self, call: ToolCall, args: dict[str, Any], *, read_safe: bool) -> CallOutcome:
        """preTool → execute → postTool → inject → truncate → cache."""
        # The model's name for it, on one escaped line: the state is any LSP client's progress text too.
        self.set_state(f"calling: {one_name(call.name)}")
        pre = await self.hook("preTool", {"tool": call.name, "args": args, "tool_call_id": call.id})
        if pre is not None and pre.blocked:
            return CallOutcome(call, blocked_by("preTool", pre), True)

        from ollie.sandbox import egress  # loaded with the first tool call: no first token needs the proxy

        inner = self._open.get(call.id, [])
        # The steps `_announce` described (a preTool hook cannot change the arguments): a batch is not described
        # again for a title of 200 characters.
        net = self.net_ask(call.id, _title(inner, call.name)) if self.net_ask is not None else None
        asking = egress.asking.set(net)
        outside = elevation.allowed.set(self.allowed_outside(call.id) if self.allowed_outside is not None else None)
        asked = elevation.steps.set(cache(partial(_leaving, call.name, args, inner)))
        judged = self.judged(call.id) if self.judged is not None else None
        scripts = parsed.judged.set(judged or self._described.get(call.id))
        # A command step's output goes out live as `output` events (front ends show it as it comes).
        live = output_tap.set(self._hear(call)) if len(inner) == 1 and inner[0].kind == "execute" else None
        try:
            result = await self._execute(call.name, args)
        finally:
            if live is not None:
                output_tap.reset(live)
            egress.asking.reset(asking)
            elevation.allowed.reset(outside)
            elevation.steps.reset(asked)
            parsed.judged.reset(scripts)
            if net is not None and net.connections:
                self.network[call.id] = tuple(net.connections)
        text, is_error = own_output(result.text), result.is_error

        post = await self.hook("postTool", {"tool": call.name, "args": args, "tool_call_id": call.id,
                                            "result": result.text, "is_error": is_error})
        for hooked in (pre, post):  # a hook's output may relay the tool's (a file it lints): marked the same
            if hooked is not None:
                hooked.output = own_output(hooked.output)
        notes = [hook_note("preTool", pre)]
        if post is not None and post.blocked:
            text = post.output
        else:
            notes.append(hook_note("postTool", post))
        text = "\n\n".join([text, *filter(None, notes)])

        injected = self.pop_inject()
        if injected:
            text = f"{text}\n\n{INJECTED_HEAD}\n{injected}"

        statuses = inner_statuses(text, len(inner), is_error=is_error) if inner else None
        text = truncate_utf8(text, self.runtime.tool_result_max_bytes)
        outcome = CallOutcome(call, text, is_error, self.runtime.classify_tier(call.name, args),
                              [] if post is not None and post.blocked else result.images, statuses)
        if read_safe and not is_error and not injected:
            self.cache[(call.name, canonical_args(call.arguments))] = outcome
        return outcome

    def _hear(self, call: ToolCall) -> Callable[[bytes], None]:
        """The tap publishing `call`'s output as it comes, decoded (a character split across reads kept whole)."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        heard = 0

        def hear(data: bytes) -> None:
            nonlocal heard
            room = LIVE_OUTPUT_BYTES - heard
            if room <= 0:  # a flood: front ends have enough to show; the result comes whole
                return
            heard += len(data)
            if text := decoder.decode(data[:room]):
                self._publish("output", call.id, call.name, text)
        return hear

    async def _execute(self, tool: str, args: dict[str, Any]) -> ToolResult:
        try:
            result = await self.runtime.execute(tool, args)
        except Exception as exc:  # a failing tool is a result the model can act on, not a crash
            result = ToolResult(f"error: {tool} failed: {exc}", True)
        self.count_call()
        return result
