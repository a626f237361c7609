"""The loop's thresholds, backoffs and timeouts in one place, so tests can shrink them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(eq=False, repr=False)
class LoopLimits:
    """Every number the agent loop acts on; the defaults are the seed's."""

    # Retry: delay = base * 2**attempt seconds, at most `max_retries` retries.
    backoff_base_s: float = 5.0
    drop_backoff_base_s: float = 2.0
    max_retries: int = 3
    # A vendor's Retry-After is honoured up to this many seconds.
    max_retry_after_s: float = 60.0
    # Safety mechanisms, counted in tool rounds.
    error_nudge_rounds: int = 5
    error_abort_rounds: int = 10
    replan_rounds: int = 8
    stall_rounds: int = 5
    reinject_rounds: int = 10
    # Compaction: fraction of the context length that triggers it, and zone sizes.
    compact_fraction: float = 0.5
    hot_messages: int = 8
    warm_entries: int = 10
    # Hooks (the tool-result byte limit lives on the Runtime).
    hook_timeout_s: float = 60.0
    # How long close() waits for an interrupted turn to wind down.
    close_wait_s: float = 5.0
