"""Rewind of a session to before a turn (files, conversation, plan, open buffers), and its undo from a backup on disk."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import attrs

from ollie import beneath
from ollie.agent.editoredits import BufferRevert, EditorEdit, EditorEdits, revert_buffers
from ollie.agent.review import ReviewError, ReviewHost, rewind_backup_name
from ollie.agent.taskstate import plan_before
from ollie.backend.types import Message
from ollie.shapes import Check, Invalid, parse
from ollie.workspace.refs import is_checkpoint

if TYPE_CHECKING:
    from ollie.agent.review import Review
    from ollie.tools.documents import EditorDocuments
    from ollie.workspace.types import FileChange

# A rewind's backup is ollie's own file holding the whole history, as large as the session's log (read whole too): not
# capped as the model's workspace reads are (16 MiB, OLLIE_MAX_FILE_BYTES), which left a long session's rewind undone.
BACKUP_CAP = 1 << 32


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


def _checkpoint(value: object) -> str:
    if type(value) is not str or not is_checkpoint(value):
        raise ValueError("not a checkpoint id")
    return value


def _messages(value: object) -> list[Message]:
    from ollie.sessions.logparse import checked_messages  # with a rewind's backup, not with the engine

    return checked_messages(value)


@attrs.frozen(kw_only=True, eq=False, repr=False)
class _Backup:
    """A rewind's backup as its undo reads it back (`rewind` writes it): the cut turns' buffer edits are put back in
    the buffers it `reverted`."""

    json_keys: ClassVar[str] = "snake"
    unknown_keys: ClassVar[str] = "ignore"

    turn: int
    undo_checkpoint: Annotated[str, Check(parse=_checkpoint)]
    turn_starts: list[int]
    messages: Annotated[list[Message], Check(parse=_messages)]
    # (None of these in a backup of an older ollie.)
    plan: str = ""
    plans_before: dict[str, str] = attrs.field(factory=dict)
    buffer_edits: Annotated[dict[int, dict[str, EditorEdit]], Check(parse=EditorEdits.loaded)] = attrs.field(factory=dict)
    reverted: list[str] = attrs.field(factory=list)


def _read_backup(data: bytes) -> _Backup:
    """A rewind's backup, checked (ReviewError: damaged)."""
    try:
        return parse(_Backup, json.loads(data))
    except (Invalid, ValueError) as exc:  # not JSON, not UTF-8, a field missing or of the wrong type
        raise ReviewError(f"the rewind's backup is damaged: {exc}", "undo") from None


async def _write_backup(host: ReviewHost, backup: dict[str, Any]) -> None:
    """The rewind's way back, synced to disk before anything changes."""
    # Beside the session logs, which a session in a store (OLLIE_STORE) never made: its rewind failed (ENOENT).
    await asyncio.to_thread(lambda: host.sessions_dir.mkdir(mode=0o700, parents=True, exist_ok=True))
    # The history's messages are encoded in a thread: O(history), the daemon's other sessions go on meanwhile.
    data = await asyncio.to_thread(lambda: json.dumps(backup, default=Message.to_dict).encode())
    await beneath.write_bytes(host.sessions_dir, rewind_backup_name(host), data, 0o600, sync=True)


async def rewind(review: Review, turn: int | None = None, *, documents: EditorDocuments | None = None) -> Rewound:
    """Files back to before `turn` (default: the last), conversation cut there; open buffers through `documents`."""
    session = review.host.session
    number = review.turn_number(turn)
    start = session.turn_starts[number - 1]
    if start < 0 or start > len(session.messages):
        raise ReviewError(f"the conversation of turn {number} was compacted or cleared since: cannot rewind it")
    if number <= session.copied_turns:
        raise ReviewError(f"turn {number} came with this copy of another conversation (kept by /clear or an agent "
                          "switch, or forked), whose files have moved on since: it is reviewed here, not rewound; "
                          "undo its files one by one, or rewind a later turn")
    before = await review.state_before(number)
    cp = review.checkpoints()
    plans = session.plans_before
    # The cut turns' buffer edits are kept with it, not in memory: its undo after a window reload (a new daemon)
    # puts them back in the buffers too, where the agent's edit of her unsaved text was (it was lost unsaid).
    backup = {"turn": number, "undo_checkpoint": await cp.snapshot(), "turn_starts": list(session.turn_starts),
              "messages": list(session.messages), "plan": review.host.plan_text, "plans_before": dict(plans),
              "buffer_edits": review.editor_edits.saved(number)}
    # The way back is on disk before anything changes: a crash at any point after leaves it undoable.
    await _write_backup(review.host, backup)
    restored = await cp.restore(before)
    if restored.undo_checkpoint != backup["undo_checkpoint"]:  # a file changed in between: keep that too
        backup["undo_checkpoint"] = restored.undo_checkpoint
        await _write_backup(review.host, backup)
    buffers: list[BufferRevert] = []
    if documents is not None:
        buffers = await revert_buffers(review.editor_edits.since(number), documents, review.cwd())
    if reverted := [b.path for b in buffers if b.status == "reverted"]:  # the buffers its undo puts the edits back in
        backup["reverted"] = reverted
        await _write_backup(review.host, backup)
    starts = session.turn_starts[:number - 1]
    review.editor_edits.forget_from(number)
    from ollie.agent.history import undid  # (a rewind is rarer than a turn)

    # What the user undid of the turns kept, which only the cut prompts told the model: told again with the next
    # one (the model went on as if the files held its changes, and the history lost the turns' undone marks).
    told = [note for m in session.messages[start:] if m.notes for turn, note in undid(m.notes) if turn < number]
    # The plan as turn `number` found it: as the first turn cut that changed it found it (none did: as it is).
    if (found := plan_before(plans, number)) is not None:
        await _put_plan(review.host, found)
    cut = [str(t) for t in range(number, len(session.turn_starts) + 1)]
    session.replace_messages(session.messages[:start])
    session.turn_starts = starts
    session.plans_before = {t: plan for t, plan in plans.items() if t not in cut}
    session.review_notes[:0] = told
    await review.host.save_rewritten()
    return await _rewound(review, number, restored.changes, tuple(buffers))


async def rewind_undo(review: Review, *, documents: EditorDocuments | None = None) -> Rewound:
    """Put the files and the conversation back as they were before the last rewind; open buffers it reverted
    through `documents`."""
    try:
        data = await beneath.read_bytes(review.host.sessions_dir, rewind_backup_name(review.host), BACKUP_CAP)
    except FileNotFoundError:
        raise ReviewError("no rewind to undo (a turn has run since, or none was made)", "undo") from None
    # All of it checked before the files go back: a backup that fails after the restore leaves them half done.
    backup = await asyncio.to_thread(_read_backup, data)
    restored = await review.checkpoints().restore(backup.undo_checkpoint)
    session = review.host.session
    if backup.plan != review.host.plan_text:
        await _put_plan(review.host, backup.plan)
    session.replace_messages(backup.messages)
    session.turn_starts, session.plans_before = backup.turn_starts, backup.plans_before
    from ollie.agent.history import undid

    # The undos the rewind was to tell again are in the prompts it puts back.
    told = {note for m in backup.messages if m.notes for _, note in undid(m.notes)}
    session.review_notes = [note for note in session.review_notes if note not in told]
    await review.host.save_rewritten()
    await asyncio.to_thread(review.drop_rewind)
    # Its buffer edits too: a second rewind named no buffer she had typed in since, and her save wrote them back.
    review.editor_edits.put_back(backup.buffer_edits)
    buffers: list[BufferRevert] = []
    if documents is not None and backup.reverted:
        back = {path: edit for path, edit in review.editor_edits.since(backup.turn).items() if path in backup.reverted}
        buffers = await revert_buffers(back, documents, review.cwd(), undo=True)
    return await _rewound(review, backup.turn, restored.changes, tuple(buffers))


async def _put_plan(host: ReviewHost, text: str) -> None:
    """The plan back as `text`, and the task state's step with it (compaction's: the model reads it)."""
    await host.put_plan(text)
    if (state := host.session.task_state) is not None:
        state.plan_step = host.plan_step


async def _rewound(review: Review, turn: int, changes: Sequence[FileChange],
                   buffers: tuple[BufferRevert, ...] = ()) -> Rewound:
    """What a rewind restored, the build output apart (the change list leaves it out: ollie.workspace.ignored)."""
    from ollie.workspace.ignored import ignored

    cp = review.checkpoints()
    paths = [c.path for c in changes]
    hidden = await ignored(cp.git, cp.root, paths)
    session = review.host.session
    return Rewound(turn, [p for p in paths if p not in hidden], len(session.messages), buffers,
                   tuple(p for p in paths if p in hidden), len(session.turn_starts))
