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

from ollie.completion import NEIGHBOUR_CHARS, NEIGHBOUR_FILES, PREFIX_CHARS, SUFFIX_CHARS, Completer, Neighbour, windows
from ollie.errors import OllieError
from ollie_lsp.documents import read_through_link
from ollie_lsp.lineindex import offset_at, text_of

if TYPE_CHECKING:
    from ollie_lsp.server import OllieServer

logger = logging.getLogger("ollie.lsp.inline")

_completers: dict[int, Completer] = {}
_running: dict[str, asyncio.Task[object]] = {}
# Why there is no ghost text, each reason said once to each client (by server, as `_completers`): unsaid, ghost text
# that never came left the user to guess (a completion model the backend lacks, a server that is down); said per
# keystroke, it would bury the editor.
_said: dict[int, set[str]] = {}
_SAID_AT_MOST = 8


def completer(ls: OllieServer) -> Completer:
    """This server's completer, built from its initializationOptions on first use."""
    found = _completers.get(id(ls))
    if found is None:
        options = ls.init_options
        found = _completers[id(ls)] = Completer(backend=options.backend, model=options.model, env=options.env)
    return found


def sendable(path: str, root: str) -> str | None:
    """`path` relative to `root` if another open document may go to the completion model, else None."""
    # The editor's buffer of a file inside the workspace, links followed (a `notes.md` linking to
    # `~/.aws/credentials` holds the secret's text), with no hidden part (`.env`, `.aws/credentials`, `.git/config`
    # when the workspace is $HOME): the completion backend is a third party, and nothing asked for these.
    # The root is the folder's real path (walked: `OllieServer.sessions_dir`), the buffer's name maybe through a link
    # to it (a folder opened as ~/proj -> /data/proj): its name as the editor shows it is as deep as its real one.
    parts = os.path.relpath(os.path.realpath(path), os.path.realpath(root)).split(os.sep)
    named = os.path.abspath(path).split(os.sep)[-len(parts):]
    if any(part.startswith(".") for part in (*parts, *named)):  # `..` too: outside the root
        return None
    return os.sep.join(named)


def neighbours(uri: str, documents: list[tuple[str, str]], root: str) -> list[Neighbour]:
    """Up to NEIGHBOUR_FILES other open documents that may go to the completion model (blocks: run off the loop)."""
    found: list[Neighbour] = []
    for other_uri, source in documents:
        if len(found) == NEIGHBOUR_FILES:
            break
        path = to_fs_path(other_uri) if other_uri != uri and other_uri.startswith("file:") else None
        shown = sendable(path, root) if path else None
        if shown is not None:
            found.append(Neighbour(shown, source))
    return found


async def complete(ls: OllieServer, params: types.InlineCompletionParams) -> types.InlineCompletionList:
    """The model's text at the cursor, as one inline completion item (none when it has nothing)."""
    uri = params.text_document.uri
    # Each step at debug level: a test's artifacts (and a user's log) tell a request never sent from one lost here.
    logger.debug("inline completion asked: %s %s", uri, params.position)
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
        # A buffer the editor read through a link (a step's link to a key: see `note_source`) goes to no model.
        if await read_through_link(doc):
            return types.InlineCompletionList(items=[])
        offset = offset_at(doc, params.position.line, params.position.character)
        # Slices of the texts, what `windows` reads of them: a document typed in is never joined whole on the loop.
        documents = [(other_uri, text_of(other).slice(0, NEIGHBOUR_CHARS))
                     for other_uri, other in list(ls.workspace.text_documents.items())
                     if not await read_through_link(other)]
        try:
            root = os.fspath(await ls.sessions_dir())  # (the folders the editor named, walked)
        except ValueError:  # each refused: no workspace to take neighbours from
            root = None
        others = await asyncio.to_thread(neighbours, uri, documents, root) if root else []
        start = max(0, offset - PREFIX_CHARS - 1)  # one more: the prefix starts at the first line start past it
        prefix, suffix = windows(text_of(doc).slice(start, offset + SUFFIX_CHARS), offset - start,
                                 language_id=doc.language_id, neighbours=others)
        logger.debug("inline completion sent to the model: %s", uri)
        text = await completer(ls).complete(prefix, suffix)
    except asyncio.CancelledError:
        logger.debug("inline completion cancelled: %s", uri)
        raise
    except OllieError as exc:  # no backend, unreachable: no ghost text, and no error popup per keystroke
        _say_once(ls, exc)
        return types.InlineCompletionList(items=[])
    finally:
        if _running.get(uri) is task:
            del _running[uri]
    logger.debug("inline completion answered: %s, %d characters", uri, len(text))
    if not text.strip():
        return types.InlineCompletionList(items=[])
    here = types.Range(start=params.position, end=params.position)
    return types.InlineCompletionList(items=[types.InlineCompletionItem(insert_text=text, range=here)])


def _say_once(ls: OllieServer, exc: OllieError) -> None:
    """Tell the user why a completion failed, the first time it fails so (the server's words: one escaped line)."""
    from ollie.escapes import escaped, unlinked
    from ollie.sessions.types import one_line
    from ollie_lsp.codeactions import ERROR_CHARS

    # The model named: the hint of one the server lacks says OLLIE_MODEL, the chat's.
    model = completer(ls).model
    said = (f"ollie: no ghost text{f' from OLLIE_COMPLETION_MODEL ({model})' if model else ''}: "
            f"{unlinked(escaped(one_line(str(exc), ERROR_CHARS)))}")
    said_here = _said.setdefault(id(ls), set())
    if said in said_here or len(said_here) >= _SAID_AT_MOST:
        logger.warning("inline completion failed: %s", exc)
        return
    said_here.add(said)
    ls.show(said)
