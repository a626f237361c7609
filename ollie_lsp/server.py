"""The pygls server object: LSP lifecycle, capabilities, cancellation, and the session table it owns."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from pygls.uris import to_fs_path

from ollie import __version__
from ollie_lsp.asking import ask_client
from ollie_lsp.documents import LspDocuments, register_documents
from ollie_lsp.editor import OpenDocument
from ollie_lsp.errors import InvalidParams, SessionNotFound
from ollie_lsp.framing import INVALID_REQUEST, Item, Problem, decode
from ollie_lsp.names import METHOD_NAMES, command_name
from ollie_lsp.options import InitOptions, parse_init_options
from ollie_lsp.permission import announces_permission, ask_step

if TYPE_CHECKING:
    from ollie.agent.core import Core
    from ollie_lsp.framing import FrameSource
    from ollie_lsp.sessions import SessionTable

logger = logging.getLogger("ollie.lsp.server")

PROTOCOL_VERSION = 2
ALLOW_ELEVATION = "Allow once"
SWITCH_INTERVAL_S = 0.001
# How long the daemon may take to end once its client is gone before it exits anyway (never orphaned).
EXIT_BACKSTOP_S = 5.0


def raw_params_converter() -> Any:
    """pygls' converter, except that custom messages keep their params/results as plain JSON (dicts).

    The default turns them into namedtuples, whose own methods (`count`, `index`)
    shadow fields of those names; params are checked by ollie_lsp.params instead.
    """
    converter = default_converter()

    def keep_params(obj: dict[str, Any], cls: type) -> Any:
        # JSON-RPC lets a request or notification leave `params` out (a TypeError here left it unanswered);
        # members a message should not carry are ignored.
        return cls(**{field.name: obj.get(field.name) for field in attrs.fields(cls)})

    converter.register_structure_hook(JsonRPCRequestMessage, keep_params)
    converter.register_structure_hook(JsonRPCNotification, keep_params)
    converter.register_structure_hook(JsonRPCResponseMessage, keep_params)
    return converter


# A converter built (and its hooks for the start-up messages generated) ahead of the server that takes it: the
# warm-start preloader's, so that each fork does not build its own (~35 ms).
_prebuilt: list[Any] = []


def prebuild_converter() -> None:
    """Build the next server's converter now, with cattrs' hooks for `initialize` and its answer generated."""
    converter = raw_params_converter()
    converter.structure({"processId": None, "rootUri": "file:///", "capabilities": {}}, types.InitializeParams)
    converter.unstructure(types.InitializeResult(capabilities=types.ServerCapabilities(),
                                                 server_info=types.ServerInfo(name="ollie-lsp")))
    _prebuilt[:] = [converter]


def server_converter() -> Any:
    """The converter a new server takes: the one built ahead, if any (once), else a new one."""
    return _prebuilt.pop() if _prebuilt else raw_params_converter()


# What structure_message hands on for a request it answered with an error already.
_ANSWERED = object()


class OllieProtocol(LanguageServerProtocol):
    """LSP protocol plus `experimental.ollie` in the capabilities and cancel-as-interrupt for submits."""

    _server: OllieServer

    # pygls builds the capabilities itself: `experimental.ollie` can only be added to its answer.
    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        """The standard initialize, then the ollie capabilities added to its result."""
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"ollie": {"version": PROTOCOL_VERSION, "methods": list(METHOD_NAMES)}}
        return result

    # pygls' exit raises SystemExit from a loop callback once the writer is closed: asyncio.run then failed in its
    # own cleanup ("Event loop stopped before Future completed", status 1), and an exit that came while shutdown
    # still ran was cancelled by it (the daemon hung until its backstop). Here exit only ends the reading; the
    # caller (serve_stdio, serve_tcp) closes the sessions and the process ends normally.
    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> None:
        """End serving the client: status 0 after `shutdown`, else 1 (as LSP says)."""
        self._server.end_serving(0 if self._shutdown or self._server.shutdown_asked else 1)

    def _serialize_message(self, data: Any) -> Any:
        """ollie/* results and params are plain JSON already: skip cattrs' recursive copy of them.

        json.dumps still calls back here for anything nested that is not plain JSON.
        """
        if isinstance(data, JsonRPCResponseMessage) and isinstance(data.result, dict):
            return {"id": data.id, "jsonrpc": data.jsonrpc, "result": data.result}
        if isinstance(data, JsonRPCNotification) and isinstance(data.params, dict):
            return {"method": data.method, "jsonrpc": data.jsonrpc, "params": data.params}
        return super()._serialize_message(data)

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

    def receive(self, items: list[Item]) -> None:
        """Handle a batch of the client's frames in turn: each a message, or the error its framing earned."""
        for item in items:
            if not self._server.serving():
                return  # `exit` came earlier in this batch
            message = item if isinstance(item, Problem) else decode(item)
            if isinstance(message, Problem):
                logger.warning("bad message from the client: %s", message.message)
                self.send_error(message.msg_id, message.code, message.message)
            elif isinstance(message, list):
                self._refuse_batch(message)
            else:
                self._handle(message)

    def _handle(self, raw: Any) -> None:
        try:
            # Only the envelope is structured: pygls' object_hook also made messages of nested objects with "jsonrpc".
            self.handle_message(self.structure_message(raw) if isinstance(raw, dict) else raw)
        except Exception as exc:  # as pygls' own loop: logged, reported, and the next message is read
            logger.exception("Unable to handle message")
            self._server.report_server_error(exc, JsonRpcException)

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
        super().handle_message(message)

    def send_error(self, msg_id: int | str | None, code: int, message: str) -> None:
        """Send a JSON-RPC error response (`msg_id` None when the request's id could not be read)."""
        # pygls answers only messages it could parse; these errors go out raw, id null included.
        self._send_data({"jsonrpc": self.VERSION, "id": msg_id, "error": {"code": code, "message": message}})

    # pygls cancels the handler on $/cancelRequest; a submit must interrupt its turn and still answer.
    def _handle_cancel_notification(self, msg_id: Any) -> None:
        hook = self._server.cancel_hooks.pop(msg_id, None)
        if hook is not None:
            # A cancelled submit interrupts its turn and still answers, with stop "interrupted".
            logger.info("cancel of a pending submit: interrupting", extra={"msg_id": msg_id})
            hook()
            return
        super()._handle_cancel_notification(msg_id)


class OllieServer(LanguageServer):
    """The ollie daemon: one pygls server; the session table holds the engines."""

    def __init__(self, *, coalesce_s: float = 0.004) -> None:
        super().__init__(
            "ollie-lsp",
            __version__,
            protocol_cls=OllieProtocol,
            converter_factory=server_converter,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.coalesce_s = coalesce_s
        self.cancel_hooks: dict[Any, Callable[[], None]] = {}
        self.init_options = InitOptions()
        # The client answers `ollie/permission` (initializationOptions `permissionRequest`), not just showMessageRequest.
        self.rich_permission = False
        self._table: SessionTable | None = None
        # The client's open documents: the file tools read their unsaved text and edit them through applyEdit.
        self.documents = LspDocuments(self)
        self.initialized = False
        # Set by shutdown/exit: a background warm-up that finishes afterwards starts no session.
        self.closing = False
        self._engine: asyncio.Future[None] | None = None
        # The one close of every session: shutdown, exit and the client's EOF all wait for the same one.
        self._closed: asyncio.Future[None] | None = None
        self._backstop: threading.Thread | None = None
        # The client's message loop while it runs (`exit` ends it), and the status the process ends with.
        self._serving: asyncio.Future[None] | None = None
        self.exit_code = 0
        self.shutdown_asked = False
        # The workspace at initialize: the default session's CWD even if the folders change before it is built.
        self.root_cwd = start_dir()
        # Where new sessions start, until the table is built; then its defaults hold it (see `default_cwd`).
        self._new_session_cwd = self.root_cwd

    @property
    def table(self) -> SessionTable:
        """The session table, built on the first ollie/* request: an idle daemon stays small."""
        if self._table is None:
            if not self.initialized:
                raise SessionNotFound("(the server is not initialized)")
            self._table = build_table(self)
            self._table.start_default(resume=self.init_options.session, cwd=self.root_cwd)
        return self._table

    async def engine_loaded(self) -> None:
        """Wait until the engine is imported: once, in a thread, whoever asks first.

        Every ollie/* request waits here rather than importing on its own: two threads importing
        the same modules at once can see one half-initialized (`cannot import name`).
        """
        if self._engine is None:
            self._engine = asyncio.ensure_future(asyncio.to_thread(preload_engine))
        await asyncio.shield(self._engine)

    async def warm_up(self) -> None:
        """After `initialized`: load the engine in a thread, then start building the default session.

        The first request then finds the session ready (or being built) instead of paying for it.
        """
        if self._table is not None:
            return
        try:
            await self.engine_loaded()
        except Exception:
            # Not fatal here: the first ollie/* request imports it again and answers with the error.
            logger.exception("loading the engine in the background failed")
            return
        if self._table is None and self.initialized and not self.closing:
            table = self.table
            # Every session's prompt commands wait for its first need (session/new stays fast); the default
            # session's run now, in the background: the editor's first prompt usually comes at once.
            try:
                live = await table.default()
                await live.core.ready_prompt()
            except Exception:
                # The first request meets the same failure and answers with it.
                logger.debug("preparing the default session's prompt failed", exc_info=True)
            release_free_memory()

    @property
    def default_cwd(self) -> Path:
        """Where new sessions start: one value, kept by the table once it exists."""
        return self._table.defaults.cwd if self._table is not None else self._new_session_cwd

    @default_cwd.setter
    def default_cwd(self, cwd: Path) -> None:
        if self._table is not None:
            self._table.defaults.cwd = cwd
        else:
            self._new_session_cwd = cwd

    @contextmanager
    def on_cancel(self, hook: Callable[[], None]) -> Iterator[None]:
        """While inside, a `$/cancelRequest` for the request being handled calls `hook` instead of cancelling it."""
        msg_id = self.protocol.msg_id
        if msg_id is not None:
            self.cancel_hooks[msg_id] = hook
        try:
            yield
        finally:
            if msg_id is not None:
                self.cancel_hooks.pop(msg_id, None)

    async def serve_client(self, frames: FrameSource) -> None:
        """Handle one client's messages from `frames` until it goes away or `exit` ends the loop."""
        # Heavy work (a long session's parse, a compaction's snapshot) runs in threads. Each time the loop
        # gives up the GIL for a syscall it waits up to the switch interval to get it back (5 ms by default,
        # several times per request): 1 ms keeps other sessions' requests prompt meanwhile.
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

        Every caller waits for the same close, shielded: a second caller (exit, then EOF) must not see it
        done while the first is still ending the turns, or the loop would end and cancel it half-way.
        """
        self.closing = True
        # A session a request started after the last close (shutdown, then a late session/new) is closed too.
        if self._closed is None or (self._closed.done() and self._table is not None and self._table.live()):
            self._closed = asyncio.ensure_future(self._close_table())
        await asyncio.shield(self._closed)

    async def _close_table(self) -> None:
        if self._table is not None:
            await self._table.close_all()

    def client_gone(self) -> None:
        """The client left (EOF, `exit`): from now on the process ends within EXIT_BACKSTOP_S, whatever hangs."""
        if self._backstop is None:
            self._backstop = threading.Thread(target=exit_backstop, args=(EXIT_BACKSTOP_S,),
                                              name="ollie-lsp-exit-backstop", daemon=True)
            self._backstop.start()

    async def approve_elevation(self, session_id: str, what: str) -> bool:
        """Ask the user (window/showMessageRequest) whether a step may run outside the sandbox."""
        # Through ask_client: a question withdrawn unanswered ($OLLIE_QUESTION_TIMEOUT_S) is cancelled in the editor.
        reply = await ask_client(self.protocol, types.WINDOW_SHOW_MESSAGE_REQUEST, types.ShowMessageRequestParams(
            type=types.MessageType.Warning,
            message=f"ollie (session {session_id}) asks to run this outside the sandbox:\n\n{what}",
            actions=[types.MessageActionItem(title=ALLOW_ELEVATION), types.MessageActionItem(title="Deny")],
        ))
        # Dismissed (null) is a no.
        title = reply.get("title") if isinstance(reply, dict) else getattr(reply, "title", None)
        return title == ALLOW_ELEVATION

    def show(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        """Tell the user something (window/showMessage) and log it."""
        logger.warning(message)
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def document(self, uri: str) -> OpenDocument | None:
        """The editor's view of a document: its unsaved text when open, else the file on disk."""
        try:
            doc = self.workspace.text_documents.get(uri) or self.workspace.get_text_document(uri)
            return OpenDocument(text=doc.source, language_id=doc.language_id)
        except (OSError, ValueError, TypeError, RuntimeError):
            # Not open and not a readable file (deleted, a directory, an `untitled:` buffer).
            return None

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

    async def output_writable(self) -> None:
        """Return once the client has taken enough of the daemon's output (see `ollie_lsp.stdio.PipeWriter`)."""
        writer = self.protocol.writer
        writable = getattr(writer, "writable", None)
        if writable is not None:
            await writable()
        elif isinstance(writer, asyncio.StreamWriter):  # TCP: the stream's own flow control
            try:
                await writer.drain()
            except ConnectionError:
                pass

    def supports_progress(self) -> bool:
        """Whether the client takes server-initiated work-done progress."""
        caps = self.client_capabilities
        return bool(caps and caps.window and caps.window.work_done_progress)


def workspace_cwd(params: types.InitializeParams) -> Path | None:
    """The CWD the client gives: workspaceFolders[0], else rootUri, else rootPath."""
    candidates = []
    if params.workspace_folders:
        candidates.append(to_fs_path(params.workspace_folders[0].uri))
    if params.root_uri:
        candidates.append(to_fs_path(params.root_uri))
    if params.root_path:
        candidates.append(params.root_path)
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


def start_dir() -> Path:
    """The daemon's working directory; home when it was started in one removed since (it crashed there)."""
    try:
        return Path.cwd()
    except FileNotFoundError:
        return Path.home()


def register_lifecycle(server: OllieServer) -> None:
    """initialize/initialized/shutdown/exit and the workspace folder changes."""

    @server.feature(types.INITIALIZE)
    def initialize(ls: OllieServer, params: types.InitializeParams) -> None:
        options, problems = parse_init_options(params.initialization_options)
        for problem in problems:
            ls.show(f"ollie: {problem}")
        ls.init_options = options
        ls.rich_permission = announces_permission(params.initialization_options)
        ls.root_cwd = ls.default_cwd = workspace_cwd(params) or start_dir()
        # The engine loads after `initialized` (`warm_up`), so the initialize answer does not wait for it.
        ls.initialized = True

    @server.feature(types.INITIALIZED)
    async def initialized(ls: OllieServer, params: types.InitializedParams) -> None:
        await ls.warm_up()

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: OllieServer, *args: Any) -> None:
        ls.shutdown_asked = True  # an `exit` sent before this answer still ends with status 0
        await ls.close_sessions()

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def folders_changed(ls: OllieServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        added = [to_fs_path(f.uri) for f in params.event.added or []]
        for path in added:
            if path and Path(path).is_dir():
                ls.default_cwd = Path(path)
                break

    @server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def progress_cancelled(ls: OllieServer, params: types.WorkDoneProgressCancelParams) -> None:
        token = str(params.token)
        for live in ls._table.live() if ls._table is not None else []:
            if live.progress.token == token:
                live.core.interrupt("cancelled from the progress bar")


def exit_backstop(grace_s: float) -> None:
    """After `grace_s`, end the process even if something hangs: the fork server's steps swept, then exit(1)."""
    time.sleep(grace_s)
    logger.error("the daemon did not end %.0f s after its client went: exiting now", grace_s)
    if "ollie.sandbox.spawn" in sys.modules:  # a fork server can only run once a step was spawned
        from ollie.sandbox.spawn import fork_server

        # Bounded: the server stops every running step's processes and exits (else it is killed).
        fork_server().close()
    logging.shutdown()
    os._exit(1)


def preload_engine() -> None:
    """Start the fork server, then import what the first ollie/* request needs (in a thread: it holds no lock
    the loop needs)."""
    start_fork_server()
    import ollie.agent.core  # noqa: F401
    import ollie_lsp.methods  # noqa: F401
    import ollie_lsp.sessions  # noqa: F401


def start_fork_server() -> None:
    """Start the sandbox's fork server: another process, so another core, ready when the prompt commands run.

    Started at the first spawn instead, it held the default session's first prompt command ~80 ms.
    """
    try:
        from ollie.sandbox.spawn import fork_server

        fork_server().start()
    except Exception:  # the first spawn tries again, or runs through the per-spawn launcher
        logger.warning("starting the sandbox's fork server failed", exc_info=True)


def release_free_memory() -> None:
    """Give the C heap's free pages back to the OS (glibc's malloc_trim; elsewhere nothing).

    Importing the engine in a thread and building the first session free ~1 MiB that would otherwise stay
    resident in the malloc arenas for the daemon's whole life. Once, after warm-up: it takes well under 1 ms.
    """
    try:
        import ctypes  # already loaded: the sandbox's Landlock calls use it

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # no malloc_trim (musl, macOS)
        pass


def build_table(ls: OllieServer) -> SessionTable:
    """The session table, wired to this server's notifications."""
    from ollie_lsp.events import EventForwarder
    from ollie_lsp.progress import TurnProgress
    from ollie_lsp.records import Records
    from ollie_lsp.sessions import SessionDefaults, SessionTable

    options = ls.init_options
    defaults = SessionDefaults(
        agent=options.agent or "default", backend=options.backend, model=options.model,
        env=dict(options.env), cwd=ls.default_cwd,
    )
    table: SessionTable

    def make_progress(session_id: str) -> TurnProgress:
        return TurnProgress(ls.work_done_progress, session_id, enabled=ls.supports_progress())

    def make_forwarder(session_id: str, core: Core) -> EventForwarder:
        def send(params: dict[str, Any]) -> None:
            ls.protocol.notify("ollie/event", params)

        def on_state() -> None:
            live = table.find(session_id)
            if live is None:
                return
            changed = live.state_changed()
            if changed is not None:
                ls.protocol.notify("ollie/stateChanged", changed)
            if live.core.is_running and live.core.state != "idle":
                live.progress.report(live.core.state)

        def on_turn(content: str) -> None:
            live = table.find(session_id)
            if live is None:
                return
            if content == "start":
                live.progress.begin(live.next_prompt_title())
            else:
                live.progress.end(content)

        return EventForwarder(
            session_id, core.bus.subscribe(), send=send, on_state=on_state, on_turn=on_turn, coalesce_s=ls.coalesce_s,
            paused=ls.output_paused, writable=ls.output_writable,
        )

    editor = None
    if options.editor_tools:
        from ollie_lsp.editortools import LspEditorKnowledge

        editor = LspEditorKnowledge(ls)
    table = SessionTable(
        defaults=defaults, records=Records(), make_forwarder=make_forwarder, make_progress=make_progress,
        ask_user=ls.approve_elevation, ask_step=partial(ask_step, ls), notify_problem=ls.show, documents=ls.documents,
        editor=editor,
    )
    return table


def build_server(*, coalesce_s: float = 0.004) -> OllieServer:
    """The daemon, with every feature registered."""
    server = OllieServer(coalesce_s=coalesce_s)
    register_lifecycle(server)
    register_documents(server)
    register_methods(server)
    return server


def register_methods(server: OllieServer) -> None:
    """Every ollie/* method and its `ollie.*` executeCommand mirror, as stubs that import the handlers on first use."""
    for name in METHOD_NAMES:
        server.feature(name)(_lazy_method(name))
        server.command(command_name(name))(_lazy_command(name))


def _lazy_method(name: str) -> Callable[..., Any]:
    async def run(ls: OllieServer, raw: Any) -> dict[str, Any]:
        await ls.engine_loaded()
        from ollie_lsp import methods

        return await methods.call(name, ls, raw)

    return run


def _lazy_command(name: str) -> Callable[..., Any]:
    async def run(ls: OllieServer, *args: Any) -> dict[str, Any]:
        if len(args) > 1:
            raise InvalidParams(f"arguments: expected one argument (the params object), got {len(args)}")
        await ls.engine_loaded()
        from ollie_lsp import methods

        return await methods.call(name, ls, args[0] if args else None)

    return run
