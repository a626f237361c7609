"""One session's turns as tasks, and what a turn and the context budget use of it: state, hooks, usage, saving."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ollie.agent.changes import ChangeTracker
from ollie.agent.context import ContextBudget
from ollie.agent.cost import compute_cost
from ollie.agent.events import Bus, Event, UsageReport
from ollie.agent.hooks import HookResult, hook_note
from ollie.agent.inbox import Inbox
from ollie.agent.limits import LoopLimits
from ollie.agent.loop import AgentLoop, TurnResult
from ollie.agent.review import Review
from ollie.agent.runtime import Runtime, ready_prompt, take_late_notes
from ollie.agent.setup import Setup, sandbox_warnings
from ollie.agent.steps import KindLookup
from ollie.agent.stopping import Stopping
from ollie.agent.streaming import Completion, TurnFailed
from ollie.agent.taskstate import PlanEntry, plan_entries, put_plan, read_plan
from ollie.backend.base import Backend
from ollie.backend.types import GenerationParams, Image
from ollie.errors import OllieError
from ollie.loopshare import loop_share
from ollie.sessions.persist import SessionFile
from ollie.sessions.session import Session

if TYPE_CHECKING:
    from ollie.agent.approval import ApprovalGate
    from ollie.agent.behind import BehindBuffers
    from ollie.agent.toolround import CallOutcome, ToolRound
    from ollie.tools.editor.postedit import PostEditDiagnostics

log = logging.getLogger("ollie.agent.core")

T = TypeVar("T")


def forward(path: str, *, settable: bool = False) -> Any:
    """A member that is another part's (`path` dotted from its object), read-only unless `settable`."""
    owner, _, name = path.rpartition(".")
    setter = (lambda obj, value: setattr(attrgetter(owner)(obj), name, value)) if settable else None
    return property(attrgetter(path), setter)


class TurnHost:
    """Runs the turns of one session, one task each, with the plumbing the loop and the context budget drive; the
    Core serialises the turns, owns the queue and wraps this in its public surface."""

    runtime: Runtime = forward("setup.runtime")  # the active agent's
    backend: Backend | None = forward("setup.backend")  # None when it could not be built
    backend_error: str = forward("setup.backend_error")  # why it could not be built ('' when it was)
    max_steps: int = forward("setup.max_steps")  # tool rounds per turn (0 = unlimited)

    def __init__(
        self, *, setup: Setup, sessions_dir: Path, session: Session, session_file: SessionFile, limits: LoopLimits,
        approval: ApprovalGate, before_turn: Callable[[], Awaitable[None]],
    ) -> None:
        self.bus = Bus()
        self.limits = limits
        self.setup = setup
        self.sessions_dir = sessions_dir
        self.session = session
        self.session_file = session_file
        self.reply = ""  # the last assistant text: it outlives the turn
        self.state = "idle"
        self.tool_calls = 0
        # The task_* tools' plan file as last read (once per change: after a tool round, as a turn ends, as the session
        # opens) or written (a rewind, a clear, a fork), and its checklist: what the front ends show.
        self.plan_text = ""
        self.plan: list[PlanEntry] = []
        # Plan reads and writes, and what may write it (a tool round, a hook), numbered as they start; the read shown's.
        self._plan_seq = self._plan_seen = 0
        self.inbox = Inbox(on_queued=self.notify)
        self.approval = approval  # the Core's: whether each call may run, the hosts it may reach, what runs outside
        # Run at each turn's start, before the model is asked (the Core's: a workspace's MCP servers put to the user).
        self.before_turn = before_turn
        self.post_edit: PostEditDiagnostics | None = None  # None: no editor provides diagnostics
        self.behind: BehindBuffers | None = None  # the editor's documents (None: the file tools see the disk only)
        self._detached: set[asyncio.Future[Any]] = set()
        self._changes: ChangeTracker | None = None
        self.review = Review(self, tracker=lambda: self.changes, add_note=self.inbox.add_note)
        self.budget = ContextBudget(self)
        self.running = False
        self._finishing = False
        self.task: asyncio.Task[TurnResult] | None = None  # the running turn's (None between turns)
        self.stopping = Stopping()  # the Core's `stop`: a turn that begins while it is asked never runs
        self.turns_begun = 0  # (a follow-up turn that did not begin gives its queued prompt back)
        self._loop: AgentLoop | None = None  # the running turn's, until its reply is whole in the history
        # Backends a switch replaced while a turn streamed from them: closed when the turn ends.
        self._retired: list[Backend] = []
        # The warnings shown so far: each once. The runtime's (an MCP server that did not start, a failed prompt
        # command...) as a turn starts; the sandbox's (a workspace at $HOME granted read-only...) as it ends.
        self._shown: set[str] = set()

    @property
    def answering(self) -> bool:
        """Whether a running turn's prompt is in the history and its reply is not whole there yet."""
        return self._loop is not None and self._loop.asked

    @property
    def streaming(self) -> tuple[str, str]:
        """The text and reasoning the running turn's request in progress has streamed so far (not saved yet)."""
        streamed = self._loop.streamed if self._loop else None
        return ("".join(streamed.text), "".join(streamed.reasoning)) if streamed else ("", "")

    @property
    def prompting(self) -> bool:
        """Whether a running turn's prompt is not in the history yet (its prompt commands or hooks run)."""
        return self._loop is not None and not self._loop.asked

    @property
    def changes(self) -> ChangeTracker:
        """The change tracker of the session's CWD (a new one when the CWD moved)."""
        tracker = self._changes
        if tracker is None or tracker.cwd != self.setup.cwd:
            tracker = self._changes = ChangeTracker(
                self.setup.cwd, self.session.id, on_unavailable=lambda why: self.bus.emit("info", f"warning: {why}"))
        return tracker

    def require_backend(self) -> Backend:
        """The active backend; TurnFailed saying why there is none."""
        if self.backend is None:
            raise TurnFailed(self.backend_error or "no backend configured", error_type="unknown")
        return self.backend

    @property
    def model_name(self) -> str:
        """The model requests go to."""
        return self.backend.model if self.backend is not None else ""

    async def ready_prompt(self) -> None:
        """Run the agent's prompt commands if they have not run yet (they wait for the first turn or command)."""
        if self.runtime.deferred_prompt is not None:
            self._plan_seq += 1  # they may write the plan as a hook may: the turn's end reads it
        await ready_prompt(self.runtime)
        for note in take_late_notes(self.runtime):  # `@environment`'s git status, once it is known
            self.inbox.add_note(note)

    def told(self, warnings: list[str]) -> None:
        """`warnings` were shown to the user (an agent switch's, by its caller): no turn shows them again."""
        self._shown.update(warnings)

    def _tell_new(self, warnings: list[str]) -> None:
        for warning in warnings:
            if warning not in self._shown:
                self._shown.add(warning)
                self.bus.emit("info", f"warning: {warning}")

    def withdraw_warning(self, warning: str) -> None:
        """A build warning no longer true (a workspace's MCP server since allowed): neither a turn nor /mcp says it."""
        if warning in self.runtime.warnings:
            self.runtime.warnings.remove(warning)

    def generation_params(self) -> GenerationParams:
        """The sampling parameters of the next request."""
        return self.setup.generation_params()

    def set_reply(self, text: str) -> None:
        """Remember the latest assistant text (empty text keeps the last one)."""
        if text:
            self.reply = text

    def set_state(self, state: str) -> None:
        """Set the state; publishes a `state` event on change."""
        if state != self.state:
            self.state = state
            self.notify()

    def notify(self) -> None:
        """Publish a `state` event (front ends re-read what they show)."""
        self.bus.emit("state")

    async def reread_plan(self, *, stale: bool = False) -> None:
        """Read the plan file again (tool code may have changed it): a `state` event when its checklist changed; with
        `stale`, only if a tool round or hook ran, or a read was cut short, since the last read shown started."""
        if not stale or self._plan_seen != self._plan_seq:
            await self._took_plan(read_plan(self.session.id))

    async def put_plan(self, text: str) -> None:
        """Write the plan file as `text` (a rewind, a clear, a fork): a `state` event when its checklist changed."""
        await put_plan(self.session.id, text)
        await self._took_plan(text)

    @property
    def plan_step(self) -> str:
        """The plan's step being worked on: its first open one ('' when none)."""
        return next((e.content for e in self.plan if e.status == "in_progress"), "")

    async def _took_plan(self, text: str | Awaitable[str]) -> None:
        self._plan_seq = seq = self._plan_seq + 1
        text = text if isinstance(text, str) else await text
        # Parsed in a thread: a step writes the plan (256 KiB of line breaks held the event loop ~70 ms a round).
        plan = await asyncio.to_thread(plan_entries, text) if text else []
        if seq < self._plan_seen:  # one started later ended first (a `!cmd`'s while a round's was in its thread)
            return
        self._plan_seen = seq
        if text != self.plan_text:
            self.review.plan_changes()
        self.plan_text = text
        if plan != self.plan:
            self.plan = plan
            self.notify()

    def count_tool_call(self) -> None:
        """Account one executed tool call."""
        self.tool_calls += 1

    def take_notes(self) -> list[str]:
        """Hook output waiting to be added to the next prompt."""
        return self.inbox.take_notes()

    def tool_round(self, *, cache: dict[tuple[str, str], CallOutcome], kind_of: KindLookup) -> ToolRound:
        """A round of tool calls wired to this session: its tools, hooks, injects, approval, changes and editor."""
        from ollie.agent.toolround import ToolRound  # loaded by a turn's first call: a chat-only turn makes none
        self._plan_seq += 1  # its steps may write the plan: read after it (or, cut short, as the turn ends)
        return ToolRound(
            runtime=self.runtime, bus=self.bus, hook=self.run_hook, pop_inject=self.inbox.pop_inject,
            set_state=self.set_state, count_call=self.count_tool_call, cache=cache, cwd=self.setup.cwd, kind_of=kind_of,
            changes=self.changes, approve=self.approval.check, post_edit=self.post_edit,
            net_ask=self.approval.net_ask, allowed_outside=self.approval.allowed_outside, behind=self.behind,
            judged=self.approval.judged,
        )

    def detach(self, work: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
        """Run `work` as a task nobody's cancellation reaches; kept until it is done."""
        task = asyncio.ensure_future(work)
        self._detached.add(task)  # kept: the loop holds tasks only weakly
        task.add_done_callback(self._detached.discard)
        return task

    def record_usage(self, completion: Completion) -> None:
        """Account a request's usage and cost; publish `usage`."""
        usage = completion.usage
        if usage is None:
            return
        cost = compute_cost(self.model_name, usage)
        self.session.add_usage(usage, cost)
        self.bus.publish(Event("usage", usage=UsageReport(usage.input_tokens, usage.output_tokens,
                                                          usage.cached_input_tokens, usage.cache_creation_tokens, cost)))
        self.notify()

    async def run_hook(self, name: str, payload: dict[str, Any]) -> HookResult | None:
        """Run hook `name` with the standard payload fields; None when the agent sets no such hook."""
        hooks = self.runtime.hooks
        if hooks is None or not hooks.has(name):
            return None
        self._plan_seq += 1  # it may write the plan too
        if self._changes is not None:
            # A hook may write files: the turn's checkpoint is taken first, no snapshot before it reused after it.
            await self._changes.before_hook()
        setup = self.setup
        base = {
            "session_id": self.session.id,
            "cwd": str(setup.cwd),
            "agent": setup.agent,
            "backend": self.backend.name if self.backend is not None else "none",
            "model": self.model_name,
        }
        result = await hooks.run(name, {**base, **payload}, cwd=setup.cwd, env=dict(setup.env),
                                 timeout=self.limits.hook_timeout_s)
        for warning in result.warnings:
            self.bus.emit("info", warning)
        return result

    async def turn_error(self, exc: BaseException, error_type: str) -> bool:
        """The turnError hook for the turn's first error; True when it handled it (every command exited 0)."""
        # Detached: an interrupt ends the turn, not the hook (it may be reporting or cleaning up).
        hook = self.run_hook("turnError", {"error": str(exc), "error_type": error_type})
        result = await asyncio.shield(self.detach(hook))
        if result is None or result.blocked or not result.exit_codes:
            return False
        handled = all(code == 0 for code in result.exit_codes)
        if handled and result.output.strip():
            self.bus.emit("info", f"[turnError hook] {result.output.strip()}")
        return handled

    def save(self) -> None:
        """Persist the session; a failure is reported, never raised into the turn."""
        try:
            self.session_file.save(self.session)
        except (OSError, ValueError, OllieError) as exc:
            self._not_saved(exc)

    async def save_rewritten(self) -> None:
        """`save` after a history rewrite (rewind, fork): the snapshot, O(history), is encoded and written in a
        thread, so the daemon's other sessions are served meanwhile."""
        try:
            if (write := self.session_file.save_later(self.session)) is not None:
                await asyncio.to_thread(write)
        except (OSError, ValueError, OllieError) as exc:
            self._not_saved(exc)

    def _not_saved(self, exc: BaseException) -> None:
        log.error("session save failed", extra={"error": str(exc)})
        self.bus.emit("error", f"could not save the session: {exc}")

    def retire(self, backend: Backend) -> None:
        """Close `backend` when the running turn ends (its request streams from it)."""
        self._retired.append(backend)

    def take_retired(self) -> list[Backend]:
        """The retired backends not closed yet, handed over once."""
        retired, self._retired = self._retired, []
        return retired

    async def run_turn(self, text: str, *, announce: bool = False, images: Sequence[Image] = ()) -> TurnResult:
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
        if self.stopping.asked:  # a stop came before this turn could be interrupted: it does not begin
            return TurnResult("", "interrupted")
        self.turns_begun += 1
        bus = self.bus
        self.running, self._finishing = True, False
        self.session.begin_turn()
        bus.publish(Event("turn", content="start", prompt=text))
        if announce:  # a prompt the client did not send just now: tell it what runs (and with which images)
            bus.publish(Event("user", content=text, images=tuple(images or ())))
        self._tell_new(self.runtime.warnings)
        self.set_state("thinking")
        loop = self._loop = AgentLoop(self, self.budget)
        # The model's context length (a `/models` request the first time) is asked meanwhile: it touches neither
        # the prompt nor the workspace, and the first turn would otherwise wait for it after the prompt commands.
        limit = asyncio.ensure_future(self.budget.limit())
        number = 0  # the turn's number once the review numbered it (a turn stopped before has none)
        try:
            await loop_share().wait_turn()  # 50 turns started by one batch of submits go on over loop passes
            # The workspace as it was before the turn: what rewind restores and ollie/changes diffs against.
            await self.ready_prompt()  # the prompt commands run for the first turn, not at session/new
            self._tell_new(self.runtime.warnings)
            await self.before_turn()  # inside the turn: an interrupt withdraws what it asks
            number = await self.review.begin_turn()  # numbers the turn, notes where its messages start (ollie.agent.review)
            if self.session.messages:  # the gate may strip earlier tool output to fit: it needs the answer
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
        self._loop = None
        limit.cancel()  # an interrupted or failed turn stops asking
        self._finishing = True
        self.session.end_turn()
        changed = await self.review.end_turn()  # the state the turn left: what its changes and undo measure against
        number = number if number <= len(self.session.turn_starts) else 0  # (none after all: Review.end_turn)
        self.inbox.requeue_injects()
        self.save()
        if result.stop != "interrupted":
            await self._post_turn(result)
        self._tell_new(await asyncio.to_thread(sandbox_warnings, self.runtime))  # off the loop: the policy's file
        if result.reply or (result.error is None and result.stop not in ("error", "interrupted")):
            # The model answered (a Stop after its words too): a failed health check cached before is stale, and the
            # editors ask the health again at the end published next.
            self.setup.backend_answered()
        bus.publish(Event("turn", content=result.stop, changes=changed, turn=number))
        self.inbox.turn_over()
        self.running = False
        for backend in self.take_retired():  # backends a /backend replaced during this turn
            await backend.aclose()
        self.set_state("idle")
        return result

    async def _post_turn(self, result: TurnResult) -> None:
        try:
            post = await self.run_hook("postTurn", {"reply": result.reply, "stop": result.stop})
        except Exception as exc:  # the turn is over; a broken hook must not lose its result
            log.exception("postTurn hook failed")
            self.bus.emit("info", f"hook postTurn failed: {exc}")
            post = None
        if post is not None and post.blocked and post.output.strip():
            self.inbox.continue_with(post.output.strip())  # exit 2: go on, with its output as the prompt
        else:
            self.inbox.add_note(hook_note("postTurn", post))
