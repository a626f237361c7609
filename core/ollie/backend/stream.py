"""The one streaming path every backend shares: request (httpx), status classification, incremental framing."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import json
import os
import ssl
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from typing import Any, Literal

# httpx imports httpcore and h11 only as it makes its first client, which a backend does on the event loop (~40-50
# ms of CPU): they load with this module instead, where it loads (a thread: ollie.agent.setup, for every front end).
import httpcore  # noqa: F401
import httpx

# httpcore's pool lock loads anyio's asyncio backend at the first request, on the event loop (~10-30 ms of a first
# token): loaded here, in that thread, anyio finds it in sys.modules then. (No public anyio call loads it off a loop.)
with contextlib.suppress(ImportError):
    importlib.import_module("anyio._backends._asyncio")

from ollie.backend.classify import classify_error, status_of_error_object
from ollie.backend.errors import (
    BackendConfigError,
    BackendError,
    BackendUnreachableError,
    RateLimitError,
    StreamDropError,
    TransientError,
)
from ollie.backend.framing import NDJSONDecoder, SSEDecoder, loads
from ollie.backend.readahead import read_ahead
from ollie.backend.reply import (
    ACCEPT_ENCODING,
    MAX_ERROR_BODY,
    MAX_JSON_BODY,
    ReplyLimits,
    ReplyTooLarge,
    body_pieces,
    read_capped,
)
from ollie.backend.settings import (
    BackendSpec,
    checked_url,
    missing_model_hint,
    refused_key_hint,
    said_name,
    unreachable_hint,
)
from ollie.backend.types import GenerationParams, Message, StreamEvent, Tool
from ollie.backend.urls import shown_url, written_url
from ollie.escapes import one_name
from ollie.jsonpieces import INLINE_CHARS, INLINE_MESSAGES, EncodedBody, encoded
from ollie.loopshare import loop_share
from ollie.sizes import size_text

Framing = Literal["sse", "ndjson"]

# httpcore imports `sniffio` on every request to tell asyncio from trio: where it is not installed, each of those
# failed imports searched sys.path again (~0.7 ms of the event loop per request, every session's). None in
# sys.modules makes that import fail at once, as it would anyway.
if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
    sys.modules["sniffio"] = None  # type: ignore[assignment]

DEFAULT_TIMEOUT = httpx.Timeout(connect=15.0, read=300.0, write=60.0, pool=15.0)
DEFAULT_LIMITS = ReplyLimits()

# A model whose window the endpoint does not report is assumed to have this many tokens (the
# reference engine's figure), so auto-compaction still works.
DEFAULT_CONTEXT_LENGTH = 128_000

# Failures that mean the configuration is wrong (connection refused, unknown host, a certificate that does not
# verify, no http(s) scheme), not that the network hiccuped: retrying cannot help. A connect *timeout* stays
# transient.
_UNREACHABLE = (httpx.ConnectError, httpx.UnsupportedProtocol)
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


# What each transport failure means, in a person's words: the retry line and the turn's error show it in the
# terminal and both editors, where `RemoteProtocolError('peer closed connection ...')` told a user nothing.
# (class, before the answer, mid-answer: "" the same)
_SAID: tuple[tuple[type[httpx.RequestError], str, str], ...] = (
    (httpx.ConnectTimeout, "connecting timed out", ""),
    (httpx.ReadTimeout, "no answer within the read timeout", "the answer stalled past the read timeout"),
    (httpx.WriteTimeout, "sending the request timed out", ""),
    (httpx.PoolTimeout, "no free connection in time", ""),
    (httpx.RemoteProtocolError, "the server hung up or answered in something not HTTP",
     "the connection closed mid-answer"),
    # h11's refusal quotes the header: "Illegal header value b'Bearer sk-...\r\n...'" put the key on the screen.
    (httpx.LocalProtocolError, "a header is no valid HTTP (a line break in the key?)", ""),
    (httpx.NetworkError, "the connection broke", "the connection broke mid-answer"),
    (httpx.DecodingError, "its answer's body did not decode", "the answer's body did not decode"),
)


def broke(exc: httpx.RequestError, *, midway: bool = False) -> str:
    """What went wrong with a request, in plain words (the class name stays on the chained exception); another's words
    (a proxy's refusal: h11 lets an escape through) on one escaped line, as `classify_error` quotes a server's."""
    return next((said[midway] or said[0] for kind, *said in _SAID if isinstance(exc, kind)),
                f"the request failed ({one_name(str(exc), 1000) or 'no detail'})")


def request_failed(exc: httpx.RequestError, *, backend: str, hint: Callable[[], str] | None = None) -> BackendError:
    """The typed error for a request that could not be sent: unreachable (configuration, what to do says `hint`,
    asked only then: it reads the env file) or transient."""
    if isinstance(exc, _UNREACHABLE):
        return BackendUnreachableError(f"{backend}: cannot connect ({exc or 'connection refused'})",
                                       hint=hint() if hint is not None else "")
    return TransientError(f"{backend}: {broke(exc)}")


@functools.cache
def tls_context(verifying: bool = True) -> ssl.SSLContext:
    """The process's TLS context: the CA bundle parsed once (~20 ms, ~0.9 MiB), not once per backend.

    httpx's own default (SSL_CERT_FILE, else SSL_CERT_DIR, else certifi). `verifying=False` is for a
    plain-http backend with no proxy set, which never makes a TLS connection (no redirect is followed):
    it skips loading the bundle, and would still verify (with nothing trusted) if ever used.
    """
    return httpx.create_ssl_context() if verifying else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def http_client(base_url: str, headers: Mapping[str, str], timeout: httpx.Timeout | float) -> httpx.AsyncClient:
    """A backend's httpx client: its base URL and headers, redirects not followed, proxies from the environment."""
    proxied = any(value and name.lower() in _PROXY_VARIABLES for name, value in os.environ.items())
    return httpx.AsyncClient(base_url=base_url, headers={"Accept-Encoding": ACCEPT_ENCODING, **headers},
                             timeout=timeout, follow_redirects=False,
                             verify=tls_context(proxied or not base_url.startswith("http://")))


_SKIP = object()  # a frame `stream_frames`' transform drops


async def failed_status(response: httpx.Response, *, backend: str) -> BackendError | None:
    """The typed error for an answer that is no success (a redirect, a 4xx/5xx), else None."""
    status = response.status_code
    if 300 <= status < 400:
        # Not followed (the key would go wherever it points): the configured URL is the thing to fix.
        where = response.headers.get("location", "")[:200]
        return BackendError(f"{backend}: HTTP {status}: the server redirects to {where!r}: set the backend's URL "
                            "to where it points", status=status)
    if status >= 400:
        raw, _ = await read_capped(response, MAX_ERROR_BODY)
        return classify_error(status, raw, headers=response.headers, backend=backend)
    return None


# A long history's body is written this much at a time. Whole, the socket took what it could and the transport
# copied the rest (tens of MB at 100k messages) into its buffer in one loop callback: ~10 ms of the event loop.
BODY_SLICE = 256 * 1024


class _Slices:
    """An encoded body's chunks as a stream of BODY_SLICE pieces at most (its length sent ahead: no chunked
    encoding); each send iterates it afresh."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            view = memoryview(chunk)
            for start in range(0, len(view), BODY_SLICE):
                yield view[start:start + BODY_SLICE]  # type: ignore[misc]: bytes-like, as h11 and the socket take it


async def _send(client: httpx.AsyncClient, request: httpx.Request, *, head_s: float, backend: str) -> httpx.Response:
    """Send `request`; its response with the body still to stream, once its head is in within `head_s`."""
    try:
        async with asyncio.timeout(head_s):
            return await client.send(request, stream=True)
    except TimeoutError:
        raise TransientError(f"{backend}: no response head within {head_s:g} s") from None


# After its terminator a reply's body ends at once (the chunked body's last chunk): read so far, httpx puts the
# connection back for the next request (a TLS handshake saved per step). A server that lingers or keeps
# sending costs at most this, and its connection.
_END_WAIT_S = 1.0
_END_BYTES = 64 * 1024


async def _read_to_the_end(chunks: AsyncIterator[bytes]) -> None:
    """Read what follows the terminator, if it ends soon and small: its connection is then reused."""
    left = _END_BYTES
    with contextlib.suppress(httpx.HTTPError, ReplyTooLarge, TimeoutError):
        async with asyncio.timeout(_END_WAIT_S):
            async for piece in chunks:
                left -= len(piece)
                if left < 0:
                    return


# httpx hands on each chunk of a chunked body (each SSE event, as APIs send them) without returning to the event
# loop until its read of up to 64 KiB is used up: hundreds of frames, parsed in Python. Under a flood the other
# sessions' timers and requests would wait for all of them: after this many seconds they get their turn. The slice
# is shared by the streams being read: asyncio runs every ready task once per pass, so 50 streams of 2 ms each made
# every pass (and a request waits for several) last 100 ms; each now gives way after its share of it, but no
# sooner than _MIN_SLICE_S: each give-way costs a pass through httpx's reader, and 50 streams of 40 us shares spent
# most of the loop on those (50 x 2,000 deltas: 2.8 s at 2 ms each, 8.3 s at 40 us, 3.3 s at 0.5 ms, with the
# longest wait of a request 156, 278 and 86-100 ms). Once a pass's share is spent (ollie.loopshare), a stream that
# gives way, or is woken by the network, waits for a later pass: 50 streams no longer all step in every pass.
_FAIR_SLICE_S = 0.002
_MIN_SLICE_S = 0.0005
_reading = [0]  # streams being read now, in this process


async def stream_frames(
    client: httpx.AsyncClient,
    url: str,
    *,
    body: dict[str, Any],
    framing: Framing,
    is_terminator: Callable[[Any], bool],
    backend: str,
    limits: ReplyLimits,
    hint: Callable[[], str],
    keepalive: Callable[[Any], bool],
    transform: Callable[[Any], Any],
) -> AsyncGenerator[Any, None]:
    """POST `body` and yield, the moment their bytes arrive, its SSE events / NDJSON objects run through `transform`.

    `transform` decodes a frame (`_SKIP` drops it; what it raises ends the
    stream, after the frames before it).
    `limits` bound the reply: its head's deadline, the time between two frames
    that are not `keepalive` (SSE comments are no frames at all), its size.
    Raises the typed error for a failed status, BackendUnreachableError (with
    `hint`) when the server cannot be reached, TransientError when the request
    fails otherwise before a reply, and StreamDropError when the body ends
    (breaks, or idles) before the frame for which `is_terminator` is true. That
    frame is yielded last.
    """
    share = loop_share()
    await share.wait_turn()  # 50 first turns' requests sent in one pass were one pass of 50 builds and writes
    if isinstance(body, EncodedBody):  # a long history's, encoded off the event loop: httpx's bytes exactly
        request = client.build_request("POST", url, content=_Slices(body.chunks), headers={
            "Content-Type": "application/json", "Content-Length": str(body.length)})
    else:  # as httpx's `json=` encodes it, but a lone surrogate ("\ud800", no UTF-8) goes as "?": strict, it failed
        # this request and every later one of the session
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(errors="replace")
        request = client.build_request("POST", url, content=content, headers={"Content-Type": "application/json"})
    try:
        response = await _send(client, request, head_s=limits.head_s, backend=backend)
    except httpx.RequestError as exc:
        raise request_failed(exc, backend=backend, hint=hint) from exc
    try:
        if response.status_code >= 300:
            try:
                failure = await failed_status(response, backend=backend)
            except httpx.RequestError as exc:  # the error answer broke off, or does not decode
                raise request_failed(exc, backend=backend, hint=hint) from exc
            if failure is not None:
                raise failure
        decoder: SSEDecoder | NDJSONDecoder = SSEDecoder() if framing == "sse" else NDJSONDecoder()
        chunks = body_pieces(response, limits.reply_bytes)
        clock = asyncio.get_running_loop().time
        # Checked as bytes arrive (cheap: one per network chunk); a server that sends nothing at all meets
        # httpx's read timeout instead.
        deadline = clock() + limits.idle_s
        _reading[0] += 1
        try:
            await share.wait_turn()  # the reply's head came: its reading is a step of this pass
            stepping = share.pass_no
            slice_end = clock() + max(_FAIR_SLICE_S / _reading[0], _MIN_SLICE_S)
            while True:
                chunk = await anext(chunks, None)
                now = clock()
                if now > slice_end or share.pass_no != stepping:
                    # Its slice spent (see _FAIR_SLICE_S), or woken by the network in a later pass: a step of that one.
                    await (share.give_way() if now > slice_end else share.wait_turn())
                    stepping = share.pass_no
                    slice_end = clock() + max(_FAIR_SLICE_S / _reading[0], _MIN_SLICE_S)
                frames = decoder.feed(chunk) if chunk is not None else decoder.finish()
                if frames and not all(map(keepalive, frames)):
                    deadline = now + limits.idle_s
                elif chunk is not None and now > deadline:
                    raise StreamDropError(f"{backend}: no event for {limits.idle_s:g} s")
                for frame in frames:
                    out = transform(frame)
                    if out is not _SKIP:
                        yield out
                    if is_terminator(frame):
                        await _read_to_the_end(chunks)
                        return
                if chunk is None:
                    raise StreamDropError(f"{backend}: stream ended without its terminator")
        finally:
            _reading[0] -= 1
    except httpx.RequestError as exc:
        raise StreamDropError(f"{backend}: {broke(exc, midway=True)}") from exc
    except ReplyTooLarge as exc:
        raise BackendError(f"{backend}: the reply went {exc}: refused") from exc
    except (ValueError, RecursionError) as exc:  # RecursionError: JSON nested too deep to decode
        raise TransientError(f"{backend}: malformed stream: {exc}") from exc
    finally:
        await response.aclose()


class HTTPBackend:
    """What the three backends share: the HTTP client, the model, the stream, the cached context length.

    A backend supplies `build_request` (the JSON body) and `_events` (its vendor
    stream as StreamEvents); `stream` joins them the same way for all.
    """

    name: str
    # The window assumed when the endpoint does not report the model's.
    default_context_length = DEFAULT_CONTEXT_LENGTH

    def __init__(
        self,
        *,
        spec: BackendSpec,
        model: str,
        base_url: str,
        name: str = "",
        headers: Mapping[str, str] | None = None,
        timeout: float | httpx.Timeout | None = None,
        limits: ReplyLimits | None = None,
    ) -> None:
        self.spec = spec
        self.name = name or spec.name  # the provider state and usage show (settings.provider_name)
        self.said = said_name(spec, base_url, self.name)
        self.model = model  # the model requests go to
        self.base_url = base_url.rstrip("/")
        self.limits = limits or DEFAULT_LIMITS
        checked_url(self.base_url, spec.url_var)  # the scheme, a host, a port httpx could not refuse before connecting
        try:
            self._client = http_client(self.base_url, dict(headers or {}),
                                       DEFAULT_TIMEOUT if timeout is None else timeout)
        except httpx.InvalidURL as exc:  # a host IDNA refuses
            raise BackendConfigError(f"{spec.url_var}={written_url(base_url)!r} is not a valid URL: {exc}") from None
        except UnicodeEncodeError:  # httpx sends header values as ASCII: a pasted curly quote, a stray character
            raise BackendConfigError(f"a request header ({spec.key_var or 'its API key'}) holds a character that is "
                                     "not ASCII: set it again") from None
        self._context_lengths: dict[str, int] = {}

    def set_model(self, model: str) -> None:
        """Switch the model for later requests."""
        self.model = model

    async def aclose(self) -> None:
        """Release the HTTP client and its connections."""
        await self._client.aclose()

    def build_request(self, messages: list[Message], tools: list[Tool], params: GenerationParams) -> dict[str, Any]:
        """The vendor's JSON body for one streamed request."""
        raise NotImplementedError

    def _events(self, body: dict[str, Any]) -> AsyncGenerator[StreamEvent, None]:
        """Send `body` and translate the vendor stream: deltas as they arrive, then one `done` event."""
        raise NotImplementedError

    async def stream(
        self, messages: list[Message], tools: list[Tool], params: GenerationParams
    ) -> AsyncGenerator[StreamEvent, None]:
        """Stream one request (see `Backend.stream`).

        A frame of an unexpected shape (`null`, a list, a string where an object
        belongs) is a TransientError, not an AttributeError/TypeError/KeyError/IndexError.
        """
        try:
            body = await self._body(messages, tools, params)
            # Read ahead: under a flood, the deltas that piled up reach the engine as one event (readahead.py).
            async with aclosing(read_ahead(self._events(body))) as events:
                async for event in events:
                    yield event
        except BackendError as exc:
            if type(exc) is BackendError and exc.status == 404:
                # Ollama's "model 'x' not found" (not pulled yet), or a model the API does not have; else (an empty
                # body, a proxy's page) nothing serves that path there: the URL or the model is wrong.
                if not (missing := _names_a_missing_model(str(exc), self.model)):
                    await self._no_api_here(exc)  # the URL to set, when the backend can tell
                hint = (missing_model_hint(self.spec, self.model) if missing
                        else f"check {self.spec.url_var} ({shown_url(self.base_url)}) and the model ({self.model})")
                raise BackendError(f"{exc}: {hint}", status=exc.status, body=exc.body) from exc
            if type(exc) is BackendError and exc.status in (401, 403) and self.spec.key_var:  # which key to fix
                hint = refused_key_hint(self.spec, self.base_url)
                raise BackendError(f"{exc}: {hint}", status=exc.status, body=exc.body) from exc
            raise
        except (AttributeError, TypeError, KeyError, IndexError) as exc:
            raise TransientError(f"{self.said}: malformed stream event ({type(exc).__name__}: {exc})") from exc

    async def _body(self, messages: list[Message], tools: list[Tool], params: GenerationParams) -> dict[str, Any]:
        """The request body; a long history's is built and encoded in a worker thread (ollie.jsonpieces).

        No work that grows with the history runs on the event loop: every other session keeps streaming.
        """
        if len(messages) <= INLINE_MESSAGES and sum(len(m.content) for m in messages) <= INLINE_CHARS:
            return self.build_request(messages, tools, params)
        return await asyncio.to_thread(encoded, lambda: self.build_request(messages, tools, params))

    async def fill_in_middle(self, prefix: str, suffix: str, *, max_tokens: int = 128) -> str:
        """The text between `prefix` and `suffix` (ghost text); here through a chat prompt, for backends with no
        fill-in-the-middle API (Ollama and OpenAI-compatible servers use theirs)."""
        from ollie.backend.fim import chat_fill

        return await chat_fill(self.stream, prefix, suffix, max_tokens=max_tokens)

    def unreachable_hint(self) -> str:
        """What to do when this backend's server cannot be reached."""
        return unreachable_hint(self.spec, self.base_url, self.model)

    async def context_length(self) -> int:
        """The model's context window: the server's figure, looked up once per model, else the default.

        An endpoint that cannot say (no `/models`, an unknown model) gets the
        default; one that cannot be reached now raises, so the next turn asks again.
        """
        if self.model not in self._context_lengths:
            try:
                found = await self._lookup_context_length()
            except (BackendUnreachableError, TransientError, RateLimitError):
                raise
            except BackendError:
                found = None
            self._context_lengths[self.model] = found or self.default_context_length
        return self._context_lengths[self.model]

    async def _lookup_context_length(self) -> int | None:
        """The server's context window for the current model; None when it does not say (the default applies)."""
        return None

    async def _no_api_here(self, missed: BackendError) -> None:
        """Raise BackendUnreachableError naming the URL to set when `missed` (a 404) shows the URL is wrong."""

    async def takes_images(self) -> bool | None:
        """Whether the current model accepts images: what the server says of it, None when it does not say
        (then the request goes and the vendor's answer decides)."""
        try:
            return await self._lookup_vision()
        except BackendError:
            return None

    async def _lookup_vision(self) -> bool | None:
        return None

    def _stream_json(
        self,
        path: str,
        body: dict[str, Any],
        *,
        framing: Framing,
        is_terminator: Callable[[Any], bool],
        skip: Callable[[Any], bool] = lambda _: False,
    ) -> AsyncGenerator[Any, None]:
        """`stream_frames` decoded: each frame's JSON object (`skip`ped frames aside); error objects raised typed."""
        name = self.said
        sse = framing == "sse"

        def decode(frame: Any) -> Any:
            if skip(frame):
                return _SKIP
            obj = frame
            if sse:
                try:  # garbage is a transient error, not a crash
                    obj = loads(frame.data)
                except (ValueError, RecursionError) as exc:
                    raise TransientError(f"{name}: malformed stream event: {frame.data[:200]!r}") from exc
                if frame.event and isinstance(obj, dict) and "type" not in obj:
                    # Some proxies name the event only in its `event:` line (the SSE spec's way).
                    obj = {**obj, "type": frame.event}
            if isinstance(obj, dict) and obj.get("error") and obj.get("type") in (None, "error"):  # a vendor's error
                raise classify_error(status_of_error_object(obj), obj, backend=name)
            return obj

        return stream_frames(self._client, path, body=body, framing=framing, is_terminator=is_terminator,
                             backend=name, limits=self.limits, hint=self.unreachable_hint, keepalive=skip,
                             transform=decode)

    async def _request_json(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """A plain (non-streaming) JSON request with the same error classification and bounds."""
        request = self._client.build_request(method, path, json=body)
        try:
            response = await _send(self._client, request, head_s=self.limits.head_s, backend=self.said)
            try:
                if (failure := await failed_status(response, backend=self.said)) is not None:
                    raise failure
                raw, cut = await read_capped(response, MAX_JSON_BODY)
            finally:
                await response.aclose()
        except httpx.RequestError as exc:
            raise request_failed(exc, backend=self.said, hint=self.unreachable_hint) from exc
        if cut:
            raise BackendError(f"{self.said}: {path} answered over {size_text(MAX_JSON_BODY)}",
                               status=response.status_code)
        try:
            return json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise BackendError(f"{self.said}: {path} did not return JSON", status=response.status_code) from exc


def _names_a_missing_model(message: str, model: str) -> bool:
    """Whether a 404's message is the vendor's "no such model": Ollama's and OpenRouter's "not found", OpenAI's
    "The model `x` does not exist", Anthropic's "model: x"."""
    lower = message.lower()
    return "not found" in lower or "does not exist" in lower or (bool(model) and f"model: {model}" in message)
