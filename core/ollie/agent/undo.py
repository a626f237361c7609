"""Undo of a hunk or a file of a turn's change, on disk or through the editor's open buffer (ollie.agent.review)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ollie import beneath
from ollie.agent.review import COUNTED, ReviewError, after_session
from ollie.escapes import escaped
from ollie.workspace.errors import StaleChange, WorkspaceError

if TYPE_CHECKING:
    from ollie.agent.review import Review
    from ollie.workspace.types import FileChange

    # What a front end calls to put an undo's result into an open editor buffer: the text it holds then (as its
    # format on save wrote it), None when not applied.
    ApplyEdit = Callable[[FileChange, str], Awaitable[str | None]]


@dataclass(eq=False, repr=False)
class Undone:
    """What an undo did: the file's text now (None: removed or binary) and whether the editor applied it."""

    path: str
    hunk: int | None
    text: str | None
    in_editor: bool


async def _undo(cwd: Path, path: str, hunk: int | None, change: FileChange, before: str | None = None) -> str | None:
    """`ollie.workspace.review.undo` (`before`: the change's checkpoint, for a deleted file's mode), loaded at the
    first undo."""
    from ollie.workspace.review import undo

    return await undo(cwd, path, hunk, change, before)


async def _undone_in(change: FileChange, hunk: int | None, now: str) -> str | None:
    """The editor's text `now` with the hunk (None: the file's change) undone: edits since it kept, refused when one
    touched its lines."""
    if now == change.new_text:
        return _undone_text(change, hunk)
    from ollie.workspace.review import undone_onto

    return await asyncio.to_thread(undone_onto, change, hunk, now)  # a diff: off the event loop


def _undone_text(change: FileChange, hunk: int | None) -> str | None:
    """The change's text before the turn, or after it less hunk `hunk` (`ollie.workspace.diff`, loaded at the first
    undo)."""
    if hunk is None:
        return change.old_text
    from ollie.workspace.diff import text_after_undo

    return text_after_undo(change, hunk)


def _describe_hunk(change: FileChange, index: int | None) -> str:
    if index is None:
        return f"{escaped(change.path, keep='')} (the whole file, back to before your change)"
    hunk = change.hunks[index]
    return f"{escaped(change.path, keep='')} lines {hunk.new_start}-{hunk.new_start + max(hunk.new_lines - 1, 0)} " \
           f"(@@ -{hunk.old_start},{hunk.old_lines} +{hunk.new_start},{hunk.new_lines} @@)"


async def _applied(apply: ApplyEdit, change: FileChange, text: str) -> str:
    """`text` put in the change's open buffer through `apply`: what the buffer holds then; ReviewError when refused."""
    if (held := await apply(change, text)) is None:
        raise ReviewError(f"{change.path}: the editor did not apply the undo", "path")
    return held


async def _read_text(root: Path, rel: str) -> str | None:
    try:
        return await beneath.read_text(root, rel)
    except (OSError, UnicodeDecodeError):
        return None


async def undo(review: Review, path: str, hunk: int | None = None, *, turn: int | None = None,
               editor_text: str | None = None, apply: ApplyEdit | None = None) -> Undone:
    """Revert hunk `hunk` (None: the whole file) of the turn's change to `path`, through `apply` when the file is
    open (`editor_text`); StaleChange when it is no longer what the turn left (the user's edits are kept)."""
    if review.current is not None:  # the turn's end state is not recorded yet: nothing to check against
        raise ReviewError("a turn is running: undo when it has ended", "session")
    number = review.turn_number(turn)
    bounds = await review.bounds(number)
    # Build output is undone too, listed or not.
    turn_changes = await review.diffed(number, bounds, ignored=True, path=path)
    change = next(iter(turn_changes.changes), None)
    if change is None:
        raise ReviewError(f"{path}: turn {number} did not change it (or it was undone already)", "path")
    path = change.path  # its own name: a client names one with a byte that is no UTF-8 as the wire wrote it ("?")
    if hunk is not None and not 0 <= hunk < len(change.hunks):
        raise ReviewError(f"{path}: no hunk {hunk} (it has {len(change.hunks)})", "hunk")
    folder = review.cwd() / path.rpartition("/")[0]
    if (path in turn_changes.in_editor or editor_text is not None) and (
            now := await asyncio.to_thread(beneath.moved, folder)) is not None:
        # The editor saves its buffer by name: through a link swapped in since on its way (another session's step),
        # the undone text would land where it leads. The disk's undo goes through the cwd held open instead.
        raise ReviewError(f"{path}: {folder} leads to {now} now (a directory on its way was swapped for a link): "
                          "the editor would save the undo there; not undone", "path")
    if path in turn_changes.in_editor:
        return await _undo_in_editor(review, number, change, hunk, editor_text, apply)
    in_editor = False
    text: str | None = None
    if apply is not None and editor_text is not None and not change.binary:
        text = await _undone_in(change, hunk, editor_text)
        if text is not None:
            text, in_editor = await _applied(apply, change, text), True
    if not in_editor:
        text = await _undo(review.cwd(), path, hunk, change, bounds[0] if bounds else None)
    # The turn's end state less the hunk, not the file now: a later turn's (or the user's) edits since, which the
    # undo kept, are not this turn's change.
    undone = change.old_data if change.binary or hunk is None else _undone_text(change, hunk)
    await _record_undo(review, number, change, undone.encode() if isinstance(undone, str) else undone)
    await _tell_model(review, number, change, hunk)
    return Undone(path, hunk, text, in_editor)


async def _undo_in_editor(review: Review, turn: int, change: FileChange, hunk: int | None, editor_text: str | None,
                          apply: ApplyEdit | None) -> Undone:
    """Undo a change the turn made in an open document: through the editor, onto its text (edits since kept)."""
    undone = _undone_text(change, hunk)  # the turn's change less the hunk: what it now lists
    if editor_text is None or apply is None:
        # Closed since: saved (the disk has the change, and maybe edits since) or thrown away.
        try:
            text = await _undo(review.cwd(), change.path, hunk, change)
        except StaleChange:
            raise StaleChange(change.path, "the editor's unsaved change is not in the file (closed without "
                                           "saving, or edited since where it changed); undo refused") from None
        in_editor = False
    else:
        text, in_editor = await _applied(apply, change, await _undone_in(change, hunk, editor_text) or ""), True
        await _undo_on_disk_too(review, turn, change, hunk, (change.new_text, editor_text), text, undone)
    review.editor_edits.settle(turn, change.path, undone)
    await _tell_model(review, turn, change, hunk)
    return Undone(change.path, hunk, text, in_editor)


async def _undo_on_disk_too(review: Review, turn: int, change: FileChange, hunk: int | None, saved: tuple[str | None, ...],
                            text: str | None, undone: str | None) -> None:
    """A buffer edit the editor saved (the disk holds one of `saved`): its undo goes to the disk (`text`) and the
    turn's end state (`undone`; else listed again)."""
    if text is None or undone is None:
        return
    on_disk = await _read_text(review.cwd(), change.path)
    if on_disk in saved and on_disk != text:
        on_disk = await _undo(review.cwd(), change.path, hunk, change)
    if on_disk in (text, undone):
        await _record_undo(review, turn, change, undone.encode())


async def _tell_model(review: Review, turn: int, change: FileChange, hunk: int | None) -> None:
    from ollie.agent.history import UNDID  # (not loaded before a first turn: an undo is rarer)

    session = review.host.session
    # Kept with the session (saved), so the model hears of it even after a restart.
    session.review_notes.append(UNDID.format(turn=turn) + _describe_hunk(change, hunk))
    # The history's count of the turn's files, net of the undo (kept as it was if the diff fails: the undo is done).
    with contextlib.suppress(ReviewError, WorkspaceError):
        if turn <= len(session.turn_changed):
            session.turn_changed[turn - 1] = (await review.changes(turn, bound=COUNTED)).more
    review.host.save()


async def _record_undo(review: Review, turn: int, change: FileChange, data: bytes | None) -> None:
    """Make the turn's recorded end state hold the undone file, so later undos check against it."""
    cp = review.checkpoints()
    bounds = await review.bounds(turn)
    if bounds is None:
        raise ReviewError(f"turn {turn} logged no checkpoint: nothing of it to undo")
    after = bounds[1]
    if after is None:
        after = await cp.snapshot()  # the last turn, still open: the work tree now (has the undo)
    mode = change.new_mode if change.new_mode not in ("", "000000") else change.old_mode
    tree = await cp.tree_with(after, {change.path: (data, mode)})
    await cp.record_turn(after_session(review.host.session.id), turn, tree)

