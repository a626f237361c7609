"""The image bytes the daemon holds for prompts not run yet, bounded across its sessions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ollie.backend.images import MAX_IMAGES, max_image_bytes
from ollie.sizes import size_text
from ollie_lsp.errors import QueueFull

if TYPE_CHECKING:
    from ollie_lsp.sessions import Held, SessionTable

# A session's queue holds two prompts of images at the cap; submits waiting for their turn and other sessions held
# theirs besides, without end (many at once made the daemon hold gigabytes). The daemon holds this many at most.
DAEMON_PROMPTS_OF_IMAGES = 4


def held(table: SessionTable) -> int:
    """The bytes of prompts not run yet: the submits waiting for their turn, the queues, the queued being read."""
    return sum(live.core.queued_bytes() + sum(h.images for h in live.waiting) for live in table.live()) \
        + sum(h.images for h in table.reading)


def take(table: SessionTable, holder: Held, session: str, size: int) -> None:
    """Count `size` more bytes (fewer when negative) to `holder`; -32010 when the daemon would hold more than it may."""
    cap = DAEMON_PROMPTS_OF_IMAGES * MAX_IMAGES * max_image_bytes()
    now = held(table)
    if size > 0 and now + size > cap:
        raise QueueFull(f"this prompt's {size_text(size)} of images and the {size_text(now)} of prompts waiting in this"
                        f" daemon's sessions are over the {size_text(cap)} it holds: let them run first, or send fewer"
                        " or smaller images", {"session": session})
    holder.images += size
