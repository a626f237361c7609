"""What the server announces depends on what the client declared: LSP 3.18 inline completions only to those that do."""

from __future__ import annotations

from lsprotocol import types


def client_takes_inline_completion(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether the client declared `textDocument.inlineCompletion` (LSP 3.18)."""
    text_document = capabilities.text_document if capabilities else None
    return bool(text_document and text_document.inline_completion is not None)


def ghost_text_configured() -> bool:
    """Whether the user chose a model for ghost text (`OLLIE_COMPLETION_MODEL`, in the environment or the env file).

    Every pause in typing is a model request: the chat model (often a paid API) is never asked for them.
    """
    from ollie.backend.registry import environment

    return bool(environment().get("OLLIE_COMPLETION_MODEL"))


def fit_capabilities(result: types.ServerCapabilities, client: types.ClientCapabilities | None) -> None:
    """Announce inline completions only to a client that declared them (others would never ask, or ask wrongly)
    and only when the user chose a completion model."""
    if not client_takes_inline_completion(client) or not ghost_text_configured():
        result.inline_completion_provider = None
