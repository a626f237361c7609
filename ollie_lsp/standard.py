"""Standard LSP features for any editor's own client: code actions that run turns, inline completions (ghost text).

Registered at start-up, their modules imported on the first request: an editor that never asks pays nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types

from ollie_lsp.names import ACTION_COMMAND
from ollie_lsp.server import OllieServer

logger = logging.getLogger("ollie.lsp.standard")

ACTION_KINDS = [types.CodeActionKind.QuickFix, types.CodeActionKind.Refactor]


def register_standard(server: OllieServer) -> None:
    """Register the code actions, their command and inline completions; a failing one logs and answers nothing."""

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=ACTION_KINDS, resolve_provider=False))
    def code_action(ls: OllieServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        from ollie_lsp.codeactions import offer

        try:
            return offer(ls, params)
        except Exception:  # a broken offer must never disturb the editor's other servers' actions
            logger.exception("offering code actions failed")
            return None

    @server.command(ACTION_COMMAND)
    async def run_action(ls: OllieServer, *args: Any) -> dict[str, Any]:
        from ollie_lsp.codeactions import run

        return await run(ls, args)

    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    async def inline_completion(ls: OllieServer, params: types.InlineCompletionParams) -> types.InlineCompletionList:
        from ollie_lsp.inline import complete

        return await complete(ls, params)
