"""Review of a session's turns (numbered from 1): the changes of a turn, undo of a hunk or file, rewind (and its undo).

The shadow git (ollie.workspace) holds each turn's checkpoint and the state it left (pseudo-session `<id>-after`),
so all of it works from disk after a restart; a turn that ran nothing that may write logs no checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ollie import beneath
from ollie.agent.changes import ChangeTracker
from ollie.agent.editoredits import BufferRevert, EditorEdit, EditorEdits, revert_buffers
from ollie.agent.events import ChangedFile, TurnFiles
from ollie.agent.taskstate import plan_before
from ollie.backend.types import Message
from ollie.escapes import escaped
from ollie.sessions.session import UNCOUNTED, Session, reason_line, said_before
from ollie.tools.documents import EditorDocuments
from ollie.workspace.bounds import LISTED, Bound
from ollie.workspace.errors import StaleChange, WorkspaceError
from ollie.workspace.refs import is_checkpoint, present_refs, session_ref, turn_ref

if TYPE_CHECKING:  # the checkpoints and the changes' types load with the first turn that may write, or review request
    from ollie.workspace.checkpoints import Checkpoints
    from ollie.workspace.types import FileChange

    # What a front end calls to put an undo's result into an open editor buffer: the text it holds then (as its
    # format on save wrote it), None when not applied.
    ApplyEdit = Callable[[FileChange, str], Awaitable[str | None]]

log = logging.getLogger(__name__)

# The checkpoints logged for a session's turns: before each turn, and each turn's end (see Review.logged).
Logged = tuple[dict[int, str], dict[int, str]]

# The most files a turn's end event lists, and the most characters of their paths together: a step may write 50,000
# files under 4 KiB paths, which listed whole made one notification of up to 200 MB (built on the event loop, and more
# than an editor draws). Its count stays exact; `ollie/changes` lists them all.
END_LISTED_FILES = 100
# Hunk lines `/changes` shows in all: a screenful or two; each hunk past it says how many it leaves out.
SUMMARY_LINES_MAX = 120
SUMMARY_LINE_CHARS = 200  # a minified file's one line would fill the screen
END_LISTED_CHARS = 16 * 1024
# A rewind's backup is ollie's own file holding the whole history, as large as the session's log (read whole too): not
# capped as the model's workspace reads are (16 MiB, OLLIE_MAX_FILE_BYTES), which left a long session's rewind undone.
BACKUP_CAP = 1 << 32
# A bound that reads no file: the count alone.
COUNTED = Bound(files=0, text_bytes=0)


class ReviewError(ValueError):
    """A review request that cannot be carried out; `field` names the request field at fault, for the error."""

    def __init__(self, message: str, field: str = "turn") -> None:
        super().__init__(message)
        self.field = field


class ReviewHost(Protocol):
    """What review reads and drives of a session (the Core's TurnHost)."""

    session: Session
    sessions_dir: Path

    plan_text: str

    @property
    def plan_step(self) -> str: ...

    def save(self) -> None: ...

    async def save_rewritten(self) -> None: ...

    async def reread_plan(self, *, stale: bool = False) -> None: ...

    async def put_plan(self, text: str) -> None: ...


@dataclass(eq=False, repr=False)
class TurnChanges:
    """The files a turn changed, with hunks; `in_editor`: those changed in an open document (unsaved)."""

    turn: int
    changes: list[FileChange]
    in_editor: frozenset[str] = frozenset()
    # The files it changed past `changes` (read up to a bound): counted, not read.
    more: int = 0


@dataclass(eq=False, repr=False)
class Undone:
    """What an undo did: the file's text now (None: removed or binary) and whether the editor applied it."""

    path: str
    hunk: int | None
    text: str | None
    in_editor: bool


@dataclass(eq=False, repr=False)
class Rewound:
    """What a rewind (or its undo) did: the turn, the files (as the change list shows them), the messages left, the
    open buffers reverted, the build output it put back too (listed apart: a user never made it), and the turns the
    session has now (what a user counts: "4 messages" told her nothing)."""

    turn: int
    files: list[str]
    messages: int
    buffers: tuple[BufferRevert, ...] = ()
    build_output: tuple[str, ...] = ()
    turns: int = 0


def _after_session(session_id: str) -> str:
    return f"{session_id}-after"


def _logged(cwd: Path, session_ids: list[str]) -> bool:
    """Whether the shadow repository of `cwd` may hold refs of any of `session_ids` (their dirs: no git call)."""
    return bool(present_refs(cwd, [session_ref(sid).rstrip("/") for sid in session_ids]))


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


def _turn_files(changed: TurnChanges) -> TurnFiles:
    """The end event's list of the turn's first files (END_LISTED_FILES, END_LISTED_CHARS): each with its lines added
    and removed; its count exact."""
    from ollie.workspace.diff import line_counts  # loaded by the first turn that changed files

    listed: list[ChangedFile] = []
    chars = 0
    for c in changed.changes:
        chars += len(c.path)
        if len(listed) == END_LISTED_FILES or (listed and chars > END_LISTED_CHARS):
            break
        listed.append(ChangedFile(c.path, c.status, *line_counts(c), in_editor=c.path in changed.in_editor))
    return TurnFiles(changed.turn, len(changed.changes) + changed.more, tuple(listed))


def _describe_hunk(change: FileChange, index: int | None) -> str:
    if index is None:
        return f"{escaped(change.path, keep='')} (the whole file, back to before your change)"
    hunk = change.hunks[index]
    return f"{escaped(change.path, keep='')} lines {hunk.new_start}-{hunk.new_start + max(hunk.new_lines - 1, 0)} " \
           f"(@@ -{hunk.old_start},{hunk.old_lines} +{hunk.new_start},{hunk.new_lines} @@)"


# A rewind's cut turns' buffer edits (by turn and path) and the buffers it reverted, which its undo puts them back in.
_CutBuffers = tuple[dict[int, dict[str, EditorEdit]], set[str]]


def _read_backup(data: bytes) -> tuple[int, str, list[int], list[Message], str, dict[str, str], _CutBuffers]:
    """A rewind's backup, checked: its turn, undo checkpoint, turn starts, messages, plan, the plans the turns
    found and the cut turns' buffer edits with the buffers it reverted (ReviewError: damaged)."""
    from ollie.sessions.logparse import checked_messages  # with a rewind's backup, not with the engine
    try:
        backup = json.loads(data)
        turn, checkpoint = backup["turn"], backup["undo_checkpoint"]
        messages = checked_messages(backup["messages"])
        starts = backup["turn_starts"]
        plan, plans = backup.get("plan", ""), backup.get("plans_before", {})  # (none in a backup of an older ollie)
        edits, reverted = EditorEdits.loaded(backup.get("buffer_edits", {})), backup.get("reverted", [])
        if not (type(turn) is int and type(checkpoint) is str and is_checkpoint(checkpoint) and type(starts) is list
                and all(type(s) is int for s in starts) and type(plan) is str and type(plans) is dict
                and all(type(v) is str for v in plans.values()) and type(reverted) is list
                and all(type(p) is str for p in reverted)):
            raise ValueError("a turn, checkpoint, turn start, plan or buffer of the wrong type")
    except (KeyError, TypeError, ValueError) as exc:  # not JSON, not UTF-8, a field missing or of the wrong type
        raise ReviewError(f"the rewind's backup is damaged: {exc}", "undo") from None
    return turn, checkpoint, starts, messages, plan, plans, (edits, set(reverted))


class Review:
    """The review surface of one session; the Core holds one as `core.review` (docs/ENGINE-API.md)."""

    def __init__(self, host: ReviewHost, *, tracker: Callable[[], ChangeTracker],
                 add_note: Callable[[str, bool], None]) -> None:
        self._host = host
        self._tracker = tracker
        self._add_note = add_note
        self._current: int | None = None
        self._ending: asyncio.Future[None] | None = None  # `end_turn` records the state a turn left
        self._plan_found = ""  # the plan file as the running turn found it
        # The edits the file tools made to open documents, per turn (the checkpoints cannot see them).
        self.editor_edits = EditorEdits()

    # --- turn edges (called by the turn) -------------------------------------

    def _cwd(self) -> Path:
        return self._tracker().cwd

    def checkpoints(self) -> Checkpoints:
        """The session CWD's checkpoints; ReviewError when unavailable."""
        tracker = self._tracker()
        if tracker.checkpoints is None:
            raise ReviewError(f"no checkpoints for this workspace: {tracker.unavailable or 'unavailable'}")
        return tracker.checkpoints

    async def begin_turn(self) -> int:
        """Number the turn, note where its messages start, checkpoint the workspace before it."""
        session = self._host.session
        session.turn_starts.append(len(session.messages))
        turn = len(session.turn_starts)
        # One count per turn, this one's uncounted until it ends (a crash, a failed diff leave it so): those of turns a
        # rewind cut (kept for its undo) end here.
        earlier = session.turn_changed[:turn - 1]
        session.turn_changed = earlier + [UNCOUNTED] * (turn - len(earlier))
        session.turn_unknown.pop(str(turn), None)  # a cut turn's, kept for its undo
        self._current = turn
        self._plan_found = self._host.plan_text
        notes, session.review_notes = session.review_notes, []
        if notes:  # undone hunks: the model reads them with this turn's prompt, first (`turn_marks` reads them there)
            from ollie.agent.history import undid

            # Not those of a turn a rewind cut since (this one's number or later): the model never saw that turn.
            notes = [note for note in notes if all(number < turn for number, _ in undid(note))]
            self._add_note("\n\n".join(notes), True)
        await asyncio.to_thread(self._drop_rewind)  # a turn after a rewind makes it final
        try:
            tracker = self._tracker()
            await tracker.begin_turn(turn)  # its checkpoint waits for the turn's first step that may write
            # A rewound timeline may have left the refs of a turn of this number (no git call, and no checkpoints
            # made, when it did not); a new conversation's first turn (/clear, an agent switch) drops all the one
            # before left under this id, now its copy's: only then, so a crash while it was kept lost none.
            ids = [session.id, _after_session(session.id)]
            if turn == 1 and _logged(tracker.cwd, ids):
                stale = [turn_ref(t.session_id, t.turn) for sid in ids for t in await self.checkpoints().list_turns(sid)]
            else:
                stale = present_refs(tracker.cwd, [turn_ref(sid, turn) for sid in ids])
            if stale:
                await self.checkpoints().delete_refs(stale)
        except (ReviewError, WorkspaceError) as exc:
            log.info("no checkpoint before the turn", extra={"error": str(exc)})
        return turn

    async def start_over(self, kept: bool) -> None:
        """A new conversation in the session (/clear, an agent switch): its turns count from 1, and, once the one
        before was `kept` as a copy, no rewind of it can be undone into this one."""
        self.editor_edits.forget_from(1)
        if kept:
            await asyncio.to_thread(self._drop_rewind)

    async def copy_turns(self, source_id: str, last: int, target_id: str | None = None) -> set[int]:
        """Log turns 1 to `last` of session `source_id` (their checkpoints, the states they left) as this session's
        (or `target_id`'s), in one write: a kept or forked copy reviews them as its source did. The turns copied."""
        target = target_id or self._host.session.id
        try:
            if not _logged(self._cwd(), [source_id]):
                return set()  # none to copy: no git call (nor a shadow repository made for it)
            cp = self.checkpoints()
            turns = [t for sid in (source_id, _after_session(source_id)) for t in await cp.list_turns(sid)
                     if t.turn <= last]
            # The source's `<id>-after` refs go to the target's `<target>-after`.
            await cp.record_turns([(target + t.session_id[len(source_id):], t.turn, t.checkpoint) for t in turns])
        except (ReviewError, WorkspaceError) as exc:
            log.info("no checkpoints copied", extra={"error": str(exc)})
            return set()
        return {t.turn for t in turns if t.session_id == source_id}

    async def end_turn(self) -> TurnFiles | None:
        """Record the state the turn left (what its changes are measured to, and undo checks against); the files it
        changed, for its end event (None when none; `unknown` saying why when its diff failed)."""
        turn, self._current = self._current, None
        if turn is None:
            return None
        self._ending = asyncio.get_running_loop().create_future()
        session = self._host.session
        try:
            await self._host.reread_plan(stale=True)  # (a round an interrupt cut short was not read)
            if self._plan_found != self._host.plan_text:  # what a rewind to before this turn puts back
                self._note_plan_found(turn)
            else:  # changed and back (`plan_changes`): no change of this turn's
                session.plans_before.pop(str(turn), None)
            # The tracker reuses the last step's snapshot when nothing ran after it (ollie.agent.changes).
            begin, end = await self._tracker().end_turn()
            if begin is None:  # nothing ran that may write: no checkpoint, nothing to log (it changed no file)
                session.turn_changed[turn - 1] = 0
                if session.turn_starts[-1] == len(session.messages):  # nor saved its prompt (stopped as it began): none
                    session.turn_starts, session.turn_changed = session.turn_starts[:-1], session.turn_changed[:-1]
                    session.plans_before.pop(str(turn), None)
                return None
            cp = self.checkpoints()
            if end is not None:
                begin = await self._saved_buffers_before(turn, begin, end)
            records = [(session.id, turn, begin)] + ([(_after_session(session.id), turn, end)] if end is not None else [])
            await cp.record_turns(records)
            # Diffed once, here: the history marks the turns that changed files without a diff each, and the end
            # event lists them, so that a client need not ask again.
            changed = await self._changes(turn, (begin, end), bound=LISTED)
            session.turn_changed[turn - 1] = len(changed.changes) + changed.more
        except (ReviewError, WorkspaceError) as exc:
            log.info("no checkpoint after the turn", extra={"error": str(exc)})
            # Not "no changes": it may have changed files that no undo or rewind can take back, which the user is told.
            reason = session.turn_unknown[str(turn)] = reason_line(getattr(exc, "reason", str(exc)) or "its diff failed")
            again = said_before(session.turn_unknown, session.turn_changed, session.turn_starts, turn)
            return TurnFiles(turn, UNCOUNTED, (), reason, again)
        finally:
            ending, self._ending = self._ending, None
            ending.set_result(None)
        # Off the loop: a listed file may have hundreds of thousands of hunks (a 1 MiB file of alternate lines changed).
        return await asyncio.to_thread(_turn_files, changed) if changed.changes else None

    async def _saved_buffers_before(self, turn: int, begin: str, end: str) -> str:
        """The turn's checkpoint with each buffer it edited and saved as that buffer was before the turn: the save
        wrote the user's unsaved text too, which is not the turn's change (to list, undo or rewind, also once the
        daemon restarted and the buffer edits are forgotten)."""
        edits = self.editor_edits.since(turn)  # the running turn is the last
        if not edits:
            return begin
        cp = self.checkpoints()
        before: dict[str, tuple[bytes | None, str]] = {}  # one tree for them all
        for change in await cp.read_changes([e for e in await cp.diff_entries(begin, end) if e[0] in edits]):
            edit = edits.get(change.path)
            if edit is not None and change.new_text == edit.new_text and change.old_text != edit.old_text:
                # In the mode it had then ("": `begin`'s): the turn's end's (a step's `chmod +x`) outlived its rewind.
                before[change.path] = (edit.old_text.encode(), "")
        return await cp.tree_with(begin, before) if before else begin

    def plan_changes(self) -> None:
        """The plan file changes: in a turn, the plan it found is noted at once (saved with the round), for a fork of the
        turns before it while it runs (`plan_before`)."""
        if self._current is not None:
            self._note_plan_found(self._current)

    def _note_plan_found(self, turn: int) -> None:
        # Each set is saved with the round (TrackedDict): set again at every change, a turn's 256 KiB plan went to the
        # log once a round.
        if (plans := self._host.session.plans_before).get(str(turn)) != self._plan_found:
            plans[str(turn)] = self._plan_found

    def note_editor_edit(self, path: Path, old_text: str, new_text: str) -> None:
        """The editor applied an edit of the running turn to the open document `path` (absolute)."""
        try:
            rel = beneath.relative(self._cwd(), path)
        except beneath.OutsideRoot:
            return  # outside the CWD (which review lists)
        if self._current is None:
            return  # no turn to own it
        self.editor_edits.note(self._current, rel, old_text, new_text)
        self._tracker().note_editor_edit(EditorEdit(old_text, new_text).change(rel))  # the step's diffs show it too

    # --- the changes of a turn ----------------------------------------------

    def _turn_number(self, turn: int | None) -> int:
        count = len(self._host.session.turn_starts)
        if count == 0:
            raise ReviewError("this session has no turns yet")
        if turn is None:
            return count
        if not 1 <= turn <= count:
            raise ReviewError(f"no turn {turn}: this session has turns 1 to {count}")
        return turn

    async def logged(self) -> Logged:
        """The checkpoints this session's turns logged, read once for many `changes` (a load's of every turn: a git run or
        two a turn made a 1,000-turn session's load take seconds, its live updates held)."""
        cp, sid = self.checkpoints(), self._host.session.id
        before = {t.turn: t.checkpoint for t in await cp.list_turns(sid)}
        return before, {t.turn: t.checkpoint for t in await cp.list_turns(_after_session(sid))}

    async def _bounds(self, turn: int, logged: Logged | None = None) -> tuple[str, str | None] | None:
        """(checkpoint before `turn`, the state it left or None = now); None when it logged no checkpoint."""
        tracker = self._tracker()
        if turn == self._current:  # running: logged when it ends
            return (tracker.turn_begin, None) if tracker.turn_begin is not None else None
        before, ends = logged or await self.logged()
        if turn not in before:
            return None
        after = ends.get(turn) or (self._logged_after(before, turn) if turn < len(self._host.session.turn_starts)
                                   else None)
        return before[turn], after

    @staticmethod
    def _logged_after(before: dict[int, str], turn: int) -> str | None:
        """The checkpoint of the first turn after `turn` that logged one."""
        later = [t for t in before if t > turn]
        return before[min(later)] if later else None

    async def _state_before(self, turn: int) -> str:
        """The work tree as it was before `turn`: its checkpoint, else (it changed nothing) the next logged one's, else now."""
        bounds = await self._bounds(turn)
        if bounds is not None:
            return bounds[0]
        before = {t.turn: t.checkpoint for t in await self.checkpoints().list_turns(self._host.session.id)}
        return self._logged_after(before, turn) or await self.checkpoints().snapshot()

    async def changes(self, turn: int | None = None, *, ignored: bool = False, bound: Bound | None = None,
                      path: str | None = None, logged: Logged | None = None, changed: bool = False) -> TurnChanges:
        """The files turn `turn` (default: the last) changed, with their hunks, net of undos since; build output
        (`__pycache__`, what the project's git ignores: see ollie.workspace.ignored) only with `ignored`; read up to
        `bound` (the rest counted in `more`), or only `path`; `logged`: the turns' checkpoints, read before;
        `changed`: the last turn up to `turn` that changed files (`path`), turn 1's (none) when none did."""
        if self._ending is not None:  # asked as a turn's reply ends (its last words shown): the state it left, recorded
            await asyncio.shield(self._ending)
        number = self._turn_number(turn)
        if changed:
            logged = logged or await self.logged()
            counts = self._host.session.turn_changed
            for earlier in range(number, 1, -1):
                # A turn whose count (kept net of undos) is 0 changed no file: passed over without a diff, so a long
                # talk costs no git run a turn. Build output is not counted, and the running turn's count is not yet;
                # one UNCOUNTED (its end diff failed, a log without it) may have changed files: diffed.
                if ignored or earlier == self._current or earlier > len(counts) or counts[earlier - 1]:
                    found = await self._changes(earlier, await self._bounds(earlier, logged), ignored=ignored,
                                                bound=bound, path=path)
                    if found.changes:
                        return found
            number = 1
        return await self._changes(number, await self._bounds(number, logged), ignored=ignored, bound=bound,
                                   path=path)

    async def _changes(self, number: int, bounds: tuple[str, str | None] | None, *, ignored: bool = False,
                       bound: Bound | None = None, path: str | None = None) -> TurnChanges:
        """The changes of turn `number` between `bounds` (see `_bounds`), its buffer edits too."""
        from ollie.workspace.ignored import list_changes

        if bounds is not None:  # tests count the diffs of a turn by this line (none without a checkpoint)
            log.debug("turn changes diffed", extra={"turn": number})
        elif not self.editor_edits.edited(number):  # nothing to list: no thread hop (a log's 20,000 such turns: ~10 s)
            return TurnChanges(number, [])
        in_editor = await asyncio.to_thread(self.editor_edits.changes, number)  # diffs: off the event loop
        listing = await list_changes(self.checkpoints(), bounds, in_editor, build_output=ignored, bound=bound,
                                     path=path)
        return TurnChanges(number, listing.changes, frozenset(in_editor), listing.more)

    # --- undo ------------------------------------------------------------------

    async def undo(self, path: str, hunk: int | None = None, *, turn: int | None = None,
                   editor_text: str | None = None, apply: ApplyEdit | None = None) -> Undone:
        """Revert hunk `hunk` (None: the whole file) of the turn's change to `path`, through `apply` when the file is
        open (`editor_text`); StaleChange when it is no longer what the turn left (the user's edits are kept)."""
        if self._current is not None:  # the turn's end state is not recorded yet: nothing to check against
            raise ReviewError("a turn is running: undo when it has ended", "session")
        number = self._turn_number(turn)
        bounds = await self._bounds(number)
        # Build output is undone too, listed or not.
        turn_changes = await self._changes(number, bounds, ignored=True, path=path)
        change = next(iter(turn_changes.changes), None)
        if change is None:
            raise ReviewError(f"{path}: turn {number} did not change it (or it was undone already)", "path")
        path = change.path  # its own name: a client names one with a byte that is no UTF-8 as the wire wrote it ("?")
        if hunk is not None and not 0 <= hunk < len(change.hunks):
            raise ReviewError(f"{path}: no hunk {hunk} (it has {len(change.hunks)})", "hunk")
        folder = self._cwd() / path.rpartition("/")[0]
        if (path in turn_changes.in_editor or editor_text is not None) and (
                now := await asyncio.to_thread(beneath.moved, folder)) is not None:
            # The editor saves its buffer by name: through a link swapped in since on its way (another session's step),
            # the undone text would land where it leads. The disk's undo goes through the cwd held open instead.
            raise ReviewError(f"{path}: {folder} leads to {now} now (a directory on its way was swapped for a link): "
                              "the editor would save the undo there; not undone", "path")
        if path in turn_changes.in_editor:
            return await self._undo_in_editor(number, change, hunk, editor_text, apply)
        in_editor = False
        text: str | None = None
        if apply is not None and editor_text is not None and not change.binary:
            text = await _undone_in(change, hunk, editor_text)
            if text is not None:
                text = await apply(change, text)
                in_editor = text is not None
                if not in_editor:
                    raise ReviewError(f"{path}: the editor did not apply the undo", "path")
        if not in_editor or text is None:
            text = await _undo(self._cwd(), path, hunk, change, bounds[0] if bounds else None)
        # The turn's end state less the hunk, not the file now: a later turn's (or the user's) edits since, which the
        # undo kept, are not this turn's change.
        undone = change.old_data if change.binary or hunk is None else _undone_text(change, hunk)
        await self._record_undo(number, change, undone.encode() if isinstance(undone, str) else undone)
        await self._tell_model(number, change, hunk)
        return Undone(path, hunk, text, in_editor)

    async def _undo_in_editor(self, turn: int, change: FileChange, hunk: int | None, editor_text: str | None,
                              apply: ApplyEdit | None) -> Undone:
        """Undo a change the turn made in an open document: through the editor, onto its text (edits since kept)."""
        undone = _undone_text(change, hunk)  # the turn's change less the hunk: what it now lists
        if editor_text is None or apply is None:
            # Closed since: saved (the disk has the change, and maybe edits since) or thrown away.
            try:
                text = await _undo(self._cwd(), change.path, hunk, change)
            except StaleChange:
                raise StaleChange(change.path, "the editor's unsaved change is not in the file (closed without "
                                               "saving, or edited since where it changed); undo refused") from None
            in_editor = False
        else:
            text = await apply(change, await _undone_in(change, hunk, editor_text) or "")
            in_editor = text is not None
            if not in_editor:
                raise ReviewError(f"{change.path}: the editor did not apply the undo", "path")
            await self._undo_on_disk_too(turn, change, hunk, (change.new_text, editor_text), text, undone)
        self.editor_edits.settle(turn, change.path, undone)
        await self._tell_model(turn, change, hunk)
        return Undone(change.path, hunk, text, in_editor)

    async def _undo_on_disk_too(self, turn: int, change: FileChange, hunk: int | None, saved: tuple[str | None, ...],
                                text: str | None, undone: str | None) -> None:
        """A buffer edit the editor saved (the disk holds one of `saved`): its undo goes to the disk (`text`) and the
        turn's end state (`undone`; else listed again)."""
        if text is None or undone is None:
            return
        on_disk = await _read_text(self._cwd(), change.path)
        if on_disk in saved and on_disk != text:
            on_disk = await _undo(self._cwd(), change.path, hunk, change)
        if on_disk in (text, undone):
            await self._record_undo(turn, change, undone.encode())

    async def _tell_model(self, turn: int, change: FileChange, hunk: int | None) -> None:
        from ollie.agent.history import UNDID  # (not loaded before a first turn: an undo is rarer)

        session = self._host.session
        # Kept with the session (saved), so the model hears of it even after a restart.
        session.review_notes.append(UNDID.format(turn=turn) + _describe_hunk(change, hunk))
        # The history's count of the turn's files, net of the undo (kept as it was if the diff fails: the undo is done).
        with contextlib.suppress(ReviewError, WorkspaceError):
            if turn <= len(session.turn_changed):
                session.turn_changed[turn - 1] = (await self.changes(turn, bound=COUNTED)).more
        self._host.save()

    async def _record_undo(self, turn: int, change: FileChange, data: bytes | None) -> None:
        """Make the turn's recorded end state hold the undone file, so later undos check against it."""
        cp = self.checkpoints()
        bounds = await self._bounds(turn)
        if bounds is None:
            raise ReviewError(f"turn {turn} logged no checkpoint: nothing of it to undo")
        after = bounds[1]
        if after is None:
            after = await cp.snapshot()  # the last turn, still open: the work tree now (has the undo)
        mode = change.new_mode if change.new_mode not in ("", "000000") else change.old_mode
        tree = await cp.tree_with(after, {change.path: (data, mode)})
        await cp.record_turn(_after_session(self._host.session.id), turn, tree)

    # --- rewind ----------------------------------------------------------------

    def _rewind_path(self) -> Path:
        from ollie.sessions.logindex import rewind_name

        return self._host.sessions_dir / rewind_name(self._host.session.id)

    def _drop_rewind(self) -> None:
        # ENOTDIR and the like: no sessions dir, so no backup; the save reports that, the turn goes on.
        with contextlib.suppress(OSError):
            beneath.remove_sync(self._host.sessions_dir, self._rewind_path().name)

    async def _write_rewind(self, backup: dict[str, Any]) -> None:
        """The rewind's way back, synced to disk before anything changes."""
        # Beside the session logs, which a session in a store (OLLIE_STORE) never made: its rewind failed (ENOENT).
        await asyncio.to_thread(lambda: self._host.sessions_dir.mkdir(mode=0o700, parents=True, exist_ok=True))
        # The history's messages are encoded in a thread: O(history), the daemon's other sessions go on meanwhile.
        data = await asyncio.to_thread(lambda: json.dumps(backup, default=Message.to_dict).encode())
        await beneath.write_bytes(self._host.sessions_dir, self._rewind_path().name, data, 0o600, sync=True)

    async def rewind(self, turn: int | None = None, *, documents: EditorDocuments | None = None) -> Rewound:
        """Files back to before `turn` (default: the last), conversation cut there; open buffers through `documents`."""
        session = self._host.session
        number = self._turn_number(turn)
        start = session.turn_starts[number - 1]
        if start < 0 or start > len(session.messages):
            raise ReviewError(f"the conversation of turn {number} was compacted or cleared since: cannot rewind it")
        if number <= session.copied_turns:
            raise ReviewError(f"turn {number} came with this copy of another conversation (kept by /clear or an agent "
                              "switch, or forked), whose files have moved on since: it is reviewed here, not rewound; "
                              "undo its files one by one, or rewind a later turn")
        before = await self._state_before(number)
        cp = self.checkpoints()
        plans = session.plans_before
        # The cut turns' buffer edits are kept with it, not in memory: its undo after a window reload (a new daemon)
        # puts them back in the buffers too, where the agent's edit of her unsaved text was (it was lost unsaid).
        backup = {"turn": number, "undo_checkpoint": await cp.snapshot(), "turn_starts": list(session.turn_starts),
                  "messages": list(session.messages), "plan": self._host.plan_text, "plans_before": dict(plans),
                  "buffer_edits": self.editor_edits.saved(number)}
        # The way back is on disk before anything changes: a crash at any point after leaves it undoable.
        await self._write_rewind(backup)
        restored = await cp.restore(before)
        if restored.undo_checkpoint != backup["undo_checkpoint"]:  # a file changed in between: keep that too
            backup["undo_checkpoint"] = restored.undo_checkpoint
            await self._write_rewind(backup)
        buffers: list[BufferRevert] = []
        if documents is not None:
            buffers = await revert_buffers(self.editor_edits.since(number), documents, self._cwd())
        if reverted := [b.path for b in buffers if b.status == "reverted"]:  # the buffers its undo puts the edits back in
            backup["reverted"] = reverted
            await self._write_rewind(backup)
        starts = session.turn_starts[:number - 1]
        self.editor_edits.forget_from(number)
        from ollie.agent.history import undid  # (a rewind is rarer than a turn)

        # What the user undid of the turns kept, which only the cut prompts told the model: told again with the next
        # one (the model went on as if the files held its changes, and the history lost the turns' undone marks).
        told = [note for m in session.messages[start:] if m.notes for turn, note in undid(m.notes) if turn < number]
        # The plan as turn `number` found it: as the first turn cut that changed it found it (none did: as it is).
        if (found := plan_before(plans, number)) is not None:
            await self._put_plan(found)
        cut = [str(t) for t in range(number, len(session.turn_starts) + 1)]
        session.replace_messages(session.messages[:start])
        session.turn_starts = starts
        session.plans_before = {t: plan for t, plan in plans.items() if t not in cut}
        session.review_notes[:0] = told
        await self._host.save_rewritten()
        return await self._rewound(number, restored.changes, tuple(buffers))

    async def rewind_undo(self, *, documents: EditorDocuments | None = None) -> Rewound:
        """Put the files and the conversation back as they were before the last rewind; open buffers it reverted
        through `documents`."""
        try:
            data = await beneath.read_bytes(self._host.sessions_dir, self._rewind_path().name, BACKUP_CAP)
        except FileNotFoundError:
            raise ReviewError("no rewind to undo (a turn has run since, or none was made)", "undo") from None
        # All of it checked before the files go back: a backup that fails after the restore leaves them half done.
        turn, checkpoint, starts, messages, plan, plans, (edits, reverted) = await asyncio.to_thread(_read_backup, data)
        restored = await self.checkpoints().restore(checkpoint)
        session = self._host.session
        if plan != self._host.plan_text:
            await self._put_plan(plan)
        session.replace_messages(messages)
        session.turn_starts, session.plans_before = starts, plans
        from ollie.agent.history import undid

        # The undos the rewind was to tell again are in the prompts it puts back.
        told = {note for m in messages if m.notes for _, note in undid(m.notes)}
        session.review_notes = [note for note in session.review_notes if note not in told]
        await self._host.save_rewritten()
        await asyncio.to_thread(self._drop_rewind)
        # Its buffer edits too: a second rewind named no buffer she had typed in since, and her save wrote them back.
        self.editor_edits.put_back(edits)
        buffers: list[BufferRevert] = []
        if documents is not None and reverted:
            back = {path: edit for path, edit in self.editor_edits.since(turn).items() if path in reverted}
            buffers = await revert_buffers(back, documents, self._cwd(), undo=True)
        return await self._rewound(turn, restored.changes, tuple(buffers))

    async def _put_plan(self, text: str) -> None:
        """The plan back as `text`, and the task state's step with it (compaction's: the model reads it)."""
        await self._host.put_plan(text)
        if (state := self._host.session.task_state) is not None:
            state.plan_step = self._host.plan_step

    async def _rewound(self, turn: int, changes: Sequence[FileChange], buffers: tuple[BufferRevert, ...] = ()) -> Rewound:
        """What a rewind restored, the build output apart (the change list leaves it out: ollie.workspace.ignored)."""
        from ollie.workspace.ignored import ignored

        cp = self.checkpoints()
        paths = [c.path for c in changes]
        hidden = await ignored(cp.git, cp.root, paths)
        session = self._host.session
        return Rewound(turn, [p for p in paths if p not in hidden], len(session.messages), buffers,
                       tuple(p for p in paths if p in hidden), len(session.turn_starts))


async def _read_text(root: Path, rel: str) -> str | None:
    try:
        return await beneath.read_text(root, rel)
    except (OSError, UnicodeDecodeError):
        return None


def summary(turn_changes: TurnChanges) -> str:
    """The `/changes` text: each file with its status and hunks (their lines, up to a bound), numbered as undo
    takes them."""
    if not turn_changes.changes:
        return f"turn {turn_changes.turn}: no files changed"
    lines = [f"turn {turn_changes.turn}: {len(turn_changes.changes) + turn_changes.more} file(s) changed"]
    budget = SUMMARY_LINES_MAX
    from ollie.workspace.diff import line_counts

    for change in turn_changes.changes:
        added, removed = line_counts(change)
        what = "binary" if change.binary else f"+{added} -{removed}"
        lines.append(f"{change.status} {escaped(change.path, keep='')} ({what})")  # a name's lines are no hunk's
        for i, hunk in enumerate(change.hunks):
            lines.append(f"  [{i}] @@ -{hunk.old_start},{hunk.old_lines} +{hunk.new_start},{hunk.new_lines} @@")
            shown = hunk.lines[:budget]
            budget -= len(shown)
            lines += [f"      {_cut(line.rstrip(chr(13) + chr(10)))}" for line in shown]
            if len(hunk.lines) > len(shown):  # the rest: the editor's review, or `ollie/changes {turn, path}`
                lines.append(f"      … {len(hunk.lines) - len(shown)} more line(s)")
    if turn_changes.more:
        lines.append(f"... and {turn_changes.more} more file(s), not listed")
    return "\n".join(lines)


def _cut(line: str) -> str:
    return line if len(line) <= SUMMARY_LINE_CHARS else f"{line[:SUMMARY_LINE_CHARS]}… ({len(line)} characters)"
