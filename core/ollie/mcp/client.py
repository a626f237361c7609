"""One MCP server connection: start it, list its tools and prompts, call them, restart it with backoff when it dies.

An HTTP server's death is a request that cannot reach it (a call, or `probe`'s ping); once the backoff is used up
it is reconnected on its next use.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ollie.backend.types import Image
from ollie.backend.urls import shown_url
from ollie.mcp.config import NOT_MCP, SERVER_NAME, ServerSpec
from ollie.mcp.transport import START_TIMEOUT_S, CannotStart, Inbox, Known, Outbox, http_streams, leaf, why
from ollie.tools.base import ToolInfo, ToolResult

if TYPE_CHECKING:
    from ollie.sandbox.egress import Asker, NetAsk

log = logging.getLogger(__name__)
T = TypeVar("T")

# How long a server a call got no answer from has to answer a ping before it is restarted.
PING_TIMEOUT_S = 5.0
# How long a failed server's exit (and last stderr) is awaited, to say why it failed.
STDERR_WAIT_S = 2.0
# Why a stdio server ended when its sandbox's fork server died (its supervisor stops it then).
SANDBOX_STOPPED = "ollie's sandbox helper (its fork server) died, so ollie stopped the server"
# Restart delays after a crash; when they are used up the server stays failed until the session restarts.
BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 16.0)
# What a server may put before the model: a schema or description larger than this is cut or refused.
MAX_SCHEMA_BYTES = 64 * 1024
MAX_DESCRIPTION = 2000
# All of a server's tools together (schemas and descriptions), as they go with every request to the model: 500
# tools of 16 KiB each were 8 MB of every request. Tools past it are left out, the user told.
MAX_TOOLS_BYTES = 512 * 1024
MAX_RESULT_BYTES = 1024 * 1024
# Backends accept tool names of this alphabet and length.
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
MAX_TOOL_NAME = 64


@dataclass(eq=False, repr=False)
class McpTool(ToolInfo):
    """A tool of a server as the model sees it (`parameters`: the server's schema), its name there and its hints."""

    remote: str = field(kw_only=True)
    read_only: bool = field(default=False, kw_only=True)

    @property
    def kind(self) -> str:
        """The step kind: `read` for a read-only tool, else `other` (it may change things: asks)."""
        return "read" if self.read_only else "other"


@dataclass
class McpPrompt:
    """A prompt a server offers: `/mcp:<server>:<name>`."""

    name: str
    description: str
    arguments: list[str] = field(default_factory=list)


@dataclass
class McpResource:
    """A resource a server offers, to add as context (`/mcp add <server> <uri>`)."""

    uri: str
    name: str
    description: str = ""


MAX_LISTED = 500


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, in the characters backends accept."""
    return _UNSAFE.sub("_", f"mcp__{server}__{tool}")[:MAX_TOOL_NAME]


def _tools(server: str, listed: list[Any], *, hinted: bool = True) -> tuple[list[McpTool], int]:
    """The tools of a server's listing the model gets (in order, within MAX_LISTED and MAX_TOOLS_BYTES), and how
    many are left out (those too, and any whose schema alone is past MAX_SCHEMA_BYTES); `hinted`: its hints count."""
    tools, size = [], 0
    for raw in listed:
        if len(tools) == MAX_LISTED:
            break
        if (tool := _tool(server, raw, hinted)) is None:
            continue
        size += len(json.dumps(tool.parameters)) + len(tool.description)
        if size > MAX_TOOLS_BYTES:
            break
        tools.append(tool)
    return tools, len(listed) - len(tools)


def _tool(server: str, raw: Any, hinted: bool) -> McpTool | None:
    schema = raw.inputSchema if isinstance(raw.inputSchema, dict) else {}
    if len(json.dumps(schema)) > MAX_SCHEMA_BYTES:
        return None
    schema = {**schema, "type": "object"}
    hints = raw.annotations
    return McpTool(
        name=tool_name(server, raw.name), remote=raw.name, server=SERVER_NAME,
        description=(raw.description or raw.title or raw.name)[:MAX_DESCRIPTION], parameters=schema,
        read_only=hinted and bool(hints and hints.readOnlyHint))


async def result_of(result: Any) -> ToolResult:
    """A CallToolResult as the model gets it: its text items, its images (checked, as a prompt's: PNG, JPEG, GIF
    or WebP, capped in size and number), other content named, structured content as JSON when alone."""
    from ollie.backend import images as checks

    parts: list[str] = []
    images: list[Image] = []
    tried = 0
    for item in result.content or []:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)
        elif kind == "resource":
            inner = item.resource
            parts.append(getattr(inner, "text", None) or f"[resource {inner.uri}]")
        elif kind == "image" and (tried := tried + 1) <= checks.MAX_IMAGES:  # counted before any is decoded
            try:  # megabytes of base64, decoded and checked: not on the event loop
                image = await asyncio.to_thread(checks.from_base64, item.data, mime=item.mimeType,
                                                name=f"the server's image {tried}")
            except checks.ImageError as exc:
                parts.append(f"[image left out: {exc}]")
            else:
                images.append(image)
                parts.append(f"[image {image.mime}, {len(item.data) * 3 // 4:,} bytes: attached]")
        elif kind == "image":
            parts.append(f"[image {item.mimeType} left out: more than {checks.MAX_IMAGES} in one result]")
        elif kind == "audio":
            parts.append(f"[audio {item.mimeType}, {len(item.data) * 3 // 4} bytes]")
        elif kind == "resource_link":
            parts.append(f"[resource {item.uri}]")
    if not parts and result.structuredContent is not None:
        parts.append(json.dumps(result.structuredContent, ensure_ascii=False))
    text = "\n".join(parts)
    if len(text) > MAX_RESULT_BYTES:
        text = text[:MAX_RESULT_BYTES] + f"\n[ollie: the server's result was cut at {MAX_RESULT_BYTES} characters]"
    return ToolResult(text, bool(result.isError), images)


class McpServer:
    """A configured server's lifetime in a session: `state` starting / ready / failed (with `error`) / stopped."""

    def __init__(self, spec: ServerSpec, *, cwd: Path, environ: Mapping[str, str], network_from: str,
                 notify: Callable[[str], None], changed: Callable[[], None]) -> None:
        self.spec = spec
        self.state = "starting"
        self.error = ""
        self.tools: list[McpTool] = []
        self.prompts: list[McpPrompt] = []
        self.resources: list[McpResource] = []
        self.restarts = 0
        self._left_out = 0  # tools of the last listing the model does not get (`_tools`)
        self._cwd, self._environ, self._network = cwd, environ, network_from
        self._notify, self._changed = notify, changed
        self._session: Any = None
        # Set when the current connection ended (a call in flight then fails rather than wait).
        self._gone = asyncio.Event()
        # A tools/list after `tools/list_changed`, in flight: a call that caused it waits for it (the next
        # request to the model then offers the new tools).
        self._refreshing: asyncio.Future[None] | None = None
        self._relist = False  # a list_changed came since that listing started
        self._ready = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        # The JSON-RPC id of each call in flight, by the progress token ollie gave it (what a cancel names).
        self._outbox: Outbox | None = None
        self._calls = 0
        self._net = _CallsNetAsk()
        self._checking: asyncio.Future[None] | None = None  # a check of a server a call got no answer from

    def start(self) -> None:
        """Start (and keep restarting) the server in the background."""
        self._task = asyncio.ensure_future(self._run())

    async def restart(self, wait: float = START_TIMEOUT_S) -> None:
        """Stop the connection (and any backoff) and connect anew; return once ready or failed, or after `wait`."""
        if self._closing:
            return
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        self._session = None
        # Started anew: `/mcp` said "restarted 5x" of a server the user had just restarted by hand, and ready.
        self.restarts = 0
        self.state, self.error, self._ready = "starting", "", asyncio.Event()
        self.tools, self.prompts, self.resources = [], [], []
        self._changed()
        self.start()
        await self.wait_ready(wait)

    async def revive(self) -> bool:
        """Reconnect an HTTP server given up after its backoff (its next use); whether it is ready."""
        if self.spec.url and self.state == "failed" and self._task is not None and self._task.done():
            await self.restart()
        return self.state == "ready"

    async def probe(self, timeout: float = 5.0) -> None:
        """Ping a ready HTTP server: one that no longer answers is shown failed with why (and reconnected)."""
        session = self._session
        if not self.spec.url or session is None or self.state != "ready":
            return
        gone = self._gone
        ping, ended = asyncio.ensure_future(session.send_ping()), asyncio.ensure_future(gone.wait())
        try:
            # A connection that ended (a dead server) left the SDK's ping pending for all of `timeout`: its end answers.
            await asyncio.wait({ping, ended}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if ping.done() and not ping.cancelled() and ping.exception() is None:
                return
            with contextlib.suppress(TimeoutError):  # the transport ends with the reason: wait for it to be the state
                async with asyncio.timeout(timeout):
                    await gone.wait()
        finally:
            ping.cancel()
            ended.cancel()

    async def _restart_if_deaf(self, session: Any) -> None:
        """After a call got no answer: a server that answers no ping either is restarted (each later call would
        wait its whole timeout); one that answers is only slow at that tool and is kept."""
        try:
            async with asyncio.timeout(PING_TIMEOUT_S):
                await session.send_ping()
        except Exception:  # noqa: BLE001 - no answer (or the connection went): it is stuck
            if self._session is session and not self._closing:
                self._notify(f"MCP server {self.spec.name!r} answered neither a call nor a ping within "
                             f"{PING_TIMEOUT_S:g} s: restarting it")
                await self.restart()
        finally:
            self._checking = None

    @property
    def first_start(self) -> bool:
        """Whether its first start (since it was made or restarted) has not succeeded or failed yet."""
        return not self._ready.is_set()

    async def wait_ready(self, timeout: float) -> None:
        """Return once the first start succeeded or failed, or after `timeout` (it keeps starting)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._ready.wait()

    def status(self) -> dict[str, Any]:
        """The `ollie/mcp/list` entry of this server."""
        return {"name": self.spec.name, "transport": self.spec.transport, "source": self.spec.source,
                "state": self.state, "error": self.error, "restarts": self.restarts,
                "tools": [{"name": t.name, "tool": t.remote, "kind": t.kind, "description": t.description}
                          for t in self.tools],
                "prompts": [{"name": p.name, "description": p.description, "arguments": p.arguments}
                            for p in self.prompts],
                "resources": [{"uri": r.uri, "name": r.name, "description": r.description} for r in self.resources]}

    async def _run(self) -> None:
        attempt, told = 0, ""
        while not self._closing:
            was_ready = lasting = False
            try:
                await self._connect_and_serve()
                was_ready = True  # it served, then went away
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure is the server's state, shown to the user (self.error)
                was_ready = self.state == "ready"
                lasting = isinstance(leaf(exc), CannotStart)
            finally:
                why = self.error
                self._session = self._outbox = None
            if self._closing:
                return
            self.tools, self.prompts, self.resources = [], [], []
            self._changed()
            if was_ready:
                attempt = 0
            self.state, self.error = "failed", why
            self._ready.set()
            if lasting:  # a program that does not exist is not there a second later either: said once
                self._notify(f"MCP server {self.spec.name!r} cannot start: {why}. Not retried: fix "
                             f"{self.spec.source or 'its config'}, then /mcp restart {self.spec.name}")
                return
            if attempt >= len(BACKOFF_S):
                self._notify(f"MCP server {self.spec.name!r} failed and was given up: {why}")
                return
            delay = BACKOFF_S[attempt]
            attempt += 1
            self.restarts += 1
            if attempt == 1 or why != told:  # each retry of the same failure said again was noise in the chat
                self._notify(f"MCP server {self.spec.name!r} failed ({why}); restarting in {delay:g}s"
                             + ("" if attempt > 1 else f" (at most {len(BACKOFF_S)} tries; /mcp shows how it goes)"))
            told = why
            await asyncio.sleep(delay)
            self.state = "starting"

    async def _connect_and_serve(self) -> None:
        from mcp import ClientSession

        self._gone = asyncio.Event()
        try:
            await self._serve(ClientSession)
            self.error = self._explained(self.error or "the server exited")
        except Exception as exc:
            self.error = self._explained(why(exc))
            raise
        finally:  # after the error is set: a call that ends with the connection says why
            self._gone.set()

    def _explained(self, why: str) -> str:
        """Why the server failed, as /mcp and the model read it: an HTTP server's address, and what to do."""
        if not self.spec.url:
            return why
        url = shown_url(self.spec.url)
        return (f"{url}: {why.replace(self.spec.url, url)}; check that the server runs there and that its url and "
                f"headers in {self.spec.source or 'its config'} are right, then /mcp restart {self.spec.name}")

    async def _serve(self, ClientSession: Any) -> None:  # noqa: N803 - the SDK's class, imported by the caller
        async with self._transport() as (read, write, done, tail):
            status: Any = None
            self._outbox = outbox = Outbox(write)
            try:
                # No timeout of the SDK's: each request has its own (a call's ends with a cancel to the server).
                async with ClientSession(Known(read), outbox, message_handler=self._on_message) as session:
                    try:
                        async with asyncio.timeout(START_TIMEOUT_S):
                            await session.initialize()
                        self._session = session
                        await self._list(session)
                    except TimeoutError:
                        raise _Silent(f"the server did not answer within {START_TIMEOUT_S:g}s") from None
                    self.state, self.error = "ready", ""
                    self._ready.set()
                    self._changed()
                    status = await done()
            except Exception as exc:
                if self.spec.url:
                    if getattr(getattr(leaf(exc), "error", None), "code", None) == NOT_MCP:
                        raise CannotStart(why(exc)) from exc  # a web page there is not an MCP server a second later
                    raise
                # A server that failed at start said why on stderr: that, not the SDK's "Connection closed".
                if not isinstance(leaf(exc), _Silent):  # one that is silent still runs: no exit to wait for
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(STDERR_WAIT_S):
                            status = await done()
                if tail():
                    head = _ended(status) or why(exc)
                    raise RuntimeError(f"{head}: {tail()}") from exc
                raise
            exited = _ended(status) or "the server went away"
            self.error = exited + (f": {tail()}" if tail() else "")

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        if self.spec.url:
            # An HTTP server has no process to wait for: it serves until a request cannot reach it, which ends
            # the SDK's transport (and so this block) with the reason.
            async with http_streams(self.spec) as (read, write):
                inbox = Inbox(read)
                yield inbox, write, inbox.wait, lambda: inbox.why
            return
        from ollie.mcp.stdio import _StderrTail, message_streams, spawn_server
        from ollie.sandbox import egress

        # Its process outlives any one call: its network questions go to the call running then (`_CallsNetAsk`).
        asking = egress.asking.set(self._net)
        try:
            proc = await spawn_server(self.spec, cwd=self._cwd, environ=self._environ, network_from=self._network)
        finally:
            egress.asking.reset(asking)
        tail = _StderrTail()
        try:

            async def exited() -> int | str:
                status = await proc.wait()
                with contextlib.suppress(TimeoutError):  # its last words; a child of its may hold stderr open
                    async with asyncio.timeout(STDERR_WAIT_S):
                        await tail.ended.wait()
                # Not "status -9", as if the server crashed or someone killed it: ollie's own helper was what died.
                return SANDBOX_STOPPED if proc.report.get("orphaned") else status

            async with message_streams(proc, tail) as (read, write):
                yield read, write, exited, lambda: "; ".join(list(tail.lines)[-3:])
        finally:
            proc.kill_group()  # its whole process group: nothing it started outlives it
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await proc.wait()

    async def _list(self, session: Any) -> None:
        caps = session.get_server_capabilities()
        tools: list[McpTool] = []
        if caps is None or caps.tools is not None:
            async with asyncio.timeout(START_TIMEOUT_S):
                listed = await session.list_tools()
            # A workspace's server is the repo's code: its word that a tool only reads asks nobody (approval) less.
            tools, left_out = _tools(self.spec.name, listed.tools, hinted=not self.spec.from_workspace)
            if left_out and left_out != self._left_out:  # once, not at each listing of the same tools
                self._notify(f"MCP server {self.spec.name!r}: {left_out} of its {len(listed.tools)} tools left out "
                             f"(past {MAX_LISTED} tools, a schema past {MAX_SCHEMA_BYTES // 1024} KiB, or all of "
                             f"them past {MAX_TOOLS_BYTES // 1024} KiB: they would go with every request)")
            self._left_out = left_out
        prompts: list[McpPrompt] = []
        if caps is not None and caps.prompts is not None:
            async with asyncio.timeout(START_TIMEOUT_S):
                listed_prompts = await session.list_prompts()
            prompts = [McpPrompt(p.name, (p.description or "")[:MAX_DESCRIPTION],
                                 [a.name for a in p.arguments or []]) for p in listed_prompts.prompts]
        resources: list[McpResource] = []
        if caps is not None and caps.resources is not None:
            async with asyncio.timeout(START_TIMEOUT_S):
                listed_resources = await session.list_resources()
            resources = [McpResource(str(r.uri), r.name, (r.description or "")[:MAX_DESCRIPTION])
                         for r in listed_resources.resources[:MAX_LISTED]]
        self.tools, self.prompts, self.resources = tools, prompts[:MAX_LISTED], resources

    async def _on_message(self, message: Any) -> None:
        from mcp import types

        changed = (types.ToolListChangedNotification, types.PromptListChangedNotification,
                   types.ResourceListChangedNotification)
        if isinstance(getattr(message, "root", None), changed):
            # One listing after the one in flight, however many came meanwhile: a server sending 20,000 of these
            # had the daemon list its tools 17,837 times (12 s of the loop) and every session's tools rebuilt.
            self._relist = True
            if self._refreshing is None or self._refreshing.done():
                # Not here: this runs in the SDK's reader, which must stay free to read the list's answer.
                self._refreshing = asyncio.ensure_future(self._refresh())

    async def _refresh(self) -> None:
        while self._relist and (session := self._session) is not None:
            self._relist = False
            try:
                await self._list(session)
            except Exception as exc:  # noqa: BLE001 - the old list stays
                # (Its first line, cut: a server failing each listing with a megabyte filled the log.)
                log.warning("MCP list refresh failed", extra={"server": self.spec.name, "error": why(exc)})
            self._changed()

    def _went_away(self, error: str) -> ToolResult:
        return ToolResult(f"MCP server {self.spec.name!r} went away during the call ({error or 'it exited'})",
                          is_error=True)

    async def call(self, tool: McpTool, args: dict[str, Any]) -> ToolResult:
        """Call `tool`; a failure is an error result the model reads. On cancel the server is told
        (`notifications/cancelled`)."""
        from mcp import types

        session, outbox = self._session, self._outbox
        if session is None or outbox is None or self.state != "ready":
            return ToolResult(f"MCP server {self.spec.name!r} is not ready "
                              f"({self.state}{': ' + self.error if self.error else ''})", is_error=True)
        timeout = self.spec.timeout
        # The SDK gives no public handle on a request's id; the call carries a progress token of ours, and the
        # outbox (the session's write stream, ours) notes which id the request with that token went out as.
        self._calls += 1
        token = f"ollie-{self._calls}"
        meta = {"progressToken": token}
        # The call ends with the connection: a server that exits is not always seen by the SDK's pending request.
        task = asyncio.ensure_future(session.call_tool(tool.remote, args, meta=meta))
        ended = self._gone  # this connection's (a restart makes another)
        gone = asyncio.ensure_future(ended.wait())
        from ollie.sandbox import egress

        self._net.calls.append(asker := egress.asking.get())

        async def cancel(reason: str) -> None:  # the call ends here, at once; the server is told to stop it
            task.cancel()
            request_id = outbox.ids.get(token)
            if request_id is not None and self._session is session:
                with contextlib.suppress(Exception):
                    await asyncio.shield(session.send_notification(types.ClientNotification(
                        types.CancelledNotification(params=types.CancelledNotificationParams(
                            requestId=request_id, reason=reason)))))

        try:
            done, _ = await asyncio.wait({task, gone}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if not done:
                await cancel(f"no answer within {timeout:g} s")
                self._checking = self._checking or asyncio.ensure_future(self._restart_if_deaf(session))
                return ToolResult(f"MCP server {self.spec.name!r} did not answer the call of {tool.remote} within "
                                  f"{timeout:g} s, so it was cancelled; the server may be stuck. Its `timeout` (in "
                                  f"milliseconds) in {self.spec.source or 'its config'} sets how long a call may take",
                                  is_error=True)
        except asyncio.CancelledError:
            await cancel("interrupted by the user")
            raise
        finally:
            self._net.calls.remove(asker)
            gone.cancel()
            outbox.ids.pop(token, None)
        if not task.done():
            task.cancel()
            return self._went_away(self.error)
        try:
            result = task.result()
        except Exception as exc:  # noqa: BLE001 - the server's error is the model's tool error
            if getattr(getattr(exc, "error", None), "code", None) != types.CONNECTION_CLOSED:
                return ToolResult(f"MCP server {self.spec.name!r}: {why(exc)}", is_error=True)
            # The SDK's "Connection closed" came first: the model reads why the server went (its exit status and
            # stderr, as /mcp says it), once the connection's end has it.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STDERR_WAIT_S):
                    await ended.wait()
            return self._went_away(self.error if ended.is_set() else "")
        if self._refreshing is not None and not self._refreshing.done():
            await asyncio.wait({self._refreshing}, timeout=START_TIMEOUT_S)
        return await result_of(result)

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> str:
        """The text of prompt `name` with `arguments` (its messages' text, in order)."""
        result = await self._answer(lambda session: session.get_prompt(name, arguments), f"prompts/get {name}")
        texts = [getattr(m.content, "text", "") or getattr(getattr(m.content, "resource", None), "text", "")
                 for m in result.messages]
        return "\n\n".join(t for t in texts if t)

    async def read_resource(self, uri: str) -> str:
        """The text of resource `uri` (a binary one named, not included), cut like a tool's result."""
        from pydantic import AnyUrl

        result = await self._answer(lambda session: session.read_resource(AnyUrl(uri)), f"resources/read {uri}")
        parts = [getattr(c, "text", None) or f"[{c.mimeType or 'binary'} content of {c.uri}]" for c in result.contents]
        text = "\n".join(parts)
        return text[:MAX_RESULT_BYTES]

    async def _answer(self, request: Callable[[Any], Coroutine[Any, Any, T]], what: str) -> T:
        """`request`'s answer from the session; RuntimeError when there is none, TimeoutError naming the server, `what`
        and its `timeout` when none came in time."""
        if (session := self._session) is None:
            raise RuntimeError(f"MCP server {self.spec.name!r} is not ready ({self.state})")
        try:
            async with asyncio.timeout(self.spec.timeout):
                return await request(session)
        except TimeoutError:
            raise TimeoutError(f"MCP server {self.spec.name!r} did not answer {what} within {self.spec.timeout:g} s "
                               f"(its `timeout`)") from None

    async def aclose(self) -> None:
        """Stop the server (its processes die) and stop restarting it."""
        self._closing = True
        self.state = "stopped"
        if self._checking is not None:
            self._checking.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task


class _CallsNetAsk:
    """A server process's network questions (sandbox/egress.py's Asker): those of its latest call still running.

    Between calls (its start, its own background work) nobody is asked: only the allow-list gets through.
    """

    def __init__(self) -> None:
        self.calls: list[Asker | None] = []  # the running calls' question paths (None: a call nobody can be asked for)
        self._idle: NetAsk | None = None

    @property
    def current(self) -> NetAsk:
        """The NetAsk of the latest call running (StepNet keeps a step's answers per `current`)."""
        if self.calls and (call := self.calls[-1]) is not None:
            return call.current
        if self._idle is None:
            from ollie.sandbox.egress import NetAsk  # the proxy's module loads with the first step, not at start

            self._idle = NetAsk(ask=None)
        return self._idle


class _Silent(Exception):
    """A server that did not answer its start (initialize, the lists) in time."""


def _ended(status: object) -> str:
    """How a stdio server's end is told: its exit status, or what ended it (a text); "" when unknown."""
    return f"the server exited (status {status})" if isinstance(status, int) else status if isinstance(status, str) else ""
