"""Where a document's lines start, found without splitting its text: a request over a 50 MB buffer costs its range.

Lines end at "\\r\\n", "\\r" or "\\n", as LSP counts them (`str.splitlines`, which pygls uses, also breaks at
form feeds and U+2028).
"""

from __future__ import annotations

import re
import weakref
from array import array
from bisect import bisect_left
from itertools import accumulate, repeat
from typing import TYPE_CHECKING

from lsprotocol.types import TextDocumentContentChangePartial

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

# Line ends are counted per CHUNK characters (in C, ~20 ms for 50 MB); a line's start is then at most CHUNK line
# ends away.
CHUNK = 4096
BREAK = re.compile(r"\r\n?|\n")


def line_ends(text: str, start: int, end: int) -> int:
    """How many line ends finish within text[start:end] (a "\\r\\n" split by `end` counts on its "\\n"'s side)."""
    return text.count("\n", start, end) + text.count("\r", start, end) - text.count("\r\n", start, end + 1)


class LineIndex:
    """The line ends of one text, counted per CHUNK: any line's start without a pass over the text."""

    def __init__(self, text: str) -> None:
        self.text = text
        starts, ends = range(0, len(text), CHUNK), range(CHUNK, len(text) + CHUNK, CHUNK)
        # Without a lone "\r" (all but old Mac texts), every line ends in "\n": one count a chunk.
        lone_cr = "\r" in text and text.count("\r") != text.count("\r\n")
        counts = map(line_ends, repeat(text), starts, ends) if lone_cr else map(text.count, repeat("\n"), starts, ends)
        # _upto[i]: the line ends finishing within text[: (i + 1) * CHUNK]
        self._upto = array("q", accumulate(counts))

    def start(self, line: int) -> int | None:
        """The offset where 0-based `line` starts; None past the text's last line end."""
        if line <= 0:
            return 0
        chunk = bisect_left(self._upto, line)  # the chunk where the line-th line end finishes
        if chunk == len(self._upto):
            return None
        pos = chunk * CHUNK
        for _ in range(line - (self._upto[chunk - 1] if chunk else 0)):
            found = BREAK.search(self.text, pos)
            assert found is not None  # counted above
            pos = found.end()
        return pos

    def span(self, first: int, last: int) -> tuple[int, int] | None:
        """(start, end) of lines `first..last`, less their last line end; None past the text's end.

        A final line end ends the last line: no empty line follows it (as `str.splitlines` counts)."""
        start = self.start(first)
        if start is None or start == len(self.text):
            return None
        after = self.start(last + 1)
        end = len(self.text) if after is None else after
        # Less the line end before `end` (the text's final one too).
        end -= 2 if self.text.startswith("\r\n", end - 2) else 1 if self.text.endswith(("\r", "\n"), 0, end) else 0
        return start, max(start, end)


# One index per open document, dropped with it; rebuilt when its text changed.
_indexes: weakref.WeakKeyDictionary[TextDocument, LineIndex] = weakref.WeakKeyDictionary()


def index_of(doc: TextDocument) -> LineIndex:
    """`doc`'s line index, kept while its text is the same."""
    text = doc.source
    index = _indexes.get(doc)
    if index is None or index.text is not text:
        index = _indexes[doc] = LineIndex(text)
    return index


# Characters UTF-16 takes two code units for.
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def code_points(text: str, start: int, end: int, units: int, encoding: str | None) -> int:
    """How many characters of text[start:end] (a line) lie within its first `units` code units of `encoding`
    (UTF-16 unless named), at most all; counted in C (pygls' loop over a minified file's one 20 MB line took
    seconds)."""
    end = min(end, start + max(0, units))  # no character takes less than a unit
    if text.isascii() or encoding == "utf-32":
        return end - start
    if encoding == "utf-8":
        return len(text[start:end].encode("utf-8", "surrogatepass")[:units].decode("utf-8", "ignore"))
    fits = units
    for astral in _ASTRAL.finditer(text, start, end):  # each takes one unit more: one character fewer fits
        if astral.start() - start >= fits:
            break
        fits -= 1
    return min(fits, end - start)


def offset_at(doc: TextDocument, line: int, character: int) -> int:
    """The offset in `doc` of the client's position (its units), clamped to the line and the text: pygls'
    `offset_at_position` split the whole text into lines twice on the event loop (0.75 s for 20 MB)."""
    index = index_of(doc)
    text, start = index.text, index.start(line)
    if start is None:
        return len(text)
    end = min(len(text), start + max(0, character))  # where a line end is looked for: not a whole minified file
    ends = [found for found in (text.find("\n", start, end), text.find("\r", start, end)) if found >= 0]
    return start + code_points(text, start, min(ends, default=end), character, doc.position_codec.encoding)


def changed(doc: TextDocument, change: TextDocumentContentChangePartial) -> str:
    """`doc`'s text with the client's incremental change made, at LSP's lines and the cost of one copy."""
    first, last = change.range.start, change.range.end
    start = offset_at(doc, first.line, first.character)
    end = start if last == first else offset_at(doc, last.line, last.character)  # typing: one position
    text = index_of(doc).text
    return "".join((text[:start], change.text, text[max(start, end) :]))
