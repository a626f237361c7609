"""Terminal rendering of engine events: assistant text as it streams (markdown made readable on a terminal),
each step as a line (`▸ Edit calc.py`), its result's first lines under it (a failed one's last, where its error is)."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Sequence
from functools import partial
from textwrap import indent
from typing import TYPE_CHECKING, TextIO

from ollie.cli.markdown import MarkdownStream
from ollie.cli.sanitize import StreamCleaner, printable
from ollie.cli.wrap import WordWrap, wrapped
from ollie.escapes import clipped, escaped

if TYPE_CHECKING:
    from ollie.agent.events import TurnFiles
    from ollie.agent.steps import ToolState, ToolStep
    from ollie.agent.taskstate import PlanEntry
    from ollie.backend.types import Image

CALL_ARGS_MAX = 160
RESULT_LINES_MAX = 6
RESULT_CHARS_MAX = 600
CHANGED_NAMED_MAX = 3  # files a turn's summary names; more are counted
PLAN_SHOWN = 5  # steps of the plan shown as it changes; more are counted
_TRAILING_STYLE = re.compile(r"(?:\x1b\[[0-9;]*m)+\Z")
_LINE_STARTS = re.compile(r"\n(?=[^\n])")  # a line break with a line of text after it


def compact_args(content: str) -> str:
    """A tool call's arguments on one line, cut to a readable length."""
    try:
        text = json.dumps(json.loads(content), ensure_ascii=False, separators=(", ", ": "))
    except ValueError:
        text = " ".join(content.split())
    return clipped(text, CALL_ARGS_MAX)


def compact_result(content: str, *, failed: bool = False) -> str:
    """The first lines of a tool result, with a note of how much was left out; of a failed one, its first line and its
    last ones (where its error is: a traceback's last line)."""
    lines = content.rstrip("\n").splitlines() or [""]
    more = len(lines) - RESULT_LINES_MAX
    note = f"… ({more} more line{'s' if more > 1 else ''})"
    if failed and more > 0:
        tail = "\n".join(lines[1 - RESULT_LINES_MAX:])
        return "\n".join([lines[0], note, tail if len(tail) <= RESULT_CHARS_MAX else "…" + tail[1 - RESULT_CHARS_MAX:]])
    text = clipped("\n".join(lines[:RESULT_LINES_MAX]), RESULT_CHARS_MAX)
    return text + (f"\n{note}" if more > 0 else "")


def _columns(out: TextIO) -> int:
    """The width of the terminal `out` writes to (80 when it cannot say)."""
    try:
        return os.get_terminal_size(out.fileno()).columns or 80
    except (OSError, ValueError):
        return 80


def fitted(text: str, out: TextIO) -> str:
    """`text` broken between words at the width of the terminal `out` is, as it is when `out` is none: a terminal
    breaks a notice wherever its row is full, mid-word (`/rewind undo t` / `o undo`)."""
    return wrapped(text, _columns(out)) if out.isatty() else text


def image_lines(images: Sequence[Image]) -> list[str]:
    """A line per image (a prompt's, a tool result's), named as Neovim's chat names it: type and size."""
    return [f"[image: {i.mime}, {max(1, int(i.size / 1024 + 0.5))} KB]" for i in images]


def changes_line(changes: TurnFiles) -> str:
    """A turn's changed files in one line: how many, the first few with their lines added and removed."""
    # A name's line break shown as `\n`: kept, a file the model named started lines as ollie's own on stderr.
    named = [f"{escaped(f.path, keep='')} ({f.status})" if f.status != "modified" else
             f"{escaped(f.path, keep='')} (+{f.added} -{f.removed})" for f in changes.files[:CHANGED_NAMED_MAX]]
    if changes.count > len(named):
        named.append(f"{changes.count - len(named)} more")
    return f"{changes.count} file{'' if changes.count == 1 else 's'} changed: {', '.join(named)}"


class Renderer:
    """Writes events to a terminal; remembers whether it is mid-line so blocks start on their own line."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None, *, color: bool | None = None,
                 review_hint: str = "", notes: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        # Where ollie's notes (a warning, a server it waits for), the model's thinking and its steps with their results
        # go: `ollie -p` gives stderr, its stdout being the answer a script reads (`ollie -p "review" > review.md`).
        self.notes = notes or self.out
        # NO_COLOR (no-color.org): any non-empty value turns ollie's own styling off.
        self.color = (self.out.isatty() and not os.environ.get("NO_COLOR")) if color is None else color
        self.errors: list[str] = []
        # Said after a turn's changed files: how this front end reviews and undoes them.
        self.review_hint = review_hint
        self._mid_line: TextIO | None = None  # the stream whose last line is unfinished
        # Streamed text is cleaned as it comes, with a sequence cut between two deltas held until it is whole.
        self._cleaners = {"assistant": StreamCleaner(), "reasoning": StreamCleaner()}
        # On a terminal the answer's markdown is shown, not its markers; piped (`ollie -p > file`) it stays as written.
        self._markdown = MarkdownStream(styled=self.color) if self.out.isatty() else None
        # On a terminal streamed text breaks between words, not where the line is full.
        self._wrap = WordWrap(partial(_columns, self.out)) if self.out.isatty() else None
        # An answer piped (`ollie -p > answer.md`) is held until a block or the turn's end: what an attempt streamed
        # before it failed and was retried (limitretry) is no answer, and a pipe takes nothing back (a terminal shows
        # the retry as it happens; the interactive prompt streams to a pipe as it comes).
        self._held: list[str] | None = [] if self.notes is not self.out and not self.out.isatty() else None

    def _style(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def _block(self, text: str, *, stream: TextIO | None = None, verbatim: bool = False) -> None:
        """`text` on lines of its own; a notice (not `verbatim`: a step's title, its output) broken between words."""
        self._flush_streams()
        self.end_line()
        target = stream or self.out
        target.write((text if verbatim else fitted(text, target)) + "\n")
        target.flush()

    def _stream(self, shown: str) -> None:
        if self._held is not None:
            self._held.append(shown)
            return
        self._write(self._wrap.feed(shown) if self._wrap is not None else shown)

    def _streamed(self, role: str, text: str) -> None:
        if role == "reasoning" and self.notes is not self.out:
            shown = self._shown(role, text)
            if not self.color:  # unstyled, each line indented as a step's result is: none reads as one of ollie's own
                shown = ("  " if self._mid_line is not self.notes and shown[:1] not in ("", "\n") else "") \
                    + _LINE_STARTS.sub("\n  ", shown)
            self._write(shown, self.notes)
        else:
            self._stream(self._shown(role, text))

    def _write(self, shown: str, to: TextIO | None = None) -> None:
        target = to or self.out
        # A delta may stop mid-line; an empty one (or one all held back) says nothing about where the cursor is.
        if visible := _TRAILING_STYLE.sub("", shown):
            if self._mid_line not in (None, target):  # thinking on stderr, then the answer: both may be one terminal
                self._finish_line()
            self._mid_line = None if visible.endswith("\n") else target
        if shown:
            target.write(shown)
            target.flush()

    def _shown(self, role: str, text: str) -> str:
        if role == "reasoning":
            return self._style(text, "2")
        return self._markdown.feed(text) if self._markdown is not None else text

    def render(self, role: str, content: str, name: str = "", *, steps: Sequence[ToolStep | ToolState] = (),
               failed: bool = False, changes: TurnFiles | None = None, images: Sequence[Image] = ()) -> None:
        """Show one event, the model's or a tool's text stripped of control sequences before it is styled."""
        if role == "error":
            self.errors.append(content)  # as sent, to compare with the turn's result
        if role in self._cleaners:
            if role == "reasoning" and self._markdown is not None:
                self._stream(self._markdown.flush())  # thinking after some answer: the answer's styles end first
            self._streamed(role, self._cleaners[role].feed(content))
            return
        content, name = printable(content), printable(name)
        if role == "call":
            lines = [f"▸ {printable(s.title)}" for s in steps] or [f"▸ {name} {compact_args(content)}"]
            self._block(self._style("\n".join(lines), "36"), stream=self.notes, verbatim=True)
        elif role == "user":  # a prompt this terminal did not send (a queued one, a postTurn hook's): on stderr as typed
            self._block("\n".join([f"> {content}", *image_lines(images)]), stream=self.err)
        elif role == "tool":
            if steps and not failed and all(s.plan for s in steps):  # the checklist after the round shows it
                return
            # A line per image the tool returned (the model was shown it).
            body = "\n".join([("✗ " if failed else "") + compact_result(content, failed=failed), *image_lines(images)])
            body = indent(body, "  ", lambda line: True)
            self._block(self._style(body, "31" if failed else "2"), stream=self.notes, verbatim=True)
        elif role == "exec":
            self._block(content.rstrip("\n"), verbatim=True)
        elif role == "info":
            self._block(self._style(content.rstrip("\n"), "33"), stream=self.notes)
        elif role == "error":
            self._block(self._style(f"error: {content}", "31"), stream=self.err)
        elif role == "limitretry":
            if self._held is not None:
                self._held.clear()
                self._cleaners = {name: StreamCleaner() for name in self._cleaners}  # a cut sequence of its too
            self._block(self._style(f"retrying: {content}", "33"), stream=self.err)
        elif role == "turn" and content != "start":
            self._flush_streams()
            self.end_line()
            # Nothing to review or undo: dim, said once for turns that give the same reason (each in the home directory)
            if changes is not None and changes.unknown and not changes.again:
                self._block(self._style(f"Changed files: not known ({changes.unknown})", "2"), stream=self.err)
            elif changes is not None and changes.count > 0:  # on stderr: with -p, stdout is the answer alone
                self._block(self._style(f"{changes_line(changes)}{self.review_hint}", "33"), stream=self.err)

    def plan(self, plan: list[PlanEntry]) -> None:
        """The agent's task plan as it changed: its steps from the last one done, PLAN_SHOWN at most, the rest counted."""
        from ollie.agent.taskstate import plan_counts, plan_lines  # loaded with the plan

        if not plan:
            self._block(self._style("plan: none now", "2"), stream=self.notes)
            return
        now = next((n for n, e in enumerate(plan) if e.status != "completed"), len(plan))
        start = max(0, min(now - 1, len(plan) - PLAN_SHOWN))
        lines = [f"  {line}" for line in plan_lines(plan[start:start + PLAN_SHOWN])]
        if more := plan_counts(plan[start + len(lines):])[1]:  # in steps: past 100 the plan summarises some
            lines.append(f"  … {more} more (/plan shows them all)")
        before = plan_counts(plan[:start])[1]
        head = "plan ({} of {} done):".format(*plan_counts(plan))
        self._block(self._style("\n".join([head, *([f"  … {before} done"] if start else []), *lines]), "35"),
                    stream=self.notes)

    def _flush_streams(self) -> None:
        for role, cleaner in self._cleaners.items():
            if held := cleaner.flush():
                self._streamed(role, held)
        if self._markdown is not None:
            self._stream(self._markdown.flush())
        if self._wrap is not None:
            self._write(self._wrap.flush())

    def end_line(self) -> None:
        """Finish a half-written line (writing what is held first)."""
        if self._held:
            self._write("".join(self._held))
            self._held.clear()
        if self._wrap is not None:
            self._write(self._wrap.flush())
            self._wrap.start_line()
        self._finish_line()

    def _finish_line(self) -> None:
        if self._mid_line is not None:
            self._mid_line.write("\n")
            self._mid_line.flush()
            self._mid_line = None
