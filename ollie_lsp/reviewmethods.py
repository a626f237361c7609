"""The review methods: a turn's changes, undoing one of its hunks, rewinding to before it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ollie import beneath
from ollie.agent.review import ReviewError
from ollie.agent.stepchanges import step_changes, text_bytes
from ollie.agent.steps import Diff
from ollie.agent.undo import undo
from ollie.tools.documents import plain_path_beneath, while_no_step_writes
from ollie.workspace.bounds import LISTED, Bound
from ollie.workspace.errors import StaleChange, WorkspaceError
from ollie_lsp.dispatch import method
from ollie_lsp.documents import read_through_link
from ollie_lsp.errors import InvalidParams, Stale, invalid_params
from ollie_lsp.params import ChangesParams, ReviewUndoParams, RewindParams
from ollie_lsp.server import OllieServer

if TYPE_CHECKING:
    from ollie.workspace.types import FileChange


def _file_to_wire(change: FileChange, *, in_editor: bool = False) -> dict[str, Any]:
    from ollie.workspace.diff import line_counts  # difflib, loaded by the first review, not at start-up

    added, removed = line_counts(change)
    return {**Diff.of(change).to_wire(), "status": change.status, "binary": change.binary, "added": added,
            "removed": removed, "hunks": [h.to_dict() for h in change.hunks], "inEditor": in_editor}


@contextmanager
def _review_errors() -> Iterator[None]:
    """The engine's refusals as protocol errors: a stale file -32003, anything else -32602 naming the field."""
    try:
        yield
    except StaleChange as exc:
        raise Stale(exc.path, exc.reason) from None
    except ReviewError as exc:
        raise InvalidParams(f"{exc.field}: {exc}") from None
    except WorkspaceError as exc:
        raise InvalidParams(f"session: {exc}") from None


@method("ollie/changes", ChangesParams)
async def changes(ls: OllieServer, p: ChangesParams) -> dict[str, Any]:
    """The files a turn (default: the last) changed, each with its hunks: the first of them (LISTED), or one `path`."""
    live = await ls.table.get(p.session)
    # The last turn read once, now: a turn that starts while this diffs is not the one it looked back from.
    if (last := p.turn or len(live.core.session.turn_starts)) == 0:
        return {"turn": None, "files": []}
    with _review_errors():
        turn = await live.core.review.changes(last, ignored=p.ignored, path=p.path, changed=p.changed,
                                              bound=LISTED if p.path is None else None)
        # The steps' own diffs share the answer's bound with the listing: one message of a few MiB, not twice that.
        steps = await step_changes(live.core.session, live.core.review.checkpoints(), turn.turn, bound=Bound(
            LISTED.files, LISTED.text_bytes - text_bytes(turn.changes))) if p.path is None else {}
    files = [_file_to_wire(c, in_editor=c.path in turn.in_editor) for c in turn.changes]
    return {"turn": turn.turn, "files": files, **({"more": turn.more} if turn.more else {}),
            **({"last": last} if p.changed else {}),
            **({"steps": {i: [Diff.of(c).to_wire() for c in s] for i, s in steps.items()}} if steps else {})}


@method("ollie/review/undo", ReviewUndoParams)
async def review_undo(ls: OllieServer, p: ReviewUndoParams) -> dict[str, Any]:
    """Revert one hunk (or the whole file) of a turn's change: in the editor's buffer when open there, else on disk."""
    live = await ls.table.writable(p.session)
    core = live.core
    core.owners_only("undo its changes")  # the undo's note to the model is saved in the owner's history
    # Only a file beneath the session's root, with no symlink on the way, is looked up in the editor.
    target = await plain_path_beneath(core.cwd, p.path) if ls.documents.can_apply() else None
    # Found by the name the editor knows it by, the cwd's (`target` is where its folder is now): with the cwd swapped
    # for a link since the turn, the buffer is still found, and the review refuses the undo saying so (`beneath.moved`).
    doc = ls.documents.find(core.cwd / beneath.relative(core.cwd, p.path)) if target is not None else None
    if doc is not None and await read_through_link(doc):
        doc = None  # its text came through a link (a key a step linked in): undone on disk, never saved from it

    async def apply(change: FileChange, text: str) -> str | None:
        open_doc = doc
        assert open_doc is not None and target is not None
        # As an agent's edit: the editor's save follows a link, so no step may put one there until it has saved.
        result = await while_no_step_writes(core.cwd, target, lambda _: ls.documents.apply_edit(
            open_doc, text, open_doc.version or 0, label="ollie: undo"))
        return (result.formatted or text) if result.status == "applied" else None

    with _review_errors():
        undone = await undo(core.review, p.path, p.hunk, turn=p.turn, editor_text=doc.source if doc else None,
                            apply=apply if doc else None)
    return {"path": undone.path, "hunk": undone.hunk, "text": undone.text, "inEditor": undone.in_editor}


@method("ollie/rewind", RewindParams)
async def rewind(ls: OllieServer, p: RewindParams) -> dict[str, Any]:
    """Files and conversation back to before a turn (default: the last); `undo` undoes the last rewind."""
    live = await ls.table.writable(p.session)
    with _review_errors(), invalid_params("session", RuntimeError):
        done = await (live.core.rewind_undo() if p.undo else live.core.rewind(p.turn))
    buffers = [{"path": b.path, "status": b.status, **({"reason": b.reason} if b.reason else {})} for b in done.buffers]
    return {"turn": done.turn, "files": done.files, "buildOutput": list(done.build_output), "messages": done.messages,
            "turns": done.turns, "buffers": buffers}
