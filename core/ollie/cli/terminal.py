"""The engine in a terminal: one turn (`-p`) or an interactive prompt, Ctrl-C to stop."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ollie.agent.editorcontext import is_command
from ollie.backend.images import ImageError
from ollie.cli import editing
from ollie.cli.attach import attached_images
from ollie.cli.lines import InputLines
from ollie.cli.piped import with_piped
from ollie.cli.render import Renderer, fitted
from ollie.cli.resume import pick, resume_arg, show_history
from ollie.cli.sanitize import printable
from ollie.escapes import escaped, has_controls
from ollie.mcp.prompts import is_prompt_line

if TYPE_CHECKING:
    from ollie.agent.questions import Answer, Outcome, StepQuestion
    from ollie.agent.recorder import Recorder
    from ollie.agent.steps import Diff
    from ollie.agent.surface import TerminalCore

# Exit codes of `ollie -p` by stop reason.
EXIT_CODES = {"end": 0, "command": 0, "error": 1, "max_steps": 3, "refusal": 4, "max_tokens": 6, "interrupted": 130}
# `ollie -p` whose turn ended, but without a step it could not ask about: a script must not take it for done.
EXIT_UNAPPROVED = 7
DOUBLE_CTRL_C_S = 2.0
IMAGE_HINT = ("@name an image file (PNG, JPEG, GIF or WebP) beneath the workspace, or by its absolute or ~ path, "
              "or leave the @ out")
# What a person types at a step's question, in any case: the answer it means.
STEP_ANSWERS: dict[str, Outcome] = {
    **dict.fromkeys(("y", "yes", "o", "once"), "allow_once"),
    **dict.fromkeys(("s", "session"), "allow_session"),
    **dict.fromkeys(("a", "always"), "allow_always"),
    **dict.fromkeys(("n", "no", "r", "reject"), "reject"),
    **dict.fromkeys(("f", "feedback"), "reject_with_feedback"),
}
# A line that only answers a question: the first one after a question was withdrawn is not sent as a prompt.
LATE_ANSWERS = frozenset(STEP_ANSWERS)
DIFF_LINES_MAX = 60
DIFF_LINES_MIN = 8  # on a terminal too low for the question and its diff: some of the diff, the header at least
# A cursor key's code in a typed line (↑, ←, Home, Delete...): the prompt has no line editing, the terminal types it.
CURSOR_KEYS = re.compile(r"\x1b(?:\[[0-9;]*|O)[A-DFH~]")


@dataclass(frozen=True)
class RunOptions:
    """What the command line asked for."""

    agent: str | None = None  # None: a resumed session's own, else default
    backend: str | None = None
    model: str | None = None
    session: str | None = None
    cwd: Path = Path(".")
    approval: str | None = None


async def open_core(options: RunOptions) -> tuple[TerminalCore, Recorder | None]:
    """Build the Core (resuming `options.session` when given) and record it for editors to list (channel cli)."""
    from ollie.agent.core import Core
    from ollie.agent.recorder import Recorder
    from ollie.cli.resume import recorded
    from ollie.sessions.types import Channel

    # A teammate's session is known as hers before its agent's hook runs: her agent runs no command unsandboxed here.
    agent, owner = (options.session and await asyncio.to_thread(recorded, options.session)) or ("", "")
    core = await Core.create(
        agent=options.agent or agent or "default", cwd=options.cwd.resolve(), backend=options.backend,
        model=options.model, session_id=options.session, owner=owner,
    )
    recorder: Recorder | None = None
    try:
        if problem := await asyncio.to_thread(core.sandbox_problem):  # said before the first prompt, not at its step
            print(printable(f"ollie: {problem}"), file=sys.stderr)
        if options.session and options.backend:  # named for this run: before those the resumed session switched to
            await core.switch_backend(options.backend)
        if options.session and options.model:
            core.switch_model(options.model)
        recorder = Recorder(core, channel=Channel.CLI)
        # A refusal raises (a resumed one's record says whose it is); a failure is told. A new one's is put off.
        await recorder.open(fresh=not options.session)
        if options.approval:  # after the record is opened: whether the session is another user's (whose mode stays theirs)
            core.set_approval(options.approval)
        return core, recorder
    except BaseException:  # a team member's --approval on the owner's session, a bad mode: nothing left open
        await core.close()
        if recorder is not None:
            await recorder.close()
        raise


class _Events:
    """The renderer fed from the core's bus in the background."""

    def __init__(self, core: TerminalCore, renderer: Renderer) -> None:
        self._core, self._renderer, self._sub = core, renderer, core.bus.subscribe()
        self._shown = core.plan  # as the session opened: a resumed one's is shown after its history
        self.held = False  # a command runs: the plan it changes follows what it says (`/rewind`'s "rewound …")
        self._task = asyncio.create_task(self._render())

    async def _render(self) -> None:
        async for event in self._sub:
            if event.role == "state":
                if not self.held:  # a step of the task_* tools: the checklist as it is now, after the step
                    self.show_plan()
            else:
                steps = event.steps or ((event.tool,) if event.tool is not None else ())
                self._renderer.render(event.role, event.content, event.name, steps=steps,
                                      failed=event.tool is not None and event.tool.status == "failed",
                                      changes=event.changes, images=event.images)

    def show_plan(self) -> None:
        """The plan's checklist, when it changed since it was last shown."""
        if self._core.plan != self._shown:
            self._shown = self._core.plan
            self._renderer.plan(self._shown)

    async def drained(self) -> None:
        """Wait until every event published so far was rendered (or the renderer has stopped)."""
        await self._sub.caught_up()

    async def close(self) -> None:
        """Stop rendering once what is queued was shown."""
        self._sub.close()
        await self._task


@dataclass
class _Live:
    """The session open now: its Core, its record, its events being rendered (a /resume replaces all three)."""

    core: TerminalCore
    recorder: Recorder | None
    events: _Events


@asynccontextmanager
async def _running(options: RunOptions, renderer: Renderer, *, keep_unused: bool = True) -> AsyncIterator[_Live]:
    """The Core with its events rendered; on the way out Ctrl-C is the default again and both are closed
    (`keep_unused`: see `close_session`)."""
    core, recorder = await open_core(options)
    live = _Live(core, recorder, _Events(core, renderer))
    try:
        yield live
    finally:
        asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
        await _close(live, renderer, keep_unused=keep_unused and not options.session)


async def _close(live: _Live, renderer: Renderer, *, keep_unused: bool = True) -> None:
    from ollie.agent.recorder import close_session

    problem = await close_session(live.core, live.recorder, keep_unused=keep_unused)
    await live.events.close()
    if problem:  # OLLIE_STORE writes in the background: the last rounds it did not take
        renderer.end_line()
        print(printable(f"ollie: {problem}"), file=sys.stderr)


async def run_once(options: RunOptions, prompt: str, piped: str = "") -> int:
    """`ollie -p`: one turn, streamed, with what was `piped` in after the prompt; the exit code says how it ended."""
    # stdout is the answer a script reads: a command's output, or the turn's reply with its steps and notes on stderr.
    command = is_command(prompt) and not is_prompt_line(prompt)
    renderer = Renderer(notes=None if command else sys.stderr)
    # A new session left unused (`ollie -p /sessions`: a command that needs none) is not kept: one a run.
    async with _running(options, renderer, keep_unused=False) as live:
        core, events = live.core, live.events
        # On stderr: stdout is the answer alone. The id resumes the session (`ollie --session ID`): said at once (a
        # run killed midway is resumed by it), but for a new one's command, once it is known to be kept.
        if not command or options.session:
            print(f"ollie: session {core.session_id}", file=sys.stderr, flush=True)
        again = f"ollie --session {core.session_id} -p"
        renderer.review_hint = f"; review: {again} /changes, undo: {again} /rewind"
        # As the editors' Stop: a `!cmd` ends too, and no postTurn continuation or queued prompt starts after it.
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, lambda: core.stop("Ctrl-C"))
        try:
            pictures = await attached_images(prompt, core.cwd)
        except ImageError as exc:  # the command line's own fault: a usage error, said with what to do
            _say_image_refused(exc)
            return 2
        # Pictures are the typed prompt's own: an `@x.png` in a piped file or log attaches nothing.
        result = await core.submit(with_piped(prompt, piped), pictures)
        await events.drained()
    renderer.end_line()
    if command and not options.session and await asyncio.to_thread(_saved, core.session_id):
        print(f"ollie: session {core.session_id}", file=sys.stderr, flush=True)
    if result.stop == "error" and result.error and result.error not in renderer.errors:
        renderer.render("error", result.error)
    _say_stop(result.stop)
    _say_unapproved(core.unapproved)
    code = EXIT_CODES.get(result.stop, 1)
    if result.stop == "command" and (renderer.errors or result.failed):  # `/nosuch`, a failed command or `!cmd`
        code = EXIT_CODES["error"]
    return EXIT_UNAPPROVED if code == 0 and core.unapproved else code


def _say_unapproved(refused: list[tuple[StepQuestion, str]]) -> None:
    """Each step `-p` refused for want of someone to approve it, and the flag that would run it (on stderr, a line
    each: a newline in the model's title would begin a line a script reading ollie's takes for one of them)."""
    for question, mode in refused:
        allow = (f"`--approval {mode}` runs it unasked" if mode else
                 "it runs outside the sandbox: only the interactive `ollie` can allow it")
        print(f"ollie: not run, nobody could approve it (-p cannot ask): {escaped(question.title, keep='')}; {allow}",
              file=sys.stderr)


def _say_image_refused(exc: ImageError) -> None:
    """Why an `@image` of a prompt was refused, and what to do (on stderr): the same words for `-p` and the prompt."""
    print(printable(f"ollie: {exc}"), file=sys.stderr)
    print(f"ollie: {IMAGE_HINT}", file=sys.stderr)


def _say_stop(stop: str) -> None:
    """Tell the user why a turn ended short of an answer (on stderr)."""
    if stop == "interrupted":  # the ^C the terminal echoed is all there was: say the turn ended there
        print("ollie: interrupted", file=sys.stderr)
    elif stop == "max_steps":
        print("ollie: stopped at the step limit (maxSteps)", file=sys.stderr)
    elif stop == "max_tokens":
        print(fitted("ollie: the reply was cut off: it reached the model's output token limit (max_tokens); "
                     "ask it to go on, or raise the limit", sys.stderr), file=sys.stderr)


async def run_interactive(options: RunOptions) -> int:
    """The interactive prompt: Ctrl-C stops what a line started; twice at the idle prompt (or Ctrl-D) exits."""
    renderer = Renderer()
    async with _running(options, renderer) as live:
        renderer.review_hint = "; /changes to review, /rewind to undo"
        loop = asyncio.get_running_loop()
        lines = InputLines()
        await asyncio.to_thread(editing.open_history, live.core.cwd)  # Up recalls this project's prompts
        lines.start()
        live.core.step_approver = partial(_ask_step_at_the_prompt, renderer, lines, live.events.drained)
        last_idle_ctrl_c = 0.0
        busy = False  # a line's submit is under way: a turn, a `!cmd`, a command asking the user something
        picking: asyncio.Future[str | None] | None = None  # /resume asking which session

        def on_sigint() -> None:
            nonlocal last_idle_ctrl_c
            if busy or live.core.is_running:
                live.core.stop("Ctrl-C")  # as in run_once
                return
            if picking is not None:  # as Enter at its question, the session open stays (the next line was its answer)
                picking.cancel()
                return
            now = time.monotonic()
            if now - last_idle_ctrl_c < DOUBLE_CTRL_C_S:
                lines.end()
            else:
                last_idle_ctrl_c = now
                lines.drop_typed()  # the line starts over, as in a shell
                # (readline ended the line of the ^C it shows; the terminal's line mode did not)
                print("" if lines.editing else "\n", "(Ctrl-C again to exit)", sep="", file=sys.stderr, flush=True)
                lines.reprompt()

        loop.add_signal_handler(signal.SIGINT, on_sigint)
        _banner(live.core)
        if options.session:  # where the conversation was, as /resume shows it
            show_history(live.core, renderer)
        while True:
            prompted_at = time.monotonic()
            line = await lines.next(prompted_at, printable(f"{live.core.agent_name}> "))
            if line is None:
                break
            if not line.strip():
                continue
            if line.strip() in ("/exit", "/quit"):  # how other terminal agents are left: as Ctrl-D
                break
            if lines.late_answer(line, LATE_ANSWERS):  # "n" for a question gone a moment ago is no prompt
                print(fitted(printable(f"(not sent: {line.strip()!r} came after its question was withdrawn; type it "
                                       "again to send it to the model)"), sys.stderr), file=sys.stderr)
                continue
            if line.strip().startswith("!") and "\n" in line.strip():  # a paste: never a script run outside the box
                print(fitted("(not run: these pasted lines start with ! and would all run as one shell script, outside "
                             "the sandbox; type a command on one line, or put words before the ! to send the text to "
                             "the model)", sys.stderr), file=sys.stderr)
                continue
            if CURSOR_KEYS.search(line):  # ↑ and Enter sent `\x1b[A` to the model as a prompt; ← edited nothing
                rest = f", without them: {left!r}" if (left := CURSOR_KEYS.sub("", line).strip()) else ""
                # Typed during a turn (the terminal's own line mode), or where readline cannot edit the prompt.
                where = "while a turn runs" if editing.available() else "at this prompt"
                print(fitted(printable(f"(not sent: the arrow keys neither recall nor edit lines {where}, they "
                                       f"type codes (^[[A); type the line again{rest})"), sys.stderr), file=sys.stderr)
                continue
            if (arg := resume_arg(line)) is not None:
                picking = asyncio.ensure_future(pick(live.core, lines, arg, live.events.drained))
                try:
                    chosen = await picking
                except asyncio.CancelledError:
                    if (this := asyncio.current_task()) is not None and this.cancelling():  # not a Ctrl-C's
                        raise
                    print(file=sys.stderr)  # after the ^C the terminal showed
                    chosen = None
                finally:
                    picking = None
                if chosen is not None:
                    await _switch(live, replace(options, session=chosen), renderer, lines)
                continue
            try:
                pictures = await attached_images(line, live.core.cwd)
            except ImageError as exc:  # said at once; the line is not sent (the user fixes the name)
                _say_image_refused(exc)
                continue
            busy, last_idle_ctrl_c = True, 0.0  # twice in a row exits: a line sent between starts over
            live.events.held = is_command(line) and not is_prompt_line(line)
            try:
                async with lines.quiet():
                    result = await live.core.submit(line, pictures)
            finally:
                busy = False
            await live.events.drained()
            renderer.end_line()
            live.events.held = False
            live.events.show_plan()
            _say_stop(result.stop)
            if result.stop == "interrupted" and (held := await lines.hold()):  # who stopped the turn decides again
                print(fitted(printable(f"(not sent: {held!r}, typed during the turn; Enter sends it, or type another "
                                       "prompt)"), sys.stderr), file=sys.stderr)
        session_id = live.core.session_id
        talked = any(message.role == "user" for message in live.core.session.messages)
    print(file=sys.stderr)
    # A session never prompted has nothing to come back to.
    if talked and await asyncio.to_thread(_saved, session_id):
        print(fitted(f"ollie: resume this session with `ollie --session {session_id}`", sys.stderr), file=sys.stderr)
    return 0


def _banner(core: TerminalCore) -> None:
    # Two lines, each under 80 columns with a local model's name: one line wrapped its last words alone. The backend
    # as /model and /backend name it: a local server by the host and port the user set ("local" named nothing set).
    print(fitted(printable(f"ollie — agent {core.agent_name}, {core.model_name} served by {core.backend_said}\n"
                           f"session {core.session_id}. /help for commands, Ctrl-D to quit."), sys.stderr), file=sys.stderr)


async def _switch(live: _Live, options: RunOptions, renderer: Renderer, lines: InputLines) -> None:
    """`/resume`: the session `options` names opened as `--session` opens it, then the one open now closed."""
    from ollie.errors import OllieError

    try:  # its own agent, backend, model and approval mode, as the editors resume it: not this run's flags
        core, recorder = await open_core(replace(options, agent=None, backend=None, model=None, approval=None))
    except OllieError as exc:  # open in another window, another user's: the session open now stays
        print(printable(f"ollie: /resume: {exc}"), file=sys.stderr)
        return
    await live.events.drained()
    await _close(live, renderer)
    live.core, live.recorder, live.events = core, recorder, _Events(core, renderer)
    core.step_approver = partial(_ask_step_at_the_prompt, renderer, lines, live.events.drained)
    _banner(core)
    show_history(core, renderer)


def _saved(session_id: str) -> bool:
    """Whether the session can be resumed (False too when the store cannot say: no hint beats a wrong one)."""
    from ollie import paths
    from ollie.errors import OllieError
    from ollie.sessions import persist

    try:
        return persist.exists(paths.sessions_dir(), session_id)
    except OllieError:
        return False


def _code_lines(what: str) -> str:
    """`what` indented and escaped (a `\\r` could hide what runs), each line ended, a note if it had controls."""
    # split("\n"), not splitlines(): that would also break at \r, \x0b, \x1c-\x1e and hide them.
    shown = "\n".join(f"    {line}" for line in escaped(what.rstrip("\n")).split("\n"))
    note = "  (control characters in it are shown escaped, as \\x1b, \\r, ...)\n" if has_controls(what) else ""
    return f"{shown}\n{note}"


async def _ask_step_at_the_prompt(renderer: Renderer, lines: InputLines, drained: Callable[[], Awaitable[None]],
                                  question: StepQuestion) -> Answer:
    """Put a step to the user (its title escaped): once, for this session (a connection), always, reject, or reject
    with feedback; one withdrawn unanswered (its step ended, the turn stopped) ends its line saying so."""
    try:
        # What came before the question (a warning, the answer to the last one) shows above it, not after its prompt.
        await drained()
        return await _step_answer(renderer, lines, question)
    except asyncio.CancelledError:
        print("\n(withdrawn: nothing waits for this answer any more)", file=sys.stderr, flush=True)
        lines.withdrawn()
        raise


async def _step_answer(renderer: Renderer, lines: InputLines, question: StepQuestion) -> Answer:
    from ollie.agent.questions import Answer

    renderer.end_line()
    since = lines.before_question()
    asked = f"ollie asks to: {escaped(question.title)}\n"
    if question.code:  # the program whole, escaped: its title shows a first line, cut
        asked += _code_lines(question.code)
    for what in question.outside:  # one question covers leaving the sandbox: exactly what runs there
        asked += f"  it runs this outside the sandbox:\n{_code_lines(what)}"
    if question.diff is not None:  # an edit: what it changes, before the user says yes to it
        # Its header (which file) and the question on one screen: a 24-line terminal scrolled both out of sight.
        room = _rows_free(asked.count("\n") + 1)  # the `Allow?` line too
        print(_diff_text(question.diff, color=renderer.color, most=room), file=sys.stderr)
    for diff in question.diffs:  # a batch's edits, each cut as one's would be on a terminal of unknown height
        print(_diff_text(diff, color=renderer.color), file=sys.stderr)
    if question.diffs_more:
        print(question.diffs_more_text(), file=sys.stderr)
    print(fitted(asked, sys.stderr), end="", file=sys.stderr)  # its code (indented) as it is, never broken
    offered = question.outcomes()
    feedback, session, always = ("reject_with_feedback" in offered, "allow_session" in offered,
                                 "allow_always" in offered)
    while True:
        # Broken between words (a split pane broke `[f` / `]eedback`), its space after (one write: an answer typed at
        # once is echoed after it).
        print(fitted(f"Allow? [y]es once, {'for this [s]ession, ' if session else ''}"
                     f"{f'[a]lways ({escaped(question.always_label())}), ' if always else ''}"
                     f"[n]o{', [f]eedback' if feedback else ''}:", sys.stderr) + " ", end="", file=sys.stderr, flush=True)
        answer = await lines.answer(since, LATE_ANSWERS)
        if answer is None:
            return Answer("reject")
        key, _, said = answer.strip().partition(" ")
        choice, said = STEP_ANSWERS.get(key.rstrip(",:;.!").lower()), said.strip()
        if said and choice in ("reject", "reject_with_feedback"):  # `n, keep it as it was`: a no with its feedback
            return Answer("reject_with_feedback", said) if feedback else Answer("reject")
        if choice is not None and choice in offered and not said:
            break
        keys = f"y, {'s, ' if session else ''}{'a, ' if always else ''}n{' or f' if feedback else ''}"
        told = ", or n with words for the model" if feedback else ""
        print(fitted(f"(not an answer: {escaped(answer.strip())}; type {keys}{told})", sys.stderr), file=sys.stderr)
    if choice != "reject_with_feedback":
        return Answer(choice)
    since = lines.before_question()
    print("feedback for the model: ", end="", file=sys.stderr, flush=True)
    feedback = await lines.answer(since)
    if feedback is None:
        return Answer("reject")
    return Answer("reject_with_feedback", feedback)


def _rows_free(used: int) -> int:
    """How many lines of a diff fit on the terminal's screen above `used` lines (DIFF_LINES_MAX at most, and where its
    height is unknown), the line saying how many more were cut included."""
    try:
        rows = os.get_terminal_size(sys.stderr.fileno()).lines
    except OSError:  # not a terminal
        return DIFF_LINES_MAX
    return max(DIFF_LINES_MIN, min(DIFF_LINES_MAX, rows - used - 1))


def _diff_text(diff: Diff, *, color: bool, most: int = DIFF_LINES_MAX) -> str:
    """An edit as a unified diff (escaped: the model wrote it), cut after `most` lines, + and - lines coloured."""
    lines = [escaped(line, keep="\t") for line in diff.unified(most)]  # a line break is the file name's
    if color:
        codes = {"+": "32", "-": "31", "@": "36"}
        lines = [f"\x1b[{codes[line[0]]}m{line}\x1b[0m" if line[:1] in codes else line for line in lines]
    return "\n".join(lines)

