"""The one streaming path every backend shares: request, status classification, incremental framing."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from typing import Any, Literal

import httpx

from ollie.backend.classify import classify_error, status_of_error_object
from ollie.backend.errors import (
    BackendError,
    BackendUnreachableError,
    RateLimitError,
    StreamDropError,
    TransientError,
)
from ollie.backend.framing import NDJSONDecoder, SSEDecoder
from ollie.backend.pool import PooledClient
from ollie.backend.readahead import read_ahead
from ollie.backend.types import GenerationParams, Message, StreamEvent, Tool

Framing = Literal["sse", "ndjson"]

DEFAULT_TIMEOUT = httpx.Timeout(connect=15.0, read=300.0, write=60.0, pool=15.0)

# A model whose window the endpoint does not report is assumed to have this many tokens (the
# reference engine's figure), so auto-compaction still works.
DEFAULT_CONTEXT_LENGTH = 128_000

# Failures that mean the configuration is wrong (connection refused, unknown host, no http(s)
# scheme), not that the network hiccuped: retrying cannot help. A connect *timeout* stays transient.
_UNREACHABLE = (httpx.ConnectError, httpx.UnsupportedProtocol, httpx.InvalidURL)


def request_failed(exc: Exception, *, backend: str, hint: str = "") -> BackendError:
    """The typed error for a request that could not be sent: unreachable (configuration) or transient."""
    if isinstance(exc, _UNREACHABLE):
        return BackendUnreachableError(f"{backend}: cannot connect ({exc or type(exc).__name__})", hint=hint)
    return TransientError(f"{backend}: request failed: {exc!r}")


_SKIP = object()  # a frame `stream_frames`' transform drops


def _same(frame: Any) -> Any:
    return frame


async def stream_frames(
    client: httpx.AsyncClient,
    url: str,
    *,
    body: dict[str, Any],
    framing: Framing,
    is_terminator: Callable[[Any], bool],
    backend: str,
    headers: Mapping[str, str] | None = None,
    hint: str = "",
    transform: Callable[[Any], Any] = _same,
) -> AsyncGenerator[Any, None]:
    """POST `body` and yield each SSE event / NDJSON object the moment its bytes arrive.

    Each frame goes through `transform` (its result is yielded; `_SKIP` drops
    it) in this one generator: a stream of 20,000 deltas pays per frame for
    one generator hop less than a wrapping generator would.
    Raises the typed error for a failed status, BackendUnreachableError (with
    `hint`) when the server cannot be reached, TransientError when the request
    fails otherwise before a reply, and StreamDropError when the body ends (or breaks) before
    the frame for which `is_terminator` is true. That frame is yielded last.
    """
    try:
        async with client.stream("POST", url, json=body, headers=headers) as response:
            if response.status_code >= 400:
                raw = await response.aread()
                raise classify_error(response.status_code, raw, headers=response.headers, backend=backend)
            decoder: SSEDecoder | NDJSONDecoder = SSEDecoder() if framing == "sse" else NDJSONDecoder()
            # An uncompressed body (the usual SSE stream) is read raw: aiter_bytes' decoder and re-chunker
            # cost a call each per chunk, and every event is a chunk of its own.
            encoded = response.headers.get("content-encoding", "identity").strip().lower() not in ("", "identity")
            chunks = response.aiter_bytes() if encoded else response.aiter_raw()
            try:
                async for chunk in chunks:
                    for frame in decoder.feed(chunk):
                        out = transform(frame)
                        if out is not _SKIP:
                            yield out
                        if is_terminator(frame):
                            return
                for frame in decoder.finish():
                    out = transform(frame)
                    if out is not _SKIP:
                        yield out
                    if is_terminator(frame):
                        return
            except httpx.RequestError as exc:
                raise StreamDropError(f"{backend}: stream broke: {exc!r}") from exc
            except ValueError as exc:
                raise TransientError(f"{backend}: malformed stream: {exc}") from exc
            raise StreamDropError(f"{backend}: stream ended without its terminator")
    except (httpx.RequestError, httpx.InvalidURL) as exc:
        raise request_failed(exc, backend=backend, hint=hint) from exc


def parse_json_data(data: str, *, backend: str) -> Any:
    """Decode one SSE `data:` payload; garbage is a transient error, not a crash."""
    try:
        return json.loads(data)
    except ValueError as exc:
        raise TransientError(f"{backend}: malformed stream event: {data[:200]!r}") from exc


def raise_for_error_object(obj: object, *, backend: str) -> None:
    """Raise the typed error when a stream frame is a vendor error object instead of data."""
    if isinstance(obj, dict) and obj.get("error") and (obj.get("type") in (None, "error")):
        raise classify_error(status_of_error_object(obj), obj, backend=backend)


def _never(frame: object) -> bool:
    return False


class HTTPBackend:
    """What the three backends share: the httpx client, the model, the stream, the cached context length.

    A backend supplies `build_request` (the JSON body) and `_events` (its vendor
    stream as StreamEvents); `stream` joins them the same way for all.
    """

    name: str

    def __init__(
        self,
        *,
        name: str,
        model: str,
        base_url: str,
        default_context_length: int,
        headers: Mapping[str, str] | None = None,
        timeout: float | httpx.Timeout | None = None,
    ) -> None:
        self.name = name
        self._model = model
        self.base_url = base_url.rstrip("/")
        self.default_context_length = default_context_length
        # Every backend on this loop sends through one connection pool (one TLS context): see pool.py.
        self._pooled = PooledClient(base_url=self.base_url, headers=dict(headers or {}),
                                    timeout=DEFAULT_TIMEOUT if timeout is None else timeout)
        self._client = self._pooled.client
        self._context_lengths: dict[str, int] = {}

    @property
    def model(self) -> str:
        """The model requests go to."""
        return self._model

    def set_model(self, model: str) -> None:
        """Switch the model for later requests."""
        self._model = model

    async def aclose(self) -> None:
        """Release the HTTP client (the shared pool closes with its last backend)."""
        await self._pooled.aclose()

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
            # Read ahead: under a flood, the deltas that piled up reach the engine as one event (readahead.py).
            async with aclosing(read_ahead(self._events(self.build_request(messages, tools, params)))) as events:
                async for event in events:
                    yield event
        except BackendError as exc:
            if type(exc) is BackendError and exc.status == 404 and "not found" in str(exc).lower():
                # Ollama's "model 'x' not found" (not pulled yet), or a model the API does not have.
                from ollie.backend.settings import missing_model_hint

                raise BackendError(f"{exc}: {missing_model_hint(self.name, self.model)}", status=exc.status,
                                   body=exc.body) from exc
            raise
        except (AttributeError, TypeError, KeyError, IndexError) as exc:
            raise TransientError(f"{self.name}: malformed stream event ({type(exc).__name__}: {exc})") from exc

    def unreachable_hint(self) -> str:
        """What to do when this backend's server cannot be reached."""
        from ollie.backend.settings import unreachable_hint

        return unreachable_hint(self.name, self.base_url, self.model)

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

    def _stream_json(
        self,
        path: str,
        body: dict[str, Any],
        *,
        framing: Framing,
        is_terminator: Callable[[Any], bool],
        skip: Callable[[Any], bool] = _never,
    ) -> AsyncGenerator[Any, None]:
        """`stream_frames` decoded: each frame's JSON object (`skip`ped frames aside), error objects raised typed."""
        name = self.name
        sse = framing == "sse"

        def decode(frame: Any) -> Any:
            if skip(frame):
                return _SKIP
            obj = parse_json_data(frame.data, backend=name) if sse else frame
            if sse and frame.event and isinstance(obj, dict) and "type" not in obj:
                # Some proxies name the event only in its `event:` line (the SSE spec's way).
                obj = {**obj, "type": frame.event}
            raise_for_error_object(obj, backend=name)
            return obj

        return stream_frames(self._client, path, body=body, framing=framing, is_terminator=is_terminator,
                             backend=name, hint=self.unreachable_hint(), transform=decode)

    async def _request_json(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """A plain (non-streaming) JSON request with the same error classification."""
        try:
            response = await self._client.request(method, path, json=body)
        except (httpx.RequestError, httpx.InvalidURL) as exc:
            raise request_failed(exc, backend=self.name, hint=self.unreachable_hint()) from exc
        if response.status_code >= 400:
            raise classify_error(response.status_code, response.content, headers=response.headers, backend=self.name)
        try:
            return response.json()
        except ValueError as exc:
            raise BackendError(f"{self.name}: {path} did not return JSON", status=response.status_code) from exc
