"""One model request streamed onto the bus, and the retry policy around it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ollie.agent.events import Bus
from ollie.agent.limits import LoopLimits
from ollie.backend.base import Backend
from ollie.backend.errors import (
    BackendUnreachableError,
    ContextOverflowError,
    ImagesUnsupportedError,
    RateLimitError,
    StreamDropError,
    ToolUnsupportedError,
    TransientError,
)
from ollie.backend.types import GenerationParams, Message, Tool, ToolCall, Usage
from ollie.env import env_seconds

# A server that took the request and says nothing (a model still loading, a tunnel or proxy whose far end is gone)
# left the user before silence until the head timeout, 5 minutes: after this long it is said, once per request.
QUIET_SERVER_S = env_seconds("OLLIE_QUIET_SERVER_S", 20.0)  # (shorter: the test of a server that never answers)


@dataclass(eq=False, repr=False)
class Completion:
    """A model reply assembled from its stream."""

    text: str = ""
    reasoning: str = ""
    reasoning_signature: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    # The backend's stop reason ("refusal" when the model or the vendor's filter declined).
    stop_reason: str = ""


@dataclass(eq=False, repr=False)
class Streamed:
    """What the request in progress has streamed so far: the partial reply an interrupt keeps."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)


class TurnFailed(Exception):
    """The request failed for good; `error_type` as the turnError hook names it."""

    def __init__(self, message: str, *, error_type: str) -> None:
        super().__init__(message)
        self.error_type = error_type


# The turnError hook's name for each backend error, first match wins.
ERROR_TYPES: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], str], ...] = (
    (RateLimitError, "rate_limit"),
    (ToolUnsupportedError, "tool_unsupported"),
    (ContextOverflowError, "context_overflow"),
    (ImagesUnsupportedError, "images_unsupported"),
    ((TransientError, StreamDropError), "transient"),
    (BackendUnreachableError, "unreachable"),
)


def error_type(exc: BaseException) -> str:
    """The turnError hook's name for an error."""
    return next((name for kinds, name in ERROR_TYPES if isinstance(exc, kinds)), "unknown")


# What a retried error means and what to do once retries are spent, in a person's words: the one place every front
# end's text comes from (the class name, `rate_limit:`, told a user nothing; it goes as the event's `name`).
_RETRIED = {
    "rate_limit": ("the model's server is limiting requests (rate limit)",
                   "wait a minute and send the prompt again, or pick another model (/model)"),
    "transient": ("the model request failed",
                  "send the prompt again; if it keeps failing, check the model's server (`ollie doctor`)"),
}


async def stream_once(
    backend: Backend,
    messages: list[Message],
    tools: list[Tool],
    params: GenerationParams,
    bus: Bus | None,
    streamed: Streamed | None = None,
) -> Completion:
    """Run one request; publish `assistant`/`reasoning` deltas as they arrive (and keep them in `streamed`)."""
    out = Completion()
    streamed = streamed or Streamed()
    streamed.text.clear()  # a retry streams the reply anew
    streamed.reasoning.clear()
    text, reasoning = streamed.text, streamed.reasoning
    quiet = None if bus is None else asyncio.get_running_loop().call_later(QUIET_SERVER_S, _say_quiet, bus, backend)
    try:
        # aclosing: an interrupt (cancellation) closes the HTTP stream at once.
        async with contextlib.aclosing(backend.stream(messages, tools, params)) as events:
            async for event in events:
                if quiet is not None:
                    quiet.cancel()
                    quiet = None
                if event.content:
                    text.append(event.content)
                    if bus is not None:
                        bus.emit("assistant", event.content)
                if event.reasoning:
                    reasoning.append(event.reasoning)
                    if bus is not None:
                        bus.emit("reasoning", event.reasoning)
                if event.tool_calls:
                    out.tool_calls.extend(event.tool_calls)
                if event.usage is not None:
                    out.usage = event.usage
                if event.reasoning_signature:
                    out.reasoning_signature = event.reasoning_signature
                if event.stop_reason:
                    out.stop_reason = event.stop_reason
    finally:  # (an error or an interrupt before any event: no note after it)
        if quiet is not None:
            quiet.cancel()
    out.text = "".join(text)
    out.reasoning = "".join(reasoning)
    return out


def _say_quiet(bus: Bus, backend: Backend) -> None:
    """Say that the request in progress has had no answer yet, and what to do."""
    from ollie.backend.urls import shown_url

    bus.emit("info", f"no answer yet from {backend.model} at {shown_url(backend.base_url)} after {QUIET_SERVER_S:g} s: "
                     "a model still loading answers later; if none comes, stop the turn and check the server "
                     "(`ollie doctor`)")


OnError = Callable[[BaseException, str], Awaitable[bool]]


async def stream_with_retry(
    *,
    backend: Backend,
    build_messages: Callable[[], list[Message]],
    tools: list[Tool],
    params: GenerationParams,
    bus: Bus,
    limits: LoopLimits,
    on_first_error: OnError,
    compact: Callable[[], Awaitable[bool]],
    streamed: Streamed | None = None,
) -> Completion:
    """Stream, retrying rate limits, transient errors and drops with backoff; compact once on overflow.

    An unreachable backend fails at once (no retries); `on_first_error` (the turnError hook) True ends the turn.
    """
    retries = 0
    compacted = False
    first = True
    while True:
        try:
            return await stream_once(backend, build_messages(), tools, params, bus, streamed)
        except Exception as exc:  # (an interrupt's CancelledError is no Exception: it passes)
            kind = error_type(exc)
            if first:
                first = False
                if await on_first_error(exc, kind):
                    raise TurnFailed(f"{exc} (the turnError hook handled it)", error_type=kind) from exc
            if isinstance(exc, ContextOverflowError):
                if compacted or not await compact():
                    raise TurnFailed(f"the conversation is too long for the model ({exc}): start a new one (/clear) or "
                                     "pick a model with a larger context window (/model)", error_type=kind) from exc
                compacted = True
                continue
            if isinstance(exc, RateLimitError | TransientError):
                base = limits.backoff_base_s
            elif isinstance(exc, StreamDropError):
                base = limits.drop_backoff_base_s
            else:
                raise TurnFailed(str(exc) or type(exc).__name__, error_type=kind) from exc
            what, todo = _RETRIED[kind]
            if retries >= limits.max_retries:
                raise TurnFailed(f"{what}: {exc}; gave up after {retries} retries: {todo}", error_type=kind) from exc
            delay = base * 2**retries
            retry_after = getattr(exc, "retry_after", None)
            if retry_after:
                delay = max(delay, min(float(retry_after), limits.max_retry_after_s))
            retries += 1
            bus.emit("limitretry", f"{what}: {exc}; retry {retries}/{limits.max_retries} in {delay:.2f}s", name=kind)
            await asyncio.sleep(delay)
