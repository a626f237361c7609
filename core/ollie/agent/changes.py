"""Per-session change tracking: a checkpoint before each turn that writes, and the files each write-capable step changed."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ollie.agent.editoredits import EditorEdit
from ollie.workspace.errors import CheckpointUnavailable, WorkspaceError

if TYPE_CHECKING:  # the checkpoints (git, the tree's inotify watch) load with the first step that may write
    from ollie.workspace.checkpoints import Checkpoints
    from ollie.workspace.ignored import Listing
    from ollie.workspace.types import FileChange

log = logging.getLogger("ollie.agent.changes")


class ChangeTracker:
    """The checkpoints of one session's CWD; `unavailable` says why there are none (then nothing is tracked).

    `before_step()` / `after_step(token)` bracket a step that can write; reads take no snapshot. A turn's
    checkpoint is taken lazily, at its first write-capable step or hook (nothing the engine ran can have
    changed the tree before). A snapshot is reused as the next "before" until something may have written
    (`touched()`); a turn's begin snapshot is always new (re-read where the kernel saw changes), so the user's
    own edits never count as the agent's.
    """

    def __init__(self, cwd: Path | str, session_id: str, *,
                 on_unavailable: Callable[[str], None] | None = None) -> None:
        self.cwd = Path(cwd)
        self.session_id = session_id
        self._checkpoints: Checkpoints | None = None  # made at first use (None after that: unavailable)
        self.unavailable: str | None = None
        # Told once, when checkpoints turn out to be impossible here (the setup warning).
        self._on_unavailable = on_unavailable
        self._failed = ""  # why snapshots fail since the last that succeeded: said once (the steps between have no
        # diffs), and by a turn's end that has no checkpoint before it
        self._taken = False  # a snapshot succeeded here: the tree was fit to checkpoint, and only a step made it unfit
        self._unfit = False  # since a step made it unfit, snapshots wait for a turn's edge (each try reads the tree)
        # The last snapshot, while nothing the engine ran can have written since (None: take a new one).
        self._fresh: str | None = None
        # Edits a step made to documents open in the editor (unsaved: no snapshot sees them), by path.
        self._in_editor: dict[str, FileChange] = {}
        # The running turn (None between turns), and its checkpoint once something that may write came.
        self._turn: int | None = None
        self._begin: str | None = None
        self._begun = False

    def note_editor_edit(self, change: FileChange) -> None:
        """A step's edit went to an open editor buffer: it is one of the step's changes (first old, last new text)."""
        first = self._in_editor.get(change.path)
        self._in_editor[change.path] = change if first is None else EditorEdit(
            first.old_text or "", change.new_text or "").change(change.path)

    @property
    def checkpoints(self) -> Checkpoints | None:
        """The CWD's checkpoints, made at the first use; None once they turned out to be unavailable."""
        if self._checkpoints is None and self.unavailable is None:
            from ollie.workspace.checkpoints import Checkpoints

            self._checkpoints = Checkpoints(self.cwd)
        return self._checkpoints

    def touched(self) -> None:
        """Something ran that may have written the workspace outside a tracked step: the next snapshot is new."""
        self._fresh = None

    def _give_up(self, reason: str) -> None:
        self._checkpoints = None
        self.unavailable = reason  # as short as the check said it: each turn that may write ends saying it
        log.info("checkpoints unavailable", extra={"cwd": str(self.cwd), "reason": reason})
        if self._on_unavailable is not None:
            self._on_unavailable(f"no checkpoints or per-step diffs for {self.cwd}: {reason}")

    async def _snapshot(self, *, edge: bool = False) -> str | None:
        """A checkpoint of the work tree now (`Checkpoints.snapshot`); None when unavailable (decided once), a git
        command failed, or a step made the tree unfit and this is no turn's `edge`."""
        self._fresh = None
        checkpoints = self.checkpoints
        if checkpoints is None or (self._unfit and not edge):
            return None
        try:
            self._fresh = await checkpoints.snapshot()
        except CheckpointUnavailable as exc:
            if not self._taken:  # the project itself ($HOME, too big, a FIFO): decided once
                self._give_up(exc.reason)
                return None
            # A step made the tree unfit (50,001 new files, a FIFO .gitignore): giving up would blind review for the
            # rest of the session once it undid that. A failed snapshot, as below: tried again at the next.
            problem: Exception = exc
            self._unfit = True
        except (WorkspaceError, OSError) as exc:
            problem = exc
        else:
            self._taken, self._failed, self._unfit = True, "", False
            if self._on_unavailable is not None:  # else a step's 1 MiB `.envrc`, or `.venv`'s `evil.pth`, went unseen
                for what, names in ((f"files over the checkpoints' {checkpoints.max_file_bytes >> 20} MiB or not "
                                     "regular", checkpoints.left_out),
                                    ("files the project ignores that programs run at their start", checkpoints.started)):
                    if names:
                        more = f" and {len(names) - 5} more" if len(names) > 5 else ""
                        self._on_unavailable(f"no diff shows, and no undo or rewind restores, {what}: "
                                             f"{', '.join(repr(p) for p in names[:5])}{more}")
            return self._fresh
        # One failed snapshot (a git hiccup) costs that step its diffs, not the session its tracking. Said, once until
        # one succeeds: a step that could make them fail (as a chmod did) would otherwise hide its changes from review.
        log.warning("snapshot failed", extra={"cwd": str(self.cwd), "error": str(problem)})
        if not self._failed and self._on_unavailable is not None:
            self._on_unavailable(f"a checkpoint of {self.cwd} failed, so the steps since show no changes and "
                                 f"cannot be undone until one succeeds: {problem}")
        self._failed = getattr(problem, "reason", "") or str(problem) or "a checkpoint failed"
        return None

    async def begin_turn(self, turn_number: int) -> None:
        """Turn `turn_number` starts: its checkpoint waits for its first step that may write (see the class)."""
        self._turn, self._begin, self._begun = turn_number, None, False
        self._fresh = None  # between turns the user owns the workspace: the turn's checkpoint is a new snapshot

    async def _ensure_begin(self) -> None:
        """Take the running turn's checkpoint now, unless it was taken (or tried) already, and log it."""
        if self._turn is not None and not self._begun:
            self._begun = True
            self._begin = await self._snapshot(edge=True)
            if self._begin is not None and self._checkpoints is not None:
                # Logged now, not only as the turn ends: a daemon killed in the turn leaves the rounds it completed
                # listed, undoable and rewindable after the restart (the turn's end logs it again, maybe amended).
                try:
                    await self._checkpoints.record_turns([(self.session_id, self._turn, self._begin)])
                except (WorkspaceError, OSError) as exc:
                    log.warning("logging a turn's checkpoint failed", extra={"cwd": str(self.cwd), "error": str(exc)})

    @property
    def turn_begin(self) -> str | None:
        """The running turn's checkpoint (None until something that may write came, or when unavailable)."""
        return self._begin

    async def before_hook(self) -> None:
        """A hook is about to run: it may write, so the turn's checkpoint is taken first, and no snapshot reused."""
        await self._ensure_begin()
        self.touched()

    async def end_turn(self) -> tuple[str | None, str | None]:
        """(the turn's checkpoint, the state it left); (None, None) for a turn that ran nothing that may write, and
        CheckpointUnavailable for one that did, with no checkpoint before it (what it changed is not known)."""
        begin, begun = self._begin, self._begun
        end = (self._fresh or await self._snapshot(edge=True)) if begin is not None else None
        self._turn, self._begin, self._begun = None, None, False
        self._fresh = None  # between turns the user owns the workspace: the next turn begins with a new snapshot
        if begun and begin is None:
            raise CheckpointUnavailable(self.unavailable or self._failed)
        return begin, end

    async def before_step(self) -> str | None:
        """The token of a write-capable step: the last checkpoint while still fresh, else one taken now."""
        await self._ensure_begin()
        self._in_editor.clear()
        return self._fresh or await self._snapshot()

    async def after_step(self, token: str | None) -> tuple[tuple[str, str] | None, Listing]:
        """(the step's checkpoints before and after, None when untracked; the files changed since `before_step` gave
        `token`, its editor-buffer edits too, read up to LISTED, the rest counted)."""
        from ollie.workspace import ignored
        from ollie.workspace.bounds import LISTED

        in_editor, self._in_editor = self._in_editor, {}
        checkpoints = self.checkpoints
        after = await self._snapshot() if token is not None and checkpoints is not None else None
        if token is None or checkpoints is None or after is None:
            return None, ignored.Listing([])
        try:
            listing = await ignored.list_changes(checkpoints, (token, after), in_editor, bound=LISTED)
            # Its edits of open buffers are logged as they showed: the disk has none of one left unsaved, and one saved
            # has the user's unsaved text too (resumed, its diff showed nothing, or that text as the agent's change).
            if in_editor:
                token = await checkpoints.tree_with(token, {path: (e.old_data, "") for path, e in in_editor.items()})
                after = await checkpoints.tree_with(after, {path: (e.new_data, "") for path, e in in_editor.items()})
            return (token, after), listing
        except (WorkspaceError, OSError) as exc:
            log.warning("diffing a step failed", extra={"cwd": str(self.cwd), "error": str(exc)})
            return None, ignored.Listing([])
