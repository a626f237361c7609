"""The pygls server object: its protocol, capabilities, cancellation, output flow, and the session table it owns."""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import attrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
    lsp_method,
)

from ollie import __version__
from ollie.jsonpieces import EncodedBody
from ollie.loopshare import PASS_CPU_S  # also what one callback may spend on a batch of the client's messages
from ollie.startup import release_free_memory
from ollie.stdio import INVALID_REQUEST
from ollie_lsp.capabilities import fit_capabilities
from ollie_lsp.documents import LspDocuments, note_source
from ollie_lsp.eager import start_eagerly
from ollie_lsp.errors import SessionNotFound
from ollie_lsp.framing import Item, Problem, decode
from ollie_lsp.lineindex import ChunkedDocument, apply_change
from ollie_lsp.names import ACTION_COMMAND, METHOD_NAMES, command_name
from ollie_lsp.options import InitOptions

if TYPE_CHECKING:
    from cattrs import Converter

    from ollie_lsp.framing import FrameSource
    from ollie_lsp.sessions import LiveSession, SessionTable

logger = logging.getLogger("ollie.lsp.server")

PROTOCOL_VERSION = 2
SWITCH_INTERVAL_S = 0.001
# How long the daemon may take to end once its client is gone before it exits anyway (never orphaned): counted
# afresh while the client still takes the last answers (a slow reader, a loaded machine).
EXIT_BACKSTOP_S = 5.0
# How long, of that, the requests read before the client left may take to be answered.
ANSWER_ON_END_S = 2.0


def raw_params_converter() -> Converter:
    """pygls' converter, except that custom messages keep their params/results as plain JSON (dicts).

    The default's namedtuples have methods (`count`, `index`) that shadow fields of those names.
    """
    converter = default_converter()

    def keep_params(obj: dict[str, Any], cls: type) -> Any:
        # JSON-RPC lets a message leave `params` out; members a message should not carry are ignored.
        return cls(**{field.name: obj.get(field.name) for field in attrs.fields(cls)})

    converter.register_structure_hook(JsonRPCRequestMessage, keep_params)
    converter.register_structure_hook(JsonRPCNotification, keep_params)
    converter.register_structure_hook(JsonRPCResponseMessage, keep_params)
    return converter


# What structure_message hands on for a request it answered with an error already.
_ANSWERED = object()
# The one request whose $/cancelRequest is an interrupt it answers (stop "interrupted"), not pygls' -32800...
SUBMIT = "ollie/submit"
# ... and the commands that submit: its executeCommand mirror, and the turn of an `Ollie: ...` code action.
SUBMIT_COMMANDS = frozenset({command_name(SUBMIT), ACTION_COMMAND})


def _is_submit(message: Any) -> bool:
    """Whether `message` is a request that runs a submit (ollie/submit, or a submitting command)."""
    method = getattr(message, "method", None)
    if method == types.WORKSPACE_EXECUTE_COMMAND:
        return getattr(getattr(message, "params", None), "command", None) in SUBMIT_COMMANDS
    return method == SUBMIT


class OllieProtocol(LanguageServerProtocol):
    """LSP protocol plus `experimental.ollie` in the capabilities and cancel-as-interrupt for submits."""

    def __init__(self, server: Any, converter: Any) -> None:
        super().__init__(server, converter)
        # Set by the OllieServer that owns this protocol.
        self.cancel_hooks: dict[Any, Callable[[], None]] = {}  # a submit's: its cancel interrupts its turn
        # The submits not yet at their hook (the engine loading, their session being built): whether a cancel came.
        self.unhooked_submits: dict[Any, bool] = {}
        self.on_exit: Callable[[], None] = lambda: None
        # Called on reading `shutdown`: over TCP its handler runs as a task, after an `exit` read in the same batch.
        self.on_shutdown: Callable[[], None] = lambda: None
        self.serving: Callable[[], bool] = lambda: True
        self.on_error: Callable[[Exception], None] = lambda exc: None

    # pygls builds the capabilities itself: `experimental.ollie` can only be added to its answer.
    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        """The standard initialize, then the ollie capabilities added to its result."""
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"ollie": {"version": PROTOCOL_VERSION, "methods": list(METHOD_NAMES)}}
        fit_capabilities(result.capabilities, params.capabilities)
        return result

    # pygls applied each incremental change to the lines of `str.splitlines`, which also breaks at a form feed or
    # U+2028 (a later change landed lines away from the user's typing), splitting the whole text on the event loop
    # at each keystroke (0.8 s for 20 MB). Every open document is a ChunkedDocument (didOpen): no copy of its text.
    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Any:
        """Apply the client's changes at LSP's lines, each at the cost of the chunks of text it touches."""
        doc = self.workspace.text_documents.get(unquote(params.text_document.uri))  # pygls' key
        if doc is None:  # not open: nothing to change (pygls raised KeyError)
            return
        for change in params.content_changes:
            if isinstance(change, types.TextDocumentContentChangePartial) and isinstance(doc, ChunkedDocument):
                apply_change(doc, change)
            else:
                doc.apply_change(change)
        doc.version = params.text_document.version
        note_source(self._server, doc)
        if (user_handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield user_handler, (params,), None

    # pygls' exit raises SystemExit from a loop callback, which breaks asyncio.run's cleanup and cancels a running
    # shutdown: here exit only ends the reading, and the caller (serve_stdio, serve_tcp) closes the sessions.
    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> None:
        """End serving the client: status 0 after `shutdown`, else 1 (as LSP says)."""
        self.on_exit()

    # A private pygls method: no public hook chooses how a message is serialised.
    def _serialize_message(self, data: Any) -> Any:
        """ollie/* results and params are plain JSON already: skip cattrs' recursive copy of them."""
        if isinstance(data, JsonRPCResponseMessage) and isinstance(data.result, dict):
            return {"id": data.id, "jsonrpc": data.jsonrpc, "result": data.result}
        if isinstance(data, JsonRPCNotification) and isinstance(data.params, dict):
            return {"method": data.method, "jsonrpc": data.jsonrpc, "params": data.params}
        return super()._serialize_message(data)

    def _send_data(self, data: Any) -> None:
        """A result encoded already (off the loop: `ollie.jsonpieces`) goes out as its bytes; the rest as pygls
        serialises it, but as UTF-8 with each lone surrogate "?" (as `jsonpieces` writes results): pygls escaped one
        (`"\\udcff"`, a file name's byte that is no UTF-8), and Neovim's JSON decoder refused the whole message (a
        turn's end event dropped, its chat running for ever)."""
        if not data or self.writer is None:
            super()._send_data(data)
            return
        result = getattr(data, "result", None)
        if isinstance(result, EncodedBody):
            body = b'{"id":%s,"jsonrpc":"2.0","result":%s}' % (json.dumps(data.id).encode(), result.encoded)
        else:
            try:
                body = json.dumps(data, default=self._serialize_message, ensure_ascii=False).encode(errors="replace")
            except (TypeError, ValueError):
                super()._send_data(data)  # pygls reports what it cannot serialise
                return
        if self._include_headers:  # as pygls frames what it sends (a websocket carries the body alone)
            header = f"Content-Length: {len(body)}\r\nContent-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
            body = header.encode() + body
        written = self.writer.write(body)
        if inspect.isawaitable(written):
            asyncio.ensure_future(written)

    def structure_message(self, data: dict[str, Any]) -> Any:
        """pygls' structuring, except that a request it cannot structure is answered with the error, not dropped."""
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            msg_id = data.get("id")
            if "method" not in data or not isinstance(msg_id, (int, str)) or isinstance(msg_id, bool):
                raise
            why = f": {exc.__cause__}" if exc.__cause__ is not None else ""
            self.send_error(msg_id, exc.code, f"{exc.message}{why}"[:500])
            return _ANSWERED

    def receive(self, items: list[Item]) -> list[Item]:
        """Handle a batch of the client's frames in turn (each a message, or the error its framing earned); those
        left once the pass's CPU budget is spent are returned, for the reader to hand over a loop pass later."""
        started = time.thread_time()
        postpone_idle_collect()
        for index, item in enumerate(items):
            if not self.serving():
                return []  # `exit` came earlier in this batch
            # 50 submits sent together were one ~6 ms callback that every stream and request waited behind.
            if index and time.thread_time() - started > PASS_CPU_S:
                return items[index:]
            message = item if isinstance(item, Problem) else decode(item)
            if isinstance(message, Problem):
                logger.warning("bad message from the client: %s", message.message)
                self.send_error(message.msg_id, message.code, message.message)
            elif isinstance(message, list):
                self._refuse_batch(message)
            else:
                self._handle(message)
        return []

    def _handle(self, raw: Any) -> None:
        try:
            # Only the envelope is structured: pygls' object_hook also made messages of nested objects with "jsonrpc".
            self.handle_message(self.structure_message(raw) if isinstance(raw, dict) else raw)
        except Exception as exc:  # as pygls' own loop: logged, reported, and the next message is read
            logger.exception("Unable to handle message")
            self.on_error(exc)

    def _refuse_batch(self, batch: list[Any]) -> None:
        # LSP has no batches: each request in one is answered -32600 (by its id) so that no client waits for ever.
        ids = [m.get("id") for m in batch if isinstance(m, dict) and "method" in m]
        ids = [i for i in ids if isinstance(i, (int, str)) and not isinstance(i, bool)]
        message = "Invalid Request: JSON-RPC batches are not supported; send each message in its own frame"
        for msg_id in ids or [None]:
            self.send_error(msg_id, INVALID_REQUEST, message)

    def handle_message(self, message: Any) -> None:
        """Answer what is not JSON-RPC 2.0 with -32600 (pygls would drop it silently), then handle the rest."""
        if message is _ANSWERED:
            return
        if isinstance(message, dict) or getattr(message, "jsonrpc", None) != self.VERSION:
            msg_id = message.get("id") if isinstance(message, dict) else getattr(message, "id", None)
            logger.warning("invalid JSON-RPC message", extra={"id": msg_id})
            if getattr(message, "method", None) is None and not isinstance(message, dict):
                msg_id = None  # not even an object: no id to answer to
            if msg_id is None or isinstance(msg_id, (int, str)):
                self.send_error(msg_id, INVALID_REQUEST, 'Invalid Request: a JSON-RPC 2.0 object with "jsonrpc": "2.0"')
            return
        if getattr(message, "method", None) == types.SHUTDOWN:
            self.on_shutdown()  # an `exit` right behind it (before its answer) still ends with status 0
        if _is_submit(message) and isinstance(msg_id := getattr(message, "id", None), (int, str)):
            self.unhooked_submits[msg_id] = False
        super().handle_message(message)

    # A private pygls method: it starts a coroutine handler as a task, a loop pass later (see ollie_lsp.eager).
    def _execute_handler(self, msg_id: Any, handler: Any, callback: Any, args: Any = None, kwargs: Any = None) -> None:
        if msg_id in self.unhooked_submits:  # a submit that ends before its hook (an error) is forgotten too
            callback = self._forgetting(msg_id, callback)
        if not asyncio.iscoroutinefunction(handler) or asyncio.current_task() is not None:  # TCP reads in a task
            super()._execute_handler(msg_id, handler, callback, args, kwargs)
            return
        future = start_eagerly(handler(*(args or ()), **(kwargs or {})))
        if future.done():
            callback(future)
        else:
            self._request_futures[msg_id] = future  # type: ignore[assignment]  # pygls keeps its tasks here too
            future.add_done_callback(callback)

    def _forgetting(self, msg_id: Any, callback: Callable[[Any], None]) -> Callable[[Any], None]:
        """`callback`, forgetting the submit `msg_id` first."""

        def forget(future: Any) -> None:
            self.unhooked_submits.pop(msg_id, None)
            callback(future)

        return forget

    def send_error(self, msg_id: int | str | None, code: int, message: str) -> None:
        """Send a JSON-RPC error response (`msg_id` None when the request's id could not be read)."""
        # pygls has no public send of a raw message (id null included): its private _send_data frames and writes.
        self._send_data({"jsonrpc": self.VERSION, "id": msg_id, "error": {"code": code, "message": message}})

    # A cancelled submit interrupts its turn and still answers (stop "interrupted"), where pygls would cancel the
    # handler. A private method: pygls handles $/cancelRequest itself, before any feature could.
    def _handle_cancel_notification(self, msg_id: Any) -> None:
        hook = self.cancel_hooks.pop(msg_id, None)
        if hook is not None:
            logger.info("cancel of a pending submit: interrupting", extra={"msg_id": msg_id})
            hook()
            return
        if msg_id in self.unhooked_submits:  # its hook, once in place, is called at once: it answers "interrupted"
            self.unhooked_submits[msg_id] = True
            return
        super()._handle_cancel_notification(msg_id)


class OllieServer(LanguageServer):
    """The ollie daemon: one pygls server; the session table holds the engines."""

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
        assert isinstance(protocol, OllieProtocol)
        protocol.on_exit = lambda: self.end_serving(0 if self.shutdown_asked else 1)
        protocol.on_shutdown = self._shutdown_asked
        protocol.serving = self.serving
        protocol.on_error = lambda exc: self.report_server_error(exc, JsonRpcException)
        self._make_table = make_table
        self._load_engine = load_engine
        self.cancel_hooks = protocol.cancel_hooks
        self.unhooked_submits = protocol.unhooked_submits
        self.init_options = InitOptions()
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

    @property
    def table(self) -> SessionTable:
        """The session table, built on the first ollie/* request: an idle daemon stays small."""
        if self._table is None:
            if not self.initialized:
                raise SessionNotFound("(the server is not initialized)")
            self._table = self._make_table(self)
            self._table.start_default(resume=self.init_options.session, cwd=self.root_cwd,
                                      newest=self.init_options.continue_session)
        return self._table

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
        if self._table is not None:
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
        msg_id = self.protocol.msg_id
        if msg_id is not None:
            self.cancel_hooks[msg_id] = hook
            if self.unhooked_submits.pop(msg_id, False):  # cancelled before it got here
                self.cancel_hooks.pop(msg_id)
                hook()
        try:
            yield
        finally:
            if msg_id is not None:
                self.cancel_hooks.pop(msg_id, None)

    async def serve_client(self, frames: FrameSource) -> None:
        """Handle one client's messages from `frames` until it goes away or `exit` ends the loop."""
        # Heavy work runs in threads; the loop waits up to the switch interval for the GIL after each syscall.
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        assert isinstance(self.protocol, OllieProtocol)
        self._serving = asyncio.ensure_future(frames.run(self.protocol.receive))
        try:
            await self._serving
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():  # this coroutine itself is cancelled, not just the reading
                raise
            # `exit` ended the reading (end_serving): the caller closes the sessions.

    def _shutdown_asked(self) -> None:
        self.shutdown_asked = True

    def serving(self) -> bool:
        """Whether the client's messages are still being handled (not once `exit` came: `client_gone` was called)."""
        return self._serving is not None and not self._serving.done() and self._backstop is None

    def end_serving(self, code: int) -> None:
        """`exit`: stop reading the client at once (it may keep its pipe open); the process ends with `code`."""
        self.exit_code = code
        self.client_gone()
        if self._serving is not None:
            self._serving.cancel()

    async def close_sessions(self) -> None:
        """Close every live session (shutdown, exit, or the client gone); nothing when none was started.

        Every caller waits for the same close, shielded: a second one (exit, then EOF) must not cancel it half-way.
        """
        self.closing = True
        # A session started after the last close (shutdown, then a late session/new) is closed too.
        if self._closed is None or (self._closed.done() and self._table is not None and self._table.live()):
            self._closed = asyncio.ensure_future(self._close_table())
        await asyncio.shield(self._closed)

    async def _close_table(self) -> None:
        if self._table is not None:
            await self._table.close_all()

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
        return Path.home()


def in_daemon_thread(fn: Callable[[], None]) -> asyncio.Future[None]:
    """Run `fn` in a daemon thread of its own; the future has its outcome.

    Not the loop's default executor: the loop's end joins its threads, so an `exit` waited for the engine's import.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def settle(error: Exception | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(None)

    def run() -> None:
        error: Exception | None = None
        try:
            fn()
        except Exception as exc:  # handed to the awaiting side, which reports it
            error = exc
        with suppress(RuntimeError):  # the loop ended meanwhile: nobody waits any more
            loop.call_soon_threadsafe(settle, error)

    threading.Thread(target=run, name="ollie-lsp-load-engine", daemon=True).start()
    return done


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


# How long every session must have been idle before the cycle collector's full pass runs (collect_when_idle).
IDLE_COLLECT_S = 2.0
# Sessions whose objects are frozen (a closed one: until a pass over everything), with their weight when last seen.
_frozen_sessions: dict[str, int] = {}
# A pass over everything frees closed sessions' cycles once their weight is this share of the live ones' at least.
CLOSED_SHARE = 0.25
# A session's weight: its messages, plus what a session holds whatever its length (its Core, tools, backend: ~250
# objects, ~60 messages' worth). A pass walks every live object: with a 100,000-message session live, one closed
# short session unfroze and walked 405,000 objects (130-170 ms of CPU) to free 224.
SESSION_WEIGHT = 64


# A live object, used by identity: no generated __eq__/__repr__ (each is code compiled at import, before the first token).
@dataclass(eq=False, repr=False)
class _IdlePass:
    """The pending idle pass: one timer, whose deadline each message from the client moves later."""

    loop: asyncio.AbstractEventLoop
    timer: asyncio.TimerHandle
    deadline: float  # the loop's time
    live: Callable[[], list[LiveSession]]  # where it finds the live sessions


_idle_pass: _IdlePass | None = None


def collect_when_idle(live: Callable[[], list[LiveSession]]) -> None:
    """After IDLE_COLLECT_S with no other call and no turn running: a collection, then freeze what is left."""
    # A full pass walks every object, every thread stopped (80 ms with 50 sessions); left to the collector it
    # came mid-work (50 first turns at once). Frozen after, the passes during turns walk only what is new.
    global _idle_pass
    loop = asyncio.get_running_loop()
    deadline = loop.time() + IDLE_COLLECT_S
    if _idle_pass is not None:
        if _idle_pass.loop is loop:
            _idle_pass.deadline, _idle_pass.live = deadline, live
            return
        _idle_pass.timer.cancel()  # another loop's (an earlier server in this process)
    _idle_pass = _IdlePass(loop, loop.call_at(deadline, _idle_pass_due), deadline, live)


def _idle_pass_due() -> None:
    global _idle_pass
    pending = _idle_pass
    if pending is None:
        return
    if pending.loop.time() < pending.deadline:  # put off since it was armed: it waits for the new deadline
        pending.timer = pending.loop.call_at(pending.deadline, _idle_pass_due)
        return
    _idle_pass = None
    collect_and_freeze(pending.live())


def postpone_idle_collect() -> None:
    """The client sent something: a pending idle pass waits IDLE_COLLECT_S from now (typing is not idle)."""
    # Only its deadline moves (the timer looks at it when it fires): no timer cancelled and made per batch.
    if _idle_pass is not None:
        _idle_pass.deadline = _idle_pass.loop.time() + IDLE_COLLECT_S


def collect_and_freeze(sessions: list[LiveSession], *, closed_too: bool = True) -> None:
    """Unless a turn runs: a full pass over what is not frozen, then freeze it (a new session's objects, say).

    `closed_too`: everything is unfrozen first when sessions frozen earlier have closed since, so their cycles go
    (a pass over every object, 60-80 ms with 50 sessions: the idle one only, once the closed ones weigh CLOSED_SHARE
    of the live ones, so that the walk stays in proportion to what it frees, however long the live histories).
    """
    if any(session.core.is_running for session in sessions):
        return
    weights = {session.id: SESSION_WEIGHT + len(session.core.session.messages) for session in sessions}
    closed = sum(weight for sid, weight in _frozen_sessions.items() if sid not in weights)
    if closed_too and closed and closed >= CLOSED_SHARE * sum(weights.values()):
        gc.unfreeze()
        _frozen_sessions.clear()
    _frozen_sessions.update(weights)
    gc.collect()
    gc.freeze()
