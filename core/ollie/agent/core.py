"""The Core: one agent session's public surface (submit, interrupt, inject, queue, observe, configure)."""

from __future__ import annotations

import asyncio
import inspect
import os
from functools import partial
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ollie import paths
from ollie.agent.commands import run_command
from ollie.agent.commands_info import format_context, format_cost, format_usage
from ollie.agent.context import ContextBudget
from ollie.agent.cost import compute_cost
from ollie.agent.events import Bus
from ollie.agent.factories import BackendFactory, DispatcherFactory, env_backend_factory
from ollie.agent.hooks import HookResult, hook_note
from ollie.agent.inbox import Inbox, run_follow_ups
from ollie.agent.limits import LoopLimits
from ollie.agent.loop import AgentLoop, TurnResult
from ollie.agent.persist import SessionFile, open_session
from ollie.agent.runtime import Runtime
from ollie.agent.session import Session, validate_session_id
from ollie.agent.setup import Setup
from ollie.agent.streaming import Completion
from ollie.agent.taskstate import plan_path, read_plan_step
from ollie.agent.watch import ChangeWatch
from ollie.backend.base import Backend
from ollie.backend.types import GenerationParams, Message
from ollie.config import find_agent, load_agent_config
from ollie.errors import OllieError
from ollie.log import get_logger
from ollie.tools.base import Approver, ElevationSetter, ToolInfo

__all__ = ["Core", "TurnResult"]

log = get_logger("ollie.agent.core")


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class Core:
    """One agent session. Build it with `await Core.create(...)`; see docs/ENGINE-API.md."""

    def __init__(
        self, *, setup: Setup, sessions_dir: Path, session: Session, session_file: SessionFile, limits: LoopLimits
    ) -> None:
        self.bus = Bus()
        self.limits = limits
        self.session = session
        self.session_file = session_file
        self.reply = ""
        self.on_rename: Callable[[str], Any] | None = None
        self.on_kill: Callable[[], Any] | None = None
        # Who approves an elevated step under `"elevation": "ask"` (the daemon asks the editor,
        # the terminal asks at its prompt); None: nobody can, so such steps are refused.
        self.approver: Approver | None = None
        self._setup = setup
        self._sessions_dir = sessions_dir
        self._state = "idle"
        self._running = False
        self._finishing = False
        self._task: asyncio.Task[TurnResult] | None = None
        self._turn_lock = asyncio.Lock()
        self._inbox = Inbox(on_queued=self.notify)
        self._tool_calls = 0
        self.context_budget = ContextBudget(self)
        self._watch = ChangeWatch()
        self._closed = False
        # Backends a switch replaced while a turn streamed from them: closed when the turn ends.
        self._retired: list[Backend] = []
        self._detached: set[asyncio.Future[Any]] = set()
        # Build warnings (a workspace at $HOME granted read-only...): shown when the first turn starts.
        self._pending_warnings: list[str] = list(setup.runtime.warnings)
        self._wire_elevation()

    @classmethod
    async def create(
        cls,
        *,
        agent: str = "default",
        cwd: Path | str | None = None,
        backend: str | None = None,
        model: str | None = None,
        session_id: str | None = None,
        env: Mapping[str, str] | None = None,
        sessions_dir: Path | str | None = None,
        max_steps: int | None = None,
        backend_factory: BackendFactory | None = None,
        dispatcher_factory: DispatcherFactory | None = None,
        agents_dirs: list[Path] | None = None,
        limits: LoopLimits | None = None,
    ) -> Core:
        """Load the agent config, resume or start the session, build the runtime and the backend."""
        cfg = load_agent_config(find_agent(agent, agents_dirs))
        work = Path(cwd or os.getcwd()).resolve()
        if not work.is_dir():
            raise ValueError(f"working directory {work} does not exist")
        extra = dict(env or {})
        store = Path(sessions_dir) if sessions_dir else paths.sessions_dir()
        session_file, session = open_session(store, session_id)
        session.agent = agent
        setup = await Setup.create(
            cfg, agent=agent, cwd=work, env=extra, session_id=session.id, backend=backend, model=model,
            backend_factory=backend_factory or env_backend_factory(extra), dispatcher_factory=dispatcher_factory,
            agents_dirs=agents_dirs, max_steps=max_steps,
        )
        core = cls(setup=setup, sessions_dir=store, session=session, session_file=session_file,
                   limits=limits or LoopLimits())
        core._inbox.add_note(hook_note("agentSpawn", await core.run_hook("agentSpawn", {})))
        return core

    # --- turns -----------------------------------------------------------

    async def submit(self, text: str) -> TurnResult:
        """A command runs at once; anything else is a turn (one at a time), then the queue drains."""
        output = await run_command(self, text)
        if output is not None:
            return TurnResult(output, "command")
        if self._closed:
            return TurnResult("", "error", "this session is closed")
        async with self._turn_lock:
            if self._closed:
                return TurnResult("", "error", "this session is closed")
            self._inbox.user_prompt()
            result = await self._run_turn(text)
            await run_follow_ups(self._inbox, result, partial(self._run_turn, announce=True), lambda: self._closed)
        return result

    async def run_queue(self) -> None:
        """Run the queued prompts now, held ones included (the user's word)."""
        self._inbox.release()
        async with self._turn_lock:
            await run_follow_ups(self._inbox, TurnResult("", "end"), partial(self._run_turn, announce=True),
                                 lambda: self._closed)

    async def _run_turn(self, text: str, *, announce: bool = False) -> TurnResult:
        self._task = asyncio.create_task(self._turn(text, announce=announce))
        try:
            return await self._task
        finally:
            self._task = None

    async def _turn(self, text: str, *, announce: bool = False) -> TurnResult:
        self._running, self._finishing = True, False
        self.session.begin_turn()
        self.bus.emit("turn", "start")
        if announce:  # a prompt the client did not send just now: tell it what runs
            self.bus.emit("user", text)
        pending, self._pending_warnings = self._pending_warnings, []
        for warning in pending:
            self.bus.emit("info", f"warning: {warning}")
        self.set_state("thinking")
        loop = AgentLoop(self)
        try:
            await self.context_budget.limit()
            result = await loop.run(text)
        except asyncio.CancelledError:
            # Interrupted: the task completes with a result instead of propagating.
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            result = TurnResult(loop.reply, "interrupted")
        except Exception as exc:  # a bug must end the turn, not the daemon
            log.exception("turn failed")
            self.bus.emit("error", f"internal error: {exc}")
            result = TurnResult(loop.reply, "error", f"internal error: {exc}")
        self._finishing = True
        self.session.end_turn()
        self._inbox.requeue_injects()
        self.save()
        if result.stop != "interrupted":
            try:
                post = await self.run_hook("postTurn", {"reply": result.reply, "stop": result.stop})
            except Exception as exc:  # the turn is over; a broken hook must not lose its result
                log.exception("postTurn hook failed")
                self.bus.emit("info", f"hook postTurn failed: {exc}")
                post = None
            if post is not None and post.blocked and post.output.strip():
                self._inbox.continue_with(post.output.strip())  # exit 2: go on, with its output as the prompt
            else:
                self._inbox.add_note(hook_note("postTurn", post))
        self.bus.emit("turn", result.stop)
        self._running = False
        while self._retired:  # backends a /backend replaced during this turn
            await self._retired.pop().aclose()
        self.set_state("idle")
        return result

    def interrupt(self, reason: str = "") -> bool:
        """Cancel the running turn (model stream and tool process groups); False when idle."""
        task = self._task
        if task is None or task.done() or not self._running or self._finishing:
            return False
        log.info("interrupt", extra={"reason": reason})
        task.cancel(reason or None)
        return True

    # --- waiting input (see Inbox) ---------------------------------------

    def inject(self, text: str) -> None:
        """Append `text` to the next tool result of the running turn (to the queue when idle)."""
        self._inbox.inject(text, running=self._running)

    def replace_injects(self, text: str) -> None:
        """Replace whatever injects are pending with `text`."""
        self._inbox.replace_injects(text, running=self._running)

    def pop_inject(self) -> str:
        """Take every pending inject, joined (empty when none)."""
        return self._inbox.pop_inject()

    def queue(self, text: str) -> int:
        """Add a prompt to the FIFO; returns its depth. One that comes just as a turn ended runs."""
        depth = self._inbox.queue(text)
        if not self._turn_lock.locked() and self._inbox.just_ended() and not self._closed:
            self._detach(self.run_queue())  # the sender saw a turn running; it must not wait for the next one
        return depth

    def _detach(self, work: Any) -> asyncio.Future[Any]:
        self._detached.add(task := asyncio.ensure_future(work))  # kept: the loop holds tasks only weakly
        task.add_done_callback(self._detached.discard)
        return task

    def queue_held(self) -> bool:
        """Whether queued prompts wait for `run_queue` (an interrupt stopped the turn before them)."""
        return self._inbox.held

    def pop_queue(self) -> str | None:
        """Take the oldest queued prompt."""
        return self._inbox.pop_queue()

    def queued(self) -> list[str]:
        """The queued prompts, oldest first."""
        return self._inbox.queued()

    def clear_queue(self) -> int:
        """Drop every queued prompt; returns how many."""
        return self._inbox.clear_queue()

    def take_notes(self) -> list[str]:
        """Hook output waiting to be added to the next prompt."""
        return self._inbox.take_notes()

    # --- observation -----------------------------------------------------

    @property
    def is_running(self) -> bool:
        """True while a turn runs."""
        return self._running

    @property
    def state(self) -> str:
        """`idle`, `thinking` or `calling: <tool>`."""
        return self._state

    def set_state(self, state: str) -> None:
        """Set the state (the loop calls this); publishes a `state` event on change."""
        if state != self._state:
            self._state = state
            self.notify()

    def notify(self) -> None:
        """Publish a `state` event and wake `wait_change` callers."""
        self.bus.emit("state")
        self._watch.changed()

    def field_value(self, name: str) -> str:
        """The current value of a `wait_change` field, as a string."""
        values: dict[str, Callable[[], str]] = {
            "state": lambda: self._state,
            "usage": self.usage,
            "cost": self.cost,
            "cwd": lambda: str(self.cwd),
            "context": self.ctx_size,
            "running": lambda: str(self._running),
        }
        if name not in values:
            raise ValueError(f"unknown field {name!r} (known: {', '.join(values)})")
        return values[name]()

    async def wait_change(self, field: str, current: str, timeout: float | None = None) -> tuple[str, bool]:
        """Wait until `field` differs from `current`: (value, True), or (value, False) on timeout."""
        self.field_value(field)  # an unknown field fails now, not after the wait
        return await self._watch.wait_change(lambda: self.field_value(field), current, timeout)

    @property
    def runtime(self) -> Runtime:
        """The active agent's Runtime (an /agent switch replaces it)."""
        return self._setup.runtime

    @property
    def setup_warnings(self) -> list[str]:
        """What building the agent warned about (sandbox protections, failed prompt commands)."""
        return list(self.runtime.warnings)

    @property
    def backend_error(self) -> str:
        """Why the backend could not be built ('' when it was)."""
        return self._setup.backend_error

    @property
    def agent_name(self) -> str:
        """The active agent config's name."""
        return self._setup.agent

    @property
    def backend(self) -> Backend | None:
        """The active backend (None when it could not be built; see `backend_error`)."""
        return self._setup.backend

    @property
    def backend_name(self) -> str:
        """The active backend's name."""
        return self.backend.name if self.backend is not None else "none"

    @property
    def model_name(self) -> str:
        """The model requests go to."""
        return self.backend.model if self.backend is not None else ""

    @property
    def session_id(self) -> str:
        """The session's id."""
        return self.session.id

    @property
    def cwd(self) -> Path:
        """The working directory of tools, hooks and prompt commands."""
        return self._setup.cwd

    @property
    def env(self) -> dict[str, str]:
        """The extra environment for tools, hooks and prompt commands."""
        return dict(self._setup.env)

    @property
    def agents_dirs(self) -> list[Path]:
        """Where agent configs are looked up."""
        return self._setup.agents_dirs

    @property
    def sessions_dir(self) -> Path:
        """Where this core saves sessions."""
        return self._sessions_dir

    @property
    def tool_call_count(self) -> int:
        """Tool calls executed over the core's life."""
        return self._tool_calls

    def count_tool_call(self) -> None:
        """Account one executed tool call (the loop calls this)."""
        self._tool_calls += 1

    def tools(self) -> list[ToolInfo]:
        """The tools the model is offered."""
        return list(self.runtime.tool_infos)

    def system_prompt(self) -> str:
        """The rendered system prompt."""
        return self.runtime.preamble

    def generation_params(self) -> GenerationParams:
        """The agent config's sampling parameters with the caller's overrides on top."""
        return self._setup.generation_params()

    def context(self) -> list[Message]:
        """The messages the next request would send, without the system prompt."""
        return [m for m in self.context_budget.request_messages() if m.role != "system"]

    # --- context size, usage, cost ---------------------------------------

    def context_info(self) -> dict[str, int]:
        """`{"tokens", "limit"}` (limit 0 = not known yet)."""
        return self.context_budget.info()

    def usage_info(self) -> dict[str, int]:
        """Token totals of the session."""
        s = self.session
        return {
            "input": s.total_input_tokens,
            "output": s.total_output_tokens,
            "cachedInput": s.total_cached_input_tokens,
            "cacheCreation": s.total_cache_creation_tokens,
            "requests": s.total_requests,
        }

    def cost_info(self) -> dict[str, float]:
        """Last turn's and the session's cost in USD."""
        return {"lastTurn": self.session.last_turn_cost_usd, "session": self.session.session_cost_usd}

    def ctx_size(self) -> str:
        """The context size as a human string (as /context prints it)."""
        return format_context(self.context_info())

    def usage(self) -> str:
        """Token usage as a human string (as /usage prints it)."""
        return format_usage(self.usage_info())

    def cost(self) -> str:
        """Cost as a human string (as /cost prints it)."""
        return format_cost(self.cost_info())

    def record_usage(self, completion: Completion) -> None:
        """Account a request's usage and cost; publish `usage` (the loop calls this)."""
        usage = completion.usage
        if usage is None:
            return
        cost = compute_cost(self.model_name, usage)
        self.session.add_usage(usage, cost)
        self.bus.emit(
            "usage",
            f"{usage.input_tokens} {usage.output_tokens} {usage.cached_input_tokens} "
            f"{usage.cache_creation_tokens} {cost:.6f}",
        )
        self.notify()

    # --- loop callbacks --------------------------------------------------

    async def run_hook(self, name: str, payload: dict[str, Any]) -> HookResult | None:
        """Run hook `name` with the standard payload fields; None when the agent sets no such hook."""
        hooks = self.runtime.hooks
        if hooks is None or not hooks.has(name):
            return None
        base = {
            "session_id": self.session_id,
            "cwd": str(self.cwd),
            "agent": self.agent_name,
            "backend": self.backend_name,
            "model": self.model_name,
        }
        timeout = self.limits.hook_timeout_s
        result = await hooks.run(name, {**base, **payload}, cwd=self.cwd, env=self.env, timeout=timeout)
        for warning in result.warnings:
            self.bus.emit("info", warning)
        return result

    async def turn_error(self, exc: BaseException, error_type: str) -> bool:
        """The turnError hook for the turn's first error; True when it handled it (every command exited 0)."""
        # Detached: an interrupt ends the turn, not the hook (it may be reporting or cleaning up).
        result = await asyncio.shield(self._detach(self.run_hook("turnError", {"error": str(exc),
                                                                                "error_type": error_type})))
        if result is None or result.blocked or not result.exit_codes:
            return False
        handled = all(code == 0 for code in result.exit_codes)
        if handled and result.output.strip():
            self.bus.emit("info", f"[turnError hook] {result.output.strip()}")
        return handled

    def plan_step(self) -> str:
        """The next unchecked step of the session's plan file."""
        return read_plan_step(plan_path(self.session.id))

    def save(self) -> None:
        """Persist the session; a failure is reported, never raised into the turn."""
        try:
            self.session_file.save(self.session)
        except (OSError, ValueError, OllieError) as exc:
            log.error("session save failed", extra={"error": str(exc)})
            self.bus.emit("error", f"could not save the session: {exc}")

    # --- commands' members -------------------------------------------------

    async def compact(self) -> str:
        """Compact now (after a running turn); what happened, as a line."""
        async with self._turn_lock:
            return (await self.context_budget.compact(announce=False)).message

    def clear(self) -> None:
        """Drop history and task state; refused while a turn runs."""
        if self._running:
            raise RuntimeError("cannot clear while a turn is running; interrupt it first")
        self.session.clear()
        self.save()
        self.notify()

    # --- configuration (see Setup) ---------------------------------------

    @property
    def max_steps(self) -> int:
        """Tool rounds per turn (0 = unlimited): the override, else the agent config's."""
        return self._setup.max_steps

    def set_max_steps(self, steps: int) -> None:
        """Override the tool rounds per turn (0 = unlimited)."""
        self._setup.set_max_steps(steps)

    async def switch_backend(self, name: str) -> None:
        """Use backend `name` from the next request on (a running one finishes on the old); on failure the old stays."""
        old = self._setup.replace_backend(name)
        self.context_budget.forget_limit()
        if old is not None:
            if self._running:
                self._retired.append(old)
            else:
                await old.aclose()
        self.notify()

    def switch_model(self, name: str) -> None:
        """Send later requests to model `name`."""
        self._setup.switch_model(name)
        self.context_budget.forget_limit()
        self.notify()

    async def switch_agent(self, name: str) -> list[str]:
        """Swap in agent `name`'s runtime (fresh dispatcher) as one step and clear the session."""
        async with self._turn_lock:
            old, retired, warnings = await self._setup.load_agent(name, session_id=self.session.id)
            self._wire_elevation()
            self.session.agent = name
            self.context_budget.forget_limit()
            self.session.clear()
            self.save()
            await old.dispatcher.aclose()
            if retired is not None:
                await retired.aclose()
            self.notify()
            return warnings

    def _wire_elevation(self) -> None:
        runtime = self.runtime
        for _, server in runtime.dispatcher.servers():
            if isinstance(server, ElevationSetter):
                server.set_elevation(runtime.config.elevation, self.approve_elevation)

    async def approve_elevation(self, what: str) -> bool | None:
        """Ask `approver` whether `what` may run outside the sandbox (None: nobody to ask)."""
        if self.approver is None:
            return None
        self.bus.emit("info", f"asking to run outside the sandbox:\n{what}")
        approved = bool(await _maybe_await(self.approver(what)))
        self.bus.emit("info", "approved: running outside the sandbox" if approved else "declined: not run")
        return approved

    def set_cwd(self, path: Path | str) -> None:
        """Move the working directory of tools, hooks and prompt commands."""
        self._setup.set_cwd(path)
        self.notify()

    def set_env(self, key: str, value: str) -> None:
        """Set an extra environment variable for tools, hooks and prompt commands."""
        self._setup.set_env(key, value)

    def set_session_id(self, new_id: str) -> None:
        """Save the session under `new_id` from now on: the old file goes; tools and the plan file follow."""
        old, old_path = self.session.id, self.session_file.path
        self.session.id = validate_session_id(new_id)
        self.session_file = SessionFile(self._sessions_dir, new_id)
        self.session_file.rewrite(self.session)
        self._setup.move_session(old, new_id, old_file=old_path)

    def set_generation_params(self, params: GenerationParams) -> None:
        """Override sampling parameters (fields left None fall back to the agent config's)."""
        self._setup.params = params

    async def backend_health(self) -> dict[str, Any]:
        """The backend's health (`backendStatus` of ollie/state): checked on the first ask and after a switch."""
        return await self._setup.backend_health()

    async def list_models(self) -> list[str]:
        """The backend's models."""
        return await self.backend.list_models() if self.backend is not None else []

    async def rename(self, title: str) -> None:
        """Title the session: the daemon's `on_rename` when set, else stored in the session."""
        if self.on_rename is not None:
            await _maybe_await(self.on_rename(title))
            return
        self.session.title = title
        self.save()

    async def kill(self) -> None:
        """Interrupt, save, close; then tell the daemon through `on_kill`."""
        await self.close()
        if self.on_kill is not None:
            await _maybe_await(self.on_kill())

    async def close(self) -> None:
        """Interrupt a running turn, save the session, close backend and tool servers."""
        if self._closed:
            return
        self._closed = True
        task = self._task
        if task is not None:
            self.interrupt("close")
            await asyncio.wait({task}, timeout=self.limits.close_wait_s)
        self.save()
        for backend in (*self._retired, self.backend):
            if backend is not None:
                await backend.aclose()
        await self.runtime.dispatcher.aclose()
        # The session's private temp dir and scratch files (see SessionDirs) go with it.
        from ollie.tools.execute.sessiondirs import SessionDirs

        await asyncio.to_thread(SessionDirs.for_session(self.session_id).remove)
        self.bus.close()

