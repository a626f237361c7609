"""Standard LSP features for any editor's own client: code actions that run turns, inline completions (ghost text).

Registered at start-up, handled lazily: their modules (ollie_lsp.codeactions, ollie_lsp.inline) are imported on the
first request, so the daemon's start stays as lean as before, and an editor that never asks pays nothing.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

if TYPE_CHECKING:
    from ollie_lsp.server import OllieServer

logger = logging.getLogger("ollie.lsp.standard")

ACTION_COMMAND = "ollie.codeAction"
ACTION_KINDS = [types.CodeActionKind.QuickFix, types.CodeActionKind.Refactor]


def client_takes_inline_completion(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether the client declared `textDocument.inlineCompletion` (LSP 3.18)."""
    text_document = capabilities.text_document if capabilities else None
    return bool(text_document and text_document.inline_completion is not None)


def fit_capabilities(result: types.ServerCapabilities, client: types.ClientCapabilities | None) -> None:
    """Announce inline completions only to a client that declared them (others would never ask, or ask wrongly)."""
    if not client_takes_inline_completion(client):
        result.inline_completion_provider = None


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

    # pygls reads a command's annotations at run time: `ls` stays untyped here (OllieServer is only a type-checking
    # import, as the server module imports this one).
    @server.command(ACTION_COMMAND)
    async def run_action(ls: Any, *args: Any) -> dict[str, Any]:
        from ollie_lsp.codeactions import run

        return await run(ls, args)

    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    async def inline_completion(ls: OllieServer, params: types.InlineCompletionParams) -> types.InlineCompletionList:
        from ollie_lsp.inline import complete

        return await complete(ls, params)
