"""What the server announces depends on what the client declared: LSP 3.18 inline completions only to those that do."""

from __future__ import annotations

from lsprotocol import types


def fit_capabilities(result: types.ServerCapabilities, client: types.ClientCapabilities | None) -> None:
    """Announce inline completions only to a client that declared `textDocument.inlineCompletion` (others would
    never ask, or ask wrongly) and only when the user chose a model for ghost text (`OLLIE_COMPLETION_MODEL`, in
    the environment or the env file)."""
    text_document = client.text_document if client else None
    if text_document and text_document.inline_completion is not None:
        # Imported only here: the backends' registry (~5 ms) would delay every other client's `initialize` answer.
        from ollie.backend.registry import environment

        # Every pause in typing is a model request: the chat model (often a paid API) is never asked for them.
        if environment().get("OLLIE_COMPLETION_MODEL"):
            return
    result.inline_completion_provider = None
