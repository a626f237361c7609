"""A saved session's history as the `session/update`s that replay it on `session/load`."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from acp import text_block
from acp.schema import AgentMessageChunk, AgentThoughtChunk

from ollie.agent.editorcontext import summary
from ollie.agent.history import call_steps, named_images, reply_text, typed_text
from ollie.agent.review import ReviewError
from ollie.agent.stepchanges import step_changes, text_bytes
from ollie.agent.steps import Diff, KindLookup, attribute
from ollie.backend.images import shown
from ollie.backend.types import Message
from ollie.tools.execute.args import ArgumentError, CallRequest, parse_request
from ollie.tools.execute.fileargs import FileArgsError, parse_file_call
from ollie.workspace.bounds import LISTED, Bound
from ollie.workspace.errors import WorkspaceError
from ollie_acp.updates import Update, shown_results, step_pictures, tool_result, tool_start, user_chunks

if TYPE_CHECKING:
    from ollie.agent.surface import AcpCore

logger = logging.getLogger("ollie.acp.history")


async def turn_diffs(core: AcpCore) -> dict[str, list[Diff]]:
    """The diffs of the files each call changed (the session's `step_files`), by call id: its own, from the checkpoints
    logged around it (`step_changes`), else as its turn's review lists them (from the turn's checkpoints, not the
    workspace now), each file under the last call of its turn that changed it. The log's paths are only matched
    against the checkpoints' diffs, never opened."""
    session = core.session
    files, starts = dict(session.step_files), {s: t for t, s in enumerate(session.turn_starts, 1) if s >= 0}
    owner: dict[tuple[int, str], str] = {}
    turn = 0  # 0: before the first turn still numbered (compaction or /clear rewrote its start)
    for index, message in enumerate(list(session.messages) if files else ()):
        turn = starts.get(index, turn)
        for call in message.tool_calls if turn else ():
            owner.update(((turn, path), call.id) for path in files.get(call.id, ()))
    out: dict[str, list[Diff]] = {}
    try:  # the turns' checkpoints read once, not again for each turn (a log may name a file in each of thousands)
        logged = await core.review.logged() if owner else ({}, {})
    except (ReviewError, WorkspaceError) as exc:
        logger.info("no turn's diffs replayed: %s", exc)
        return out
    left = LISTED  # the steps' own diffs of the whole load, the latest turns first: a log may give thousands
    for number in sorted({t for t, _ in owner}, reverse=True):
        try:
            listed = await core.review.changes(number, bound=LISTED, logged=logged)
            own = await step_changes(session, core.review.checkpoints(), number, bound=left) if left.files > 0 else {}
        except (ReviewError, WorkspaceError) as exc:  # no checkpoints here (another directory), a turn gone: no diffs
            logger.info("turn %d's diffs not replayed: %s", number, exc)
            continue
        # Each call that logged its checkpoints: what it did (two steps of one file each theirs); the rest: the turn's.
        out.update((call_id, [Diff.of(c) for c in changes]) for call_id, changes in own.items())
        spent = [c for changes in own.values() for c in changes]
        left = Bound(left.files - len(spent), left.text_bytes - text_bytes(spent))
        for change in listed.changes:
            if (call_id := owner.get((number, change.path))) is not None and call_id not in own:
                out.setdefault(call_id, []).append(Diff.of(change))
    return out


def replay(messages: list[Message], *, cwd: Path, kind_of: KindLookup | None,
           collapsed: Mapping[str, Sequence[str]] | None = None,
           outcomes: Mapping[str, Sequence[str]] | None = None,
           changed: Mapping[str, Sequence[Diff]] | None = None, running: bool = False) -> list[Update]:
    """User and agent message chunks, thoughts, and every tool step with its final status (as the session's
    `step_outcomes` keep it, as the daemon's history shows it), its diffs (those `turn_diffs` found, else what an
    edit's arguments say) and its result's images (as live; those of a result that `collapsed`, the session's
    `step_images`, named), in order; a call with no result is `in_progress` while the turn is `running`, else failed."""
    results = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    updates: list[Update] = []
    for message in messages:
        if message.role == "user":  # as typed, each attached file its label (not the text the model was given)
            updates.extend(user_chunks(summary(typed_text(message)), message.images))
        elif message.role == "assistant":
            if message.reasoning:
                updates.append(AgentThoughtChunk(session_update="agent_thought_chunk",
                                                 content=text_block(message.reasoning)))
            if text := reply_text(message):  # a cut-off reply's note is the model's: the live view never showed it
                updates.append(AgentMessageChunk(session_update="agent_message_chunk", content=text_block(text)))
            for call in message.tool_calls or []:
                answer = results.pop(call.id, None)  # each result once: a log may give many calls one id
                result = answer.content if answer is not None else None
                steps = call_steps(call, result, cwd, kind_of, (outcomes or {}).get(call.id))
                if result is None:  # cut off before its result, or (`running`) its turn goes on
                    steps = [s.with_status("in_progress" if running else "failed") for s in steps]
                pictures = step_pictures(shown(answer.images)[0] if answer is not None and answer.images
                                         else named_images((collapsed or {}).get(call.id, ())), len(steps))
                diffs = _edit_diffs(call.name, call.arguments, len(steps))
                shares = attribute((changed or {}).get(call.id, ()), steps)
                texts = shown_results(result or "", [s.status for s in steps])
                for step, diff, share, text, own in zip(steps, diffs, shares, texts, pictures, strict=True):
                    updates.append(tool_start(step, cwd=cwd, status=step.status, arguments=call.arguments))
                    made = share or ((diff,) if diff is not None and step.status == "completed" else ())
                    updates.append(tool_result(step.id, step.status, text, made, cwd=cwd, locations=step.locations,
                                               pictures=own, step=step))
    return updates


def _edit_diffs(tool_name: str, arguments: str, count: int) -> list[Diff | None]:
    """The diff each of a call's `count` steps made, as its arguments say (file_edit, file_write; else None).

    The session keeps no file snapshots: an edit shows the text it replaced and its replacement,
    a write the whole new content (a command's changes are not known from its arguments).
    """
    diffs: list[Diff | None] = [None] * count
    try:
        parsed_args = json.loads(arguments)
        request = parse_request(tool_name, parsed_args) if isinstance(parsed_args, dict) else None
    except (ArgumentError, ValueError, RecursionError):
        return diffs
    if not isinstance(request, CallRequest) or len(request.calls) != count:
        return diffs
    for index, call in enumerate(request.calls):
        try:
            parsed = parse_file_call(call.tool, call.args)
        except FileArgsError:
            continue
        if parsed.tool == "file_edit" and parsed.old is not None:
            diffs[index] = Diff(parsed.path, parsed.old, parsed.new or "")
        elif parsed.tool == "file_write" and parsed.content not in (None, "-"):
            diffs[index] = Diff(parsed.path, None, parsed.content)
    return diffs
