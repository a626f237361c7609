"""One session's context: what the next request carries, its size, the model's limit, the gate, when to compact."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Protocol

from ollie.agent.events import Bus
from ollie.agent.hooks import HookResult
from ollie.agent.limits import LoopLimits
from ollie.agent.runtime import Runtime
from ollie.agent.streaming import Completion
from ollie.agent.taskstate import render_memory
from ollie.agent.tiers import context_gate, message_chars
from ollie.backend.base import Backend
from ollie.backend.types import GenerationParams, Message
from ollie.sessions.errors import owners_only
from ollie.sessions.persist import SessionFile
from ollie.sessions.session import Session

if TYPE_CHECKING:  # compaction loads with the first one
    from ollie.agent.compaction import CompactionResult

log = logging.getLogger("ollie.agent.context")


class HistorySize:
    """The characters of a session's history, kept up to date in O(what changed): a rewritten history is recounted."""

    def __init__(self) -> None:
        self._list: list[Message] | None = None
        self._generation = -1
        self._sizes: list[int] = []
        self._chars = 0
        self._first: Message | None = None
        self._last: Message | None = None

    def chars(self, session: Session) -> int:
        """The history's characters now."""
        messages, sizes = session.messages, self._sizes
        counted = len(sizes)
        if (messages is not self._list or session.history_generation != self._generation
                or len(messages) < counted
                or (counted and (messages[0] is not self._first or messages[counted - 1] is not self._last))):
            self._recount(session)
            return self._chars
        for index in session.resized_indices:
            if index < counted:
                size = message_chars(messages[index])
                self._chars += size - sizes[index]
                sizes[index] = size
        session.resized_indices.clear()
        for message in messages[counted:]:
            size = message_chars(message)
            sizes.append(size)
            self._chars += size
        if messages:
            self._first, self._last = messages[0], messages[-1]
        return self._chars

    def _recount(self, session: Session) -> None:
        self._list, self._generation = session.messages, session.history_generation
        self._sizes = [message_chars(m) for m in session.messages]
        self._chars = sum(self._sizes)
        self._first = session.messages[0] if session.messages else None
        self._last = session.messages[-1] if session.messages else None
        session.resized_indices.clear()


class SessionHost(Protocol):
    """What both the loop and the context budget use of their session (the Core's TurnHost)."""

    session: Session
    bus: Bus
    limits: LoopLimits

    @property
    def runtime(self) -> Runtime: ...
    def generation_params(self) -> GenerationParams: ...
    async def run_hook(self, name: str, payload: dict[str, Any]) -> HookResult | None: ...
    def record_usage(self, completion: Completion) -> None: ...


class BudgetHost(SessionHost, Protocol):
    """What the context budget reads and drives of its session, besides the loop's share."""

    session_file: SessionFile

    @property
    def backend(self) -> Backend | None: ...
    @property
    def backend_error(self) -> str: ...
    def notify(self) -> None: ...


class ContextBudget:
    """Keeps one session's context under `compact_fraction` of the model's context length."""

    def __init__(self, host: BudgetHost) -> None:
        self._host = host
        self._limit: int | None = None
        self._history = HistorySize()

    def request_messages(self) -> list[Message]:
        """What the next request sends: system prompt, task state + decision index, history."""
        host = self._host
        system = host.runtime.preamble
        out = [Message("system", system)] if system else []
        memory = render_memory(host.session)
        if memory:
            out.append(Message("user", memory))
        out.extend(host.session.messages)
        return out

    def estimate(self) -> int:
        """Tokens the next request would carry: the last measured input, or characters / 4 if larger."""
        host = self._host
        session = host.session
        chars = len(host.runtime.preamble) + len(render_memory(session)) + self._history.chars(session)
        return max(session.last_input_tokens, chars // 4)

    def info(self) -> dict[str, int]:
        """`{"tokens", "limit"}` (limit 0 = not known yet)."""
        return {"tokens": self.estimate(), "limit": self.known_limit}

    @property
    def known_limit(self) -> int:
        """The context length if it has been looked up or is configured (0 otherwise)."""
        return self._host.runtime.config.context_length or self._limit or 0

    def forget_limit(self) -> None:
        """The backend or model changed: look the context length up again."""
        self._limit = None

    async def limit(self) -> int:
        """The model's context length, looked up once per backend/model (0 while unknown)."""
        backend = self._host.backend
        configured = self._host.runtime.config.context_length
        if configured:  # the agent config knows better than a server that may not say
            return configured
        if self._limit is None and backend is not None:
            try:
                self._limit = await backend.context_length()
            except Exception as exc:  # unknown for now: auto-compaction waits; asked again next turn
                log.warning("context length unknown", extra={"error": str(exc)})
        return self._limit or 0

    def _budget(self) -> int:
        return int(self.known_limit * self._host.limits.compact_fraction)

    async def gate(self) -> None:
        """Before a request: strip cold (then warm) tool output when over budget."""
        host = self._host
        tokens, budget = self.estimate(), self._budget()
        if budget <= 0 or tokens <= budget:
            return  # the usual case, decided without a look at the history
        # Over budget: the strip walks (and re-measures) the whole history: in a thread, not on the shared loop.
        stripped = await asyncio.to_thread(context_gate, host.session, budget=budget)
        if stripped:
            # In the user's words: "context gate", "warm" and "budget" (money?) are the engine's.
            host.bus.emit("info", "the conversation nears the model's context limit: earlier steps' output was shortened "
                                  "to a line each to make room")
            host.notify()

    async def auto_compact(self) -> None:
        """After a tool round: gate first, then compact when still at the threshold."""
        if await self.limit() <= 0 or self.estimate() < self._budget():
            return
        await self.gate()
        if self.estimate() >= self._budget():
            await self.compact(announce=True)

    async def compact_for_overflow(self) -> bool:
        """The backend said the context overflowed: compact; True when it worked."""
        return (await self.compact(announce=True)).ok

    async def compact(self, *, announce: bool) -> CompactionResult:
        """Compact the session now; `announce` publishes the outcome as an info/error event."""
        from ollie.agent.compaction import CompactionResult, compact_session  # the first compaction loads it

        host = self._host
        if host.backend is None:
            return CompactionResult(False, f"cannot compact: {host.backend_error or 'no backend'}")
        if owner := host.session_file.owner:  # its log is the owner's to rewrite: the history is left whole
            refusal = owners_only(host.session.id, owner, "compact its history")
            result = CompactionResult(False, f"cannot compact: {refusal}: ask them to /compact it")
        else:
            result = await compact_session(
                session=host.session, backend=host.backend, params=host.generation_params(), limits=host.limits,
                hook=host.run_hook, snapshot=host.session_file.write_compaction_snapshot,
                rewrite=host.session_file.rewrite, on_usage=host.record_usage,
                max_chars=int(self.known_limit * 3 * 0.75),  # about 3 characters a token, leaving room for the answer
            )
        if announce:
            host.bus.emit("info" if result.ok else "error", result.message)
        host.notify()
        return result
