"""Where a document's lines start, found without splitting its text: a request over a 50 MB buffer costs its range.

Lines end at "\\n" (a "\\r\\n" line keeps its "\\r"), as editors count them; `str.splitlines` also broke at form feeds.
"""

from __future__ import annotations

import weakref
from array import array
from bisect import bisect_left
from itertools import accumulate, repeat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

# Newlines are counted per CHUNK characters (in C, ~20 ms for 50 MB); a line's start is then at most CHUNK
# `str.find`s away.
CHUNK = 4096


class LineIndex:
    """The newline counts of one text, per CHUNK: any line's start without a pass over the text."""

    def __init__(self, text: str) -> None:
        self.text = text
        ends = range(CHUNK, len(text) + CHUNK, CHUNK)
        # _upto[i]: the newlines in text[: (i + 1) * CHUNK]
        self._upto = array("q", accumulate(map(text.count, repeat("\n"), range(0, len(text), CHUNK), ends)))

    def start(self, line: int) -> int | None:
        """The offset where 0-based `line` starts; None past the text's last line."""
        if line <= 0:
            return 0
        chunk = bisect_left(self._upto, line)  # the chunk holding the line-th newline
        if chunk == len(self._upto):
            return None
        pos = chunk * CHUNK
        for _ in range(line - (self._upto[chunk - 1] if chunk else 0)):
            pos = self.text.find("\n", pos) + 1
        return pos

    def span(self, first: int, last: int) -> tuple[int, int] | None:
        """(start, end) of lines `first..last`, less their last newline; None past the text's end.

        A final newline ends the last line: no empty line follows it (as `str.splitlines` counts)."""
        start = self.start(first)
        if start is None or start == len(self.text):
            return None
        after = self.start(last + 1)
        end = len(self.text) - self.text.endswith("\n") if after is None or after == len(self.text) else after - 1
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
