"""The terminal's input, line by line: a question is answered only by what was typed after it was shown."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Collection, Iterator

from ollie.cli.sanitize import printable

# Each line with the time it was read; None at the end of input.
Line = tuple[float, str | None]
# A paste reaches the terminal at once: lines following one within this are the same prompt's (no one types Enter
# twice this fast; a paste over a slow link may come in pieces this far apart).
PASTE_GAP_S = 0.05


class InputLines:
    """stdin read in a daemon thread (input() cannot be interrupted from asyncio), each line stamped when read."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Line] = asyncio.Queue()
        self._ahead: collections.deque[Line] = collections.deque()  # prompts typed before a question, for `next`
        self._ended = False
        self._withdrawn = False  # a question went away unanswered: the next line may be its late answer
        self._quiet = False  # the terminal's echo is off while a turn runs (`quiet`)
        self._unfinished = ""  # a line's start read without its Enter (`_got`)
        self._unseen = ""  # the part of it typed during a turn (not echoed), for the prompt waiting for the rest
        self._pushed = False  # a turn's end pushed its unfinished line through (`_push_unfinished`)
        self._prompting = False  # `next` waits at a prompt with nothing typed ahead: `_unseen` shows there
        self._held = ""  # typed ahead of a stop: sent on a bare Enter at the next prompt (`hold`)
        self._in_hand: float | None = None  # when `_read` read what it has not handed to the loop yet
        self._handed = asyncio.Event()

    def start(self) -> None:
        """Start reading stdin (on the running loop)."""
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._read, args=(loop,), name="ollie-stdin", daemon=True).start()

    def end(self) -> None:
        """End the input as Ctrl-D would (the prompt loop stops)."""
        self._queue.put_nowait((time.monotonic(), None))

    async def next(self, prompted_at: float = 0.0) -> str | None:
        """The next line typed (lines typed ahead included); None once the input ended. A line a terminal read before
        `prompted_at` (typed during the turn, not echoed: `quiet`) is shown after the prompt sign."""
        if self._ended:
            return None
        held, self._held = self._held, ""
        self._prompting = not self._ahead and self._queue.empty()
        self._show_unseen()
        try:
            read_at, line = self._ahead.popleft() if self._ahead else await self._queue.get()
        finally:
            self._prompting = False
        self._ended = line is None
        if line is not None and read_at < prompted_at and sys.stdin.isatty():
            print(printable(line), file=sys.stderr, flush=True)
        if held and line is not None and not line.strip():  # what the bare Enter sent, shown as sent: the prompt is bare
            print(printable(f"> {held}"), file=sys.stderr, flush=True)
            return held
        return line

    async def hold(self) -> str:
        """After a stop: the lines typed ahead, as one prompt the next `next` returns only for a bare Enter (who
        stopped the turn decides again); what is held."""
        stopped = time.monotonic()
        while (read_at := self._in_hand) is not None and read_at < stopped:  # a paste's gap from being handed over
            self._handed.clear()
            await self._handed.wait()
        while not self._queue.empty():
            self._ahead.append(self._queue.get_nowait())
        while self._ahead and self._ahead[0][1] is not None:
            self._held = "\n".join(filter(None, (self._held, self._ahead.popleft()[1])))
        return self._held

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """While a turn runs: what is typed is not echoed between its answer's words (a line typed meanwhile is shown
        at the next prompt, by `next`); a question asked meanwhile echoes its answer (`answer`)."""
        self._quiet = _echo(False)
        loop = asyncio.get_running_loop()
        ending = _ENDING if self._quiet else ()
        for signum in ending:  # ended meanwhile, the shell gets its terminal back echoing what is typed
            loop.add_signal_handler(signum, _end_echoing, loop, signum)
        try:
            yield
        finally:
            if self._quiet:  # (before the signals' defaults are back: one meanwhile left the shell without line mode)
                self._pushed = self._in_hand is None and _push_unfinished()  # `_read` waits on the terminal
                _echo(True)
            for signum in ending:
                loop.remove_signal_handler(signum)
            self._quiet = False

    def before_question(self) -> float:
        """Call just before a question is printed (not after: an answer typed at once would go); for `answer`."""
        self._unfinished = self._unseen = ""  # as the terminal's unread part is dropped below
        if self._quiet:  # before it shows: an answer typed at once is echoed too (`answer` keeps it on)
            _echo(True)
        if sys.stdin.isatty():
            with contextlib.suppress(OSError, ValueError):
                import termios

                termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
        return time.monotonic()

    def withdrawn(self) -> None:
        """A question shown went away unanswered (its step ended, the turn stopped): see `late_answer`."""
        self._withdrawn = True

    def late_answer(self, line: str, answers: Collection[str]) -> bool:
        """Whether `line`, the first read after a withdrawn question, is one of its `answers` (a late reply to it,
        not a prompt for the model)."""
        late, self._withdrawn = self._withdrawn, False
        return late and line.strip().lower() in answers

    async def answer(self, since: float, answers: Collection[str] = ()) -> str | None:
        """The first line read after the question shown at `since` (nothing typed before it); None at EOF. A line typed
        before it is no answer: one of `answers` is dropped, any other (a prompt typed during the turn) is `next`'s."""
        self._withdrawn = False  # a line typed from now on answers this question, not a withdrawn one
        if self._quiet:
            _echo(True)  # the answer is typed as usual
        try:
            return await self._answer(since, answers)
        finally:
            if self._quiet:
                _echo(False)

    async def _answer(self, since: float, answers: Collection[str]) -> str | None:
        told = False
        while not self._ended:
            read_at, line = await self._queue.get()
            self._ended = line is None
            if read_at >= since or line is None:
                return line
            if line.strip().lower() not in answers:
                self._ahead.append((read_at, line))
            elif not told:
                print("(what was typed before this question does not answer it) ", end="", file=sys.stderr,
                      flush=True)
                told = True
        return None

    def _read(self, loop: asyncio.AbstractEventLoop) -> None:
        pasted = sys.stdin.isatty()  # a pipe's lines are its prompts, one each
        while True:
            line = _readline()
            # Not after the wait below: a line typed before a question never answers it.
            self._in_hand = read_at = time.monotonic()
            # The lines a paste brought along are read with its first: a multi-line prompt goes as one.
            while pasted and line.endswith("\n") and _more_within(PASTE_GAP_S) and (more := _readline()):
                line += more
            try:
                loop.call_soon_threadsafe(self._got, read_at, line)
            except RuntimeError:  # the loop closed: nobody reads any more
                return
            if not line:
                return

    def _got(self, read_at: float, text: str) -> None:
        """On the loop, what `_read` read: a line, the end (""), or a line's start without its Enter (a turn's end
        pushed it through: `_push_unfinished`), shown at the prompt waiting for the rest."""
        if self._in_hand == read_at:
            self._in_hand = None
        self._handed.set()
        pushed, self._pushed = self._pushed, False
        if text and not text.endswith("\n"):  # else Ctrl-D after words typed at the prompt, which shows them
            self._unfinished += text
            self._unseen += text if pushed else ""
            self._show_unseen()
            return
        line, self._unfinished, self._unseen = self._unfinished + text, "", ""
        if line:
            self._queue.put_nowait((read_at, line.rstrip("\n")))
        if not text:
            self._queue.put_nowait((read_at, None))

    def _show_unseen(self) -> None:
        """At the prompt waiting for it, the start of its line typed unseen during the turn, as if echoed now."""
        if self._prompting and self._unseen:
            print(printable(self._unseen), end="", file=sys.stderr, flush=True)
            self._unseen = ""


# The signals that end the terminal by default (Ctrl-C stops the turn instead).
_ENDING = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def _end_echoing(loop: asyncio.AbstractEventLoop, signum: int) -> None:
    """End as `signum` ends a process, with the terminal's echo back on."""
    _echo(True)
    loop.remove_signal_handler(signum)  # its default action again
    os.kill(os.getpid(), signum)


def _echo(on: bool) -> bool:
    """Turn the terminal's echo of what is typed on or off (its line editing stays); whether stdin is a terminal.
    Off (a turn runs), the Ctrl-C that stops it keeps what was typed without its Enter yet: the terminal dropped it."""
    import termios

    try:
        if not sys.stdin.isatty():
            return False
        attrs = termios.tcgetattr(sys.stdin.fileno())
        attrs[3] = (attrs[3] | termios.ECHO) & ~termios.NOFLSH if on else (attrs[3] & ~termios.ECHO) | termios.NOFLSH
        termios.tcsetattr(sys.stdin.fileno(), termios.TCSANOW, attrs)
    except (OSError, ValueError, termios.error):
        return False
    return True


def _readline() -> str:
    """The next line of stdin with its newline ("" at its end, or when it cannot be read); a terminal's line may come
    without it (`_push_unfinished`, Ctrl-D after some words)."""
    try:
        if sys.stdin.isatty():  # what the terminal has, as it has it: Python's readline would wait for the newline
            # A Ctrl-D typed the moment `_push_unfinished` left the canonical mode comes as a character: still the end.
            read = os.read(sys.stdin.fileno(), 65536).removesuffix(b"\x04")
            return read.decode(sys.stdin.encoding, "replace")
        return sys.stdin.readline()
    except (OSError, ValueError):
        return ""


def _push_unfinished() -> bool:
    """Make what is typed on the terminal without its Enter yet readable (`_read` gets it): leaving its canonical
    mode for a moment hands it over; whether it did."""
    import termios

    if _more_within(0):  # a line or the end waits to be read: leaving the mode would join them (Ctrl-D lost)
        return False
    try:
        attrs = termios.tcgetattr(sys.stdin.fileno())
        termios.tcsetattr(sys.stdin.fileno(), termios.TCSANOW, [*attrs[:3], attrs[3] & ~termios.ICANON, *attrs[4:]])
        termios.tcsetattr(sys.stdin.fileno(), termios.TCSANOW, attrs)
    except (OSError, ValueError, termios.error):
        return False
    return True


def _more_within(seconds: float) -> bool:
    """Whether a whole line (or the end) is waiting on the terminal within `seconds` (a terminal's canonical mode
    makes its input readable only at a line's end)."""
    import select

    try:
        return bool(select.select([sys.stdin], [], [], seconds)[0])
    except (OSError, ValueError):
        return False
