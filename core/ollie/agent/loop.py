"""The agent loop: gate, request, tools, state, inference, safety, auto-compaction, until no tool calls."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ollie import paths
from ollie.agent import tiers
from ollie.agent.context import ContextBudget, SessionHost
from ollie.agent.hooks import blocked_by, hook_note
from ollie.agent.runtime import server_kinds
from ollie.agent.safety import MAX_STEPS_NUDGE, SafetyMonitor
from ollie.agent.steps import KindLookup, script_kinds
from ollie.agent.streaming import Completion, Streamed, TurnFailed, stream_with_retry
from ollie.agent.taskstate import describe_action, infer_update, render_task_state
from ollie.backend.base import Backend
from ollie.backend.images import MAX_IMAGES, placeholder
from ollie.backend.types import Image, Message, Tool, ToolCall
from ollie.loopshare import loop_share
from ollie.sessions.session import Session, TaskState
from ollie.tools.execute.args import cut_arguments

if TYPE_CHECKING:  # the tool round loads with a turn's first call (a chat turn makes none)
    from ollie.agent.toolround import CallOutcome, ToolRound


class LoopHost(SessionHost, Protocol):
    """What a turn reads and drives of its session: everything the loop depends on (the Core's TurnHost)."""

    @property
    def max_steps(self) -> int: ...
    def require_backend(self) -> Backend: ...
    async def turn_error(self, exc: BaseException, error_type: str) -> bool: ...
    def tool_round(self, *, cache: dict[tuple[str, str], CallOutcome], kind_of: KindLookup) -> ToolRound: ...
    def take_notes(self) -> list[str]: ...
    def set_state(self, state: str) -> None: ...
    def set_reply(self, text: str) -> None: ...
    def save(self) -> None: ...
    @property
    def plan_step(self) -> str: ...
    async def reread_plan(self) -> None: ...


@dataclass(eq=False, repr=False)
class TurnResult:
    """How a submit ended: the reply text, the stop reason, an error message when it failed, and whether a `!cmd`
    exited non-zero."""

    reply: str
    stop: str
    error: str | None = None
    failed: bool = False


# A call id as vendors write them (`call_…`, `toolu_…`, Mistral's nine letters and digits, Kimi's
# `functions.bash:0`); never a `/`, which questions' ids hold (`mcp/<name>`, `<call id>/net/<host>`).
_CALL_ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
# The most tool calls of one reply that run (models make a few dozen at most).
MAX_CALLS = 64


def _with_ids(calls: list[ToolCall], used: set[str]) -> list[ToolCall]:
    """Every call with an id of its own (added to `used`, the session's `call_ids`): some backends send none, and a
    hostile model may repeat one (an earlier call's, another of this reply's) or write one as another call's batch
    step is named (`<id>.2`) or a question. Results pair with calls by id, the session keeps each call's step outcomes
    and network records by it, and front ends update a step's card by it (ACP's tool_call_id: Zed changed the earlier
    card in place, far up the thread)."""
    from ollie.agent.textcalls import new_call_id  # loaded as a reply ends (as below), not with the engine
    for call in calls:
        if not _CALL_ID.fullmatch(call.id) or _clashes(call.id, used):
            call.id = new_call_id()
        _reserve(used, (call.id,))
    return calls


def _used_ids(messages: list[Message], keys: list[str]) -> set[str]:
    """The call ids of `messages` and `keys` (the session's step maps'), reserved as `_reserve` does."""
    used: set[str] = set()
    _reserve(used, [c.id for m in messages for c in m.tool_calls])
    _reserve(used, keys)
    return used


def _reserve(used: set[str], ids: Iterable[str]) -> None:
    """Add `ids` to `used`, and the call each batch step's id (`<id>.<n>`) would be a step of: a later call of that id
    clashes by one lookup (looking through every id for one of its steps held the loop ~14 ms a call at 100k
    messages)."""
    for call_id in ids:
        used.add(call_id)
        parent, dot, number = call_id.rpartition(".")
        if dot and number.isdigit():
            used.add(parent)


def _clashes(call_id: str, used: set[str]) -> bool:
    """Whether `call_id`, or one of its batch steps' ids (`<id>.<n>`), is already an id or a step's of `used`."""
    parent, dot, number = call_id.rpartition(".")
    return call_id in used or bool(dot and number.isdigit() and parent in used)


def _append_note(session: Session, note: str) -> None:
    """Append a note for the model to the last tool result (keeps role alternation valid everywhere)."""
    messages = session.messages
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "tool":
            messages[index].content = f"{messages[index].content}\n\n[ollie] {note}"
            session.mark_edited(index)
            return
    messages.append(Message("user", f"[ollie] {note}"))


class AgentLoop:
    """One turn of one session. The host owns the state; the loop drives it, the budget keeps its context in size."""

    def __init__(self, host: LoopHost, budget: ContextBudget) -> None:
        self.host = host
        self.budget = budget
        self.session = host.session
        self.runtime = host.runtime
        self.bus = host.bus
        self.limits = host.limits
        self.monitor = SafetyMonitor(self.limits)
        self.cache: dict[tuple[str, str], CallOutcome] = {}
        # The `ollie:kind` of user tool scripts, read once per turn (for the steps' kinds).
        self.kind_of = server_kinds(lambda: self.runtime.dispatcher, script_kinds(paths.tools_path()))
        # What this turn infers even when the session has no TaskState yet.
        self.tracked = TaskState()
        # The turn's latest assistant text (the host's `reply` outlives the turn).
        self.reply = ""
        # Whether the turn's prompt is in the history (read with it: ollie/context says the reply is on its way).
        self.asked = False
        self.streamed: Streamed | None = None  # the request in progress: what a client opening the turn now misses

    def _set_reply(self, text: str) -> None:
        self.streamed = None  # the reply is in the history now (or a cut-off part of it)
        if text:
            self.reply = text
            self.host.set_reply(text)

    async def run(self, prompt: str, images: list[Image] | None = None) -> TurnResult:
        """Run the turn for `prompt` (and its `images`) to its end."""
        host = self.host
        await loop_share().wait_turn()  # a turn's start and first save: one session's step in a pass, not 50
        if images and await self._sees_images() is False:  # (None: the server does not say, so they go)
            refused = (f"{self.host.require_backend().model} does not take images: pick a model that does (/model) "
                       "or send the prompt without them")
            self.bus.emit("error", refused)
            return TurnResult("", "error", refused)
        pre = await host.run_hook("preTurn", {"prompt": prompt})
        if pre is not None and pre.blocked:
            why = blocked_by("preTurn", pre)
            self.bus.emit("error", why)
            return TurnResult("", "error", why)
        notes = [note for note in (*host.take_notes(), hook_note("preTurn", pre)) if note]
        asked = Message("user", "\n\n".join([prompt, *notes]), images=list(images or []), notes="\n\n".join(notes))
        self.session.messages.append(asked)
        self.asked = True
        # Saved now, not with the first round: a daemon killed while the reply streams keeps what the user typed.
        host.save()
        # The request is built a loop pass later (or later still, see ollie.loopshare): 50 first turns at once
        # made one pass of 50 saves and requests (~1 ms each), which every other request waited for.
        await loop_share().give_way()
        retried = False
        while True:
            try:
                host.require_backend()  # no request goes out without one: the turn ends with why
                return await self._iterate()
            except TurnFailed as failed:
                message = str(failed)
                if failed.error_type == "images_unsupported":
                    sent_now = bool(asked.images)
                    if self._drop_images() and not sent_now and not retried:
                        # Earlier prompts' images (sent to a model before a /model switch): this prompt has
                        # none, so it goes again without them rather than fail for what it did not send.
                        self.bus.emit("info", f"{self.host.require_backend().model} does not take images: the "
                                              "earlier ones left the conversation")
                        retried = True
                        continue
                    message = (f"{self.host.require_backend().model} does not take images ({message}): pick a "
                               "model that does (/model), then send the prompt with them again")
                self.bus.emit("error", message, name=failed.error_type)
                return TurnResult(self.reply, "error", message)

    async def _sees_images(self) -> bool | None:
        """Whether the model takes images (None: no backend, or its server does not say)."""
        try:
            backend = self.host.require_backend()
        except TurnFailed:
            return None  # the turn itself ends with why there is no backend
        return await backend.takes_images()

    def _drop_images(self) -> bool:
        """The vendor refused images: every one leaves the history, a note in its place (or every later request
        fails too); False when there were none."""
        dropped = False
        for index, message in enumerate(self.session.messages):
            if message.images:
                message.content = f"{message.content}\n\n{placeholder(message.images)}"
                if message.role == "tool":
                    tiers.keep_names(self.session, message.tool_call_id, message.images)
                message.images = []
                self.session.mark_edited(index)
                dropped = True
        if dropped:
            self.host.save()
        return dropped

    async def _request(self, *, with_tools: bool) -> Completion:
        host = self.host
        host.set_state("thinking")
        self.streamed = streamed = Streamed()
        try:
            completion = await stream_with_retry(
                backend=host.require_backend(),
                build_messages=self.budget.request_messages,
                tools=list[Tool](self.runtime.tools) if with_tools else [],
                params=host.generation_params(),
                bus=self.bus,
                limits=self.limits,
                on_first_error=host.turn_error,
                compact=self.budget.compact_for_overflow,
                streamed=streamed,
            )
        except asyncio.CancelledError:
            self._keep_partial(streamed)
            raise
        host.record_usage(completion)
        # The model has now seen every cold result once: they collapse before the next request.
        tiers.collapse_consumed(self.session)
        return completion

    def _keep_partial(self, streamed: Streamed) -> None:
        """An interrupt cut the reply short: what was streamed stays, marked cut off, with no tool call."""
        text, reasoning = "".join(streamed.text), "".join(streamed.reasoning)
        if not text.strip() and not reasoning.strip():
            return
        from ollie.agent.history import cut_off
        # No reasoning signature: Anthropic gets no unsigned thinking block back (the text is kept).
        self.session.messages.append(Message("assistant", cut_off(text), reasoning=reasoning))
        self._set_reply(text)

    async def _iterate(self) -> TurnResult:
        host = self.host
        tool_names = {t.name for t in self.runtime.tools}
        if (used := self.session.call_ids) is None:  # a resumed session's first turn: O(history), in a thread
            s = self.session
            keys = [*s.step_outcomes, *s.step_network, *s.result_tiers]
            used = s.call_ids = await asyncio.to_thread(_used_ids, list(s.messages), keys)
        while True:
            await self.budget.gate()
            completion = await self._request(with_tools=bool(tool_names))
            await loop_share().wait_turn()  # what a reply leaves to do (its save, its calls, the turn's end)
            from ollie.agent.history import truncated  # these load as a reply ends: a first token needs neither
            from ollie.agent.textcalls import extract_text_tool_calls
            # Backends report a declined reply as stop_reason "refusal" (OpenAI's content_filter too), one cut at
            # the output token limit as "max_tokens"; the calls of either, if any, may be cut off and are not run.
            stop = completion.stop_reason if completion.stop_reason in ("refusal", "max_tokens") else "end"
            text, calls = completion.text, list(completion.tool_calls) if stop == "end" else []
            if not calls and stop == "end" and tool_names and text:
                text, calls = extract_text_tool_calls(text, tool_names)
            # Thousands of calls in one reply held the daemon's loop for tens of seconds (each call's lookups, its id
            # checked against every id before it): those past the cap are dropped, and the model reads so.
            calls, over = _with_ids(calls[:MAX_CALLS], used), len(calls) - MAX_CALLS
            for call in calls:
                call.arguments = cut_arguments(call.arguments)
            content = truncated(text, dropped_calls=len(completion.tool_calls)) if stop == "max_tokens" else text
            if over > 0:
                content += f"\n\n[ollie: {over} more tool calls of this reply were not run: at most {MAX_CALLS} in one reply]"
            self.session.messages.append(Message(
                "assistant", content, tool_calls=calls, reasoning=completion.reasoning,
                reasoning_signature=completion.reasoning_signature,
            ))
            self._set_reply(text)
            if not calls:
                return TurnResult(self.reply, stop)
            # Saved before they run: a process killed meanwhile (kill -9) leaves them in the history, closed on resume.
            host.save()
            outcomes = await self._tool_round(calls)
            await host.reread_plan()  # its steps may have changed the plan: read once, for the step and the clients
            verdict = self._after_round(text, outcomes)
            if verdict is not None:
                return verdict
            max_steps = host.max_steps
            if max_steps and self.monitor.rounds >= max_steps:
                return await self._finish_max_steps()
            await self.budget.auto_compact()

    async def _tool_round(self, calls: list[ToolCall]) -> list[CallOutcome]:
        round_ = self.host.tool_round(cache=self.cache, kind_of=self.kind_of)
        try:
            outcomes = await round_.run(calls)
        except asyncio.CancelledError as exc:
            from ollie.agent.toolround import interrupted_result
            # Every call needs a result or the next request is malformed.
            for call in calls:
                self.session.messages.append(Message("tool", interrupted_result(exc), tool_call_id=call.id,
                                                     name=call.name))
            self._keep_outcomes(round_)
            raise
        sees_images = None if not any(o.images for o in outcomes) else await self._sees_images()
        room = MAX_IMAGES  # a round's images, as a prompt's: many calls of eight each must not add up to hundreds
        for outcome in outcomes:
            call, text, images = outcome.call, outcome.text, outcome.images
            if images and sees_images is False:  # a known text-only model: a note where they were
                text, images = f"{text}\n\n{placeholder(images)}", []
                tiers.keep_names(self.session, call.id, outcome.images)
            if len(images) > room:
                text = f"{text}\n\n[{len(images) - room} images left out: more than {MAX_IMAGES} in one round]"
                images = images[:room]
            room -= len(images)
            self.session.messages.append(Message("tool", text, tool_call_id=call.id, name=call.name, images=images))
            self.session.result_tiers[call.id] = outcome.tier
        self._keep_outcomes(round_)
        return outcomes

    def _keep_outcomes(self, round_: ToolRound) -> None:
        """How the round's steps ended, their connections and the files they changed, kept with the session: its
        history shows them after results collapse, and after a resume."""
        from ollie.agent.history import outcome_marks
        for call_id, inner in round_.ended.items():
            self.session.step_outcomes[call_id] = outcome_marks(inner)
            if files := [d.path for s in inner for d in s.diffs or ()]:  # a resumed step names them (no texts kept)
                self.session.step_files[call_id] = files
                if trees := round_.trees.get(call_id):  # and shows its own diffs (ollie.agent.stepchanges)
                    self.session.step_trees[call_id] = list(trees)
        for call_id, connections in round_.network.items():
            self.session.step_network[call_id] = list(connections)  # the proxy's own records: see Core.network_log

    def _after_round(self, text: str, outcomes: list[CallOutcome]) -> TurnResult | None:
        """State inference and safety checks; a TurnResult when the turn must stop."""
        host = self.host
        last = outcomes[-1]
        action = describe_action(last.call.name, last.call.arguments, last.text)
        step = host.plan_step
        infer_update(self.tracked, last_action=action, plan_step=step, assistant_text=text)
        if self.session.task_state is not None:
            infer_update(self.session.task_state, last_action=action, plan_step=step, assistant_text=text)
        verdict = self.monitor.after_round(
            all_errors=all(o.is_error for o in outcomes), assistant_text=text, last_action=action
        )
        if verdict.abort:
            host.save()
            self.bus.emit("error", verdict.abort)
            return TurnResult(self.reply, "error", verdict.abort)
        for nudge in verdict.nudges:
            self.bus.emit("info", nudge)
            _append_note(self.session, nudge)
        if verdict.reinject:
            _append_note(self.session, render_task_state(self.session.task_state or self.tracked))
        host.save()
        return None

    async def _finish_max_steps(self) -> TurnResult:
        """The step limit ends the turn softly: one last request, without tools, for a summary."""
        host = self.host
        self.bus.emit("info", f"step limit reached ({host.max_steps} tool rounds): asking for a summary")
        _append_note(self.session, MAX_STEPS_NUDGE)
        completion = await self._request(with_tools=False)
        self.session.messages.append(Message(
            "assistant", completion.text, reasoning=completion.reasoning,
            reasoning_signature=completion.reasoning_signature,
        ))
        self._set_reply(completion.text)
        return TurnResult(self.reply, "max_steps")
