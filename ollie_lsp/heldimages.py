"""The image bytes the daemon holds for prompts not run yet, bounded across its sessions (`inbox.take_images`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ollie.agent import inbox
from ollie_lsp.errors import QueueFull, refused

if TYPE_CHECKING:
    from ollie.agent.inbox import Held
    from ollie_lsp.sessions import SessionTable


def held(table: SessionTable) -> int:
    """The bytes of prompts not run yet: the submits waiting for their turn, the queues, the queued being read."""
    return sum(live.core.queued_bytes() + sum(h.images for h in live.waiting) for live in table.live()) \
        + sum(h.images for h in table.reading)


def take(table: SessionTable, holder: Held, session: str, size: int) -> None:
    """Count `size` more bytes (fewer when negative) to `holder`; -32010 when the daemon would hold more than it may."""
    with refused(QueueFull, inbox.QueueFull, {"session": session}):
        inbox.take_images(holder, size, held=held(table), where="this daemon")
