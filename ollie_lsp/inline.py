"""`textDocument/inlineCompletion`: ghost text from the completion model, one request per document at a time.

A newer request for a document, or `$/cancelRequest`, cancels the one still running (its HTTP request too).
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import to_fs_path

from ollie.completion import Completer, Neighbour, windows
from ollie.errors import OllieError

if TYPE_CHECKING:
    from ollie_lsp.server import OllieServer

logger = logging.getLogger("ollie.lsp.inline")

_completers: dict[int, Completer] = {}
_running: dict[str, asyncio.Task[object]] = {}


def completer(ls: OllieServer) -> Completer:
    """This server's completer, built from its initializationOptions on first use."""
    found = _completers.get(id(ls))
    if found is None:
        options = ls.init_options
        found = _completers[id(ls)] = Completer(backend=options.backend, model=options.model, env=options.env)
    return found


def neighbours(ls: OllieServer, uri: str) -> list[Neighbour]:
    """The other open file documents, as paths relative to the workspace."""
    found = []
    for other_uri, doc in list(ls.workspace.text_documents.items()):
        if other_uri == uri or not other_uri.startswith("file:"):
            continue
        path = to_fs_path(other_uri) or other_uri
        try:
            path = os.path.relpath(path, ls.default_cwd)
        except ValueError:
            pass
        found.append(Neighbour(path, doc.source))
    return found


async def complete(ls: OllieServer, params: types.InlineCompletionParams) -> types.InlineCompletionList:
    """The model's text at the cursor, as one inline completion item (none when it has nothing)."""
    uri = params.text_document.uri
    doc = ls.workspace.text_documents.get(uri)
    if doc is None:
        return types.InlineCompletionList(items=[])
    task = asyncio.current_task()
    previous = _running.get(uri)
    if previous is not None and previous is not task and not previous.done():
        previous.cancel()  # the user typed on: the newer request supersedes it
    if task is not None:
        _running[uri] = task
    try:
        offset = doc.offset_at_position(params.position)
        prefix, suffix = windows(doc.source, offset, language_id=doc.language_id, neighbours=neighbours(ls, uri))
        text = await completer(ls).complete(prefix, suffix)
    except OllieError as exc:  # no backend, unreachable: no ghost text, and no error popup per keystroke
        logger.warning("inline completion failed: %s", exc)
        return types.InlineCompletionList(items=[])
    finally:
        if _running.get(uri) is task:
            del _running[uri]
    if not text.strip():
        return types.InlineCompletionList(items=[])
    here = types.Range(start=params.position, end=params.position)
    return types.InlineCompletionList(items=[types.InlineCompletionItem(insert_text=text, range=here)])
