"""A reply's text deltas with the surrogate pairs a server escaped across two of them joined.

A server may escape a character beyond the BMP as its UTF-16 halves and cut a delta between them: `"\\ud83d"` ends
one frame's string and `"\\ude00"` starts the next. Each frame decodes alone (framing.loads keeps such an edge half),
so the halves meet here; a half that meets no other is U+FFFD (no UTF-8 encoder takes it).
"""

from __future__ import annotations

import re

from ollie.backend.types import StreamEvent

_SURROGATE = re.compile("[\ud800-\udfff]")


def paired(text: str) -> str:
    """`text` with each surrogate pair made its character and each lone surrogate U+FFFD."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class SplitPairs:
    """One reply's: `join` each of its events in order."""

    def __init__(self) -> None:
        self._held = {"content": "", "reasoning": ""}  # a high surrogate that ended the last delta of each stream
        self._holding = False

    def join(self, event: StreamEvent) -> StreamEvent:
        """`event` with a held high surrogate put before its text, and one ending its text held for the next."""
        # Nearly every delta: no half held, none at its text's ends, not the last event (which has the tool calls).
        text = event.content or event.reasoning
        if (self._holding or event.done or text and ("\ud800" <= text[-1] <= "\udbff" or "\udc00" <= text[0] <= "\udfff")
                or event.content and event.reasoning):  # (both in one delta: Ollama's may)
            self._join(event)
        return event

    def _join(self, event: StreamEvent) -> None:
        held = self._held
        for name in held:
            text = held[name] + getattr(event, name)
            held[name] = ""
            if not event.done and text and "\ud800" <= text[-1] <= "\udbff":  # the low half may start the next
                text, held[name] = text[:-1], text[-1]
            setattr(event, name, paired(text))
        self._holding = any(held.values())
        for call in event.tool_calls:  # arguments a server sent in pieces (OpenAI's) were joined by the backend
            if any(map(_SURROGATE.search, (call.id, call.name, call.arguments))):
                call.id, call.name, call.arguments = paired(call.id), paired(call.name), paired(call.arguments)
        if _SURROGATE.search(event.reasoning_signature):
            event.reasoning_signature = paired(event.reasoning_signature)
