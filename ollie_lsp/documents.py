"""The daemon's open documents (didOpen/didChange/didClose): unsaved text for the file tools, edits via applyEdit
(then saved through `ollie/saveDocuments` when the client serves it)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

from ollie import beneath
from ollie.tools.documents import STALE, ApplyResult, Version, disk_holds, disk_text, plain_path_beneath
from ollie_lsp.asking import ask_client
from ollie_lsp.lineindex import ChunkedDocument, line_ends

logger = logging.getLogger("ollie.lsp.documents")

# The client saves documents on request (it announced `saveDocuments` in initializationOptions).
SAVE_DOCUMENTS = "ollie/saveDocuments"
# A save the editor has not finished by then is taken as not done (a format-on-save may take a while).
SAVE_TIMEOUT_S = 10.0


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(path))


def whole_range(doc: TextDocument) -> types.Range:
    """The range covering all of `doc`'s text, in the client's position units."""
    text = doc.source
    lines = line_ends(text, 0, len(text))
    last = text[max(text.rfind("\n"), text.rfind("\r")) + 1 :]  # after the last line end: "" when it ends the text
    end = types.Position(line=lines, character=doc.position_codec.client_num_units(last))
    return types.Range(start=types.Position(line=0, character=0), end=end)


def _common_prefix(a: str, b: str) -> int:
    """How many characters `a` and `b` start with alike (halves compared in C: a line split of 20 MB took 1 s)."""
    low, high = 0, min(len(a), len(b))
    while low < high:  # a[:low] == b[:low]
        middle = (low + high + 1) // 2
        low, high = (middle, high) if a[low:middle] == b[low:middle] else (low, middle - 1)
    return low


def changed_lines_edit(doc: TextDocument, new_text: str) -> types.TextEdit:
    """The edit turning `doc` into `new_text` that replaces only the lines between those both start and end with.

    An editor applies it as the change it is: its undo takes back those lines and shows them (a replacement of
    the whole document undid "451 changes" and left the cursor far from the one line). Positions are line starts,
    the same in every position encoding; a "\n" both texts hold alike is a line start in both.
    """
    old = doc.source
    if old == new_text:
        return types.TextEdit(range=whole_range(doc), new_text=new_text)
    start = old.rfind("\n", 0, _common_prefix(old, new_text)) + 1
    # Lines added at the end are put from the last line's start, never from the line past it: Neovim appended the
    # text put there as lines, a blank one too many at the end of the file.
    if start == len(old) > 0:
        start = old.rfind("\n", 0, start - 1) + 1
    same = _common_prefix(old[start:][::-1], new_text[start:][::-1])  # the end both share, after `start`
    after = old.find("\n", len(old) - same) + 1  # the first line start in that shared end (0: none)
    end = (types.Position(line=line_ends(old, 0, after), character=0) if after else whole_range(doc).end)
    new_end = after - len(old) + len(new_text) if after else len(new_text)
    start_at = types.Position(line=line_ends(old, 0, start), character=0)
    return types.TextEdit(range=types.Range(start=start_at, end=end), new_text=new_text[start:new_end])


def replacement_edit(doc: TextDocument, new_text: str, version: int) -> types.WorkspaceEdit:
    """A workspace edit turning `doc` into `new_text` (its changed lines only), valid only at document version
    `version`."""
    identifier = types.OptionalVersionedTextDocumentIdentifier(uri=doc.uri, version=version)
    edit = changed_lines_edit(doc, new_text)
    return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=identifier, edits=[edit])])


class LspDocuments:
    """The client's open file documents (pygls' workspace keeps them), as the engine's EditorDocuments."""

    def __init__(self, server: LanguageServer, *, can_save: Callable[[], bool]) -> None:
        self._server = server
        self._can_save = can_save  # the client saves documents on request (it announced `saveDocuments`)

    def open_documents(self) -> dict[Path, TextDocument]:
        """Every open `file:` document by its real path (what other daemon code reverts or inspects)."""
        docs = list(self._server.workspace.text_documents.items())
        return {_real(path): doc for uri, doc in docs if uri.startswith("file:") and (path := to_fs_path(uri))}

    def find(self, path: Path) -> TextDocument | None:
        """The open document of real path `path` (`plain_path_beneath`'s), or None.

        `path` is not resolved again: a step may since have swapped a folder on it for a link to ~/.aws, whose open
        buffer a `realpath` here found after the policy had checked the folder (round 68a)."""
        try:
            doc = self._server.workspace.text_documents.get(from_fs_path(str(path)) or "")
        except UnicodeEncodeError:  # a name that is not UTF-8 (a step's `bad\377.txt`) has no URI of that form
            doc = None
        return doc if doc is not None else self.open_documents().get(path)

    def can_apply(self) -> bool:
        """Whether the client takes `workspace/applyEdit` with versioned document changes."""
        caps = self._server.client_capabilities
        workspace = caps.workspace if caps else None
        return bool(workspace and workspace.apply_edit)

    async def text(self, path: Path) -> tuple[str, Version] | None:
        """The open document's text and version; None when `path` is not open, or its text came through a link."""
        doc = self.find(path)
        if doc is None or await read_through_link(doc):
            return None
        return doc.source, doc.version or 0

    async def apply(self, path: Path, new_text: str, version: Version) -> ApplyResult:
        """Replace the document's text through `workspace/applyEdit` and save it (see `apply_edit`); the disk
        when the client cannot take edits."""
        doc = self.find(path)
        if doc is None or not self.can_apply():
            return ApplyResult("disk")
        if (doc.version or 0) != version or not isinstance(version, int):
            return ApplyResult("refused", STALE)
        return await self.apply_edit(doc, new_text, version, label="ollie: edit")

    async def apply_edit(self, doc: TextDocument, new_text: str, version: int, *, label: str) -> ApplyResult:
        """Send the edit turning `doc` at `version` into `new_text` (refused with the client's reason), then ask
        the client to save it: `saved` when it did, `unsaved` when the buffer held unsaved changes before."""
        unsaved = not await asyncio.to_thread(disk_holds, Path(doc.path), doc.source)
        params = types.ApplyWorkspaceEditParams(edit=replacement_edit(doc, new_text, version), label=label)
        try:
            answer = await self._server.workspace_apply_edit_async(params)
        except Exception as exc:  # the client answered with an error: the edit did not happen
            return ApplyResult("refused", f"the editor did not apply the edit: {exc}")
        if not answer.applied:
            reason = answer.failure_reason or STALE
            return ApplyResult("refused", f"the editor did not apply the edit ({reason})")
        saved, changed = await self.save([doc.uri])
        # A file that holds the buffer's text (a rewind's undo put it back on both) has nothing to merge: not said.
        if changed and await asyncio.to_thread(disk_text, Path(doc.path)) != new_text:
            self._server.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Warning, message=changed_on_disk_notice(Path(doc.path).name)))
        # Read from the disk: the editor's didChange of what its format on save did may come after its answer. Not
        # UTF-8 (a latin-1 buffer's file) or a BOM the document's text leaves out: the editor's encoding, not its edit.
        written = await asyncio.to_thread(disk_text, Path(doc.path), "strict") if saved else None
        if written is not None and not new_text.startswith("\ufeff"):
            written = written.removeprefix("\ufeff")
        return ApplyResult("applied", saved=bool(saved), unsaved=unsaved, changed_on_disk=bool(changed),
                           formatted=None if written == new_text else written)

    async def save(self, uris: list[str]) -> tuple[list[str], list[str]]:
        """Ask the client to save these documents (`ollie/saveDocuments`): the URIs it saved ([]: it cannot), and
        those it would not save because their file changed on disk since the editor last read or wrote it."""
        if not self._can_save() or not uris:
            return [], []
        try:
            # The editor saves by itself: a code action's command waits through it (asking.answer_held).
            answer = await ask_client(self._server.protocol, SAVE_DOCUMENTS, {"uris": uris}, SAVE_TIMEOUT_S,
                                      answer_first=False)
        except Exception as exc:  # no answer, or an error: the caller falls back as for a client without it
            logger.info("%s failed: %s", SAVE_DOCUMENTS, exc)
            return [], []
        return _uris(answer, "saved", uris), _uris(answer, "changedOnDisk", uris)


def _uris(answer: object, key: str, asked: list[str]) -> list[str]:
    """The asked-about URIs listed under `key` in the client's answer (anything else is ignored)."""
    listed = answer.get(key) if isinstance(answer, dict) else None
    return [uri for uri in listed if uri in asked] if isinstance(listed, list) else []


def shown_name(name: str) -> str:
    """A file's name as a notice says it: as is, or quoted with escapes when it holds a newline, a control or a bidi
    override (a step names files: one must not write the rest of the notice, nor reorder it)."""
    return name if name.isprintable() else json.dumps(name)


def changed_on_disk_notice(name: str) -> str:
    """What the user is told when the editor would not save the agent's edit of `name` over a change on disk."""
    name = shown_name(name)
    return (f"ollie: {name} changed on disk since the editor read it, so the agent's edit of it was not saved (it is "
            f"in the buffer only). Merge the two and save {name}, or reload it from disk.")


def note_source(ls: LanguageServer, doc: TextDocument) -> None:
    """Look, off the event loop, at what `doc`'s file is as the editor sends its text (didOpen, didChange): a link in
    the workspace (a step's `ln -s ~/.ssh/id_rsa notes.txt`) means the editor, as the user, read where it leads (its
    reload), and that text is never the file's again, even once a file is back (the same mtime and mode: no reload
    undid it) until the document is closed."""
    before = getattr(doc, "through_link", None)
    doc.through_link = asyncio.ensure_future(_through_link(ls, doc, before))  # type: ignore[attr-defined]


async def read_through_link(doc: TextDocument) -> bool:
    """Whether the editor's text of `doc` was sent while a link stood at its name (see `note_source`)."""
    check = getattr(doc, "through_link", None)
    # Shielded: a reader cancelled (an inline completion the user typed past) cancelled the check itself, and every
    # later check of the document, chained to it, and each reader of them, raised CancelledError until it was closed.
    return check is not None and await asyncio.shield(check)


async def _through_link(ls: LanguageServer, doc: TextDocument, before: asyncio.Future[bool] | None) -> bool:
    if before is not None and await before:
        return True
    path = Path(doc.path)
    for folder in list(ls.workspace.folders.values()):
        root = to_fs_path(folder.uri)
        if root and beneath.inside(root, path) and os.path.abspath(root) != str(path):
            # A link of the repository's own to another file of it (`CLAUDE.md -> AGENTS.md`) hands the editor
            # nothing the model may not read: only one leading out of the folder is a reach.
            if await plain_path_beneath(Path(root), path) is None and not await _leads_within(root, path):
                ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=(
                    f"ollie: {shown_name(path.name)} was read by the editor through a link: the agent reads that file "
                    "from disk, not from your buffer, until you close it")))
                return True
    return False


async def _leads_within(root: str, path: Path) -> bool:
    """Whether `path`, links followed, is a file beneath `root` (links followed too)."""
    real_root, real = await asyncio.gather(asyncio.to_thread(os.path.realpath, root),
                                           asyncio.to_thread(os.path.realpath, path))
    return beneath.inside(real_root, real) and real != real_root


def register_documents(server: LanguageServer) -> None:
    """Declare didOpen/didChange/didClose so `textDocumentSync.openClose` is advertised (pygls' workspace keeps them)."""

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        """pygls' workspace has stored the document: it keeps it as chunks instead (a keystroke costs its chunk)."""
        item = params.text_document
        doc = ls.workspace.text_documents[unquote(item.uri)] = ChunkedDocument(
            item.uri, item.text, item.version, item.language_id, position_codec=ls.workspace.position_codec)
        note_source(ls, doc)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        """pygls' workspace has dropped the document; the file tools see the disk again."""
