"""An open document's text as chunks that know their line ends: a keystroke or a request over a 50 MB buffer costs
its chunk and its range, never a copy of the text or a pass over it.

Lines end at "\\r\\n", "\\r" or "\\n", as LSP counts them (`str.splitlines`, which pygls uses, also breaks at
form feeds and U+2028).
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from itertools import accumulate, islice

from lsprotocol.types import TextDocumentContentChangePartial
from pygls.workspace import TextDocument

# An edit copies its chunk (up to 2 * CHUNK characters) and sums the chunk list (1/CHUNK of the text); a line's
# start is found among at most 2 * CHUNK line ends.
CHUNK = 8192
BREAK = re.compile(r"\r\n?|\n")


def line_ends(text: str, start: int, end: int) -> int:
    """How many line ends finish within text[start:end] (a "\\r\\n" split by `end` counts on its "\\n"'s side)."""
    return text.count("\n", start, end) + text.count("\r", start, end) - text.count("\r\n", start, end + 1)


def _cut(text: str) -> list[str]:
    """`text` in one or more chunks of CHUNK to 2 * CHUNK characters (the last shorter); a "\\r\\n" is never cut,
    so each chunk counts its own line ends."""
    chunks, start = [], 0
    while len(text) - start > 2 * CHUNK:
        end = start + CHUNK + text.startswith("\r\n", start + CHUNK - 1)
        chunks.append(text[start:end])
        start = end
    chunks.append(text[start:])
    return chunks


def _ends(chunk: str) -> int:
    """`chunk`'s line ends: one count in C where no "\\r" is (all but Windows and old Mac texts)."""
    return line_ends(chunk, 0, len(chunk)) if "\r" in chunk else chunk.count("\n")


class Text:
    """A text as chunks with their line ends counted: an edit costs its chunk, a line's start a bisect, and the
    whole text is joined only when asked."""

    def __init__(self, text: str) -> None:
        self._chunks = _cut(text)
        self._ends = list(map(_ends, self._chunks))
        self._joined: str | None = None  # not `text`: an open document's text is held once, as its chunks
        self._sums: tuple[array[int], array[int]] | None = None  # characters, line ends up to each chunk's end

    @property
    def text(self) -> str:
        """The whole text (joined once after each edit)."""
        if self._joined is None:
            self._joined = "".join(self._chunks)
        return self._joined

    def _prefix(self) -> tuple[array[int], array[int]]:
        if self._sums is None:
            self._sums = array("q", accumulate(map(len, self._chunks))), array("q", accumulate(self._ends))
        return self._sums

    def __len__(self) -> int:
        return self._prefix()[0][-1]

    def _chunk_at(self, offset: int, *, after: bool) -> tuple[int, int]:
        """(index, start offset) of the chunk holding `offset` (the first one starting there when `after`)."""
        chars = self._prefix()[0]
        i = min(len(chars) - 1, (bisect_right if after else bisect_left)(chars, offset))
        return i, chars[i - 1] if i else 0

    def start(self, line: int) -> int | None:
        """The offset where 0-based `line` starts; None past the text's last line end."""
        if line <= 0:
            return 0
        chars, ends = self._prefix()
        i = bisect_left(ends, line)  # the chunk where the line-th line end finishes
        if i == len(ends):
            return None
        found = next(islice(BREAK.finditer(self._chunks[i]), line - (ends[i - 1] if i else 0) - 1, None))
        return (chars[i - 1] if i else 0) + found.end()

    def slice(self, start: int, end: int) -> str:
        """text[start:end], joined from its chunks alone."""
        if self._joined is not None or start >= end:
            return self.text[start:end]
        (i, base), (j, _) = self._chunk_at(start, after=True), self._chunk_at(end, after=False)
        return "".join(self._chunks[i : j + 1])[start - base : end - base]

    def isascii(self, start: int, end: int) -> bool:
        """Whether text[start:end] is all ASCII, told by its chunks' own flags (a minified line is not copied)."""
        (i, _), (j, _) = self._chunk_at(start, after=True), self._chunk_at(end, after=False)
        return all(chunk.isascii() for chunk in self._chunks[i : j + 1])

    def replace(self, start: int, end: int, new: str) -> None:
        """Make text[start:end] `new`, re-cutting only the chunks it touches."""
        (i, base), (j, end_base) = self._chunk_at(start, after=True), self._chunk_at(end, after=False)
        j = max(i, j)
        end_base = max(base, end_base)
        region = self._chunks[i][: start - base] + new + self._chunks[j][end - end_base :]
        # A "\r" at a cut may now meet a "\n" across it: the neighbour joins the re-cut chunks.
        if i and self._chunks[i - 1].endswith("\r"):
            i -= 1
            region = self._chunks[i] + region
        if j + 1 < len(self._chunks) and region.endswith("\r"):
            j += 1
            region += self._chunks[j]
        # No empty chunk is kept between others: a "\r" ending the one before it would meet the "\n" starting the one
        # after it, a line end each chunk counts once (two lines where the client has one).
        chunks = _cut(region) if region or len(self._chunks) == j + 1 - i else []
        self._chunks[i : j + 1] = chunks
        self._ends[i : j + 1] = list(map(_ends, chunks))
        self._joined = self._sums = None

    def span(self, first: int, last: int) -> tuple[int, int] | None:
        """(start, end) of lines `first..last`, less their last line end; None past the text's end.

        A final line end ends the last line: no empty line follows it (as `str.splitlines` counts)."""
        start = self.start(first)
        if start is None or start == len(self):
            return None
        after = self.start(last + 1)
        end = len(self) if after is None else after
        # Less the line end before `end` (the text's final one too).
        tail = self.slice(max(start, end - 2), end)
        end -= 2 if tail.endswith("\r\n") else 1 if tail.endswith(("\r", "\n")) else 0
        return start, max(start, end)


class ChunkedDocument(TextDocument):
    """A pygls document whose text is a `Text`: pygls reads and sets `_source` as before (a whole change too)."""

    chunks: Text

    @property
    def _source(self) -> str:
        return self.chunks.text

    @_source.setter
    def _source(self, text: str | None) -> None:
        self.chunks = Text(text or "")


def text_of(doc: TextDocument) -> Text:
    """`doc`'s text as chunks (counted afresh for a document pygls made)."""
    return doc.chunks if isinstance(doc, ChunkedDocument) else Text(doc.source)


# Characters UTF-16 takes two code units for.
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def code_points(line: str, units: int, encoding: str | None) -> int:
    """How many characters of `line` (no longer than `units`) lie within its first `units` code units of
    `encoding` (UTF-8, else UTF-16); counted in C (pygls' loop over a minified file's one 20 MB line took seconds)."""
    if encoding == "utf-8":
        return len(line.encode("utf-8", "surrogatepass")[:units].decode("utf-8", "ignore"))
    fits = units
    for astral in _ASTRAL.finditer(line):  # each takes one unit more: one character fewer fits
        if astral.start() >= fits:
            break
        fits -= 1
    return min(fits, len(line))


def offset_at(doc: TextDocument, line: int, character: int) -> int:
    """The offset in `doc` of the client's position (its units), clamped to the line and the text: pygls'
    `offset_at_position` split the whole text into lines twice on the event loop (0.75 s for 20 MB)."""
    text, encoding = text_of(doc), doc.position_codec.encoding
    span = text.span(line, line)
    if span is None:
        return len(text)
    start, end = span[0], min(span[1], span[0] + max(0, character))  # the line's units: at most one per character
    if encoding == "utf-32" or text.isascii(start, end):
        return end
    return start + code_points(text.slice(start, end), character, encoding)


def apply_change(doc: ChunkedDocument, change: TextDocumentContentChangePartial) -> None:
    """Make the client's incremental change in `doc`, at LSP's lines and the cost of the chunks it touches."""
    first, last = change.range.start, change.range.end
    start = offset_at(doc, first.line, first.character)
    end = start if last == first else offset_at(doc, last.line, last.character)  # typing: one position
    doc.chunks.replace(start, max(start, end), change.text)
