"""Review of a session's turns (numbered from 1): their edges and the changes of each (undo and rewind: ollie.agent.undo,
ollie.agent.rewind).

The shadow git (ollie.workspace) holds each turn's checkpoint and the state it left (pseudo-session `<id>-after`),
so all of it works from disk after a restart; a turn that ran nothing that may write logs no checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ollie import beneath
from ollie.agent.changes import ChangeTracker
from ollie.agent.editoredits import EditorEdit, EditorEdits
from ollie.agent.events import ChangedFile, TurnFiles
from ollie.sessions.session import UNCOUNTED, Session, reason_line, said_before
from ollie.workspace.bounds import LISTED, Bound
from ollie.workspace.errors import WorkspaceError
from ollie.workspace.refs import present_refs, session_ref, turn_ref

if TYPE_CHECKING:  # the checkpoints and the changes' types load with the first turn that may write, or review request
    from ollie.workspace.checkpoints import Checkpoints
    from ollie.workspace.types import FileChange

log = logging.getLogger(__name__)

# The checkpoints logged for a session's turns: before each turn, and each turn's end (see Review.logged).
Logged = tuple[dict[int, str], dict[int, str]]

# The most files a turn's end event lists, and the most characters of their paths together: a step may write 50,000
# files under 4 KiB paths, which listed whole made one notification of up to 200 MB (built on the event loop, and more
# than an editor draws). Its count stays exact; `ollie/changes` lists them all.
END_LISTED_FILES = 100
END_LISTED_CHARS = 16 * 1024
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


def after_session(session_id: str) -> str:
    """The pseudo-session whose refs hold the states the turns of `session_id` left."""
    return f"{session_id}-after"


def rewind_backup_name(host: ReviewHost) -> str:
    """The name of the session's rewind backup in its sessions dir (ollie.agent.rewind)."""
    from ollie.sessions.logindex import rewind_name

    return rewind_name(host.session.id)


def _logged(cwd: Path, session_ids: list[str]) -> bool:
    """Whether the shadow repository of `cwd` may hold refs of any of `session_ids` (their dirs: no git call)."""
    return bool(present_refs(cwd, [session_ref(sid).rstrip("/") for sid in session_ids]))


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


class Review:
    """The review surface of one session; the Core holds one as `core.review` (docs/ENGINE-API.md)."""

    def __init__(self, host: ReviewHost, *, tracker: Callable[[], ChangeTracker],
                 add_note: Callable[[str, bool], None]) -> None:
        self.host = host
        self._tracker = tracker
        self._add_note = add_note
        self.current: int | None = None  # the running turn's number
        self._ending: asyncio.Future[None] | None = None  # `end_turn` records the state a turn left
        self._plan_found = ""  # the plan file as the running turn found it
        # The edits the file tools made to open documents, per turn (the checkpoints cannot see them).
        self.editor_edits = EditorEdits()

    # --- turn edges (called by the turn) -------------------------------------

    def cwd(self) -> Path:
        """The session's CWD (whose changes review lists)."""
        return self._tracker().cwd

    def checkpoints(self) -> Checkpoints:
        """The session CWD's checkpoints; ReviewError when unavailable."""
        tracker = self._tracker()
        if tracker.checkpoints is None:
            raise ReviewError(f"no checkpoints for this workspace: {tracker.unavailable or 'unavailable'}")
        return tracker.checkpoints

    async def begin_turn(self) -> int:
        """Number the turn, note where its messages start, checkpoint the workspace before it."""
        session = self.host.session
        session.turn_starts.append(len(session.messages))
        turn = len(session.turn_starts)
        # One count per turn, this one's uncounted until it ends (a crash, a failed diff leave it so): those of turns a
        # rewind cut (kept for its undo) end here.
        earlier = session.turn_changed[:turn - 1]
        session.turn_changed = earlier + [UNCOUNTED] * (turn - len(earlier))
        session.turn_unknown.pop(str(turn), None)  # a cut turn's, kept for its undo
        self.current = turn
        self._plan_found = self.host.plan_text
        notes, session.review_notes = session.review_notes, []
        if notes:  # undone hunks: the model reads them with this turn's prompt, first (`turn_marks` reads them there)
            from ollie.agent.history import undid

            # Not those of a turn a rewind cut since (this one's number or later): the model never saw that turn.
            notes = [note for note in notes if all(number < turn for number, _ in undid(note))]
            self._add_note("\n\n".join(notes), True)
        await asyncio.to_thread(self.drop_rewind)  # a turn after a rewind makes it final
        try:
            tracker = self._tracker()
            await tracker.begin_turn(turn)  # its checkpoint waits for the turn's first step that may write
            # A rewound timeline may have left the refs of a turn of this number (no git call, and no checkpoints
            # made, when it did not); a new conversation's first turn (/clear, an agent switch) drops all the one
            # before left under this id, now its copy's: only then, so a crash while it was kept lost none.
            ids = [session.id, after_session(session.id)]
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
            await asyncio.to_thread(self.drop_rewind)

    async def copy_turns(self, source_id: str, last: int, target_id: str | None = None) -> set[int]:
        """Log turns 1 to `last` of session `source_id` (their checkpoints, the states they left) as this session's
        (or `target_id`'s), in one write: a kept or forked copy reviews them as its source did. The turns copied."""
        target = target_id or self.host.session.id
        try:
            if not _logged(self.cwd(), [source_id]):
                return set()  # none to copy: no git call (nor a shadow repository made for it)
            cp = self.checkpoints()
            turns = [t for sid in (source_id, after_session(source_id)) for t in await cp.list_turns(sid)
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
        turn, self.current = self.current, None
        if turn is None:
            return None
        self._ending = asyncio.get_running_loop().create_future()
        session = self.host.session
        try:
            await self.host.reread_plan(stale=True)  # (a round an interrupt cut short was not read)
            if self._plan_found != self.host.plan_text:  # what a rewind to before this turn puts back
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
            records = [(session.id, turn, begin)] + ([(after_session(session.id), turn, end)] if end is not None else [])
            await cp.record_turns(records)
            # Diffed once, here: the history marks the turns that changed files without a diff each, and the end
            # event lists them, so that a client need not ask again.
            changed = await self.diffed(turn, (begin, end), bound=LISTED)
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
        if self.current is not None:
            self._note_plan_found(self.current)

    def _note_plan_found(self, turn: int) -> None:
        # Each set is saved with the round (TrackedDict): set again at every change, a turn's 256 KiB plan went to the
        # log once a round.
        if (plans := self.host.session.plans_before).get(str(turn)) != self._plan_found:
            plans[str(turn)] = self._plan_found

    def note_editor_edit(self, path: Path, old_text: str, new_text: str) -> None:
        """The editor applied an edit of the running turn to the open document `path` (absolute)."""
        try:
            rel = beneath.relative(self.cwd(), path)
        except beneath.OutsideRoot:
            return  # outside the CWD (which review lists)
        if self.current is None:
            return  # no turn to own it
        self.editor_edits.note(self.current, rel, old_text, new_text)
        self._tracker().note_editor_edit(EditorEdit(old_text, new_text).change(rel))  # the step's diffs show it too

    # --- the changes of a turn ----------------------------------------------

    def turn_number(self, turn: int | None) -> int:
        count = len(self.host.session.turn_starts)
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
        cp, sid = self.checkpoints(), self.host.session.id
        before = {t.turn: t.checkpoint for t in await cp.list_turns(sid)}
        return before, {t.turn: t.checkpoint for t in await cp.list_turns(after_session(sid))}

    async def bounds(self, turn: int, logged: Logged | None = None) -> tuple[str, str | None] | None:
        """(checkpoint before `turn`, the state it left or None = now); None when it logged no checkpoint."""
        tracker = self._tracker()
        if turn == self.current:  # running: logged when it ends
            return (tracker.turn_begin, None) if tracker.turn_begin is not None else None
        before, ends = logged or await self.logged()
        if turn not in before:
            return None
        after = ends.get(turn) or (self._logged_after(before, turn) if turn < len(self.host.session.turn_starts)
                                   else None)
        return before[turn], after

    @staticmethod
    def _logged_after(before: dict[int, str], turn: int) -> str | None:
        """The checkpoint of the first turn after `turn` that logged one."""
        later = [t for t in before if t > turn]
        return before[min(later)] if later else None

    async def state_before(self, turn: int) -> str:
        """The work tree as it was before `turn`: its checkpoint, else (it changed nothing) the next logged one's, else now."""
        bounds = await self.bounds(turn)
        if bounds is not None:
            return bounds[0]
        before = {t.turn: t.checkpoint for t in await self.checkpoints().list_turns(self.host.session.id)}
        return self._logged_after(before, turn) or await self.checkpoints().snapshot()

    async def changes(self, turn: int | None = None, *, ignored: bool = False, bound: Bound | None = None,
                      path: str | None = None, logged: Logged | None = None, changed: bool = False) -> TurnChanges:
        """The files turn `turn` (default: the last) changed, with their hunks, net of undos since; build output
        (`__pycache__`, what the project's git ignores: see ollie.workspace.ignored) only with `ignored`; read up to
        `bound` (the rest counted in `more`), or only `path`; `logged`: the turns' checkpoints, read before;
        `changed`: the last turn up to `turn` that changed files (`path`), turn 1's (none) when none did."""
        if self._ending is not None:  # asked as a turn's reply ends (its last words shown): the state it left, recorded
            await asyncio.shield(self._ending)
        number = self.turn_number(turn)
        if changed:
            logged = logged or await self.logged()
            counts = self.host.session.turn_changed
            for earlier in range(number, 1, -1):
                # A turn whose count (kept net of undos) is 0 changed no file: passed over without a diff, so a long
                # talk costs no git run a turn. Build output is not counted, and the running turn's count is not yet;
                # one UNCOUNTED (its end diff failed, a log without it) may have changed files: diffed.
                if ignored or earlier == self.current or earlier > len(counts) or counts[earlier - 1]:
                    found = await self.diffed(earlier, await self.bounds(earlier, logged), ignored=ignored,
                                                bound=bound, path=path)
                    if found.changes:
                        return found
            number = 1
        return await self.diffed(number, await self.bounds(number, logged), ignored=ignored, bound=bound,
                                   path=path)

    async def diffed(self, number: int, bounds: tuple[str, str | None] | None, *, ignored: bool = False,
                       bound: Bound | None = None, path: str | None = None) -> TurnChanges:
        """The changes of turn `number` between `bounds` (see `bounds`), its buffer edits too."""
        from ollie.workspace.ignored import list_changes

        if bounds is not None:  # tests count the diffs of a turn by this line (none without a checkpoint)
            log.debug("turn changes diffed", extra={"turn": number})
        elif not self.editor_edits.edited(number):  # nothing to list: no thread hop (a log's 20,000 such turns: ~10 s)
            return TurnChanges(number, [])
        in_editor = await asyncio.to_thread(self.editor_edits.changes, number)  # diffs: off the event loop
        listing = await list_changes(self.checkpoints(), bounds, in_editor, build_output=ignored, bound=bound,
                                     path=path)
        return TurnChanges(number, listing.changes, frozenset(in_editor), listing.more)

    def drop_rewind(self) -> None:
        """Make the last rewind final: its backup (ollie.agent.rewind) goes."""
        # ENOTDIR and the like: no sessions dir, so no backup; the save reports that, the turn goes on.
        with contextlib.suppress(OSError):
            beneath.remove_sync(self.host.sessions_dir, rewind_backup_name(self.host))
