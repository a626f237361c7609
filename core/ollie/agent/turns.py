"""One session's turns as tasks: the edges of a turn (events, postTurn, save), interrupting it, retired backends."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from ollie.agent.context import ContextBudget
from ollie.agent.events import Event
from ollie.agent.hooks import hook_note
from ollie.agent.inbox import Inbox
from ollie.agent.loop import AgentLoop, LoopHost, TurnResult
from ollie.agent.review import Review
from ollie.backend.base import Backend
from ollie.backend.types import Image
from ollie.log import get_logger

log = get_logger("ollie.agent.core")


class TurnsHost(LoopHost, Protocol):
    """What a turn's edges read and drive of its session, on top of the loop's (the Core's TurnHost)."""

    inbox: Inbox
    review: Review
    before_turn: Callable[[], Awaitable[None]] | None

    async def ready_prompt(self) -> None: ...
    def take_prompt_warnings(self) -> list[str]: ...


class Turns:
    """Runs the turns of one session, one task each; the Core serialises them and owns the queue."""

    def __init__(self, host: TurnsHost, budget: ContextBudget, *, warnings: list[str],
                 late_warnings: Callable[[], list[str]] = list) -> None:
        self._host = host
        self._budget = budget
        self.running = False
        self._finishing = False
        self.task: asyncio.Task[TurnResult] | None = None  # the running turn's (None between turns)
        # Backends a switch replaced while a turn streamed from them: closed when the turn ends.
        self._retired: list[Backend] = []
        # Build warnings (an MCP server that did not start...): shown when the first turn starts; `late_warnings`
        # (the sandbox's: a workspace at $HOME granted read-only...) as a turn ends, each once.
        self._pending_warnings = list(warnings)
        self._late_warnings = late_warnings
        self._shown = set(warnings)

    def retire(self, backend: Backend) -> None:
        """Close `backend` when the running turn ends (its request streams from it)."""
        self._retired.append(backend)

    def take_retired(self) -> list[Backend]:
        """The retired backends not closed yet, handed over once."""
        retired, self._retired = self._retired, []
        return retired

    async def run(self, text: str, *, announce: bool = False, images: Sequence[Image] = ()) -> TurnResult:
        """Run one turn for `text` (and `images`) as a task `interrupt` can cancel; `announce` publishes the
        prompt first."""
        self.task = asyncio.create_task(self._turn(text, announce=announce, images=list(images)))
        try:
            return await self.task
        finally:
            self.task = None

    def interrupt(self, reason: str = "") -> bool:
        """Cancel the running turn (model stream and tool process groups); False when idle."""
        task = self.task
        if task is None or task.done() or not self.running or self._finishing:
            return False
        log.info("interrupt", extra={"reason": reason})
        task.cancel(reason or None)
        return True

    async def _turn(self, text: str, *, announce: bool = False, images: list[Image] | None = None) -> TurnResult:
        host, bus = self._host, self._host.bus
        self.running, self._finishing = True, False
        host.session.begin_turn()
        bus.publish(Event("turn", content="start", prompt=text))
        if announce:  # a prompt the client did not send just now: tell it what runs
            bus.emit("user", text)
        pending, self._pending_warnings = self._pending_warnings, []
        for warning in pending:
            bus.emit("info", f"warning: {warning}")
        host.set_state("thinking")
        loop = AgentLoop(host, self._budget)
        # The model's context length (a `/models` request the first time) is asked meanwhile: it touches neither
        # the prompt nor the workspace, and the first turn would otherwise wait for it after the prompt commands.
        limit = asyncio.ensure_future(self._budget.limit())
        try:
            # The workspace as it was before the turn: what rewind restores and ollie/changes diffs against.
            await host.ready_prompt()  # the prompt commands run for the first turn, not at session/new
            for warning in host.take_prompt_warnings():
                bus.emit("info", f"warning: {warning}")
            if host.before_turn is not None:  # inside the turn: an interrupt withdraws what it asks
                await host.before_turn()
            await host.review.begin_turn()  # numbers the turn, notes where its messages start (ollie.agent.review)
            if host.session.messages:  # the gate may strip earlier tool output to fit: it needs the answer
                await limit  # (a fresh session's first request has nothing to strip and does not wait for it)
            result = await loop.run(text, images)
            await limit  # known once the turn has ended, as before (the context meter shows it)
        except asyncio.CancelledError:
            # Interrupted: the task completes with a result instead of propagating.
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            result = TurnResult(loop.reply, "interrupted")
        except Exception as exc:  # a bug must end the turn, not the daemon
            log.exception("turn failed")
            bus.emit("error", f"internal error: {exc}")
            result = TurnResult(loop.reply, "error", f"internal error: {exc}")
        limit.cancel()  # an interrupted or failed turn stops asking
        self._finishing = True
        host.session.end_turn()
        await host.review.end_turn()  # the state the turn left: what its changes and undo measure against
        host.inbox.requeue_injects()
        host.save()
        if result.stop != "interrupted":
            await self._post_turn(result)
        for warning in await asyncio.to_thread(self._late_warnings):  # read off the loop (the policy's file)
            if warning not in self._shown:
                self._shown.add(warning)
                bus.emit("info", f"warning: {warning}")
        bus.emit("turn", result.stop)
        self.running = False
        for backend in self.take_retired():  # backends a /backend replaced during this turn
            await backend.aclose()
        host.set_state("idle")
        return result

    async def _post_turn(self, result: TurnResult) -> None:
        host = self._host
        try:
            post = await host.run_hook("postTurn", {"reply": result.reply, "stop": result.stop})
        except Exception as exc:  # the turn is over; a broken hook must not lose its result
            log.exception("postTurn hook failed")
            host.bus.emit("info", f"hook postTurn failed: {exc}")
            post = None
        if post is not None and post.blocked and post.output.strip():
            host.inbox.continue_with(post.output.strip())  # exit 2: go on, with its output as the prompt
        else:
            host.inbox.add_note(hook_note("postTurn", post))
