"""Questions to the editor: a step's approval, its elevation out of the sandbox, an agent switch (`ollie/permission`
for clients that announce it, else window/showMessageRequest)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from ollie.escapes import escaped
from ollie_lsp.asking import ask_client, request_id

if TYPE_CHECKING:
    from ollie.agent.questions import Answer, StepQuestion
    from ollie_lsp.server import OllieServer

logger = logging.getLogger("ollie.lsp.permission")

PERMISSION_METHOD = "ollie/permission"
# The buttons of the plain question, and the answer each one is (in the order of questions.OUTCOMES).
BUTTONS = {"Allow once": "allow_once", "Allow for this session": "allow_session", "Allow always": "allow_always",
           "Reject": "reject", "Reject with feedback": "reject_with_feedback"}
# An edit's diff lines in a plain question: a prompt that still fits a minibuffer or a dialog.
QUESTION_DIFF_LINES = 20
# Past this many lines of code or diff, the question is said again at the prompt's end.
QUESTION_SAID_AGAIN_AFTER = 4
# A diff line's characters shown (a 1 MB line made a prompt no minibuffer or dialog shows whole).
QUESTION_LINE_CHARS = 200


def permission_params(session_id: str, question: StepQuestion, msg_id: str) -> dict[str, Any]:
    """The `ollie/permission` params: the session, the step, the options, and the request's own id (`requestId`:
    a client whose LSP library hides request ids, as Neovim's does, still knows which question a
    `$/cancelRequest` takes away)."""
    return {"session": session_id, "step": question.to_wire(),
            "options": [{"id": outcome, "name": name} for name, outcome in _buttons(question).items()],
            "always": question.always_label() if "allow_always" in question.outcomes() else "", "requestId": msg_id}


def _buttons(question: StepQuestion) -> dict[str, str]:
    """The question's buttons: its own answers (`StepQuestion.outcomes`)."""
    offered = question.outcomes()
    return {n: o for n, o in BUTTONS.items() if o in offered}


async def ask_step(ls: OllieServer, session_id: str, question: StepQuestion) -> Answer:
    """Put one step to the user; a failed or dismissed question is a rejection."""
    from ollie.agent.questions import Answer

    if ls.init_options.permission_request:
        try:
            msg_id = request_id()
            answer = await ask_client(ls.protocol, PERMISSION_METHOD, permission_params(session_id, question, msg_id),
                                      msg_id=msg_id)
        except Exception as exc:  # the client failed to answer: nothing runs on a broken question
            logger.warning("ollie/permission failed: %s", exc)
            return Answer("reject")
        outcome = answer.get("outcome") if isinstance(answer, dict) else None
        feedback = answer.get("feedback") if isinstance(answer, dict) else None
        if outcome not in question.outcomes():  # an unknown one, or one it did not offer ("allow_session" to a command)
            logger.warning("ollie/permission answered %r, not one of its options: taken as a rejection", answer)
            return Answer("reject")
        return Answer(outcome, feedback if isinstance(feedback, str) else "")  # type: ignore[arg-type]
    covers = f' ("Allow always" covers {question.always_text()})' if "allow_always" in question.outcomes() else ""
    # What the user says yes to: a program's code whole (its title shows one line) or an edit's diff, then exactly
    # what runs outside, as an elevation says.
    diff = question.diff.unified(QUESTION_DIFF_LINES) if question.diff else []
    body = question.code or "\n".join(_cut(line) for line in diff)
    shown = (f":\n\n{body}" if body else "") + "".join(f"\n\n{w}" for w in question.outside)
    # A plain client cannot type feedback: no "Reject with feedback" button that would only reject. "Reject" first:
    # eglot fills in the first button, so a RET typed into the buffer as the question came up took it.
    buttons = {"Reject": "reject"} | {n: o for n, o in _buttons(question).items() if not o.startswith("reject")}
    # The model's text with its controls and bidi overrides as escapes: an editor shows them as they are (Emacs
    # reorders what follows a U+202E), so what the user reads would not be what runs.
    # A path's line breaks (a file the model names `new.py\n\nollie ... asks to: ...`) stay on the title's line.
    what = question.title.replace("\n", "\\n")
    # A minibuffer shows a tall prompt's end (eglot's): what is asked scrolled out above the diff; said again there.
    again = f"\n\nollie asks to: {what}" if shown.count("\n") > QUESTION_SAID_AGAIN_AFTER else ""
    # The session is named only where another could ask too: its 26-character id led every question of eglot's one.
    who = f"ollie (session {session_id})" if len(ls.live_sessions()) > 1 else "ollie"
    title = await _choice(ls, escaped(f"{who} asks to: {what}{covers}{shown}{again}"), buttons)
    return Answer(buttons.get(title or "", "reject"))  # type: ignore[arg-type]  # dismissed (null): a no


def _cut(line: str) -> str:
    """A diff line (its path's line breaks as `\\n`) of at most QUESTION_LINE_CHARS characters, saying how many more
    it had."""
    line = line.replace("\n", "\\n")
    more = len(line) - QUESTION_LINE_CHARS
    return line if more <= 0 else f"{line[:QUESTION_LINE_CHARS]}… ({more} more characters)"


async def _choice(ls: OllieServer, message: str, buttons: Iterable[str]) -> str | None:
    """The button the user picked in a window/showMessageRequest (None: dismissed, or the question failed)."""
    try:
        reply = await ask_client(ls.protocol, types.WINDOW_SHOW_MESSAGE_REQUEST, types.ShowMessageRequestParams(
            type=types.MessageType.Warning, message=message,
            actions=[types.MessageActionItem(title=title) for title in buttons],
        ))
    except Exception as exc:  # as for ollie/permission: a broken question lets nothing run
        logger.warning("window/showMessageRequest failed: %s", exc)
        return None
    title = reply.get("title") if isinstance(reply, dict) else getattr(reply, "title", None)
    return title if isinstance(title, str) else None
