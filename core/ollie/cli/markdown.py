"""Streamed markdown made readable in a terminal: headings and **bold** styled, `code` coloured, fences dropped.

Minimal on purpose: the markers a model uses most, recognised as the text streams in (a line's start is held until
its kind is known); with NO_COLOR the markers are still removed. The input is already `printable`.
"""

from __future__ import annotations

import re

BOLD, CODE, HEADING, FENCED, RESET = "1", "36", "1;4", "2", "0"
# What a line may start with that changes how it is shown; held until one of these is decided.
_LINE_START = re.compile(r" {0,3}(#{1,6} |```|~~~|[-*+] )")
_MAYBE_START = re.compile(r" {0,3}(#{0,6}|`{0,2}|~{0,2}|[-*+])\Z")


class MarkdownStream:
    """Feed it the reply's pieces as they come; it returns what can be shown so far."""

    def __init__(self, *, styled: bool) -> None:
        self.styled = styled
        self._held = ""  # the start of a line not decided yet, or a marker cut between two pieces
        self._line_start = True
        self._fenced = False  # inside a ``` block: shown as it is, dim
        self._skip_line = False  # the rest of a fence line (its language tag) is not shown
        self._heading = False
        self._bold = False
        self._code = False

    def _sgr(self, code: str) -> str:
        return f"\x1b[{code}m" if self.styled else ""

    def _restyle(self) -> str:
        """The escapes for the styles now in force (after a reset)."""
        codes = [c for c, on in ((HEADING, self._heading), (BOLD, self._bold), (CODE, self._code),
                                 (FENCED, self._fenced)) if on]
        return self._sgr(RESET) + "".join(self._sgr(c) for c in codes)

    def feed(self, text: str) -> str:
        """The displayable form of what has arrived, less a line start or marker still undecided."""
        text, self._held = self._held + text, ""
        out: list[str] = []
        i = 0
        while i < len(text):
            if self._skip_line:
                end = text.find("\n", i)
                if end < 0:
                    return "".join(out)
                self._skip_line, self._line_start, i = False, True, end + 1
                continue
            if self._line_start:
                rest = text[i:]
                newline = rest.find("\n")
                head = rest if newline < 0 else rest[:newline]
                if newline < 0 and _MAYBE_START.fullmatch(head):
                    self._held = rest  # could still become a heading, a fence or an item
                    return "".join(out)
                i = self._start_line(head, i, out)
                continue
            char = text[i]
            if char == "\n":
                out.append(self._end_line())
                i += 1
                continue
            if self._fenced:
                out.append(char)
                i += 1
                continue
            if char == "`":
                self._code = not self._code
                out.append(self._restyle())
                i += 1
                continue
            if char == "*" and not self._code:
                if i + 1 == len(text):
                    self._held = "*"  # one star, or the first of two: the next piece says
                    return "".join(out)
                if text[i + 1] == "*":
                    self._bold = not self._bold
                    out.append(self._restyle())
                    i += 2
                    continue
            out.append(char)
            i += 1
        return "".join(out)

    def _start_line(self, head: str, i: int, out: list[str]) -> int:
        """Decide how the line starting at `i` shows; the index to go on from."""
        self._line_start = False
        match = _LINE_START.match(head)
        marker = match.group(1) if match else ""
        if marker in ("```", "~~~"):
            self._fenced = not self._fenced
            out.append(self._restyle())
            self._skip_line = True
            return i + len(match.group(0)) if match else i
        if self._fenced:
            out.append("    ")  # code stands apart from the prose around it
            return i
        if not match:
            return i
        if marker.startswith("#"):
            self._heading = True
            out.append(self._restyle())
        else:
            out.append(match.group(0)[: -len(marker)] + "• ")
        return i + len(match.group(0))

    def _end_line(self) -> str:
        """A newline: a heading (and any style left open by a missing marker) ends with its line."""
        self._line_start = True
        if self._heading or self._bold or self._code:
            self._heading = self._bold = self._code = False
            return self._restyle() + "\n"
        return "\n"

    def flush(self) -> str:
        """What is still held (the reply ended), with the styles closed."""
        held, self._held = self._held, ""
        tail = held if not held.lstrip().startswith(("```", "~~~")) else ""
        open_style = self._heading or self._bold or self._code or self._fenced
        self._heading = self._bold = self._code = self._fenced = self._skip_line = False
        self._line_start = True
        return tail + (self._sgr(RESET) if open_style else "")
