"""The pygls server object: the session table it owns, the engine's loading, the client's leaving, output flow."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from ollie import __version__
from ollie.startup import release_free_memory
from ollie_lsp.documents import LspDocuments
from ollie_lsp.errors import SessionNotFound, StartProblem
from ollie_lsp.idlecollect import collect_when_idle
from ollie_lsp.options import InitOptions
from ollie_lsp.protocol import OllieProtocol, raw_params_converter

if TYPE_CHECKING:
    from ollie_lsp.framing import FrameSource
    from ollie_lsp.sessions import LiveSession, SessionTable

logger = logging.getLogger("ollie.lsp.server")

SWITCH_INTERVAL_S = 0.001
# How long the daemon may take to end once its client is gone before it exits anyway (never orphaned): counted
# afresh while the client still takes the last answers (a slow reader, a loaded machine).
EXIT_BACKSTOP_S = 5.0
# How long, of that, the requests read before the client left may take to be answered.
ANSWER_ON_END_S = 2.0

class OllieServer(LanguageServer):
    """The ollie daemon: one pygls server; the session table holds the engines."""

    protocol: OllieProtocol  # what pygls builds of `protocol_cls` below

    def __init__(self, *, make_table: Callable[[OllieServer], SessionTable], load_engine: Callable[[], None],
                 coalesce_s: float = 0.004) -> None:
        self.converter = raw_params_converter()  # the one pygls uses, kept: it has no public name there
        super().__init__(
            "ollie-lsp",
            __version__,
            protocol_cls=OllieProtocol,
            converter_factory=lambda: self.converter,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.coalesce_s = coalesce_s
        protocol = self.protocol
        protocol.on_exit = self.exit_asked
        protocol.on_shutdown = self._shutdown_asked
        protocol.serving = self.serving
        protocol.on_error = lambda exc: self.report_server_error(exc, JsonRpcException)
        self._make_table = make_table
        self._load_engine = load_engine
        self.init_options = InitOptions()
        self.client_name = ""  # `initialize`'s clientInfo.name: "Neovim", "Visual Studio Code"...
        self._table: SessionTable | None = None
        self.documents = LspDocuments(self, can_save=lambda: self.init_options.save_documents)
        self.initialized = False
        self.closing = False  # set by shutdown/exit: a warm-up that finishes afterwards starts no session
        self._engine: asyncio.Future[None] | None = None
        self._closed: asyncio.Future[None] | None = None  # the one close that shutdown, exit and EOF all wait for
        self._backstop: threading.Thread | None = None
        self._serving: asyncio.Future[None] | None = None
        self.exit_code = 0
        self.shutdown_asked = False
        # The default session's CWD even if the folders change before it is built; where new sessions start.
        self.root_cwd = start_dir()
        self.default_cwd = self.root_cwd
        self.folders: asyncio.Future[None] | None = None  # the walk of the folders named last (lifecycle.walk_folders)
        self.rooted = True  # root_cwd is a folder walked, or this directory when the client named none
        # What keeps the daemon from working (its state dir cannot be written), shown once at `initialize`: every
        # request that needs the sessions is refused with it, rather than sessions run that could not be kept.
        self.start_problem = ""

    @property
    def table(self) -> SessionTable:
        """The session table, built on the first ollie/* request: an idle daemon stays small."""
        if self._table is None:
            if self.start_problem:
                raise StartProblem(self.start_problem)
            if not self.initialized:
                raise SessionNotFound("(the server is not initialized)")
            self._table = self._make_table(self)
            self._table.start_default(resume=self.init_options.session, cwd=lambda: self.sessions_dir(root=True),
                                      newest=self.init_options.continue_session)
        return self._table

    async def sessions_dir(self, *, root: bool = False) -> Path:
        """Where new sessions start (`root`: the first workspace folder) once the folders named are walked; NoFolder
        when each was refused."""
        if self.folders is not None:
            await asyncio.shield(self.folders)
        return self.root_cwd if root else self.default_cwd

    def live_sessions(self) -> list[LiveSession]:
        """The sessions running now; none before the table is built (asking never builds it)."""
        return self._table.live() if self._table is not None else []

    def load_engine(self) -> asyncio.Future[None]:
        """Start importing the engine: once, in a thread, whoever asks first; its future.

        Two threads importing the same modules at once can see one half-initialized (`cannot import name`).
        """
        if self._engine is None:
            self._engine = in_daemon_thread(self._load_engine)
        return self._engine

    async def engine_loaded(self) -> None:
        """Wait until the engine is imported."""
        await asyncio.shield(self.load_engine())

    async def warm_up(self) -> None:
        """After `initialized`: wait for the engine (loading since the initialize answer), then start building the
        default session."""
        if self._table is not None or self.start_problem:
            return
        try:
            await self.engine_loaded()
        except Exception:
            logger.exception("loading the engine in the background failed")
            return
        if self._table is None and self.initialized and not self.closing:
            table = self.table
            # The default session's prompt commands run now: the editor's first prompt usually comes at once.
            try:
                live = await table.default()
                await live.core.ready_prompt()
            except Exception:  # the first request meets the same failure and answers with it
                logger.debug("preparing the default session's prompt failed", exc_info=True)
            release_free_memory()
            collect_when_idle(self.live_sessions)

    @contextmanager
    def on_cancel(self, hook: Callable[[], None]) -> Iterator[None]:
        """While inside, a `$/cancelRequest` for the request being handled calls `hook` instead of cancelling it."""
        protocol = self.protocol
        msg_id = protocol.msg_id
        if msg_id is not None:
            protocol.cancel_hooks[msg_id] = hook
            if protocol.unhooked_submits.pop(msg_id, False):  # cancelled before it got here
                protocol.cancel_hooks.pop(msg_id)
                hook()
        try:
            yield
        finally:
            if msg_id is not None:
                protocol.cancel_hooks.pop(msg_id, None)

    async def serve_client(self, frames: FrameSource) -> None:
        """Handle one client's messages from `frames` until it goes away or `exit` ends the loop."""
        # Heavy work runs in threads; the loop waits up to the switch interval for the GIL after each syscall.
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        self._serving = asyncio.ensure_future(frames.run(self.protocol.receive))
        try:
            await self._serving
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():  # this coroutine itself is cancelled, not just the reading
                raise
            # `exit` ended the reading (exit_asked): the caller closes the sessions.

    def _shutdown_asked(self) -> None:
        self.shutdown_asked = True

    def serving(self) -> bool:
        """Whether the client's messages are still being handled (not once `exit` came: `client_gone` was called)."""
        return self._serving is not None and not self._serving.done() and self._backstop is None

    def exit_asked(self) -> None:
        """`exit` (or the client's process gone): stop reading the client at once (it may keep its pipe open); the
        process ends with status 0 after `shutdown`, else 1 (as LSP says)."""
        self.exit_code = 0 if self.shutdown_asked else 1
        self.client_gone()
        if self._serving is not None:
            self._serving.cancel()

    async def close_sessions(self) -> None:
        """Close every live session (shutdown, exit, or the client gone); nothing when none was started.

        Every caller waits for the same close, shielded: a second one (exit, then EOF) must not cancel it half-way.
        """
        self.closing = True
        if self._table is None:
            return
        # A session started after the last close (shutdown, then a late session/new) is closed too.
        if self._closed is None or (self._closed.done() and self._table.live()):
            self._closed = asyncio.ensure_future(self._table.close_all())
        await asyncio.shield(self._closed)

    async def finish_with_client(self) -> None:
        """The client left (EOF, `exit`): every session closed, and the requests read before answered (a client may
        leave right after its last one and read on) for ANSWER_ON_END_S at most."""
        self.client_gone()
        await self.close_sessions()  # a running submit answers "interrupted"
        # pygls keeps the handlers' tasks here (asyncio futures) beside its own requests' (which no client answers now).
        running = [f for f in self.protocol._request_futures.values() if isinstance(f, asyncio.Future)]
        if running:
            await asyncio.wait(running, timeout=ANSWER_ON_END_S)
            await self.close_sessions()  # one that a late ollie/session/new opened

    def client_gone(self) -> None:
        """The client left (EOF, `exit`): from now on the process ends within EXIT_BACKSTOP_S of the client's last
        read, whatever hangs."""
        if self._backstop is None:
            self._backstop = threading.Thread(target=exit_backstop, args=(EXIT_BACKSTOP_S, self.output_backlog),
                                              name="ollie-lsp-exit-backstop", daemon=True)
            self._backstop.start()

    def show(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        """Tell the user something (window/showMessage) and log it."""
        logger.warning(message)
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def output_paused(self) -> bool:
        """Whether the client has left too much of the daemon's output unread (events then wait)."""
        writer = self.protocol.writer
        paused = getattr(writer, "paused", None)
        if paused is not None:
            return bool(paused())
        if isinstance(writer, asyncio.StreamWriter):  # TCP: over the transport's high-water mark
            transport = writer.transport
            return transport.get_write_buffer_size() > transport.get_write_buffer_limits()[1]
        return False

    def output_backlog(self) -> int:
        """Bytes of the daemon's output the client has not taken yet."""
        writer = self.protocol.writer
        if isinstance(writer, asyncio.StreamWriter):
            return writer.transport.get_write_buffer_size()
        backlog = getattr(writer, "backlog", None)
        return int(backlog()) if backlog is not None else 0

    async def output_writable(self) -> None:
        """Return once the client has taken enough of the daemon's output (see `ollie.stdio.PipeWriter`)."""
        writer = self.protocol.writer
        writable = getattr(writer, "writable", None)
        if writable is not None:
            await writable()
        elif isinstance(writer, asyncio.StreamWriter):  # TCP: the stream's own flow control
            with suppress(ConnectionError):
                await writer.drain()

    def supports_progress(self) -> bool:
        """Whether the client takes server-initiated work-done progress."""
        caps = self.client_capabilities
        return bool(caps and caps.window and caps.window.work_done_progress)


def start_dir() -> Path:
    """The daemon's working directory; home when it was started in one removed since (it crashed there)."""
    try:
        return Path.cwd()
    except FileNotFoundError:
        return Path.home().resolve()  # a real path, as a session's directory must be (a link on its way is refused)


def in_daemon_thread(fn: Callable[[], None]) -> asyncio.Future[None]:
    """Run `fn` in a daemon thread of its own; the future has its outcome.

    Not the loop's default executor: the loop's end joins its threads, so an `exit` waited for the engine's import.
    """
    outcome: concurrent.futures.Future[None] = concurrent.futures.Future()

    def run() -> None:
        try:
            outcome.set_result(fn())
        except Exception as exc:  # handed to the awaiting side, which reports it
            outcome.set_exception(exc)

    threading.Thread(target=run, name="ollie-lsp-load-engine", daemon=True).start()
    return asyncio.wrap_future(outcome)  # (a loop that ended meanwhile is told nothing: nobody waits any more)


def exit_backstop(grace_s: float, backlog: Callable[[], int] = lambda: 0) -> None:
    """After `grace_s` in which the client took none of the `backlog`, end the process even if something hangs: the
    fork server's steps swept, then exit(1)."""
    left = sys.maxsize  # the answers may be written after the client left: a backlog then is progress
    time.sleep(grace_s)
    while 0 < (now := backlog()) < left:  # still reading its last answers: not gone yet
        left = now
        time.sleep(grace_s)
    logger.error("the daemon did not end %.0f s after its client went: exiting now", grace_s)
    if "ollie.sandbox.spawn" in sys.modules:  # a fork server can only run once a step was spawned
        from ollie.sandbox.spawn import fork_server

        fork_server().close()
    logging.shutdown()
    os._exit(1)
