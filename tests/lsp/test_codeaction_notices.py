"""What a code action's turn puts in the editor's notifications: text from a backend, a step or the model, made inert."""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types

from ollie_lsp import codeactions

# A markdown link VS Code's notification makes a command run at a click, a newline, and a terminal's colour escape.
HOSTILE = "boom [open](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22rm%22%7D)\nsecond\x1b[31m red"


class Notices:
    """The part of the server that shows notifications, keeping each message."""

    client_capabilities = None

    def __init__(self) -> None:
        self.messages: list[str] = []

    def show(self, message: str, kind: Any = None) -> None:
        self.messages.append(message)

    def window_show_message(self, params: types.ShowMessageParams) -> None:
        self.messages.append(params.message)


def inert(message: str) -> bool:
    return "](" not in message and "\n" not in message and "\x1b" not in message and "\\x1b" in message


async def test_a_detached_turns_failure_is_one_inert_line() -> None:
    # Round 68a: `_answer_later` showed the exception's text as it was: a link that ran an editor command at a click,
    # a second line, a raw escape.
    async def fails() -> dict[str, Any]:
        raise RuntimeError(HOSTILE)

    turn = asyncio.ensure_future(fails())
    await asyncio.wait({turn})
    ls = Notices()
    codeactions._answer_later(ls, "s1", turn)  # type: ignore[arg-type]
    (message,) = ls.messages
    assert message.startswith("ollie: the turn failed: boom [open] (command:") and inert(message), message


async def test_a_short_reply_in_a_notification_has_no_link() -> None:
    ls = Notices()
    await codeactions.show_answer(ls, "s1", {"reply": HOSTILE.replace("\n", " ")})  # type: ignore[arg-type]
    (message,) = ls.messages
    assert message.startswith("ollie: boom [open] (command:") and inert(message), message
