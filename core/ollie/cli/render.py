"""Terminal rendering of engine events: assistant text as it streams, tool calls and results compact."""

from __future__ import annotations

import json
import os
import sys
from typing import TextIO

from ollie.cli.sanitize import StreamCleaner, printable

CALL_ARGS_MAX = 160
RESULT_LINES_MAX = 6
RESULT_CHARS_MAX = 600


def compact_args(content: str) -> str:
    """A tool call's arguments on one line, cut to a readable length."""
    try:
        text = json.dumps(json.loads(content), ensure_ascii=False, separators=(", ", ": "))
    except ValueError:
        text = " ".join(content.split())
    return text if len(text) <= CALL_ARGS_MAX else text[: CALL_ARGS_MAX - 1] + "…"


def compact_result(content: str) -> str:
    """The first lines of a tool result, with a note of how much was left out."""
    lines = content.rstrip("\n").splitlines() or [""]
    shown = lines[:RESULT_LINES_MAX]
    text = "\n".join(shown)
    if len(text) > RESULT_CHARS_MAX:
        text = text[: RESULT_CHARS_MAX - 1] + "…"
    if len(lines) > len(shown):
        text += f"\n… ({len(lines) - len(shown)} more lines)"
    return text


class Renderer:
    """Writes events to a terminal; remembers whether it is mid-line so blocks start on their own line."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None, *, color: bool | None = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        # NO_COLOR (no-color.org): any non-empty value turns ollie's own styling off.
        self.color = (self.out.isatty() and not os.environ.get("NO_COLOR")) if color is None else color
        self.errors: list[str] = []
        self._mid_line = False
        # Streamed text is cleaned as it comes, with a sequence cut between two deltas held until it is whole.
        self._cleaners = {"assistant": StreamCleaner(), "reasoning": StreamCleaner()}

    def _style(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def _block(self, text: str, *, stream: TextIO | None = None) -> None:
        self._flush_streams()
        self.end_line()
        target = stream or self.out
        target.write(text + "\n")
        target.flush()

    def _stream(self, content: str, shown: str) -> None:
        # A delta may stop mid-line; an empty one (or one all held back) says nothing about where the cursor is.
        if content:
            self.out.write(shown)
            self.out.flush()
            self._mid_line = not content.endswith("\n")

    def render(self, role: str, content: str, name: str = "") -> None:
        """Show one event; what the model or a tool wrote is stripped of control sequences before it is styled."""
        if role == "error":
            self.errors.append(content)  # as sent, to compare with the turn's result
        if role in self._cleaners:
            content = self._cleaners[role].feed(content)
            self._stream(content, content if role == "assistant" else self._style(content, "2"))
            return
        content, name = printable(content), printable(name)
        if role == "call":
            self._block(self._style(f"→ {name} {compact_args(content)}", "36"))
        elif role == "tool":
            body = compact_result(content).replace("\n", "\n  ")
            self._block(self._style(f"← {name}: {body}", "2"))
        elif role == "exec":
            self._block(content.rstrip("\n"))
        elif role == "info":
            self._block(self._style(content.rstrip("\n"), "33"))
        elif role == "error":
            self._block(self._style(f"error: {content}", "31"), stream=self.err)
        elif role == "limitretry":
            self._block(self._style(f"retrying: {content}", "33"), stream=self.err)
        elif role == "turn" and content != "start":
            self._flush_streams()
            self.end_line()

    def _flush_streams(self) -> None:
        for role, cleaner in self._cleaners.items():
            if held := cleaner.flush():
                self._stream(held, held if role == "assistant" else self._style(held, "2"))

    def end_line(self) -> None:
        """Finish a half-written line."""
        if self._mid_line:
            self.out.write("\n")
            self.out.flush()
            self._mid_line = False
