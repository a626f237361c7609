"""A resumed turn's steps' own diffs: each from the checkpoints logged around it, as its `tool` event had them live."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ollie.workspace.bounds import LISTED, Bound
from ollie.workspace.errors import WorkspaceError

if TYPE_CHECKING:
    from ollie.sessions.session import Session
    from ollie.workspace.checkpoints import Checkpoints
    from ollie.workspace.objects import Entry
    from ollie.workspace.types import FileChange

log = logging.getLogger("ollie.agent.stepchanges")


async def step_changes(session: Session, checkpoints: Checkpoints, turn: int, *,
                       bound: Bound = LISTED) -> dict[str, list[FileChange]]:
    """The files each call of turn `turn` changed (those its `step_files` name), between the checkpoints its
    `step_trees` logged, by call id, in call order until `bound` (its files and text, over all calls: a log may give a
    turn thousands); a call without them, or whose checkpoints this directory does not hold, is left out (a client
    places the turn's changes under it, as before these were kept)."""
    starts = session.turn_starts
    start = starts[turn - 1] if 1 <= turn <= len(starts) else -1
    later = [s for s in starts[turn:] if s >= 0]
    messages = session.messages[start:later[0] if later else len(session.messages)] if start >= 0 else []
    calls = [c.id for m in messages for c in m.tool_calls if c.id in session.step_trees][:bound.files]
    out: dict[str, list[FileChange]] = {}
    diffed: dict[tuple[str, ...], list[Entry]] = {}  # each pair once: a log may give one to every call
    files, room = bound.files, bound.text_bytes
    for call_id in calls:
        if files <= 0 or room <= 0:
            break
        pair = tuple(session.step_trees[call_id])
        named = set(session.step_files.get(call_id, ()))  # what it showed live, build output left out
        try:
            if pair not in diffed:
                diffed[pair] = await checkpoints.diff_entries(*pair)
            entries = [e for e in diffed[pair] if e[0] in named]
            read = await checkpoints.read_changes(entries, Bound(files, room))
        except (WorkspaceError, OSError) as exc:
            log.info("a step's diffs not read", extra={"call": call_id, "error": str(exc)})
            continue
        out[call_id] = read
        files -= len(read)
        room -= text_bytes(read)
    return out


def text_bytes(changes: Iterable[FileChange]) -> int:
    """How much of a bound's `text_bytes` `changes` take: both sides' texts."""
    return sum(len(c.old_text or "") + len(c.new_text or "") for c in changes)
