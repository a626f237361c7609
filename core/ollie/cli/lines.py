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
from collections.abc import AsyncIterator, Collection, Iterator

from ollie.cli import editing
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
        self._prompting = False  # `next` waits at a prompt with nothing typed ahead: `_unseen` shows there
        self._held = ""  # typed ahead of a stop: sent on a bare Enter at the next prompt (`hold`)
        self._in_hand: float | None = None  # when `_read` read what it has not handed to the loop yet
        self._handed = asyncio.Event()
        self._reading = False  # `_read` runs: it answers a wish for the half-typed line (`_take_unfinished`)
        self._wish: tuple[int, int] | None = None  # a pipe that wakes `_read` for it, on a terminal
        self._taken: asyncio.Future[None] | None = None  # `_read` answered the wish
        self._prompt = ""  # what `next` shows before the line
        self._editing = False  # `next` waits for a line `_read` reads with readline (`editing`), which shows the prompt

    def start(self) -> None:
        """Start reading stdin (on the running loop)."""
        loop = asyncio.get_running_loop()
        self._reading = True
        if sys.stdin.isatty():
            self._wish = os.pipe()
        threading.Thread(target=self._read, args=(loop,), name="ollie-stdin", daemon=True).start()

    def end(self) -> None:
        """End the input as Ctrl-D would (the prompt loop stops)."""
        self._queue.put_nowait((time.monotonic(), None))

    async def next(self, prompted_at: float = 0.0, prompt: str = "") -> str | None:
        """The next line typed at `prompt` (lines typed ahead included); None once the input ended. A line a terminal
        read before `prompted_at` (typed during the turn, not echoed: `quiet`) is shown after the prompt sign. Typed
        now, on a terminal, it is edited as in a shell (`editing`: arrows, the project's history)."""
        if self._ended:
            return None
        self._prompt = prompt
        self._prompting = not self._ahead and self._queue.empty()
        self._editing = self._prompting and self._wish is not None and self._reading and editing.available()
        self.reprompt()
        try:
            read_at, line = self._ahead.popleft() if self._ahead else await self._queue.get()
        finally:
            self._prompting = self._editing = False
        self._ended = line is None
        if line is not None and read_at < prompted_at and sys.stdin.isatty():
            print(printable(line), file=sys.stderr, flush=True)
        held, self._held = self._held, ""  # (now: a Ctrl-C meanwhile dropped it)
        if held and line is not None and not line.strip():  # what the bare Enter sent, shown as sent: the prompt is bare
            print(printable(f"> {held}"), file=sys.stderr, flush=True)
            return held
        return line

    @property
    def editing(self) -> bool:
        """Whether the line `next` waits for is read with readline (`editing`)."""
        return self._editing

    def reprompt(self) -> None:
        """Show the prompt `next` waits at (again, after a Ctrl-C there): readline's, or the sign and what was typed
        during the turn."""
        if self._editing:
            assert self._wish is not None
            os.write(self._wish[1], b"e")  # `_read` shows it in readline (`_edit_start`)
            return
        print(printable(self._prompt), end="", file=sys.stderr, flush=True)
        self._show_unseen()

    async def _edit_start(self) -> tuple[str, str] | None:
        """For `_read`, on the loop: the prompt to read a line at and what was typed of it during the turn (taken from
        `_got`'s reckoning), or None when `next` waits no more or has a line already."""
        if not self._editing or not self._queue.empty():
            return None
        start, self._unfinished, self._unseen = self._unfinished, "", ""
        return self._prompt, start

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

    @contextlib.asynccontextmanager
    async def quiet(self) -> AsyncIterator[None]:
        """While a turn runs: what is typed is not echoed between its answer's words (a line typed meanwhile is shown
        at the next prompt, by `next`); a question asked meanwhile echoes its answer (`answer`)."""
        before = _modes()
        self._quiet = _echo(False)
        loop = asyncio.get_running_loop()
        ending = _ENDING if self._quiet else ()
        for signum in ending:  # ended meanwhile, the shell gets its terminal back as it was
            loop.add_signal_handler(signum, _end_restoring, loop, signum, before)
        try:
            yield
        finally:
            if self._quiet:  # the start of a line typed meanwhile shows at the next prompt
                await self._take_unfinished()
                _echo(True)
            for signum in ending:
                loop.remove_signal_handler(signum)
            self._quiet = False

    async def _take_unfinished(self) -> None:
        """Have `_read` take what is typed without its Enter yet (it alone reads the terminal and changes its mode
        to do so: a read begun while the mode was changed by another thread swallowed a Ctrl-D typed after it)."""
        if self._wish is None or not self._reading:
            return
        self._taken = asyncio.get_running_loop().create_future()
        os.write(self._wish[1], b"!")
        await self._taken

    def drop_typed(self) -> None:
        """What was typed and not sent goes (Ctrl-C at the prompt, a question), as the terminal's unread part does: the
        start of a line (shown at a prompt, unseen at the one drawn anew, it led the next line sent), lines `hold` kept."""
        self._unfinished = self._unseen = self._held = ""

    def before_question(self) -> float:
        """Call just before a question is printed (not after: an answer typed at once would go); for `answer`."""
        self.drop_typed()  # as the terminal's unread part is dropped below
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
        pasted = self._wish is not None  # a pipe's lines are its prompts, one each
        try:
            while True:
                wished = _wished(self._wish[0]) if self._wish is not None else b""
                if b"!" in wished:  # by `_take_unfinished`
                    text, ended = _unfinished()
                    loop.call_soon_threadsafe(self._got, time.monotonic(), text, ended, True)
                    loop.call_soon_threadsafe(self._answered)
                    if ended:
                        return
                # By `reprompt`, unless `next` has its line meanwhile (a line `_read` handed it before), or a line or
                # its end waits already: readline's mode would take a Ctrl-D typed before it for a character.
                if b"e" in wished and not _more_within(0) and (
                        edit := asyncio.run_coroutine_threadsafe(self._edit_start(), loop).result()):
                    if not self._edited(loop, *edit):
                        return
                if wished:
                    continue
                line = _readline()
                # Not after the wait below: a line typed before a question never answers it.
                self._in_hand = read_at = time.monotonic()
                if not self._hand(loop, read_at, line, pasted):
                    return
        except RuntimeError:  # the loop closed: nobody reads any more
            return
        finally:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._answered, False)

    def _edited(self, loop: asyncio.AbstractEventLoop, prompt: str, start: str) -> bool:
        """In `_read`: a line read with readline handed to the loop (a Ctrl-C as the key's signal); False at the end."""
        with _interrupt_key_off():
            line = editing.read_line(prompt, start)
        if line is None:
            loop.call_soon_threadsafe(self._got, time.monotonic(), "", True)
            return False
        if editing.CTRL_C in line:
            loop.call_soon_threadsafe(os.kill, os.getpid(), signal.SIGINT)
            return True
        self._in_hand = read_at = time.monotonic()
        editing.remember(line)
        return self._hand(loop, read_at, line + "\n", True, raw=True)

    def _hand(self, loop: asyncio.AbstractEventLoop, read_at: float, line: str, pasted: bool, *,
              raw: bool = False) -> bool:
        """In `_read`: `line` handed to the loop with the lines a paste brought along (a multi-line prompt goes as
        one: those past readline's first are still the terminal's, `raw`: come while readline read, the terminal
        took a Ctrl-D among them for a character); False at the end."""
        more = line
        while pasted and more.endswith("\n") and _more_within(PASTE_GAP_S):
            more, eof, _ = _readline().partition("\x04") if raw else (_readline(), "", "")
            line += more
            if eof:
                more = ""
        loop.call_soon_threadsafe(self._got, read_at, line, not more)
        return bool(more)

    def _answered(self, reading: bool = True) -> None:
        """On the loop: `_read` took the half-typed line (or stopped reading)."""
        self._reading = self._reading and reading
        if self._taken is not None and not self._taken.done():
            self._taken.set_result(None)

    def _got(self, read_at: float, text: str, ended: bool = False, pushed: bool = False) -> None:
        """On the loop, what `_read` read: lines, a line's start without its Enter (Ctrl-D after words typed at the
        prompt, which shows them, or `pushed` through at a turn's end: shown at the prompt waiting for the rest),
        then maybe the end."""
        if self._in_hand == read_at:
            self._in_hand = None
        self._handed.set()
        lines, newline, rest = text.rpartition("\n")
        if newline:
            line, self._unfinished, self._unseen = self._unfinished + lines, "", ""
            self._queue.put_nowait((read_at, line.rstrip("\n")))
        self._unfinished += rest
        self._unseen += rest if pushed else ""
        self._show_unseen()
        if ended:
            if self._unfinished:
                self._queue.put_nowait((read_at, self._unfinished))
            self._unfinished = self._unseen = ""
            self._queue.put_nowait((read_at, None))

    def _show_unseen(self) -> None:
        """At the prompt waiting for it, the start of its line typed unseen during the turn, as if echoed now."""
        if self._prompting and self._unseen:
            print(printable(self._unseen), end="", file=sys.stderr, flush=True)
            self._unseen = ""


# The signals that end (or stop: Ctrl-Z) the terminal by default (Ctrl-C stops the turn instead).
_ENDING = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP)


# Held while the terminal's modes change: the loop's (echo, a signal's restore) and `_read`'s (`_unfinished`) never
# interleave, so neither puts back what the other changed meanwhile.
_MODES = threading.Lock()
# Attributes as termios gives them: iflag, oflag, cflag, lflag, ispeed, ospeed, cc.
Modes = list[int | list[bytes | int]]


def _end_restoring(loop: asyncio.AbstractEventLoop, signum: int, modes: Modes | None) -> None:
    """End (or stop) as `signum` does by default, with the terminal's modes back as they were (echo and line mode)."""
    with _MODES:  # held to the end: `_read` changes nothing after
        now = _modes()
        _set_modes(modes)
        loop.remove_signal_handler(signum)  # its default action again
        os.kill(os.getpid(), signum)
        if signum == signal.SIGTSTP:  # continued (`fg`; an orphan, `exec ollie`, is never stopped): the turn's modes
            loop.add_signal_handler(signum, _end_restoring, loop, signum, modes)  # (bash's would echo what is typed)
            _set_modes(now)


def _modes() -> Modes | None:
    """The terminal's attributes (None if stdin is no terminal)."""
    import termios

    try:
        return termios.tcgetattr(sys.stdin.fileno()) if sys.stdin.isatty() else None
    except (OSError, ValueError, termios.error):
        return None


def _set_modes(modes: Modes | None) -> bool:
    """Set the terminal's attributes (caller holds `_MODES`); whether it did."""
    import termios

    try:
        if modes is not None:
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSANOW, modes)
    except (OSError, ValueError, termios.error):
        return False
    return modes is not None


def _echo(on: bool) -> bool:
    """Turn the terminal's echo of what is typed on or off (its line editing stays); whether stdin is a terminal.
    Off (a turn runs), the Ctrl-C that stops it keeps what was typed without its Enter yet: the terminal dropped it."""
    import termios

    with _MODES:
        if (modes := _modes()) is None:
            return False
        lflag = modes[3]
        assert isinstance(lflag, int)
        modes[3] = (lflag | termios.ECHO) & ~termios.NOFLSH if on else (lflag & ~termios.ECHO) | termios.NOFLSH
        return _set_modes(modes)


@contextlib.contextmanager
def _interrupt_key_off() -> Iterator[None]:
    """While readline reads in `_read`: Ctrl-C is a key it ends the line with (`editing.CTRL_C`), not the signal,
    which lands on the loop and cannot stop a read in this thread. Off before readline shows the prompt (turned off
    after it, a Ctrl-C typed at once was the signal, and no prompt came back), on before the line is handed over (one
    typed during the turn stops it)."""
    import termios

    with _MODES:
        if (before := _modes()) is not None and isinstance(cc := before[6], list):
            cc = [*cc]
            cc[termios.VINTR] = b"\0"  # (_POSIX_VDISABLE)
            _set_modes([*before[:6], cc])
    try:
        yield
    finally:
        with _MODES:  # (readline put back the modes it found; nothing else changes them meanwhile)
            _set_modes(before)


def _readline() -> str:
    """The next line of stdin with its newline ("" at its end, or when it cannot be read); a terminal's line may come
    without it (Ctrl-D after some words)."""
    try:
        if sys.stdin.isatty():  # what the terminal has, as it has it: Python's readline would wait for the newline
            return os.read(sys.stdin.fileno(), 65536).decode(sys.stdin.encoding, "replace")
        return sys.stdin.readline()
    except (OSError, ValueError):
        return ""


def _wished(wish: int) -> bytes:
    """Wait until stdin has a line (or its end) or `wish` is written; what was written to `wish` (then emptied), b""
    when stdin was first."""
    import select

    try:
        ready = select.select([sys.stdin, wish], [], [])[0]
    except (OSError, ValueError):
        return b""
    if sys.stdin in ready:  # a line first: what is typed after it is the half-typed one
        return b""
    return os.read(wish, 512)


def _unfinished() -> tuple[str, bool]:
    """In `_read` (no read of the terminal is under way): what is typed without its Enter yet, by leaving the
    terminal's line mode for a moment; and whether a Ctrl-D came with it (the end)."""
    import termios

    if _more_within(0):  # a line or the end waits: `_read` reads it as usual
        return "", False
    with _MODES:
        if (modes := _modes()) is None:
            return "", False
        lflag, cc = modes[3], modes[6]
        assert isinstance(lflag, int) and isinstance(cc, list)
        cc = [*cc]
        cc[termios.VMIN] = cc[termios.VTIME] = 0  # a read takes what is there, waiting for nothing
        try:
            if not _set_modes([*modes[:3], lflag & ~termios.ICANON, *modes[4:6], cc]):
                return "", False
            read = os.read(sys.stdin.fileno(), 65536)
        except OSError:
            read = b""
        finally:
            _set_modes(modes)
    # A Ctrl-D typed meanwhile comes as a character (\x04, or \0 if typed just before the mode changed): at the
    # start of the line it ends the input, as in line mode; after words it hands them over, as in line mode.
    text = read.rstrip(b"\x04\0").decode(sys.stdin.encoding, "replace")
    return text, not text and bool(read)


def _more_within(seconds: float) -> bool:
    """Whether a whole line (or the end) is waiting on the terminal within `seconds` (a terminal's canonical mode
    makes its input readable only at a line's end)."""
    import select

    try:
        return bool(select.select([sys.stdin], [], [], seconds)[0])
    except (OSError, ValueError):
        return False
