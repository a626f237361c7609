"""One core's context: what the next request carries, its size, the model's limit, the gate, when to compact."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ollie.agent.compaction import CompactionResult, compact_session, render_memory
from ollie.agent.tiers import context_gate, estimate_tokens
from ollie.backend.types import Message
from ollie.log import get_logger

if TYPE_CHECKING:
    from ollie.agent.core import Core

log = get_logger("ollie.agent.context")


class ContextBudget:
    """Keeps one core's context under `compact_fraction` of the model's context length."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self._limit: int | None = None

    def request_messages(self) -> list[Message]:
        """What the next request sends: system prompt, task state + decision index, history."""
        core = self._core
        system = core.system_prompt()
        out = [Message("system", system)] if system else []
        memory = render_memory(core.session)
        if memory:
            out.append(Message("user", memory))
        out.extend(core.session.messages)
        return out

    def estimate(self) -> int:
        """Tokens the next request would carry: the last measured input, or characters / 4 if larger."""
        return max(self._core.session.last_input_tokens, estimate_tokens(self.request_messages()))

    def info(self) -> dict[str, int]:
        """`{"tokens", "limit"}` (limit 0 = not known yet)."""
        return {"tokens": self.estimate(), "limit": self.known_limit}

    @property
    def known_limit(self) -> int:
        """The context length if it has been looked up or is configured (0 otherwise)."""
        return self._core.runtime.config.context_length or self._limit or 0

    def forget_limit(self) -> None:
        """The backend or model changed: look the context length up again."""
        self._limit = None

    async def limit(self) -> int:
        """The model's context length, looked up once per backend/model (0 while unknown)."""
        backend = self._core.backend
        configured = self._core.runtime.config.context_length
        if configured:  # the agent config knows better than a server that may not say
            return configured
        if self._limit is None and backend is not None:
            try:
                self._limit = await backend.context_length()
            except Exception as exc:  # unknown for now: auto-compaction waits; asked again next turn
                log.warning("context length unknown", extra={"error": str(exc)})
        return self._limit or 0

    def _budget(self) -> int:
        return int(self.known_limit * self._core.limits.compact_fraction)

    def gate(self) -> None:
        """Before a request: strip cold (then warm) tool output when over budget."""
        core = self._core
        stripped = context_gate(core.session, tokens=self.estimate(), budget=self._budget())
        if stripped:
            core.bus.emit("info", f"context gate: collapsed {' and '.join(stripped)} tool results to stay under budget")
            core.notify()

    async def auto_compact(self) -> None:
        """After a tool round: gate first, then compact when still at the threshold."""
        if await self.limit() <= 0 or self.estimate() < self._budget():
            return
        self.gate()
        if self.estimate() >= self._budget():
            await self.compact(announce=True)

    async def compact_for_overflow(self) -> bool:
        """The backend said the context overflowed: compact; True when it worked."""
        return (await self.compact(announce=True)).ok

    async def compact(self, *, announce: bool) -> CompactionResult:
        """Compact the session now; `announce` publishes the outcome as an info/error event."""
        core = self._core
        if core.backend is None:
            return CompactionResult(False, f"cannot compact: {core.backend_error or 'no backend'}")
        result = await compact_session(
            session=core.session,
            backend=core.backend,
            params=core.generation_params(),
            limits=core.limits,
            hook=core.run_hook,
            snapshot=core.session_file.write_compaction_snapshot,
            rewrite=core.session_file.rewrite,
            on_usage=core.record_usage,
            # About 3 characters a token, leaving room for the answer.
            max_chars=int(self.known_limit * 3 * 0.75),
        )
        if announce:
            core.bus.emit("info" if result.ok else "error", result.message)
        core.notify()
        return result
