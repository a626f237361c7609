"""The daemon's session table: live sessions (one Core each), the default one, and their records."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ollie import beneath
from ollie.agent import inbox
from ollie.agent.inbox import ContextItem, Held
from ollie_lsp.errors import InvalidParams, NoFolder, QueueFull, SessionArchived, SessionNotFound, refused
from ollie_lsp.events import EventForwarder
from ollie_lsp.progress import TurnProgress
from ollie_lsp.records import record, rpc_errors

if TYPE_CHECKING:
    from types import ModuleType

    from ollie.agent.core import TurnResult
    from ollie.agent.questions import Answer, StepQuestion
    from ollie.agent.recorder import Recorder
    from ollie.agent.surface import DaemonCore
    from ollie.agent.taskstate import PlanEntry
    from ollie.backend.types import Image
    from ollie.sessions.records import UserRecords
    from ollie.tools.documents import EditorDocuments
    from ollie.tools.editor.knowledge import EditorKnowledge

logger = logging.getLogger("ollie.lsp.sessions")

INTERRUPTED = {"reply": "", "stop": "interrupted"}
# How long a submit's answer waits for the client to acknowledge the turn's progress.
PROGRESS_SETTLE_S = 2.0
# What resumes a saved session in an editor (a chat's `/help`, `/resume`, `/agent`): its session list, not a terminal's.
EDITOR_RESUME = "the editor's session list (VS Code: Ollie: Switch Session; Neovim: :OllieSessions)"


def editor_resume(client: str) -> str:
    """What resumes a saved session in the editor `initialize` named (its clientInfo.name): its own command."""
    if client == "Neovim":
        return ":OllieSessions"
    return "Ollie: Switch Session" if "code" in client.lower() else EDITOR_RESUME  # VS Code, code-server, VSCodium


Q = TypeVar("Q")
A = TypeVar("A")
# How long a question to the user waits for the events before it to go out (they wait ~4 ms to be joined).
QUESTION_DRAIN_S = 2.0


@dataclass(eq=False, repr=False)
class SubmitHandle(Held):
    """One pending ollie/submit: cancel() interrupts it, whether it waits or runs; its images count while it waits."""

    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    started: bool = False
    finished: bool = False


@dataclass(eq=False, repr=False)
class LiveSession:
    """A session this daemon runs: its Core, its event forwarder and its progress."""

    id: str
    core: DaemonCore
    forwarder: EventForwarder
    progress: TurnProgress
    kind: str = "chat"
    archived: bool = False
    turn_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_state: dict[str, Any] | None = None
    plan_sent: list[PlanEntry] | None = None  # the plan the last `ollie/stateChanged` carried
    # The engine's recorder keeps this session's registry record current (None until recorded).
    recorder: Recorder | None = None
    # The submits waiting for their turn (behind another, or for the session's record): a stop drops them.
    waiting: set[SubmitHandle] = field(default_factory=set)
    stops: int = 0  # Stops so far (ollie/interrupt): one that overtook a queue or inject holds it
    # Taken by each ollie/queue from its checks to its queueing: requests sent at once each read their images (up to
    # 40 MiB) before the queue's bound refused them, all at once; one at a time, the bound refuses before the read.
    queueing: asyncio.Lock = field(default_factory=asyncio.Lock)

    def state_snapshot(self) -> dict[str, Any]:
        """The `ollie/stateChanged` params of this session now."""
        core = self.core
        return {"session": self.id, "state": core.state, "running": core.is_running,
                "contextSize": core.context_info(), "usage": core.usage_info(), "cost": core.cost_info(),
                "title": self.recorder.title if self.recorder is not None else ""}

    def state_changed(self) -> dict[str, Any] | None:
        """The `ollie/stateChanged` params when they differ from the last ones sent, else None; the plan only when it
        changed (it may be long, and the state moves many times a turn)."""
        snapshot = self.state_snapshot()
        in_turn = self.forwarder.turn_open
        if snapshot["running"] != in_turn:
            # The engine runs ahead of the events still unsent: say what those sent say (the true state follows).
            snapshot.update(running=in_turn, state="thinking" if in_turn else "idle")
        plan = self.core.plan
        if snapshot == self.last_state and plan == self.plan_sent:
            return None
        self.last_state = snapshot
        if plan == self.plan_sent:
            return snapshot
        self.plan_sent = plan
        return {**snapshot, "plan": [e.to_wire() for e in plan]}

    def state_result(self) -> dict[str, Any]:
        """The `ollie/state` result."""
        core = self.core
        out = self.state_snapshot()
        out.update(
            agent=core.agent_name,
            backend=core.backend_name,
            model=core.model_name,
            cwd=str(core.cwd),
            toolCalls=core.tool_call_count,
            queued=len(core.queued()),
            queuedPrompts=core.queued(),
            queueHeld=core.queue_held(),
            archived=self.archived,
            kind=self.kind,
            approval=core.approval,
            plan=[e.to_wire() for e in core.plan],
        )
        return out

    async def submit(self, text: str, images: Sequence[Image] = (), *, handle: SubmitHandle,
                     is_command: bool, announce: bool = False) -> dict[str, Any]:
        """Run one submit: commands at once, turns one at a time; a cancel before the start skips the turn. `announce`:
        the session's chat did not send it (a code action's), so its prompt is published."""
        if is_command:
            await self.refuse_archived()
            if handle.cancelled.is_set():
                return {"session": self.id, **INTERRUPTED}
            handle.started = True  # a cancel stops it now (a `!cmd`, a /compact)
            try:
                return await self._run(text)
            finally:
                handle.finished = True
        self.waiting.add(handle)
        try:
            return await self._wait_then_run(text, images, handle, announce)
        finally:
            self.waiting.discard(handle)

    async def _wait_then_run(self, text: str, images: Sequence[Image], handle: SubmitHandle,
                             announce: bool) -> dict[str, Any]:
        acquire = asyncio.ensure_future(self.turn_lock.acquire())
        cancel_wait = asyncio.ensure_future(handle.cancelled.wait())
        try:
            await asyncio.wait({acquire, cancel_wait}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # this request was cancelled while it waited: never keep the lock
            if acquire.done() and not acquire.cancelled():
                self.turn_lock.release()
            acquire.cancel()
            raise
        finally:
            cancel_wait.cancel()
        if not acquire.done() or acquire.cancelled():
            acquire.cancel()
            return {"session": self.id, **INTERRUPTED}
        try:
            await self.recorded_before_a_turn()
            self.waiting.discard(handle)  # from here a stop reaches it in the engine
            if handle.cancelled.is_set():
                return {"session": self.id, **INTERRUPTED}
            handle.started = True
            # Never a command: `text` may not be the user's.
            return await self._run(text, images, as_prompt=True, announce=announce)
        finally:
            handle.finished = True
            self.turn_lock.release()

    async def recorded_before_a_turn(self) -> None:
        """A fresh session's put-off record written before its first prompt is saved: a daemon killed from then on
        leaves it listed and loadable (written beside the turn, a kill before the write left its log unlisted)."""
        if self.recorder is not None and self.recorder.put_off:
            await self.recorder.recorded()
        else:
            await self.refuse_archived()

    async def refuse_archived(self) -> None:
        """-32002 when another client (an ACP agent, another daemon) archived the session since it was opened here:
        the archive wins, nothing runs (its turn went into the archived session)."""
        if self.recorder is not None and await self.recorder.archived():
            self.archived = True
            raise SessionArchived(self.id)

    async def _run(self, text: str, images: Sequence[Image] = (), *, as_prompt: bool = False,
                   announce: bool = False) -> dict[str, Any]:
        result = await self.core.submit(text, images, as_prompt=as_prompt, announce=announce)
        # The answer comes after every event (and progress step) of its turn, and its record is written.
        await self.forwarder.drained()
        if self.recorder is not None:
            await self.recorder.drained()
        await self.progress.settled(timeout=PROGRESS_SETTLE_S)
        return _turn_result(self.id, result)

    async def queue(self, text: str, images: Sequence[Image] = (), *, seen: int | None, held: bool = False,
                    context: Sequence[ContextItem] = ()) -> int:
        """Queue a prompt with its images and context items (`held`: for the user's word); returns the queue's depth.
        `seen`: the last event the client had (PROTOCOL.md)."""
        if held:
            return self.core.queue(text, images, held=True, context=context)
        if seen is None:
            # A client that does not say what it saw (one older than `seen`): taken as having seen it all, so a
            # prompt queued while idle waits for the next turn's end, as documented. The window of time this replaced
            # guessed wrong on a loaded machine (too short) and on a fast one (too long); the editors send `seen`.
            return self.core.queue(text, images, context=context)
        depth: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def read(_sent: int) -> None:
            if not depth.done():  # else this request was cancelled meanwhile: nothing is queued
                # Every event published so far was sent, the turns' `turn` end among them if they have ended: a client
                # that had not seen it queued the prompt for those turns.
                try:
                    depth.set_result(self.core.queue(text, images, saw_end=seen >= self.forwarder.turn_ended,
                                                     context=context))
                except Exception as exc:  # the request's answer (QueueFull; else a bug), not the forwarder's: never a hang
                    depth.set_exception(exc)

        self.forwarder.after_sent(read)
        return await depth

    def cancel(self, handle: SubmitHandle) -> None:
        """Cancel a pending submit: stop its turn (and what it would start next) if it runs, else drop it."""
        handle.cancelled.set()
        if handle.started and not handle.finished:
            self.core.stop("cancelled by the client")  # the submit's answer says when it stopped: not waited for

    async def stop(self, reason: str) -> bool:
        """Stop everything under way in the session: the running turn or commands, what they would start next, the
        submits waiting for their turn (they answer "interrupted"); once it all returned, whether anything was."""
        self.stops += 1
        # Each leaves `waiting` itself as it ends: one still reading its images holds them, and they count till then.
        waiting = [handle for handle in self.waiting if not handle.cancelled.is_set()]
        for handle in waiting:
            handle.cancelled.set()
        return await self.core.stop(reason) or bool(waiting)


def _turn_result(session_id: str, result: TurnResult) -> dict[str, Any]:
    error = {"error": result.error} if result.error else {}
    return {"session": session_id, "reply": result.reply, "stop": result.stop, **error, **failed_field(result)}


def failed_field(result: TurnResult) -> dict[str, bool]:
    """`failed: true` for a `!cmd` that exited non-zero (or timed out): an editor shows it failed, as a failed step."""
    return {"failed": True} if result.failed else {}


@dataclass(eq=False, repr=False)
class SessionDefaults:
    """What new sessions start with, from initializationOptions and the workspace."""

    agent: str = "default"
    backend: str | None = None
    model: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    tell_answers: bool = True  # an `info` line for each question's answer (initializationOptions.showsAnswers: none)
    resume_how: str = EDITOR_RESUME  # (editor_resume)


def _session_store() -> ModuleType:
    """The engine's session logs (imported with the engine, never at start-up)."""
    from ollie.sessions import persist

    return persist


async def _preload(session_id: str | None) -> None:
    """Connect a database store (OLLIE_STORE), read and lease the session to resume, off the loop (-32007)."""
    persist = await asyncio.to_thread(_session_store)
    with rpc_errors(session_id or ""):
        await asyncio.to_thread(persist.preload, Path(), session_id)


def load_core_module() -> ModuleType:
    """Import the engine (slow: kept off the start-up path)."""
    from ollie.agent import core

    return core


def _after_events(forwarder: EventForwarder, ask: Callable[[Q], Awaitable[A]]) -> Callable[[Q], Awaitable[A]]:
    """`ask`, once the session's events so far went out: the text leading to a question comes before it."""

    async def asked(question: Q) -> A:
        try:
            async with asyncio.timeout(QUESTION_DRAIN_S):
                await forwarder.drained()
        except TimeoutError:
            pass  # a client that reads nothing gets the question queued behind them
        return await ask(question)

    return asked


@dataclass(kw_only=True, eq=False, repr=False)
class SessionTable:
    """Every live session of the daemon, keyed by id; one of them is the default."""

    defaults: SessionDefaults
    start_cwd: Callable[[], Awaitable[Path]]  # where a new session starts now (the workspace folder)
    records: UserRecords
    make_forwarder: Callable[[str, DaemonCore], EventForwarder]
    make_progress: Callable[[str], TurnProgress]
    ask_step: Callable[[str, StepQuestion], Awaitable[Answer]] | None = None
    notify_problem: Callable[[str], None] = lambda message: None
    documents: EditorDocuments | None = None
    editor: EditorKnowledge | None = None  # the client answers ollie/editor/*: every session gets the editor tools
    _live: dict[str, LiveSession] = field(default_factory=dict, init=False)
    reading: set[Held] = field(default_factory=set, init=False)  # the images of ollie/queue requests not queued yet
    _default: asyncio.Task[LiveSession] | None = field(default=None, init=False)
    _build: Callable[[], asyncio.Task[LiveSession]] | None = field(default=None, init=False)  # builds _default
    _checks: set[asyncio.Task[None]] = field(default_factory=set, init=False)  # sandbox policies read as sessions open
    _prompted: bool = field(default=False, init=False)  # a prompt came while the default session was being built

    def start_default(self, *, cwd: Callable[[], Awaitable[Path]], resume: str | None = None,
                      newest: bool = False) -> None:
        """Build the default session in the background (the engine import happens there); `newest`: without `resume`,
        go on with the newest session started in `cwd`, if any."""
        self._build = build = lambda: asyncio.ensure_future(self._build_default(resume, cwd, newest))
        self._default = build()

    async def _build_default(self, resume: str | None, where: Callable[[], Awaitable[Path]], newest: bool) -> LiveSession:
        cwd = await where()
        if not resume and newest:
            try:
                resume = await asyncio.to_thread(_latest_session, cwd)
            except Exception as exc:
                self.notify_problem(f"ollie: cannot list the saved sessions: {_message(exc)}; starting a new session")
        if resume:
            try:
                return await self.load(resume)
            except Exception as exc:
                self.notify_problem(f"ollie: cannot resume session {resume}: {_message(exc)}; starting a new session")
        try:
            return await self.create(cwd=cwd, prompt_now=True)
        except Exception as exc:
            if self.defaults.agent == "default":
                raise
            self.notify_problem(f"ollie: agent {self.defaults.agent!r} failed: {_message(exc)}; using 'default'")
            self.defaults.agent = "default"
            return await self.create(cwd=cwd, prompt_now=True)

    async def create(
        self, *, agent: str | None = None, kind: str = "chat", title: str = "", cwd: Path | None = None,
        resume_id: str | None = None, prompt_now: bool = False, owner: str = "",
    ) -> LiveSession:
        """Start a new Core (or resume a saved one), have the engine record it, and forward its events."""
        core_mod = await asyncio.to_thread(load_core_module)  # the first import takes a while: off the loop
        agent = agent or self.defaults.agent
        start = await self.start_cwd()  # (before a resumed session is read and leased ahead)
        await _preload(resume_id)
        try:  # the Core takes the session's live lock: one another local process runs is refused (-32007)
            core = await core_mod.Core.create(
                agent=agent,
                cwd=cwd or start,
                backend=self.defaults.backend,
                model=self.defaults.model,
                session_id=resume_id,
                env=dict(self.defaults.env) or None,
                prompt_now=prompt_now,
                owner=owner,
            )
        except Exception:
            if resume_id:  # not started: the session read (and leased) ahead is given back
                await asyncio.to_thread(_session_store().release, resume_id)
            raise
        core.guard(start)
        core.tell_answers = self.defaults.tell_answers
        if resume_id:  # the first size estimate of a long history walks every message: in a thread
            await asyncio.to_thread(core.context_info)
        live = self._register(core, kind=kind)
        try:
            live.recorder = await record(self.records, core, kind=kind, title=title, fresh=resume_id is None)
        except BaseException:
            await self._shut(live)  # never listed: nothing ran in it
            raise
        # Listed only now: until its record says whose it is, a teammate's session would run a prompt as the owner's.
        self._live[live.id] = live
        # A broken sandbox policy is said now, not at the first step; read after, off the loop: no answer waits for it.
        check = asyncio.ensure_future(self._tell_sandbox(live, default=asyncio.current_task() is self._default))
        self._checks.add(check)
        check.add_done_callback(self._checks.discard)
        return live

    async def _tell_sandbox(self, live: LiveSession, *, default: bool) -> None:
        if default and self._prompted:
            # The prompt's first token first: the read (YAML, ~25 ms of CPU, the GIL held) competed with it, ~5% of a
            # cold one. Its reply comes before any step of it, which would read the policy itself anyway.
            await live.forwarder.replied.wait()
            if live.id not in self._live:
                return
        if problem := await asyncio.to_thread(live.core.sandbox_problem):
            self.notify_problem(f"ollie: {problem}")

    def _register(self, core: DaemonCore, *, kind: str) -> LiveSession:
        """The live session of `core`, wired to the editor (listed by `create` once recorded)."""
        session_id = core.session_id
        forwarder = self.make_forwarder(session_id, core)
        live = LiveSession(id=session_id, core=core, forwarder=forwarder, progress=self.make_progress(session_id), kind=kind)
        core.on_kill = partial(self.close, session_id)
        core.resume_how, core.help_width = self.defaults.resume_how, None  # the chat window breaks /help's lines
        if self.ask_step is not None:
            core.step_approver = _after_events(forwarder, partial(self.ask_step, session_id))
        core.set_documents(self.documents)
        if self.editor is not None:
            core.set_editor(self.editor)
        forwarder.start()
        return live

    async def load(self, session_id: str) -> LiveSession:
        """Resume a saved session (or return it when it already runs here)."""
        live = self._live.get(session_id)
        if live is not None:
            if live.archived:
                raise SessionArchived(session_id)
            await self._recorded(session_id)  # its caller reads its record
            return live
        info = await self.records.run(self.records.get, session_id)
        if info.archived:
            raise SessionArchived(session_id)
        owner = info.user_id if info.user_id != self.records.user else ""  # a teammate's: see Core.shared_by
        return await self.create(agent=info.agent_id, kind=str(info.kind), title=info.title, resume_id=session_id,
                                 owner=owner)

    async def fork(self, session_id: str, *, turn: int | None = None) -> LiveSession:
        """A new live session going on from a copy of a saved or live one's conversation up to the end of turn `turn`
        (None: all it saved); the source is left as it is, and so are the workspace's files (PROTOCOL.md)."""
        from ollie.agent import fork  # the engine: kept off the start-up path

        source = self._live.get(session_id)
        await self._recorded(session_id)  # a live one never prompted has its record written, to be read here
        info = await self.records.run(self.records.get, session_id)
        known = await fork.source_of(session_id, info, self.records, source.core if source else None,
                                     source.recorder.title if source and source.recorder else None)
        try:
            with rpc_errors(session_id, "session"):
                plan = await fork.plan(known, default_agent=self.defaults.agent, turn=turn)
        except fork.ForkTurnError as exc:
            raise InvalidParams(f"{exc.field}: {exc}") from None
        # Where the source works (a saved one's directory may be gone: then the workspace folder). Never a teammate's
        # saved directory: her log says it, and the fork's steps would write there with this user's rights.
        where = source.core.cwd if source else plan.source.cwd
        cwd = await asyncio.to_thread(_unmoved, Path(where)) if where and plan.keep_mode else None
        # Made untitled (recorded at its first turn or naming) and named once its copy is saved: recorded first, a
        # daemon killed before the copy was saved left an empty `<title> (fork)` in the session list.
        live = await self.create(agent=plan.agent, cwd=cwd)
        await live.core.fork_from(plan.source, keep_mode=plan.keep_mode)
        await self.rename(live.id, plan.title)
        return live

    async def default(self) -> LiveSession:
        """The default session, waiting for it to be built."""
        if self._default is None:
            raise SessionNotFound("(default)")
        failed = self._default.done() and not self._default.cancelled() and self._default.exception()
        if isinstance(failed, NoFolder) and self._build:
            self._default = self._build()  # each workspace folder was refused: built in the one added since, if any
        live = await asyncio.shield(self._default)
        if live.id not in self._live:
            raise SessionNotFound(f"{live.id} (the default session was closed)")
        return live

    async def get(self, session_id: str | None, *, prompt: bool = False) -> LiveSession:
        """A live session by id (None = the default); -32001 when there is none. `prompt`: a prompt (not a command)
        asks."""
        if session_id is None:
            self._prompted |= prompt and self._default is not None and not self._default.done()
            return await self.default()
        if self._default is not None and not self._default.done():
            await asyncio.gather(self._default, return_exceptions=True)
        live = self._live.get(session_id)
        if live is None:
            raise SessionNotFound(session_id)
        return live

    async def writable(self, session_id: str | None) -> LiveSession:
        """A live session that may be written to; -32002 when it is archived, here or by another client."""
        live = await self.get(session_id)
        if live.archived:
            raise SessionArchived(live.id)
        await live.refuse_archived()  # the store's record, not the flag: another daemon may have archived it
        return live

    async def events_sent(self, session_id: str | None) -> None:
        """Wait until the events a live session (None: the default) published so far went out; none when not live.

        At once, without a loop pass, when they had: an answer that waits for nothing is not put off.
        """
        if session_id is None:
            default = self._default
            if default is None or not default.done() or default.cancelled() or default.exception() is not None:
                return
            session_id = default.result().id
        if (live := self._live.get(session_id)) is not None:
            await live.forwarder.drained()

    async def _recorded(self, session_id: str) -> None:
        """A live session's record is written (a fresh untitled one's is put off until needed), so it can change."""
        if (live := self._live.get(session_id)) is not None and live.recorder is not None:
            await live.recorder.recorded()

    def find(self, session_id: str) -> LiveSession | None:
        """The live session with this id, if any (no waiting, no error)."""
        return self._live.get(session_id)

    def live(self) -> list[LiveSession]:
        """The sessions running now."""
        return list(self._live.values())

    def take_images(self, holder: Held, session: str, size: int) -> None:
        """Count `size` more image bytes (fewer when negative) to `holder`; -32010 when the daemon would hold more than
        it may, for prompts not run yet: the submits waiting for their turn, the queues, the queued being read."""
        held = sum(live.core.queued_bytes() + sum(h.images for h in live.waiting) for live in self._live.values())
        with refused(QueueFull, inbox.QueueFull, {"session": session}):
            inbox.take_images(holder, size, held=held + sum(h.images for h in self.reading), where="this daemon")

    async def set_archived(self, session_id: str, archived: bool) -> None:
        """Archive a session (live or saved: a live one stays readable but refuses writes), or bring one back (listed
        and writable again)."""
        await self._recorded(session_id)
        await self.records.run(self.records.set_archived, session_id, archived)
        if (live := self._live.get(session_id)) is not None:
            live.archived = archived

    async def rename(self, session_id: str, title: str) -> None:
        """Give a session (live or saved) a title; -32002 when it is archived."""
        live = self._live.get(session_id)
        if live is not None and live.archived:
            raise SessionArchived(session_id)
        await self._recorded(session_id)
        await self.records.run(self.records.rename, session_id, title)
        if live is not None and live.recorder is not None:
            live.recorder.renamed(title)

    async def close(self, session_id: str) -> None:
        """Stop a live session: interrupt, save, end its tools; its record and file stay."""
        live = self._live.pop(session_id, None)
        if live is None:
            raise SessionNotFound(session_id)
        await self._shut(live)

    async def _shut(self, live: LiveSession) -> None:
        from ollie.agent.recorder import close_session  # the engine: loaded with the session

        if problem := await close_session(live.core, live.recorder):
            self.notify_problem(f"ollie: {problem}")
        try:
            await live.forwarder.stop()
            await live.progress.settled(timeout=PROGRESS_SETTLE_S)
        except Exception:
            logger.exception("stopping a session's events failed", extra={"session": live.id})

    async def close_all(self) -> None:
        """Close every live session (shutdown/exit): each one saved, every tool process ended."""
        if self._default is not None and not self._default.done():
            self._default.cancel()
            await asyncio.gather(self._default, return_exceptions=True)
        sessions, self._live = list(self._live.values()), {}
        await asyncio.gather(*(self._shut(live) for live in sessions))
        await self.records.run(lambda: None)  # the titles still queued are written


def _message(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _unmoved(cwd: Path) -> Path | None:
    """`cwd` (a real path when set) if it still is one: a step may have swapped it, or a dir on its way, for a link."""
    try:
        return beneath.real_dir(cwd, ["/"])  # every link refused
    except OSError:
        return None


def _latest_session(cwd: Path) -> str | None:
    """`ollie.agent.commands_info.latest_session`, imported here in a thread: the engine may still be loading."""
    from ollie.agent.commands_info import latest_session

    return latest_session(cwd)
