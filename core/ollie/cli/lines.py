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
        read_at, line = self._ahead.popleft() if self._ahead else await self._queue.get()
        self._ended = line is None
        if line is not None and read_at < prompted_at and sys.stdin.isatty():
            print(printable(line), file=sys.stderr, flush=True)
        return line

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
            for signum in ending:
                loop.remove_signal_handler(signum)
            if self._quiet:
                _echo(True)
            self._quiet = False

    def before_question(self) -> float:
        """Call just before a question is printed (not after: an answer typed at once would go); for `answer`."""
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
            read_at = time.monotonic()  # not after the wait below: a line typed before a question never answers it
            # The lines a paste brought along are read with its first: a multi-line prompt goes as one.
            while pasted and line.endswith("\n") and _more_within(PASTE_GAP_S) and (more := _readline()):
                line += more
            item = (read_at, line.rstrip("\n") if line else None)
            try:
                loop.call_soon_threadsafe(self._queue.put_nowait, item)
            except RuntimeError:  # the loop closed: nobody reads any more
                return
            if not line:
                return


# The signals that end the terminal by default (Ctrl-C stops the turn instead).
_ENDING = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def _end_echoing(loop: asyncio.AbstractEventLoop, signum: int) -> None:
    """End as `signum` ends a process, with the terminal's echo back on."""
    _echo(True)
    loop.remove_signal_handler(signum)  # its default action again
    os.kill(os.getpid(), signum)


def _echo(on: bool) -> bool:
    """Turn the terminal's echo of what is typed on or off (its line editing stays); whether stdin is a terminal."""
    import termios

    try:
        if not sys.stdin.isatty():
            return False
        attrs = termios.tcgetattr(sys.stdin.fileno())
        attrs[3] = attrs[3] | termios.ECHO if on else attrs[3] & ~termios.ECHO
        termios.tcsetattr(sys.stdin.fileno(), termios.TCSANOW, attrs)
    except (OSError, ValueError, termios.error):
        return False
    return True


def _readline() -> str:
    """The next line of stdin with its newline ("" at its end, or when it cannot be read)."""
    try:
        return sys.stdin.readline()
    except (OSError, ValueError):
        return ""


def _more_within(seconds: float) -> bool:
    """Whether a whole line (or the end) is waiting on the terminal within `seconds` (a terminal's canonical mode
    makes its input readable only at a line's end)."""
    import select

    try:
        return bool(select.select([sys.stdin], [], [], seconds)[0])
    except (OSError, ValueError):
        return False
