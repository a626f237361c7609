"""Streamed text broken between words at the terminal's width: a terminal breaks a long line wherever it is full,
in the middle of a word, and a reply's paragraphs are one line each."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

# An escape sequence (ollie's own styles: the text was made printable before) whole, or one character.
_PIECES = re.compile(r"\x1b\[[0-9;]*m|.|\n", re.S)
# A line indented this much is code (the markdown stream shows fenced code so): it is never broken, as a break in it
# would be copied with the code.
CODE_INDENT = 4


def _columns(char: str) -> int:
    """The cells a character takes: two for wide (CJK, most emoji), none for a combining mark."""
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


class WordWrap:
    """Feed it what is about to be shown; it returns it with a newline before each word that would cross `width()`.

    The word being written is held until it ends (a space, a newline, `flush`); a word longer than a line is let
    through as it is, for the terminal to break.
    """

    def __init__(self, width: Callable[[], int]) -> None:
        self._width = width
        self._word: list[str] = []
        self._word_cells = 0
        self.start_line()

    def start_line(self) -> None:
        """What comes next starts a line (something else ended the one this text was on)."""
        self.column = 0  # where the cursor is on its line, as far as this text goes
        self._indent = 0  # the spaces the line starts with, so far
        self._spaces = 0  # those after the last word, shown only before a word on this line (none ends a line)
        self._verbatim = False  # a code line: shown as it is

    def feed(self, text: str) -> str:
        """`text` as far as it can be shown now, with the breaks it needs."""
        width = self._width()
        out: list[str] = []
        for piece in _PIECES.findall(text):
            if piece == "\n":
                out.append(self._placed(width))
                out.append("\n")
                self.start_line()
            elif self._verbatim or (piece[0] == "\x1b" and not self._word and not self._spaces):  # no cells
                out.append(piece)
            elif piece == " " and self.column == self._indent and not self._word:  # still the line's indentation
                self._indent += 1
                self._verbatim = self._indent >= CODE_INDENT
                out.append(" ")
                self.column += 1
            elif piece == " ":
                out.append(self._placed(width))
                self._spaces += 1
            else:
                self._word.append(piece)
                self._word_cells += 0 if piece[0] == "\x1b" else _columns(piece)
                if self._word_cells >= width:  # longer than a line: no break between words can help
                    out.append(self._placed(width))
        return "".join(out)

    def flush(self) -> str:
        """The word held back (the text stopped, or something else is shown next)."""
        return self._placed(self._width())

    def _placed(self, width: int) -> str:
        """The held word, after a newline when it would not fit on this line."""
        if not self._word:
            return ""
        brk = self.column and self.column + self._spaces + self._word_cells > width
        word = ("\n" if brk else " " * self._spaces) + "".join(self._word)
        self.column = (0 if brk else self.column + self._spaces) + self._word_cells
        self._spaces = 0
        self._word, self._word_cells = [], 0
        return word


def wrapped(text: str, columns: int) -> str:
    """`text` (whole) with a line break before each word that would cross `columns`."""
    wrap = WordWrap(lambda: columns)
    return wrap.feed(text) + wrap.flush()
