"""ollie's egress proxy: a step's one way out of its network namespace, by the policy's allow-list or the user's say.

Each step with `network: proxy` hands a listening socket from its own namespace
(netns.py) to this proxy's unix socket; the proxy accepts the step's
connections on the daemon's event loop. It speaks HTTP `CONNECT host:port` and
plain HTTP in absolute form (`GET http://host/path`: that one request, its Host
checked; a tunnel carries TLS naming the host asked for, or SSH: proxyrequest.py), decides by the host *name*
the step asked for (never a Host header, never what the name resolves to),
resolves names itself (the step has no DNS), and records every connection with
its verdict and bytes each way. A host outside the allow-list holds the
connection while the step's `NetAsk` asks the user; no asker, or no answer in
time, denies. Bytes only ever go to the one host:port decided for a connection.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import ipaddress
import logging
import os
import secrets
import shutil
import socket
import tempfile
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ollie import paths
from ollie.sandbox import runtimedir
from ollie.sandbox.netns import PROXY_HOST, PROXY_PORT
from ollie.sandbox.networds import refusal
from ollie.sandbox.proxyrequest import RequestError, is_ip, normal_host, read_request, tunnel_opening
from ollie.sandbox.relay import Count, connect, relay

log = logging.getLogger("ollie.sandbox.egress")

# A step's connections open at once (uv downloads 50 at a time); each holds six of the daemon's descriptors
# (two sockets, two pipes), and more are answered 503 and closed: a step cannot run the daemon out of them.
MAX_CONNECTIONS = 64
_TOO_MANY_TEXT = f"ollie egress proxy: this step has {MAX_CONNECTIONS} connections open already\n".encode()
_TOO_MANY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
             b"Connection: close\r\n\r\n%s" % (len(_TOO_MANY_TEXT), _TOO_MANY_TEXT))
ASK_TIMEOUT_S = 300.0  # an unanswered question denies after this long
# A step's request head, and a tunnel's first bytes (its TLS hello), must come within this: a connection that
# sends too little (slowloris) holds the daemon's descriptors only so long.
HEAD_TIMEOUT_S = 30.0
# A step's connections recorded one by one; each one past these only adds to one `{"more": n, ...}` record once it
# ends: a step opening 100k connections must not grow its result, its events and the session's history without bound.
MAX_RECORDED = 100
# Questions the user refused in one step, after which its other unlisted hosts are denied unasked: a step trying
# host after host (or one host again and again) must not hold the user in questions until they stop the turn.
MAX_REFUSED = 3
DEFAULT_PORTS = (80, 443)  # what a pattern without ":port" allows
# The user's answers to a network question.
ANSWERS = ("once", "session", "always", "deny")
_NO_MORE = f"no more questions: {MAX_REFUSED} refused in this step"


Question = Callable[[str, int, str, str], Awaitable[str]]  # (host, port, step, scheme) -> one of ANSWERS


@dataclass
class NetAsk:
    """How a session answers network questions: `ask` (None: deny, as read-only does) and what it allowed so far."""

    ask: Question | None = None
    session_allowed: set[str] = field(default_factory=set)  # "host:port" allowed for this session
    saved: Callable[[], Awaitable[Iterable[str]]] | None = None  # the user's "always" patterns (netsaved.py)
    remember: Callable[[str], Awaitable[None]] | None = None  # "always": add "host:port" to them
    timeout: float = ASK_TIMEOUT_S
    step: str = ""  # the step as the user saw it (its title), for the records
    log: list[dict] | None = None  # the session's record of every connection (`/network`), appended to
    connections: list[dict] = field(default_factory=list)  # this tool call's (its `tool` event)
    feedback: dict[str, str] = field(default_factory=dict)  # "host:port": the user's words with a "deny", for the model

    @property
    def current(self) -> NetAsk:
        """Itself: a step of a session's tool call asks through its call's NetAsk alone."""
        return self


class Asker(Protocol):
    """A step's question path: a NetAsk, or one that moves from call to call (an MCP server's, mcp/client.py)."""

    @property
    def current(self) -> NetAsk:
        """The NetAsk that asks now (a step keeps its "allow once" and its refusals per `current`)."""
        ...


# The running step's question path; set by whoever runs steps for a session (contextvars follow its tasks).
asking: contextvars.ContextVar[Asker | None] = contextvars.ContextVar("ollie_net_asking", default=None)


# IPv6 forms whose last 32 bits are an IPv4 address the kernel or a NAT64 gateway may deliver to: IPv4-compatible
# (::a.b.c.d, through a sit tunnel), IPv4-mapped, IPv4-translated (::ffff:0:a.b.c.d) and NAT64's well-known prefix.
_IPV4_IN_LOW_BITS = tuple(ipaddress.IPv6Network(n) for n in ("::/96", "::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b::/96"))
# Local-use NAT64 (RFC 8215): where its IPv4 address sits depends on the site's prefix; never global either way.
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")


def carried(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The IPv4 address an IPv6 one carries in its last 32 bits (`_IPV4_IN_LOW_BITS`), else `address` itself."""
    if isinstance(address, ipaddress.IPv6Address) and any(address in network for network in _IPV4_IN_LOW_BITS):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def is_global_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether `address` is global and not this machine's, an IPv6 one that carries an IPv4 address judged by the
    IPv4 rules."""
    if isinstance(address, ipaddress.IPv6Address):
        if address in _LOCAL_NAT64:
            return False
        if (inner := carried(address)) is not address:
            return is_global_address(inner)
        if address.sixtofour is not None:  # 2002::/16: a 6to4 (sit) tunnel, where one is set up, carries it there
            return is_global_address(address.sixtofour)
        # Teredo (2001::/32, needs a client like miredo) lies in 2001::/23, which ipaddress counts as not global.
    return address.is_global and not _held_here(address)


def _held_here(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether this machine holds `address` (a socket binds to it): its own public address (a server's IPv4, a
    laptop's global IPv6) reaches what listens on all its interfaces as loopback would, by a name or a question."""
    try:
        with socket.socket(socket.AF_INET6 if address.version == 6 else socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind((str(address), 0))
    except OSError:  # not its address (or no IPv6 on this machine at all)
        return False
    return True


def is_public(host: str) -> bool:
    """Whether `host` is a name or a global IP literal (not loopback, private, link-local, unspecified, ...)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        # A name: system_resolve keeps only its public addresses. `localhost` is never one (RFC 6761): asking
        # about it only led to a refusal after the user's "allow".
        return not (host == "localhost" or host.endswith(".localhost"))
    return is_global_address(address)


def _split_pattern(pattern: str) -> tuple[str, tuple[int, ...]]:
    text = pattern.strip().lower()
    host, sep, port = text.rpartition(":")
    if sep and port.isdigit() and not host.endswith(":"):  # "host:443"; a bare IPv6 literal has no port
        return normal_host(host), (int(port),)
    return normal_host(text), DEFAULT_PORTS


def matches(pattern: str, host: str, port: int) -> bool:
    """Whether `host:port` (normalized) is `pattern`: `name`, `*.name` (subdomains only) or either with `:port`.

    A name never matches an IP literal, however it resolves: an allowed name is no licence for its address.
    """
    name, ports = _split_pattern(pattern)
    if port not in ports:
        return False
    if name.startswith("*."):
        return not is_ip(host) and host.endswith(name[1:])
    return host == name


def any_match(patterns: Iterable[str], host: str, port: int) -> bool:
    """Whether any of `patterns` matches `host:port`."""
    return any(matches(p, host, port) for p in patterns)


async def system_resolve(host: str, port: int) -> list[str]:
    """`host`'s addresses from the host's resolver, only public ones (a listed name pointed at a private
    or loopback address, DNS rebinding, never reaches the daemon's machine or network through the proxy)."""
    if is_ip(host):
        return [host]
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found = [str(info[4][0]) for info in infos]
    public = [a for a in found if is_global_address(ipaddress.ip_address(a.split("%")[0]))]
    if found and not public:
        raise OSError(f"{host} resolves only to non-public addresses ({', '.join(found)})")
    return public


@dataclass
class StepNet:
    """One step's way out: its rules, its question path, and its connections as recorded."""

    label: str
    allow: tuple[str, ...]
    deny: tuple[str, ...]
    max_sent: int
    ask: Asker | None
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    connections: list[dict] = field(default_factory=list)
    sent: int = 0
    _more: dict | None = None  # the record the connections past MAX_RECORDED add up in
    _verdicts: dict[str, int] = field(default_factory=dict)  # theirs, counted
    _refused: set[str] = field(default_factory=set)  # "host:port" the user refused (or left unanswered) in this step
    _allowed: set[str] = field(default_factory=set)  # "host:port" the user allowed once: for the rest of this step
    _asking: dict[str, asyncio.Future[str]] = field(default_factory=dict)  # the questions on screen, by "host:port"
    _one_question: asyncio.Lock = field(default_factory=asyncio.Lock)  # held while one is on screen
    _answers_of: object = None  # the call `_refused` and `_allowed` are the answers of (`current`)
    _listener: socket.socket | None = None
    _sending: threading.Lock = field(default_factory=threading.Lock)  # held while a chunk is counted against the cap
    _tasks: set[asyncio.Task] = field(default_factory=set)
    _closed: bool = False
    held_s: float = 0.0  # how long its questions were on screen: its timeout waits as long (tools/execute/spawn.py)

    def questions(self) -> list[asyncio.Future[str]]:
        """The questions its connections wait on now."""
        return list(self._asking.values())

    def env(self) -> dict[str, str]:
        """The proxy variables a step sees (upper and lower case: tools read one or the other)."""
        url = f"http://{PROXY_HOST}:{PROXY_PORT}"
        names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
        return {**{n: url for n in names}, **{n.lower(): url for n in names}, "NO_PROXY": "", "no_proxy": ""}

    def close(self) -> None:
        """The step is over: stop accepting and end its connections."""
        self._closed = True
        if self._listener is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._listener.fileno())
            self._listener.close()
            self._listener = None
        for task in list(self._tasks):
            task.cancel()

    async def decide(self, host: str, port: int, scheme: str = "connect") -> dict:
        """The record of a new connection to `host:port`, with its `verdict` ("allowed"/"denied") and `how`.

        `scheme`, for a question: "http" (a plain HTTP request) or "connect" (a tunnel: TLS, or anything).
        """
        # A process that outlives one call (an MCP server) asks through the call running now (its `current`):
        # "allow once" and a refusal are that call's answers, gone with it.
        if (ask := self._asks_now()) is not self._answers_of:
            self._answers_of, self._allowed, self._refused = ask, set(), set()
        record: dict = {"host": host, "port": port, "verdict": "denied", "how": "", "sent": 0, "received": 0,
                        "step": (ask.step if ask is not None else "") or self.label}
        if len(self.connections) < MAX_RECORDED:
            self._keep(record, ask)
        else:
            record["fold"] = True  # added up in `_more` when it ends (`fold`)
        key = f"{host}:{port}"
        if any_match(self.deny, host, port):
            record["how"] = "policy"
        elif any_match(self.allow, host, port):
            record.update(verdict="allowed", how="policy")
        elif not is_public(host):
            # 0.0.0.0, ::ffff:7f00:1, 169.254.169.254: the daemon's own machine or network, which a question
            # naming it in such a form would not make plain; only the user's own allow-list reaches it.
            record["how"] = "non-public address (only network.allow reaches it)"
        elif ask is not None and key in ask.session_allowed:
            record.update(verdict="allowed", how="session")
        elif ask is not None and ask.saved is not None and any_match(await ask.saved(), host, port):
            record.update(verdict="allowed", how="always")
        elif ask is None or ask.ask is None:
            record["how"] = "no one to ask"
        elif key in self._allowed:  # "allow once" is the step's answer, as a refusal is: one command, one question
            record.update(verdict="allowed", how="once")
        elif key in self._refused:
            record["how"] = "refused earlier in this step"
        elif len(self._refused) >= MAX_REFUSED:
            record["how"] = _NO_MORE
        elif key in self._asking:  # the step's connections at once (uv's downloads) wait for the one question
            answer = await _shared(self._asking[key])
            record.update(how=answer, verdict="allowed" if answer in ("once", "session", "always") else "denied")
        else:
            asking = self._asking[key] = asyncio.ensure_future(self._question(ask, host, port, scheme, record))
            try:
                answer = await asking
            except asyncio.CancelledError:
                record["how"] = "no answer: the step ended first"
                raise
            finally:
                del self._asking[key]
            record["how"] = answer
            if words := ask.feedback.pop(key, ""):
                record["feedback"] = words
            if answer in ("once", "session", "always"):
                record["verdict"] = "allowed"
            if answer in ("session", "always"):
                ask.session_allowed.add(key)
            if answer == "always" and ask.remember is not None:
                await ask.remember(key)
        return record

    def _asks_now(self) -> NetAsk | None:
        return self.ask.current if self.ask is not None else None

    def _keep(self, record: dict, ask: NetAsk | None) -> None:
        self.connections.append(record)
        if ask is not None:
            ask.connections.append(record)  # the same dict: its byte counts go on growing there
            if ask.log is not None:
                ask.log.append(record)

    def fold(self, record: dict) -> None:
        """Add an ended connection past MAX_RECORDED to the step's one `more` record: `how` counts the verdicts."""
        more = self._more
        if more is None:
            more = self._more = {"host": "", "port": 0, "verdict": "denied", "how": "", "sent": 0, "received": 0,
                                 "more": 0, "step": record["step"]}
            self._keep(more, self._asks_now())
        verdicts = self._verdicts
        verdicts[record["verdict"]] = verdicts.get(record["verdict"], 0) + 1
        more.update(more=more["more"] + 1, sent=more["sent"] + record["sent"],
                    received=more["received"] + record["received"],
                    verdict="allowed" if "allowed" in verdicts else "denied",
                    # In a fixed order: connections end in any order, and the line should not change with it.
                    how=", ".join(f"{verdicts[verdict]} {verdict}" for verdict in sorted(verdicts)))
        if record.get("error"):
            more["error"] = record["error"]  # the last one's (a send cap's cut-off: one for the whole step)

    def counters(self, record: dict) -> tuple[Count, Count]:
        """A relay's byte counters for a connection's `record`: bytes sent also count against the step's cap."""
        def sending(n: int) -> bool:  # in the relay's threads: the step's connections count at once
            with self._sending:
                if self.max_sent and self.sent + n > self.max_sent:
                    record["error"] = ("cut off: the step reached its network send limit "
                                       f"(network.max_sent: {self.max_sent} bytes)")
                    return False
                self.sent += n
            record["sent"] += n
            return True

        def receiving(n: int) -> bool:
            record["received"] += n
            return True

        return sending, receiving

    async def _question(self, ask: NetAsk, host: str, port: int, scheme: str, record: dict) -> str:
        # One question of the step at a time: its connections to eight hosts at once put eight questions before
        # the user together, and the refusals' limit, counted as answers came, held none of them back.
        async with self._one_question:
            if ask.ask is None or self._asks_now() is not ask:  # an MCP server's call ended while this one waited
                return "no one to ask"
            if len(self._refused) >= MAX_REFUSED:
                return _NO_MORE
            record["asked"] = True
            begun = asyncio.get_running_loop().time()
            try:
                answer = await self._answer(ask.ask, ask.timeout, host, port, scheme)
            finally:
                self.held_s += asyncio.get_running_loop().time() - begun
            # Counted before the next question may start (the lock's next holder checks the count).
            (self._allowed if answer in ("once", "session", "always") else self._refused).add(f"{host}:{port}")
            return answer

    async def _answer(self, ask: Question, timeout: float, host: str, port: int, scheme: str) -> str:
        try:
            async with asyncio.timeout(timeout):
                answer = await ask(host, port, self.label, scheme)
        except TimeoutError:
            return "timeout"
        except Exception as exc:  # noqa: BLE001 - a failed question denies
            log.warning("network question failed", extra={"reason": str(exc)})
            return "deny"
        return answer if answer in ANSWERS else "deny"


async def _shared(question: asyncio.Future[str]) -> str:
    """The answer to a question another connection asked; a question withdrawn (its connection ended) denies."""
    try:
        return await asyncio.shield(question)
    except asyncio.CancelledError:
        if question.cancelled():
            return "deny"
        raise


class EgressProxy:
    """The proxy of one event loop: a unix socket that takes steps' listeners, and the steps it serves."""

    def __init__(self) -> None:
        self._steps: dict[str, StepNet] = {}
        self._dir = ""
        self._server: socket.socket | None = None
        self._lock: int | None = None
        self._accepting: asyncio.Task | None = None
        self._handshakes: set[asyncio.Task] = set()

    @property
    def path(self) -> str:
        """The unix socket's path (after `start`)."""
        return os.path.join(self._dir, "egress.sock")

    def start(self) -> None:
        """Listen on a fresh private unix socket (idempotent)."""
        if self._server is not None:
            return
        # Ours and 0700, or refused: in another user's dir she could rename ours and put her socket at its path.
        root = runtimedir.runtime_root(paths.runtime_socket_dir())
        # Beside the sessions' dirs (or in /tmp/ollie-<uid>), which a session opening sweeps of those whose owner lock
        # no live process holds (tools/execute/sessiondirs.py): held while the proxy lives, so only a dead daemon's
        # dir goes, also after a kill -9.
        self._dir = tempfile.mkdtemp(prefix="egress-", dir=root)
        self._lock = runtimedir.hold_owner_lock(Path(self._dir))
        server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        server.bind(self.path)
        server.listen(64)
        server.setblocking(False)
        self._server = server
        self._accepting = asyncio.ensure_future(self._accept_steps())
        atexit.register(shutil.rmtree, self._dir, True)

    def close(self) -> None:
        """Stop: every step's connections end, and the socket goes."""
        for step in list(self._steps.values()):
            step.close()
        if self._accepting is not None:
            self._accepting.cancel()
            self._accepting = None  # nor does it keep the loop (the key of `_proxies`) alive
        if self._server is not None:
            self._server.close()
            self._server = None
        shutil.rmtree(self._dir, ignore_errors=True)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def open_step(self, *, label: str, allow: Iterable[str], deny: Iterable[str], max_sent: int,
                  ask: Asker | None) -> StepNet:
        """Register a step about to start; `ruleset["netns"]` gets `{"socket": path, "token": step.token}`."""
        self.start()
        step = StepNet(label=label, allow=tuple(allow), deny=tuple(deny), max_sent=max_sent, ask=ask)
        self._steps[step.token] = step
        return step

    def release(self, step: StepNet) -> None:
        """The step ended."""
        self._steps.pop(step.token, None)
        step.close()

    async def _accept_steps(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._server is not None
        try:
            while True:
                conn, _ = await loop.sock_accept(self._server)
                task = asyncio.ensure_future(self._handshake(conn))
                self._handshakes.add(task)
                task.add_done_callback(self._handshakes.discard)
        finally:  # its loop ends (asyncio.run cancels what is left): the socket dir and its lock go now, not at exit
            if self._accepting is asyncio.current_task():  # not a proxy started again since `close`
                self.close()

    async def _handshake(self, conn: socket.socket) -> None:
        """Take one step's listener: a single message, its token and the socket."""
        loop = asyncio.get_running_loop()
        with conn:
            readable = loop.create_future()
            loop.add_reader(conn.fileno(), lambda: readable.done() or readable.set_result(None))
            try:
                async with asyncio.timeout(10):
                    await readable
            except TimeoutError:
                return
            finally:
                loop.remove_reader(conn.fileno())
            try:
                message, fds, _, _ = socket.recv_fds(conn, 256, 1)
            except OSError:
                return
            listeners = [socket.socket(fileno=fd) for fd in fds]
            step = self._steps.get(message.strip().decode("ascii", "replace"))
            if step is None or step._listener is not None or step._closed or len(listeners) != 1:
                for sock in listeners:
                    sock.close()
                return  # the step's start fails: it gets no "ok"
            listener = listeners[0]
            if listener.type != socket.SOCK_STREAM or listener.family != socket.AF_INET:
                listener.close()
                return
            listener.setblocking(False)
            step._listener = listener
            loop.add_reader(listener.fileno(), self._accept_one, step)

    def _accept_one(self, step: StepNet) -> None:
        if step._listener is None:
            return
        try:
            client, _ = step._listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            log.warning("step's proxy listener failed", extra={"reason": str(exc)})
            return
        if len(step._tasks) >= MAX_CONNECTIONS:
            with client, contextlib.suppress(OSError):
                client.setblocking(False)
                client.send(_TOO_MANY)
            return
        task = asyncio.ensure_future(self._serve(step, client))
        step._tasks.add(task)
        task.add_done_callback(step._tasks.discard)

    async def _serve(self, step: StepNet, client: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        client.setblocking(False)
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        upstream: socket.socket | None = None
        record: dict = {}
        try:
            try:
                async with asyncio.timeout(HEAD_TIMEOUT_S):
                    method, host, port, head, early, body = await read_request(client)
            except TimeoutError:
                await _reply(client, 408, f"ollie egress proxy: no whole request head within {HEAD_TIMEOUT_S:g} s")
                return
            except (RequestError, ValueError) as exc:
                await _reply(client, 400, f"ollie egress proxy: bad request: {exc}")
                return
            record = await step.decide(host, port, "connect" if method == b"CONNECT" else "http")
            if record["verdict"] != "allowed":
                await _reply(client, 403, refusal(host, port, record["how"]))
                return
            try:
                addresses = await system_resolve(host, port)
                upstream = await connect(addresses, port)
            except OSError as exc:
                record["error"] = str(exc)
                await _reply(client, 502, f"ollie egress proxy: cannot reach {host}:{port}: {exc}")
                return
            if method == b"CONNECT":
                await loop.sock_sendall(client, b"HTTP/1.1 200 Connection established\r\n\r\n")
                try:
                    async with asyncio.timeout(HEAD_TIMEOUT_S):
                        first = await tunnel_opening(client, host, early)
                except TimeoutError:
                    record.update(verdict="denied", how=f"no TLS or SSH opening within {HEAD_TIMEOUT_S:g} s")
                    return  # nothing was sent upstream
                except RequestError as exc:
                    record.update(verdict="denied", how=str(exc))
                    return  # nothing was sent upstream
                limit = None
            else:
                first = head + early[:body]
                limit = (body or 0) - len(early[:body])
            await relay(client, upstream, first, limit, step.counters(record))
        except OSError:
            pass  # either side went away
        finally:
            client.close()
            if upstream is not None:
                upstream.close()
            if record.get("fold"):
                step.fold(record)


async def _reply(client: socket.socket, status: int, text: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 408: "Request Timeout", 502: "Bad Gateway"}[status]
    body = text.encode() + b"\n"
    with contextlib.suppress(OSError):
        await asyncio.get_running_loop().sock_sendall(
            client, f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                    "Connection: close\r\n\r\n".encode() + body)


_proxies: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, EgressProxy] = weakref.WeakKeyDictionary()


def proxy() -> EgressProxy:
    """The running event loop's proxy (made on first use)."""
    loop = asyncio.get_running_loop()
    found = _proxies.get(loop)
    if found is None:
        found = _proxies[loop] = EgressProxy()
    return found

