"""The engine's registry recorder: keeps a session's record current from its Core's events."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import TYPE_CHECKING

from ollie.agent.events import Subscription
from ollie.sessions.errors import SessionError
from ollie.sessions.types import Channel, Info, Kind, Request, Scope, TurnResult, os_user, prompt_title

if TYPE_CHECKING:
    from ollie.agent.surface import FrontEndCore, SessionView
    from ollie.sessions.registry import Registry
    from ollie.sessions.session import Session

log = logging.getLogger("ollie.agent.recorder")


def unavailable() -> tuple[type[Exception], ...]:
    """What makes the registry unusable (no data dir, a locked or broken store, OLLIE_STORE down): the session runs
    without its record, and its user is told (`Recorder.open`); any other registry error refuses the session."""
    import sqlite3  # loaded already when the registry raised: this module loads before any registry is opened

    return (OSError, sqlite3.Error)


# The `turn` event contents that are a turn's stop reason.
RESULTS = frozenset(r.value for r in TurnResult if r is not TurnResult.NONE)
# How long a write's archive check waits for the store: one that hangs (a table locked, a server gone silent) held
# every write with it, a change of approval mode included.
ARCHIVED_READ_S = 2.0


def first_prompt_title(session: Session) -> str | None:
    """The title the session's first prompt gives it (None: no turn, or its start was compacted away)."""
    starts, messages = session.turn_starts, session.messages
    if not starts or not 0 <= starts[0] < len(messages):
        return None
    first = messages[starts[0]]
    return prompt_title(first.content.removesuffix(first.notes))


class Recorder:
    """Records one session in the registry (created, opened, each turn's start, end and result).

    Registry calls block (sqlite3): they run in order on `io`, the daemon's worker, so its listings see every stamp.
    """

    def __init__(
        self,
        core: SessionView,
        *,
        channel: Channel,
        registry: Callable[[], Registry] | None = None,
        user: str | None = None,
        io: Executor | None = None,
    ) -> None:
        self.session_id = core.session_id
        self.user = user or os_user()
        self._core = core
        self._channel = channel
        self._own_registry: Registry | None = None
        self._registry = registry or self._open_registry
        self._own_io = io is None
        self._io: Executor = io or ThreadPoolExecutor(max_workers=1, thread_name_prefix="ollie-recorder")
        self._sub: Subscription | None = None
        self._task: asyncio.Task[None] | None = None
        self._titled = False  # the record has a title: the first prompt gives none
        self.title = ""  # the session's title as this process knows it (`ollie/state`'s): a `state` event on change
        self._prompt_title = ""  # the title its first prompt gave it (not a name someone gave it)
        self._unrecorded = False  # its record was put off (`open`'s `fresh`) and is not queued yet
        self._untold = ""  # why its record could not be written, for the next turn to tell (`_unusable`)
        self._loop: asyncio.AbstractEventLoop | None = None  # set by `open`: `_unusable` tells through it
        self._request: Request  # set by `open`

    def _open_registry(self) -> Registry:
        if self._own_registry is None:
            from ollie.sessions.registry import Registry  # sqlite3 with it: loaded when a record is first written

            self._own_registry = Registry()
        return self._own_registry

    async def _run(self, fn: Callable[[], object]) -> None:
        await asyncio.get_running_loop().run_in_executor(self._io, fn)

    async def open(self, *, kind: str = "chat", title: str = "", fresh: bool = False) -> Info | None:
        """Find or create the session's record (None: registry unusable, or put off), stamp it active, follow its turns.

        The one rule of every front end for a record that cannot be written (`unavailable`): the session runs on,
        what it saved is kept, and the user is told at once (an `error` event: in the turn that found it, else at the
        next turn's start). A registry's refusal (the session is another's, archived, live elsewhere) is raised.

        `fresh`: a session just made, not resumed. An untitled fresh chat is recorded at its first turn, or at the
        first `recorded` (a rename, an archive, its close): until then it is nothing to list (`session/list` leaves
        out a session never prompted nor named) and nothing can be refused, so a daemon's default session neither
        opens the registry (sqlite3: ~1.8 MiB of RSS) nor waits for its write before a first turn.
        """
        self._request = Request(id=self.session_id, user_id=self.user, agent_id=self._core.agent_name, kind=kind,
                                channel=self._channel, title=title)
        info: Info | None = None
        self._unrecorded = fresh and not title and kind == Kind.CHAT
        self.title = title
        self._loop = asyncio.get_running_loop()
        if not self._unrecorded:
            info = await asyncio.get_running_loop().run_in_executor(self._io, self._ensure)
            if info is not None and info.user_id != self.user:  # a team member resumed it: read and resume only
                self._core.shared_by(info.user_id)
            self._titled = bool(info is not None and info.title)
            if info is not None:
                self.title = self._core.session.title = info.title  # the session's: an agent switch keeps it
                if info.title and info.title == first_prompt_title(self._core.session):
                    self._prompt_title = info.title
            self._stamp()
        self._core.on_rename = self.rename  # `/rn` in every front end: the title the session lists show
        self._sub = self._core.bus.subscribe(roles=frozenset({"turn", "rewind", "kept"}))
        self._task = asyncio.create_task(self._follow(self._sub))
        return info

    def _ensure(self) -> Info | None:
        """Find or create the record (on `io`); None when the registry is unusable."""
        try:
            return self._registry().ensure(self._request)
        except unavailable() as exc:
            self._unusable(exc)
            return None

    def _unusable(self, exc: Exception) -> None:
        """The record could not be written (on `io`): told now when a turn runs, else at the next turn's start."""
        log.warning("session registry unavailable: %s", exc, extra={"session": self.session_id})
        self._untold = (f"session {self.session_id} is not recorded in the session list (the registry cannot be "
                        f"written: {exc}): it runs on, but no session list shows it to resume")
        if self._sub is not None and self._loop is not None:  # following turns (a put-off record): told now
            with contextlib.suppress(RuntimeError):  # the loop is gone (the process is exiting)
                self._loop.call_soon_threadsafe(self._tell)

    def _tell(self) -> None:
        if self._untold:
            self._core.bus.emit("error", self._untold)
            self._untold = ""

    def _record_put_off(self) -> None:
        """Queue the record of a session whose record was put off (in order before what comes after it on `io`)."""
        if self._unrecorded:
            self._unrecorded = False
            self._io.submit(self._ensure)

    @property
    def put_off(self) -> bool:
        """Whether the session's record is put off and not yet queued (see `open`'s `fresh`)."""
        return self._unrecorded

    async def recorded(self) -> None:
        """Wait until the session's record is written (first written now when it was put off)."""
        self._record_put_off()
        await self._run(lambda: None)

    async def archived(self) -> bool:
        """Whether the record says the session is archived (another client may have since it opened); False while it
        is put off, cannot be read or is not read within ARCHIVED_READ_S (an unusable registry stops no session)."""

        def read() -> bool:
            try:
                return self._registry().get(Scope(user_id=self.user), self.session_id).archived
            except (SessionError, *unavailable()):
                return False

        if self._unrecorded:
            return False
        try:
            async with asyncio.timeout(ARCHIVED_READ_S):
                return await asyncio.get_running_loop().run_in_executor(self._io, read)
        except TimeoutError:
            log.warning("archive check skipped: the store did not answer", extra={"session": self.session_id})
            return False

    def _write(self, write: Callable[[Registry], object], skipped: str, *, level: int = logging.INFO,
               session: str = "") -> None:
        """Queue a registry write (in order on `io`, not waited for); a failure is logged as `skipped`, never raised:
        it never fails the session."""

        def run() -> None:
            try:
                write(self._registry())
            except (SessionError, *unavailable()) as exc:
                log.log(level, "%s: %s", skipped, exc, extra={"session": session or self.session_id})

        self._io.submit(run)

    def _stamp(self, *, turn_started: bool = False, turn_completed: bool = False, result: str | None = None) -> None:
        """Queue an activity stamp."""
        self._write(lambda registry: registry.touch(self.session_id, turn_started=turn_started,
                                                    turn_completed=turn_completed, result=result),
                    "registry touch skipped")

    def _title_untitled(self, title: str, *, was: str = "") -> None:
        """Queue: an untitled session (titled `was`) is listed by `title`, its first prompt's words (unless someone
        named it meanwhile)."""

        def retitle(registry: Registry) -> None:
            scope = Scope(user_id=self.user)
            if registry.get(scope, self.session_id).title == was:
                registry.rename(scope, self.session_id, title)

        self._write(retitle, "automatic title skipped")

    def _follow_rewind(self, turns: bool) -> None:
        """A rewind of every turn (`turns`: some are left) takes back the title the first prompt gave (a fresh
        session has none; a name someone gave stays); its undo gives it back. Before, the session kept the words of
        a prompt no longer in it, and its next first prompt gave it none."""
        if turns and not self.title and not self._prompt_title:
            # An undo in a daemon that resumed the emptied session (a window reload since) never knew the words: the
            # first prompt it put back gives them, as a first turn does (the title stayed "", the chat "New chat").
            self._prompt_title = first_prompt_title(self._core.session) or ""
        given = self._prompt_title
        if not given or self.title not in ("", given) or turns == bool(self.title):
            return
        title = given if turns else ""
        self._title_untitled(title, was=self.title)
        self.renamed(title)
        self._titled = turns

    def _follow_agent(self) -> None:
        """Queue: the record names the agent the session was switched to (`/agent`), so that its resume runs that one
        (before, it ran the one the session was made with: a session made read-only came back editing)."""
        agent = self._core.agent_name
        if agent == self._request.agent_id:
            return
        self._request.agent_id = agent  # a record put off is made with it
        if not self._unrecorded:
            self._write(lambda registry: registry.set_agent(Scope(user_id=self.user), self.session_id, agent),
                        "the agent switch is not recorded", level=logging.WARNING)

    def _follow_kept(self, kept_id: str, title: str) -> None:
        """Queue: the record of the session an agent switch saved the conversation as (`Core.switch_agent`), in the
        agent it ran, listed to resume; the title goes with the conversation, and this session starts untitled."""
        request = Request(id=kept_id, user_id=self.user, agent_id=self._request.agent_id, kind=self._request.kind,
                          channel=self._channel, title=title)
        self._write(lambda registry: registry.ensure(request), "the saved conversation is not recorded",
                    level=logging.WARNING, session=kept_id)
        if self.title:
            self._title_untitled("", was=self.title)
            self.renamed("")
        self._prompt_title, self._titled = "", False

    async def rename(self, title: str) -> None:
        """Title the session in its record (a refusal raised: archived, too long), then in the session, front ends
        told; a registry that cannot be written titles the session alone and is told (`_unusable`)."""
        self._record_put_off()
        try:
            await self._run(lambda: self._registry().rename(Scope(user_id=self.user), self.session_id, title))
        except unavailable() as exc:
            self._unusable(exc)
        self.renamed(title)

    def renamed(self, title: str) -> None:
        """The session was given `title` (written to the record already or queued): front ends are told now."""
        self._titled = self._titled or bool(title)
        if title != self.title:
            self.title = self._core.session.title = title
            self._core.bus.emit("state")

    async def _follow(self, sub: Subscription) -> None:
        async for event in sub:
            if event.role == "kept":
                self._follow_kept(event.content, event.name)
            elif event.role == "rewind":  # an agent switch clears the session: a rewind of every turn
                self._follow_agent()
                self._follow_rewind(event.content != "0")
            elif event.content == "start":
                self._tell()
                self._record_put_off()
                self._stamp(turn_started=True)
                if not self._titled and (title := prompt_title(event.prompt)):
                    self._title_untitled(title)
                    self.renamed(title)
                    self._prompt_title = title
            else:
                result = event.content if event.content in RESULTS else None
                self._stamp(turn_completed=True, result=result)

    async def drained(self) -> None:
        """Wait until every turn event published so far has been queued for the registry (and written)."""
        if self._sub is not None:
            await self._sub.caught_up()
        await self._run(lambda: None)

    async def close(self, *, record: bool = True) -> None:
        """Stop following (after the Core closed its bus, nothing is lost) and write what is queued (`record`: False
        leaves a put-off record unwritten, for a session not saved)."""
        if record:
            self._record_put_off()  # saved, so `session/load` by its id works later
        if self._sub is not None and self._task is not None and not self._task.done():
            await self.drained()
            self._sub.close()
            await self._task
        await self._run(lambda: None)
        if self._own_io:
            self._io.shutdown(wait=True)
        if self._own_registry is not None:
            self._own_registry.close()


async def record(
    core: SessionView,
    *,
    channel: Channel,
    kind: str = "chat",
    title: str = "",
    registry: Callable[[], Registry] | None = None,
    user: str | None = None,
    io: Executor | None = None,
    fresh: bool = False,
) -> Recorder:
    """Record `core`'s session in the registry and keep it current until `Recorder.close` (`fresh`: see `open`)."""
    recorder = Recorder(core, channel=channel, registry=registry, user=user, io=io)
    await recorder.open(kind=kind, title=title, fresh=fresh)
    return recorder


async def close_session(core: FrontEndCore, recorder: Recorder | None, *, keep_unused: bool = True) -> str | None:
    """Close a front end's session: interrupt, save, end its tools, store what is queued and give up its lease, then
    its record; what to tell the user when the store did not take its last rounds (else None). `keep_unused`: False
    neither saves nor records a new session nobody typed in nor named (a record put off: `Recorder.open`'s `fresh`)."""
    from ollie.sessions import persist

    keep = keep_unused or bool(core.session.messages or core.session.title) or not (recorder and recorder.put_off)
    try:
        await core.close(save=keep)  # its last save: a failure is an `error` event, still forwarded
    except Exception:
        log.exception("closing a session failed", extra={"session": core.session_id})
    problem = None
    try:
        await asyncio.to_thread(persist.release, core.session_id)
    except Exception as exc:
        log.exception("releasing a session failed", extra={"session": core.session_id})
        problem = str(exc) or type(exc).__name__
    if recorder is not None:
        await recorder.close(record=keep)
    return problem
