"""The agent loop: gate, request, tools, state, inference, safety, auto-compaction, until no tool calls."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ollie.agent import tiers
from ollie.agent.hooks import blocked_by, hook_note
from ollie.agent.safety import MAX_STEPS_NUDGE, SafetyMonitor
from ollie.agent.session import Session, TaskState
from ollie.agent.streaming import Completion, TurnFailed, stream_with_retry
from ollie.agent.taskstate import describe_action, infer_update, render_task_state
from ollie.agent.textcalls import extract_text_tool_calls, new_call_id
from ollie.agent.toolround import CallOutcome, ToolRound
from ollie.backend.types import Message, ToolCall

if TYPE_CHECKING:
    from ollie.agent.core import Core

INTERRUPTED_RESULT = "[interrupted by the user before this call finished]"


@dataclass
class TurnResult:
    """How a submit ended: the reply text, the stop reason, and an error message when it failed."""

    reply: str
    stop: str
    error: str | None = None


def _with_ids(calls: list[ToolCall]) -> list[ToolCall]:
    """Every call with an id: some backends send calls without one, and results pair with calls by id."""
    for call in calls:
        if not call.id:
            call.id = new_call_id()
    return calls


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
    """One turn of one core. Core owns the state; the loop drives it."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.session = core.session
        self.runtime = core.runtime
        self.bus = core.bus
        self.limits = core.limits
        self.monitor = SafetyMonitor(self.limits)
        self.cache: dict[tuple[str, str], CallOutcome] = {}
        # What this turn infers even when the session has no TaskState yet.
        self.tracked = TaskState()
        # The turn's latest assistant text (the core's `reply` outlives the turn).
        self.reply = ""

    def _set_reply(self, text: str) -> None:
        if text:
            self.reply = self.core.reply = text

    async def run(self, prompt: str) -> TurnResult:
        """Run the turn for `prompt` to its end."""
        core = self.core
        pre = await core.run_hook("preTurn", {"prompt": prompt})
        if pre is not None and pre.blocked:
            why = blocked_by("preTurn", pre)
            self.bus.emit("error", why)
            return TurnResult("", "error", why)
        notes = [note for note in (*core.take_notes(), hook_note("preTurn", pre)) if note]
        self.session.messages.append(Message("user", "\n\n".join([prompt, *notes])))
        if core.backend is None:
            why = core.backend_error or "no backend configured"
            self.bus.emit("error", why)
            return TurnResult("", "error", why)
        try:
            return await self._iterate()
        except TurnFailed as failed:
            self.bus.emit("error", str(failed))
            return TurnResult(self.reply, "error", str(failed))

    async def _request(self, *, with_tools: bool) -> Completion:
        core = self.core
        core.set_state("thinking")
        completion = await stream_with_retry(
            backend=core.backend,
            build_messages=core.context_budget.request_messages,
            tools=self.runtime.tools if with_tools else [],
            params=core.generation_params(),
            bus=self.bus,
            limits=self.limits,
            on_first_error=core.turn_error,
            compact=core.context_budget.compact_for_overflow,
        )
        core.record_usage(completion)
        # The model has now seen every cold result once: they collapse before the next request.
        tiers.collapse_consumed(self.session)
        return completion

    async def _iterate(self) -> TurnResult:
        core = self.core
        tool_names = {t.name for t in self.runtime.tools}
        while True:
            core.context_budget.gate()
            completion = await self._request(with_tools=bool(tool_names))
            text, calls = completion.text, list(completion.tool_calls)
            if not calls and tool_names and text:
                text, calls = extract_text_tool_calls(text, tool_names)
            calls = _with_ids(calls)
            self.session.messages.append(Message(
                "assistant", text, tool_calls=calls, reasoning=completion.reasoning,
                reasoning_signature=completion.reasoning_signature,
            ))
            self._set_reply(text)
            if not calls:
                return TurnResult(self.reply, "end")

            outcomes = await self._tool_round(calls)
            verdict = self._after_round(text, outcomes)
            if verdict is not None:
                return verdict
            max_steps = core.max_steps
            if max_steps and self.monitor.rounds >= max_steps:
                return await self._finish_max_steps()
            await core.context_budget.auto_compact()

    async def _tool_round(self, calls: list[ToolCall]) -> list[CallOutcome]:
        core = self.core
        round_ = ToolRound(
            runtime=self.runtime,
            bus=self.bus,
            hook=core.run_hook,
            pop_inject=core.pop_inject,
            set_state=core.set_state,
            count_call=core.count_tool_call,
            cache=self.cache,
            max_bytes=self.runtime.tool_result_max_bytes,
        )
        try:
            outcomes = await round_.run(calls)
        except asyncio.CancelledError:
            # Every call needs a result or the next request is malformed.
            for call in calls:
                self.session.messages.append(Message("tool", INTERRUPTED_RESULT, tool_call_id=call.id, name=call.name))
            raise
        for outcome in outcomes:
            call = outcome.call
            self.session.messages.append(Message("tool", outcome.text, tool_call_id=call.id, name=call.name))
            self.session.result_tiers[call.id] = outcome.tier
        return outcomes

    def _after_round(self, text: str, outcomes: list[CallOutcome]) -> TurnResult | None:
        """State inference and safety checks; a TurnResult when the turn must stop."""
        core = self.core
        last = outcomes[-1]
        action = describe_action(last.call.name, last.call.arguments, last.text)
        step = core.plan_step()
        infer_update(self.tracked, last_action=action, plan_step=step, assistant_text=text)
        if self.session.task_state is not None:
            infer_update(self.session.task_state, last_action=action, plan_step=step, assistant_text=text)
        verdict = self.monitor.after_round(
            all_errors=all(o.is_error for o in outcomes), assistant_text=text, last_action=action
        )
        if verdict.abort:
            core.save()
            self.bus.emit("error", verdict.abort)
            return TurnResult(self.reply, "error", verdict.abort)
        for nudge in verdict.nudges:
            self.bus.emit("info", nudge)
            _append_note(self.session, nudge)
        if verdict.reinject:
            _append_note(self.session, render_task_state(self.session.task_state or self.tracked))
        core.save()
        return None

    async def _finish_max_steps(self) -> TurnResult:
        """The step limit ends the turn softly: one last request, without tools, for a summary."""
        core = self.core
        self.bus.emit("info", f"step limit reached ({core.max_steps} tool rounds): asking for a summary")
        _append_note(self.session, MAX_STEPS_NUDGE)
        completion = await self._request(with_tools=False)
        self.session.messages.append(Message(
            "assistant", completion.text, reasoning=completion.reasoning,
            reasoning_signature=completion.reasoning_signature,
        ))
        self._set_reply(completion.text)
        return TurnResult(self.reply, "max_steps")
