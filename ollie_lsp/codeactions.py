"""Code actions any LSP client shows: `Ollie: Fix ...`, Explain, Add tests, Refactor, Ask; each one runs a turn.

The turn runs in the default session with the range as context; its answer is a `window/showMessage`, or a
text file `window/showDocument` opens. `ollie.submit` as a command (a plain editor's prompt) is answered so too.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Literal

import attrs
from lsprotocol import types

from ollie.env import env_seconds
from ollie.escapes import escaped, unlinked
from ollie.sessions.types import one_line
from ollie_lsp.asking import ask_client, held_until_asking
from ollie_lsp.lineindex import BREAK, text_of
from ollie_lsp.names import ACTION_COMMAND

if TYPE_CHECKING:
    from pathlib import Path

    from pygls.workspace import TextDocument

    from ollie_lsp.server import OllieServer

Action = Literal["fix", "explain", "tests", "refactor", "ask"]
TITLE_CHARS = 60
# What of a diagnostic's message its Fix title is made from: a message of megabytes (a language server's, reading a
# hostile file) was split whole into words at every code action request, which VS Code sends at each cursor move.
TITLE_SCAN = 4 * 1024
ERROR_CHARS = 500  # a failed turn's reason, as its notice shows it
# A reply this short and on one line is a message; anything longer opens as a document.
SHORT_REPLY = 200
# `# ollie: why is this slow?` (or //, --, ;, /*): the question of `Ollie: Ask about this...`. Only its start is
# a pattern: a lazy question before optional spaces and a closer backtracked cubically over a workspace file's
# line of spaces, on the event loop.
QUESTION_START = re.compile(r"\s*(?:#|//|--|;+|/\*|\*|<!--)\s*ollie:", re.IGNORECASE)
# Where the question is looked for: the range's first characters. eglot asks on every cursor move, and a
# select-all over a 50 MB file split whole froze the daemon (every session) for 0.2-0.4 s each time.
QUESTION_SCAN = 65_536
PROMPTS: dict[str, str] = {
    "fix": "Fix the problem the editor reports here (its words quoted as its language server wrote them):\n{problems}\n"
           "Change the file with your tools, then say in one sentence what you changed.",
    "explain": "Explain what this code does, and anything surprising in it. Do not change any file.",
    "tests": "Add tests for this code, next to the project's existing tests and in their style (look at them first).",
    "refactor": "Refactor this code: {question}",
    "ask": "{question}",
}
PROMPT_METHOD = "ollie/prompt"
DEFAULT_REFACTOR = "make it clearer without changing what it does."
# Emacs waits for `workspace/executeCommand` with the UI frozen and gives up after 10 s (eglot and lsp-mode): a
# longer turn is answered before that and goes on, its answer shown when it ends.
DETACH_AFTER = env_seconds("OLLIE_DETACH_AFTER_S", 5.0)  # (shorter: the test of a turn slower than that)
_answers = itertools.count(1)
_running: set[asyncio.Task[Any]] = set()  # detached turns: held so they are not collected while they run


def question_in(lines: list[str]) -> str | None:
    """The question of the first `ollie: <question>` comment line among `lines`."""
    for line in lines:
        if match := QUESTION_START.match(line):
            question = line[match.end():].strip()
            question = question.removesuffix("*/").removesuffix("-->").rstrip()
            if question:
                return question
    return None


def _range_lines(doc: TextDocument, rng: types.Range) -> list[str]:
    """The range's whole lines within its first QUESTION_SCAN characters, found without splitting the document."""
    last = rng.end.line - 1 if rng.end.line > rng.start.line and rng.end.character == 0 else rng.end.line
    text = text_of(doc)
    start = text.start(rng.start.line)
    if start is None:
        return []
    lines = BREAK.split(text.slice(start, start + QUESTION_SCAN))
    wanted = max(0, last - rng.start.line) + 1
    # Past the wanted lines, or a last line the scan cut short (unless the text ends there), asks no question.
    return lines[:wanted] if len(lines) > wanted or start + QUESTION_SCAN >= len(text) else lines[:-1]


def fix_title(message: str) -> str:
    """A diagnostic's `message` as its Fix title shows it: one line, escaped, cut (and only its start read)."""
    cut = len(message) > TITLE_SCAN
    return escaped(one_line(message[:TITLE_SCAN] + " …" * cut, TITLE_CHARS))


def _action(title: str, kind: str, args: dict[str, Any],
            diagnostics: list[types.Diagnostic] | None = None) -> types.CodeAction:
    command = types.Command(title=title, command=ACTION_COMMAND, arguments=[args])
    return types.CodeAction(title=title, kind=kind, diagnostics=diagnostics, command=command)


def offer(ls: OllieServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """The actions for a range: Fix for its diagnostics, the others for a selection or an `ollie:` question."""
    doc = ls.workspace.text_documents.get(params.text_document.uri)
    if doc is None:  # ollie acts on what the editor shows: an open document
        return []
    rng = params.range
    # The command's argument travels through the client: plain JSON, as LSP writes a range or a diagnostic. The
    # daemon's own converter: building a second one, as the first code action imported this, held the loop 0.1 s.
    as_json = ls.converter.unstructure
    base = {"uri": doc.uri, "range": as_json(rng)}
    only = params.context.only
    wanted = (lambda kind: any(kind == o or kind.startswith(f"{o}.") for o in only)) if only else (lambda kind: True)
    actions = []
    diagnostics = list(params.context.diagnostics)
    if diagnostics and wanted(types.CodeActionKind.QuickFix):
        args = {**base, "action": "fix", "diagnostics": [as_json(d) for d in diagnostics]}
        # The editor's own menu entry, in a language server's words (a hostile file's identifier): escaped, as its
        # U+202E reversed the rest of the entry (red team round 68).
        title = f"Ollie: Fix {fix_title(diagnostics[0].message)}"
        actions.append(_action(title, types.CodeActionKind.QuickFix, args, diagnostics))
    if not wanted(types.CodeActionKind.Refactor):
        return actions
    selected = rng.start != rng.end
    question = question_in(_range_lines(doc, rng))
    if selected:
        actions += [_action("Ollie: Explain", types.CodeActionKind.Refactor, {**base, "action": "explain"}),
                    _action("Ollie: Add tests for this", types.CodeActionKind.Refactor, {**base, "action": "tests"}),
                    _action("Ollie: Refactor...", types.CodeActionKind.Refactor,
                            {**base, "action": "refactor", **({"question": question} if question else {})})]
    if question or (selected and ls.init_options.prompt_request):  # else the question could not be asked
        actions.append(_action("Ollie: Ask about this...", types.CodeActionKind.Refactor,
                               {**base, "action": "ask", **({"question": question} if question else {})}))
    return actions


@attrs.frozen(kw_only=True)
class ActionArgs:
    """The argument of the `ollie.codeAction` command (what `offer` put in it)."""

    action: Action
    uri: str
    range: Any
    diagnostics: list[dict[str, Any]] = attrs.Factory(list)
    question: str | None = None
    session: str | None = None


def problems_text(diagnostics: list[dict[str, Any]]) -> str:
    """One line per diagnostic: where, what, and who says so, the language server's words each a JSON string."""
    lines = []
    for diagnostic in diagnostics:
        # The client's JSON, any shape: a range that is no object leaves the line out (it failed as an internal error).
        rng = diagnostic.get("range")
        start = rng.get("start") if isinstance(rng, dict) else None
        line = start.get("line") if isinstance(start, dict) else None
        where = f"line {line + 1}: " if isinstance(line, int) and not isinstance(line, bool) else ""
        source = diagnostic.get("source")
        code = diagnostic.get("code")
        who = " ".join(str(x) for x in (source, code) if x not in (None, ""))
        # A server reading hostile files writes them: a newline in one would start a line of the user's request.
        quoted = [json.dumps(str(x), ensure_ascii=False) for x in (diagnostic.get("message", ""), who)]
        lines.append(f"- {where}{quoted[0]}" + (f" (from {quoted[1]})" if who else ""))
    return "\n".join(lines)


def action_prompt(args: ActionArgs) -> str:
    """What the model is asked (the editor context block goes before it)."""
    question = args.question or (DEFAULT_REFACTOR if args.action == "refactor" else "")
    return PROMPTS[args.action].format(problems=problems_text(args.diagnostics), question=question)


async def run(ls: OllieServer, raw_args: tuple[Any, ...]) -> dict[str, Any]:
    """Run one action's turn in the workspace's session; its answer is shown, its result (or "running") returned."""
    from ollie_lsp.documents import read_through_link
    from ollie_lsp.editor import context_documents, with_context
    from ollie_lsp.errors import InvalidParams
    from ollie_lsp.params import EditorContext, parse
    from ollie_lsp.sessions import SubmitHandle

    if len(raw_args) != 1:
        raise InvalidParams(f"arguments: expected one argument (the action object), got {len(raw_args)}")
    await ls.engine_loaded()
    args = parse(ActionArgs, raw_args[0])
    if args.action == "ask" and not args.question:
        if not ls.init_options.prompt_request:
            raise InvalidParams("question: `ask` needs the question (an `ollie: <question>` comment line)")
        args = attrs.evolve(args, question=await ask_question(ls))
        if not args.question:  # the user dismissed the prompt: nothing to run
            return {"session": args.session, "reply": "", "stop": "dismissed"}
    context = parse(EditorContext, {"uri": args.uri, "range": args.range})
    live = await ls.table.writable(args.session)
    request = action_prompt(args)
    # The question may be a workspace file's `ollie:` line: a prompt about that code, never a `!cmd` or `/command`.
    lookup = await context_documents(ls.workspace.text_documents, [context], live.core.cwd, read_through_link)
    prompt = with_context(request, [context], cwd=live.core.cwd, lookup=lookup, commands=False)
    handle = SubmitHandle()
    # The turn runs in the chat's session, whose chat did not send its prompt: shown there as a queued one is.
    turn = asyncio.create_task(live.submit(prompt, handle=handle, is_command=False, announce=True))
    with ls.on_cancel(lambda: live.cancel(handle)):
        return await in_time(ls, turn, args.action, live.id)


async def in_time(ls: OllieServer, turn: asyncio.Task[dict[str, Any]], what: str, session: str | None) -> dict[str, Any]:
    """A submitting command's answer before eglot gives up: the turn's result, else "running" and its answer shown
    when it ends (`session`: the turn's, None for the default one)."""
    # eglot asks inside its wait for this request: it is answered before the turn asks anything (see asking.py).
    with held_until_asking(ls.protocol) as answer_now:
        woken = asyncio.ensure_future(answer_now.wait())
        try:
            await asyncio.wait({turn, woken}, timeout=DETACH_AFTER, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the request itself went (the daemon stops): its turn goes with it, as before
            turn.cancel()
            raise
        finally:
            woken.cancel()
    if not turn.done():
        session = session or (await ls.table.default()).id
        ls.window_show_message(types.ShowMessageParams(
            type=types.MessageType.Info, message=f"ollie: still working ({what}); its answer shows when it ends"))
        _running.add(turn)
        turn.add_done_callback(lambda task: _answer_later(ls, session, task))
        return {"session": session, "reply": "", "stop": "running"}
    result = turn.result()
    await show_answer(ls, result["session"], result)
    return result


async def submitted(ls: OllieServer, submit: Coroutine[Any, Any, dict[str, Any]], params: Any) -> dict[str, Any]:
    """`ollie.submit` as a command, a plain editor's prompt: answered in time as a code action's turn (eglot and
    lsp-mode wait with Emacs frozen and fail it after 10 s: its answer was lost)."""
    given = params if isinstance(params, dict) else {}
    session, text = given.get("session"), given.get("text")
    what = escaped(one_line(text, TITLE_CHARS)) if isinstance(text, str) and text.strip() else "prompt"
    return await in_time(ls, asyncio.create_task(submit), what, session if isinstance(session, str) else None)


def _answer_later(ls: OllieServer, session: str, turn: asyncio.Task[dict[str, Any]]) -> None:
    """Show a detached turn's answer (or how it failed) once it ends."""
    _running.discard(turn)
    if turn.cancelled():
        return
    if (exc := turn.exception()) is not None:
        # Its text may be a backend's or a step's: one line (a newline wrote a second message), escapes shown, no link.
        ls.show(f"ollie: the turn failed: {unlinked(escaped(one_line(str(exc), ERROR_CHARS)))}")
        return
    shown = asyncio.ensure_future(show_answer(ls, session, turn.result()))
    _running.add(shown)
    shown.add_done_callback(_running.discard)


async def ask_question(ls: OllieServer) -> str:
    """The user's question, through the client's own UI (`ollie/prompt`); "" when dismissed or failed."""
    try:
        answer = await ask_client(ls.protocol, PROMPT_METHOD, {"title": "Ask ollie about this",
                                                              "placeholder": "What do you want to know?"})
    except Exception as exc:  # the client failed to answer: nothing runs on a broken question
        ls.show(f"ollie: asking for the question failed: {exc}")
        return ""
    text = answer.get("text") if isinstance(answer, dict) else None
    return text.strip() if isinstance(text, str) else ""


# Emacs applies what a file asks of it when it opens one (eglot 1.12 and later open a long answer so): a
# `-*- mode: server -*-` line called `server-mode` unasked (any `*-mode` function runs so), and a `Local Variables:`
# list did too and put its `eval:` to the user. A space in each mark (`-* -`, `Local Variables :`) and Emacs finds none.
_EMACS_MARKS = re.compile(r"-\*(?=-)|(?i:local variables)(?=:)")


def _answer_file(session: str, reply: str) -> Path:
    """Write `reply` as a read-only text file under the state dir (never the workspace)."""
    from ollie.paths import state_dir

    folder = state_dir() / "answers" / session
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    # Plain text, not `.md`: VS Code's markdown support makes the model's `[x](command:id?args)` a link it runs at a
    # Ctrl+click, with commands allowed (text typed into the user's terminal); in plain text it links only web and files.
    path = folder / f"answer-{next(_answers)}.txt"
    path.unlink(missing_ok=True)
    path.write_text(_EMACS_MARKS.sub(lambda m: m[0] + " ", reply) + "\n", encoding="utf-8")
    path.chmod(0o444)
    return path


async def show_answer(ls: OllieServer, session: str, result: dict[str, Any]) -> None:
    """A short reply as a message, a longer one as a text document; a failed turn's error as a warning."""
    if error := result.get("error"):
        ls.show(f"ollie: {error}")
    reply = str(result.get("reply") or "").strip()
    if not reply:
        return
    caps = ls.client_capabilities
    can_show = bool(caps and caps.window and caps.window.show_document and caps.window.show_document.support)
    if (len(reply) <= SHORT_REPLY and "\n" not in reply) or not can_show:
        # The model's text in the editor's own notification: a U+202E in it reversed the line, an escape reached Emacs.
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=f"ollie: {unlinked(escaped(reply))}"))
        return
    path = await asyncio.to_thread(_answer_file, session, reply)
    await ls.window_show_document_async(types.ShowDocumentParams(uri=path.as_uri(), take_focus=True))
