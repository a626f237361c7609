"""Per-session change tracking: a checkpoint before each turn, and the files each write-capable step changed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ollie.agent.editoredits import EditorEdit
from ollie.log import get_logger
from ollie.workspace import Checkpoints, CheckpointUnavailable, FileChange, WorkspaceError
from ollie.workspace.ignored import listed

log = get_logger("ollie.agent.changes")


class ChangeTracker:
    """The checkpoints of one session's CWD; `unavailable` says why there are none (then nothing is tracked).

    `before_step()` / `after_step(token)` bracket a step that can write: the
    changes between the two snapshots are the step's. A read-only step takes
    none (the loop does not call them), so reads cost nothing here.

    Reuse: a snapshot stays `fresh` until something the engine runs may have written since it. The
    turn-begin snapshot is the first write step's "before", a step's "after" is the next step's "before"
    and the turn's end, unless `touched()` (a hook ran, a read-only step of unknown effect) came in
    between. Edits the user makes in an editor while a turn runs are not seen by the engine: they are
    attributed to the next write step (or, after the last step, to no step and not to this turn; the next
    turn's begin snapshot is always taken afresh, so they never count as the agent's).
    """

    def __init__(self, cwd: Path | str, session_id: str, *,
                 on_unavailable: Callable[[str], None] | None = None) -> None:
        self.cwd = Path(cwd)
        self.session_id = session_id
        self.checkpoints: Checkpoints | None = Checkpoints(self.cwd)
        self.unavailable: str | None = None
        # Told once, when checkpoints turn out to be impossible here (the setup warning).
        self._on_unavailable = on_unavailable
        # The last snapshot, while nothing the engine ran can have written since (None: take a new one).
        self._fresh: str | None = None
        # Edits a step made to documents open in the editor (unsaved: no snapshot sees them), by path.
        self._in_editor: dict[str, FileChange] = {}

    def note_editor_edit(self, change: FileChange) -> None:
        """A step's edit went to an open editor buffer: it is one of the step's changes (first old, last new text)."""
        first = self._in_editor.get(change.path)
        self._in_editor[change.path] = change if first is None else EditorEdit(
            first.old_text or "", change.new_text or "").change(change.path)

    def touched(self) -> None:
        """Something ran that may have written the workspace outside a tracked step: the next snapshot is new."""
        self._fresh = None

    def _give_up(self, reason: str) -> None:
        self.checkpoints = None
        self.unavailable = reason
        log.info("checkpoints unavailable", extra={"cwd": str(self.cwd), "reason": reason})
        if self._on_unavailable is not None:
            self._on_unavailable(reason)

    async def _snapshot(self) -> str | None:
        """A checkpoint of the work tree now; None when unavailable (decided once) or a git command failed."""
        self._fresh = None
        checkpoints = self.checkpoints
        if checkpoints is None:
            return None
        try:
            self._fresh = await checkpoints.snapshot()
            return self._fresh
        except CheckpointUnavailable as exc:
            self._give_up(f"no checkpoints or per-step diffs for {self.cwd}: {exc.reason}")
        except (WorkspaceError, OSError) as exc:
            # One failed snapshot (a git hiccup) costs that step its diffs, not the session its tracking.
            log.warning("snapshot failed", extra={"cwd": str(self.cwd), "error": str(exc)})
        return None

    async def begin_turn(self, turn_number: int | None = None) -> str | None:
        """Checkpoint the workspace before turn `turn_number` (None: the one after the last logged) and log it."""
        checkpoint = await self._snapshot()
        checkpoints = self.checkpoints
        if checkpoint is None or checkpoints is None:
            return None
        try:
            if turn_number is None:
                turns = await checkpoints.list_turns(self.session_id)
                turn_number = turns[-1].turn + 1 if turns else 0
            await checkpoints.record_turn(self.session_id, turn_number, checkpoint)
        except (WorkspaceError, OSError) as exc:
            log.warning("recording the turn failed", extra={"cwd": str(self.cwd), "error": str(exc)})
        return checkpoint

    async def end_turn(self) -> str | None:
        """The checkpoint of the state the turn left: the last step's when nothing ran since, else a new one."""
        checkpoint = self._fresh or await self._snapshot()
        self._fresh = None  # between turns the user owns the workspace: the next turn begins with a scan
        return checkpoint

    async def before_step(self) -> str | None:
        """The token of a write-capable step: the last checkpoint while still fresh, else one taken now."""
        self._in_editor.clear()
        return self._fresh or await self._snapshot()

    async def after_step(self, token: str | None) -> list[FileChange]:
        """The files changed since `before_step` gave `token` (empty when untracked), its editor-buffer edits too."""
        in_editor, self._in_editor = self._in_editor, {}
        checkpoints = self.checkpoints
        if token is None or checkpoints is None:
            return []
        after = await self._snapshot()
        if after is None:
            return []
        try:
            on_disk = await listed(checkpoints.git, checkpoints.root, await checkpoints.changes(token, after))
        except (WorkspaceError, OSError) as exc:
            log.warning("diffing a step failed", extra={"cwd": str(self.cwd), "error": str(exc)})
            return []
        # A file changed both ways is shown as its buffer has it (what the user sees).
        return sorted([*(c for c in on_disk if c.path not in in_editor), *in_editor.values()], key=lambda c: c.path)
