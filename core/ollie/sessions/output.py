"""OutputCollector: keep a bounded UTF-8-safe prefix of a stream the caller drains to the end."""

from __future__ import annotations

import codecs

from ollie.sessions.types import MAX_SYNCHRONOUS_OUTPUT_BYTES


class OutputCollector:
    """Retains at most `limit` UTF-8 bytes of what is written, never splitting a character.

    Draining continues past the limit (writes are then dropped) so a producer can
    finish and release its busy guard. Bytes may arrive split inside a character;
    an incremental decoder joins them first.
    """

    def __init__(self, *, limit: int = MAX_SYNCHRONOUS_OUTPUT_BYTES) -> None:
        if limit < 0:
            raise ValueError("limit must be >= 0")
        self._limit = limit
        self._parts: list[str] = []
        self._size = 0
        self._truncated = False
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def write(self, text: str | bytes) -> None:
        """Retain as much of `text` as fits; record whether anything was left out."""
        if self._truncated:
            return
        if isinstance(text, bytes):
            text = self._decoder.decode(text)
        self._keep(text)

    def close(self) -> None:
        """Flush an incomplete trailing byte sequence (kept as U+FFFD if it fits)."""
        if not self._truncated:
            self._keep(self._decoder.decode(b"", final=True))

    def _keep(self, text: str) -> None:
        if not text:
            return
        data = text.encode("utf-8")
        room = self._limit - self._size
        if len(data) <= room:
            self._parts.append(text)
            self._size += len(data)
            return
        # Cut at the limit and drop the partial character the cut may leave.
        prefix = data[:room].decode("utf-8", errors="ignore")
        self._parts.append(prefix)
        self._size += len(prefix.encode("utf-8"))
        self._truncated = True

    @property
    def truncated(self) -> bool:
        """Whether any output was left out."""
        return self._truncated

    @property
    def size(self) -> int:
        """UTF-8 bytes retained."""
        return self._size

    def text(self) -> str:
        """The retained prefix."""
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def __str__(self) -> str:
        return self.text()
