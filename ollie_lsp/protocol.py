"""The daemon's wire protocol: how the client's messages are read, structured, answered, cancelled and written."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import attrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
    lsp_method,
)

from ollie.jsonpieces import EncodedBody
from ollie.loopshare import PASS_CPU_S  # also what one callback may spend on a batch of the client's messages
from ollie.stdio import INVALID_REQUEST
from ollie_lsp.capabilities import fit_capabilities
from ollie_lsp.documents import note_source
from ollie_lsp.eager import start_eagerly
from ollie_lsp.framing import Item, Problem, decode
from ollie_lsp.idlecollect import postpone_idle_collect
from ollie_lsp.lineindex import ChunkedDocument, apply_change
from ollie_lsp.names import ACTION_COMMAND, METHOD_NAMES, command_name

if TYPE_CHECKING:
    from cattrs import Converter

logger = logging.getLogger("ollie.lsp.server")

PROTOCOL_VERSION = 2


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
        # Framed as pygls frames what it sends (the daemon serves no websocket, whose messages go unframed).
        header = f"Content-Length: {len(body)}\r\nContent-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
        written = self.writer.write(header.encode() + body)
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
