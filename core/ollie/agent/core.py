"""The Core: one agent session's public surface (submit, interrupt, inject, queue, observe, configure)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ollie import paths
from ollie.agent.approval import ApprovalGate, check_mode
from ollie.agent.attachments import Attachments
from ollie.agent.corehistory import HistoryMembers
from ollie.agent.coremcp import McpMembers
from ollie.agent.editorcontext import is_command
from ollie.agent.events import Bus
from ollie.agent.factories import BackendFactory, DispatcherFactory
from ollie.agent.hooks import hook_note
from ollie.agent.limits import LoopLimits
from ollie.agent.loop import TurnResult
from ollie.agent.opening import Opened, open_parts, report_save_errors
from ollie.agent.questions import Answer, StepApprover, StepQuestion
from ollie.agent.review import Review
from ollie.agent.runtime import Runtime, cancel_prompt, server_kinds
from ollie.agent.setup import sandbox_problem, sandbox_warnings
from ollie.agent.steps import script_kinds
from ollie.agent.stopping import Stopped, Work, stoppable
from ollie.agent.taskstate import PlanEntry
from ollie.agent.turnhost import TurnHost, forward
from ollie.backend.base import Backend
from ollie.backend.types import GenerationParams, Image, Message
from ollie.config import APPROVAL_MODES
from ollie.escapes import one_name
from ollie.mcp.attach import host_of
from ollie.mcp.prompts import expand, is_prompt_line
from ollie.sessions.errors import owners_only
from ollie.sessions.session import Session
from ollie.tools.base import ToolInfo
from ollie.tools.documents import EditorDocuments

if TYPE_CHECKING:  # the editor's knowledge loads with the first editor call
    from ollie.agent.inbox import ContextItem
    from ollie.agent.surface import Switched
    from ollie.tools.editor.knowledge import EditorKnowledge

__all__ = ["Core", "TurnResult"]

TERMINAL_RESUME = "`/resume <n|id>` (or a new run: `ollie --session <id>`)"


class Core(HistoryMembers, McpMembers):
    """One agent session. Build it with `await Core.create(...)`; see docs/ENGINE-API.md."""

    def __init__(self, opened: Opened, *, limits: LoopLimits) -> None:
        setup, session_file = opened.setup, opened.session_file
        self._setup = setup
        # The `ollie:kind` of user tool scripts (cached per name): approval and the history's steps.
        self.step_kinds = server_kinds(lambda: self.runtime.dispatcher, script_kinds(paths.tools_path()))
        self._approval = ApprovalGate(mode=lambda: self.approval, always=self._always,
                                      remember=self._allow_always, cwd=lambda: self.cwd,
                                      kind_of=self.step_kinds, documents=lambda: self._attached.documents,
                                      # "ask" with nobody to ask: the step's question alone, the gate refuses.
                                      elevation=lambda: self.runtime.config.elevation
                                      if self.step_approver is not None or self.runtime.config.elevation != "ask" else "",
                                      parse=lambda tool, args: self.runtime.request(tool, args),
                                      scripts=lambda tool, args: self.runtime.resolver(tool, args))
        self._approval.on_ask = self._asked
        self._approval.write_refusal = lambda tool, args: self.runtime.write_refusal(tool, args)
        self._host = TurnHost(setup=setup, sessions_dir=opened.sessions_dir, session=opened.session,
                              session_file=session_file, limits=limits, approval=self._approval,
                              before_turn=self._mcp_before_turn)
        self.on_rename: Callable[[str], Awaitable[None]] | None = None
        self.on_kill: Callable[[], Awaitable[None]] | None = None
        # Whether each question's answer is told as an `info` line ("allowed: Edit app.py"); a front end whose question
        # card shows it (ACP's permission request) sets False: the line would read as the model's words.
        self.tell_answers = True
        # What resumes a saved session in this front end, for `/help`, `/resume` and an agent switch to name: the
        # terminal's by default (the daemon and `ollie acp` set their own).
        self.resume_how = TERMINAL_RESUME
        self.help_width: int | None = 80  # a terminal's usual width (the daemon and `ollie acp` leave it to the window)
        self._attached = Attachments(runtime=lambda: self._setup.runtime, bus=self._host.bus, review=self._host.review,
                                     cwd=lambda: self.cwd, approve_elevation=self._approval.ask_outside)
        self._owner = ""
        self._saved_cwd = opened.saved_cwd
        # A teammate's session: this user's "always" answers, kept apart from (and never saved over) the owner's.
        self._guest_always: list[str] = []
        self._turn_lock = asyncio.Lock()
        self._inbox = self._host.inbox
        self._closed = False
        # The queued prompt handed to a turn whose task has not begun yet (it starts at the next loop pass), and
        # `turns_begun` then: still listed as queued, else a reader in between found it nowhere, its `user` event
        # not published (a chat dropped its queued line, the images it named with it).
        self._handing: tuple[str, int] | None = None
        self._live_lock = opened.lock
        self._attached.wire()
        self._wire_mcp()
        report_save_errors(session_file, self._host.bus)

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
        backend_factory: BackendFactory | None = None,
        dispatcher_factory: DispatcherFactory | None = None,
        agents_dirs: list[Path] | None = None,
        limits: LoopLimits | None = None,
        prompt_now: bool = False,
        owner: str = "",
    ) -> Core:
        """Open the session (`ollie.agent.opening.open_parts`) and build its Core; `prompt_now` runs the prompt
        commands at once (a daemon's default session), not on their first need; `owner`: see `shared_by`."""
        opened = await open_parts(
            agent=agent, cwd=cwd, backend=backend, model=model, session_id=session_id, env=env,
            sessions_dir=sessions_dir, backend_factory=backend_factory,
            dispatcher_factory=dispatcher_factory, agents_dirs=agents_dirs, prompt_now=prompt_now and not owner,
        )
        core = cls(opened, limits=limits or LoopLimits())
        if owner:  # before its agentSpawn hook: a teammate's agent runs no command unsandboxed for this user
            core.shared_by(owner)
        if opened.session.messages:  # a resumed history's size is counted once, here in a thread, not by the loop
            await asyncio.to_thread(core._host.budget.estimate)
            await core._host.reread_plan()  # and its plan read, for the front ends to show
        core._inbox.add_note(hook_note("agentSpawn", await core._host.run_hook("agentSpawn", {})))
        return core

    # --- turns -----------------------------------------------------------

    async def submit(self, text: str, images: Sequence[Image] = (), *, as_prompt: bool = False,
                     announce: bool = False) -> TurnResult:
        """A command runs at once; anything else is a turn (one at a time), then the queue drains. With `as_prompt`
        the text is a turn's prompt whatever it starts with (text the user did not type: a `!` in it runs nothing);
        `announce` publishes the turn's prompt (a `user` event) for a chat that did not send it."""
        with self._host.stopping.working():  # `stop` waits for this submit
            return await self._submit(text, images, as_prompt, announce)

    async def _command(self, text: str) -> TurnResult:
        """A slash command or `!cmd`, run at once."""
        # The commands (and all they show) load with the first one.
        from ollie.agent.commands import ShellFailed, run_command

        await self._host.ready_prompt()  # /context, /sp and the like show the prompt the model will see
        try:
            output = await run_command(self, text)
        except Stopped as exc:  # a stop cut a `!cmd` or `/compact` short
            return TurnResult(str(exc), "interrupted")
        except ShellFailed as exc:
            return TurnResult(str(exc), "command", failed=True)
        finally:
            if text.lstrip().startswith("!"):  # the user's shell may have written the plan (`!task_check 2`): shown now
                await self._host.reread_plan()
        return TurnResult(output or "", "command")

    async def _submit(self, text: str, images: Sequence[Image], as_prompt: bool, announce: bool) -> TurnResult:
        if not as_prompt and is_prompt_line(text):  # `/mcp:<server>:<prompt>`: the server's prompt is the turn's text
            try:
                text = await expand(host_of(self.runtime.dispatcher), text)
            except Exception as exc:  # noqa: BLE001 - the server's error (McpError included) is the user's news
                said = one_name(str(exc), 1000)  # the server's words: on one line, escaped, cut (an McpError's: 8 MiB)
                self.bus.emit("error", f"{text.split()[0]} failed: {said}")
                return TurnResult(said, "command")
            as_prompt = True  # the server's words: a `!cmd` in them would run unsandboxed, with the daemon's keys
        if not as_prompt and is_command(text):
            return await self._command(text)
        if self._closed:
            return TurnResult("", "error", "this session is closed")
        async with self._turn_lock:
            if self._closed:
                return TurnResult("", "error", "this session is closed")
            if refused := self._teammates_unsandboxed() or await self._not_saved():
                self.bus.emit("error", refused)
                return TurnResult("", "error", refused)
            self._inbox.user_prompt()
            result = await self._host.run_turn(text, images=images, announce=announce)
            await self._run_follow_ups(result)
        return result

    async def run_queue(self) -> None:
        """Run the queued prompts now, held ones included (the user's word)."""
        self._inbox.release()
        await self._run_queue(self._host.stopping.enlist())

    async def _run_queue(self, work: Work) -> None:
        if self._teammates_unsandboxed():
            return  # held, as `_submit` says why
        with self._host.stopping.working(work):
            async with self._turn_lock:
                await self._run_follow_ups(TurnResult("", "end"))

    async def _run_follow_ups(self, result: TurnResult) -> None:
        """After `result`'s turn: a postTurn continuation, then queued prompts, each a turn of its own, until one is
        interrupted (what is queued then is held for the user's word)."""
        stopping = self._host.stopping
        while result.stop != "interrupted" and not stopping.asked and not self._closed:
            text = self._inbox.next_prompt()
            if text is None:
                break
            begun = self._host.turns_begun
            self._handing = (text, begun)
            try:
                result = await self._host.run_turn(text, images=self._inbox.taken_images, announce=True)
            finally:
                self._handing = None
            if self._host.turns_begun == begun:  # a stop came as it was handed over: it waits, held, not dropped
                self._inbox.put_back()
        self._inbox.turns_ended(interrupted=result.stop == "interrupted" or stopping.asked)

    def interrupt(self, reason: str = "") -> bool:
        """Cancel the running turn (model stream and tool process groups); False when idle."""
        return self._host.interrupt(reason)

    def stop(self, reason: str = "") -> asyncio.Future[bool]:
        """Interrupt the running turn and every turn the submits under way would start next (one about to begin,
        a postTurn continuation, queued prompts: held); done once they have all returned (False at once when
        nothing runs). Asked when called; a submit that begins later runs as usual."""
        done = self._host.stopping.ask()
        self._host.interrupt(reason)
        return done

    # --- waiting input (see Inbox) ---------------------------------------

    def inject(self, text: str) -> None:
        """Append `text` to the next tool result of the running turn (to the queue when idle)."""
        self._inbox.inject(text, running=self._host.running)

    def replace_injects(self, text: str) -> None:
        """Replace whatever injects are pending with `text`."""
        self._inbox.replace_injects(text, running=self._host.running)

    def drop_injects(self) -> None:
        """Forget whatever injects are pending (queued as a prompt when idle)."""
        self._inbox.drop_injects()

    def queue(self, text: str, images: Sequence[Image] = (), *, saw_end: bool = True, held: bool = False,
              context: Sequence[ContextItem] = ()) -> int:
        """Add a prompt (with its images) to the FIFO; returns its depth. With `saw_end` it waits for a turn to end after now (the
        running one's, or the next), even one whose submit still drains the queue; without it the sender had not seen
        the last turns end: it queued the prompt for them, and once they have ended it runs now, not after the next.
        `held`: it waits for the user's word, as those queued before an interrupt do. `context`: the client's context
        items, handed back by `pop_queue`."""
        depth = self._inbox.queue(text, tuple(images), for_next_end=saw_end, held=held, context=tuple(context))
        if not saw_end and not self._turn_lock.locked() and self._inbox.follows_on() and not self._closed:
            # Under way from now, not from the task's first pass: a stop in between holds the prompt.
            self._host.detach(self._run_queue(self._host.stopping.enlist()))
        return depth

    def queue_room(self, text: str) -> None:
        """QueueFull when the queue has no room for a prompt of `text` (checked before its images are read)."""
        self._inbox.room(text)

    def queued_bytes(self) -> int:
        """The bytes (text and images) of what waits in the queue."""
        return self._inbox.waiting_bytes()

    def queue_held(self) -> bool:
        """Whether queued prompts wait for `run_queue` (an interrupt stopped the turn before them)."""
        return self._inbox.held

    def pop_queue(self) -> tuple[str, tuple[Image, ...], tuple[ContextItem, ...]] | None:
        """Take back the latest queued prompt with its images and context items."""
        return self._inbox.pop_queue()

    def queued(self) -> list[str]:
        """The queued prompts, oldest first (one handed to a turn that has not begun yet first)."""
        handing = self._handing
        waiting = self._inbox.queued()
        return [handing[0], *waiting] if handing is not None and handing[1] == self._host.turns_begun else waiting

    def clear_queue(self) -> int:
        """Drop every queued prompt; returns how many."""
        return self._inbox.clear_queue()

    # --- observation -----------------------------------------------------

    is_running: bool = forward("_host.running")  # True while a turn runs
    is_answering: bool = forward("_host.answering")  # True while a running turn's prompt is saved, its reply not yet
    streaming: tuple[str, str] = forward("_host.streaming")  # the answering reply's text and reasoning so far
    is_prompting: bool = forward("_host.prompting")  # True while a running turn's prompt is not saved yet
    state: str = forward("_host.state")  # `idle`, `thinking` or `calling: <tool>`
    plan: list[PlanEntry] = forward("_host.plan")  # the task_* tools' checklist, bounded (`plan_entries`)
    reply: str = forward("_host.reply")  # the last assistant text
    bus: Bus = forward("_host.bus")  # the event bus
    session: Session = forward("_host.session")  # the session (messages, task state, totals)
    runtime: Runtime = forward("_setup.runtime")  # the active agent's Runtime (an /agent switch replaces it)
    backend_error: str = forward("_setup.backend_error")  # why the backend could not be built ('' when it was)
    agent_name: str = forward("_setup.agent")  # the active agent config's name
    backend: Backend | None = forward("_setup.backend")  # the active backend (None when it could not be built)
    model_name: str = forward("_host.model_name")  # the model requests go to
    session_id: str = forward("_host.session.id")  # the session's id
    cwd: Path = forward("_setup.cwd")  # the working directory of tools, hooks and prompt commands
    agents_dirs: list[Path] = forward("_setup.agents_dirs")  # where agent configs are looked up
    sessions_dir: Path = forward("_host.sessions_dir")  # where this core saves sessions
    tool_call_count: int = forward("_host.tool_calls")  # tool calls executed over the core's life
    review: Review = forward("_host.review")  # a turn's changes, undo, rewind (ollie.agent.review)
    max_steps: int = forward("_host.max_steps")  # tool rounds per turn (0 = unlimited)

    @property
    def setup_warnings(self) -> list[str]:
        """What building the agent warned about (sandbox protections, failed prompt commands)."""
        return list(sandbox_warnings(self.runtime))

    def sandbox_problem(self) -> str:
        """Why the session's sandbox policy does not load (file and key named, what to do), "" when it does."""
        return sandbox_problem(self.runtime)

    @property
    def backend_name(self) -> str:
        """The active backend's name."""
        return self.backend.name if self.backend is not None else "none"

    @property
    def backend_said(self) -> str:
        """The active backend as its errors name it (`Backend.said`): a local server by its host and port."""
        return self.backend.said if self.backend is not None else "none"

    @property
    def env(self) -> dict[str, str]:
        """The extra environment for tools, hooks and prompt commands."""
        return dict(self._setup.env)

    def tools(self) -> list[ToolInfo]:
        """The tools the model is offered."""
        return list(self.runtime.tools)

    def system_prompt(self) -> str:
        """The rendered system prompt ("" while its commands wait for the first turn: see `ready_prompt`)."""
        return self.runtime.preamble

    async def ready_prompt(self) -> str:
        """Run the agent's prompt commands now if they have not run yet; the system prompt."""
        await self._host.ready_prompt()
        return self.runtime.preamble

    def context(self) -> list[Message]:
        """The messages the next request would send, without the system prompt."""
        messages = self._host.budget.request_messages()
        # Only the first is a system one (a history holds none): ollie/context takes this on the loop, where a
        # walk testing each of 100k messages cost ~5 ms, 2.5x the list's copy.
        if messages and messages[0].role == "system":
            del messages[0]
        return messages

    # --- context size, usage, cost ---------------------------------------

    def context_info(self) -> dict[str, int]:
        """`{"tokens", "limit"}` (limit 0 = not known yet)."""
        return self._host.budget.info()

    async def context_limit(self) -> int:
        """The model's context length, asked of the backend if not known yet (once per model); 0 while unknown."""
        return await self._host.budget.limit()

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

    def shared_by(self, owner: str) -> None:
        """The session is `owner`'s, shared to this user's team: read and resume only (see `owners_only`), in this
        user's own approval mode and "always" answers, its agent's prompt commands and hooks sandboxed."""
        self._owner = owner
        self._setup.confine_commands(owner)
        # Its saved directory stays the owner's (ACP lists sessions by it), not where this user's checkout is.
        self.session.cwd = self._saved_cwd or self.session.cwd

    def _teammates_unsandboxed(self) -> str | None:
        """Why no turn runs here (None: they may): a teammate's session whose agent runs without a sandbox. The owner's
        choice of agent is no licence for steps with this user's rights (a switch to one is asked; this was not)."""
        if not (self._owner and self.runtime.config.unsandboxed):
            return None
        return (f"session {self.session_id} is {self._owner}'s and runs agent {self.agent_name!r} without a sandbox: "
                "its steps would run with your full rights, so only its owner may run its turns")

    async def _not_saved(self) -> str | None:
        """Why no turn runs here (None: they may): its store would save none of it, another process having taken the
        session over (an answer that is then lost, the user told once, was how it went). The last turn's saves, when
        some are still under way, may be what finds that: they are waited for, a few seconds at most (a store that slow
        lets the turn go on)."""
        log = self._host.session_file
        if (pending := log.pending()) is not None:
            with suppress(TimeoutError):
                async with asyncio.timeout(5.0):
                    await asyncio.wrap_future(pending)
        lost = log.cut_off()
        return f"this turn was not run: {lost}" if lost else None

    def owners_only(self, what: str) -> None:
        """ReadOnlyError unless this user owns the session (a team member may read and resume it, not `what`)."""
        if self._owner:
            raise owners_only(self.session_id, self._owner, what)

    # --- configuration (see Setup) ---------------------------------------

    def set_max_steps(self, steps: int) -> None:
        """Override the tool rounds per turn (0 = unlimited)."""
        self._setup.set_max_steps(steps)

    async def switch_backend(self, name: str) -> None:
        """Use backend `name` from the next request on (a running one finishes on the old; saved with the session); on
        failure the old stays."""
        old = self._setup.replace_backend(name)
        self.session.backend, self.session.model = name, ""
        self._host.save()
        self._host.budget.forget_limit()
        if old is not None:
            if self._host.running:
                self._host.retire(old)
            else:
                await old.aclose()
        self._host.notify()

    def switch_model(self, name: str) -> None:
        """Send later requests to model `name` (saved with the session)."""
        self._setup.switch_model(name)
        self.session.model = name
        self._host.budget.forget_limit()
        self._host.save()
        self._host.notify()

    async def switch_agent(self, name: str) -> Switched:
        """Swap in agent `name`'s runtime and start a new conversation in the session, the one before saved as a
        session of its own (`Switched`); an unsandboxed agent is asked about first, every time (AgentSwitchRefused
        when not allowed)."""
        self.owners_only("change its agent")  # before asking: a team member's switch is refused whatever it is
        if name != self.agent_name:
            try:  # a stop ends the question: it is no turn, and the stop would wait for the user's answer
                from ollie.agent.agentswitch import check  # reads and compares agent configs: only on a switch

                await stoppable(check(name, self.agents_dirs, self._approval.confirm))
            except Stopped:
                raise Stopped(f"agent not switched: stopped while asking about {name}") from None
        async with self._turn_lock:
            # Kept once the new runtime is built, before it is swapped in: a copy that fails leaves the old agent whole
            old, retired, warnings, kept = await self._setup.load_agent(
                name, session_id=self.session.id, first=lambda: self._keep("agent not switched"))
            self._host.told(warnings)  # the caller shows them (`/agent`, ACP's agent picker)
            self._attached.wire()
            self._wire_mcp()
            switched = await self._start_over(kept, warnings)
            self.session.agent = name
            self.session.backend = self.session.model = ""  # the new agent config's, as after a resume
            self._host.budget.forget_limit()
            self._host.save()
            await old.dispatcher.aclose()
            if retired is not None:
                await retired.aclose()
            self._rewound()
            return switched


    def set_documents(self, documents: EditorDocuments | None) -> None:
        """Let the file tools read the editor's unsaved text and edit its buffers through `documents`."""
        self._attached.set_documents(documents)
        self._host.behind = self._attached.documents

    def set_editor(self, editor: EditorKnowledge | None) -> None:
        """Offer the editor tools answered by `editor`, and show the model the new errors of each step's changes."""
        from ollie.tools.editor.postedit import PostEditDiagnostics

        self._host.post_edit = PostEditDiagnostics(editor, cwd=lambda: self.cwd) if editor is not None else None
        self._attached.set_editor(editor)

    # --- approval (see ollie.agent.approval) -----------------------------------

    @property
    def approval(self) -> str:
        """The approval mode: the session's own (a teammate's session: never its owner's), else `$OLLIE_APPROVAL`, else
        the agent config's."""
        env = os.environ.get("OLLIE_APPROVAL", "")
        own = "" if self._owner else self.session.approval
        return own or (env if env in APPROVAL_MODES else self.runtime.config.approval)

    def set_approval(self, mode: str) -> None:
        """Switch the session's approval mode (saved with the session); ValueError for an unknown one."""
        self.owners_only("change its approval mode")
        self.session.approval = check_mode(mode)
        self._host.save()
        self._host.notify()

    # Who answers approval questions, an elevated step's and an agent switch's included (the daemon asks the editor);
    # None: steps that would ask are refused.
    step_approver: StepApprover | None = forward("_approval.approver", settable=True)
    # The steps refused so far because nobody could approve them, each with the `--approval` mode that runs it unasked
    # ("" for none: it leaves the sandbox).
    unapproved: list[tuple[StepQuestion, str]] = forward("_approval.unapproved")

    @property
    def network_log(self) -> list[dict]:
        """Every connection this session's steps made through the egress proxy: its finished calls' (saved with it),
        then those of calls still running."""
        saved = [c for calls in self.session.step_network.values() for c in calls]
        seen = {id(c) for c in saved}  # a finished call's records are the live ones, not copies
        return saved + [c for c in self._approval.net_log if id(c) not in seen]

    def network_allowed(self) -> dict[str, str]:
        """The "host:port"s this session's answers let its steps reach unasked, each with why (`/network`)."""
        return self._approval.net_allowed()

    def _always(self) -> list[str]:
        """The "always" answers that hold: the owner's own, a teammate's never (they were no answer of this user)."""
        return self._guest_always if self._owner else self.session.approval_always

    def _allow_always(self, rule: str) -> None:
        rules = self._always()
        if rule not in rules:
            rules.append(rule)
            if not self._owner:
                self._host.save()

    def _asked(self, question: StepQuestion, answer: Answer) -> None:
        if not self.tell_answers:
            return
        verdict = "allowed" if answer.outcome.startswith("allow") else "rejected"
        self.bus.emit("info", f"{verdict}: {question.title}")

    async def set_cwd(self, path: Path | str) -> None:
        """Move the working directory of tools, hooks and prompt commands (the saved session keeps it)."""
        self.owners_only("change its directory")  # saved with it: the owner's listing by directory would lose it
        await self._setup.set_cwd(path)
        self.session.cwd = str(self._setup.cwd)  # what ACP session/list reports, whichever front end moved it
        self._host.notify()

    def guard(self, directory: Path) -> None:
        """Follow no symlink inside `directory` (the workspace folder: steps may write there) to a new cwd."""
        self._setup.guarded.append(directory)

    def set_env(self, key: str, value: str) -> None:
        """Set an extra environment variable for tools, hooks and prompt commands."""
        self._setup.set_env(key, value)

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
        """Title the session: its Recorder's `on_rename` (in the record the session lists read), else in the session."""
        self.owners_only("rename it")  # `ollie acp` keeps it in the owner's saved session (the registry refuses too)
        if self.on_rename is not None:
            await self.on_rename(title)
            return
        self.session.title = title
        self._host.save()

    async def kill(self) -> None:
        """Interrupt, save, close; then tell the daemon through `on_kill`."""
        await self.close()
        if self.on_kill is not None:
            await self.on_kill()

    async def close(self, *, save: bool = True) -> None:
        """Interrupt a running turn, save the session (unless not `save`), close backend and tool servers."""
        if self._closed:
            return
        self._closed = True
        task = self._host.task
        if task is not None:
            self.interrupt("close")
            await asyncio.wait({task}, timeout=self._host.limits.close_wait_s)
        if save:
            self._host.save()
        if self._host.session_file.storage is None:  # a file's rounds are synced in the background: wait for them
            await asyncio.to_thread(self._host.session_file.flush)
        if self._live_lock is not None:  # saved: another process may resume it now
            self._live_lock.release()
            self._live_lock = None
        cancel_prompt(self.runtime)
        for backend in (*self._host.take_retired(), self.backend):
            if backend is not None:
                await backend.aclose()
        await self.runtime.dispatcher.aclose()
        from ollie.tools.execute.sessiondirs import SessionDirs

        await asyncio.to_thread(SessionDirs.for_session(self.session_id).remove)
        self._setup.close()
        self.bus.close()

