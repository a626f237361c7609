"""A saved session's history as the `session/update`s that replay it on `session/load`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from acp import text_block
from acp.schema import AgentMessageChunk, AgentThoughtChunk, UserMessageChunk

from ollie.agent.editorcontext import summary
from ollie.agent.history import call_steps, named_images, typed_text
from ollie.agent.steps import Diff, KindLookup
from ollie.backend.images import shown
from ollie.backend.types import Message
from ollie.tools.execute.args import ArgumentError, CallRequest, parse_request
from ollie.tools.execute.fileargs import FileArgsError, parse_file_call
from ollie_acp.updates import Update, picture_block, shown_results, step_pictures, tool_result, tool_start


def replay(messages: list[Message], *, cwd: Path, kind_of: KindLookup | None,
           collapsed: Mapping[str, Sequence[str]] | None = None,
           outcomes: Mapping[str, Sequence[str]] | None = None) -> list[Update]:
    """User and agent message chunks, thoughts, and every tool step with its final status (as the session's
    `step_outcomes` keep it, as the daemon's history shows it) and its result's images (as live; those of a result
    that `collapsed`, the session's `step_images`, named), in order."""
    results = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    updates: list[Update] = []
    for message in messages:
        if message.role == "user" and (typed := typed_text(message)):
            # As typed, each attached file its label: not the files' whole text the model was given.
            updates.append(UserMessageChunk(session_update="user_message_chunk", content=text_block(summary(typed))))
        if message.role == "user":  # the prompt's pictures come back as they were sent, capped as a step's are
            updates.extend(UserMessageChunk(session_update="user_message_chunk", content=picture_block(p))
                           for p in shown(message.images)[0])
        elif message.role == "assistant":
            if message.reasoning:
                updates.append(AgentThoughtChunk(session_update="agent_thought_chunk",
                                                 content=text_block(message.reasoning)))
            if message.content:
                updates.append(AgentMessageChunk(session_update="agent_message_chunk",
                                                 content=text_block(message.content)))
            for call in message.tool_calls or []:
                answer = results.pop(call.id, None)  # each result once: a log may give many calls one id
                result = answer.content if answer is not None else None
                steps = call_steps(call, result, cwd, kind_of, (outcomes or {}).get(call.id))
                if result is None:  # cut off before its result: no step of it is still running
                    steps = [s.with_status("failed") for s in steps]
                pictures = step_pictures(shown(answer.images)[0] if answer is not None and answer.images
                                         else named_images((collapsed or {}).get(call.id, ())), len(steps))
                diffs = _edit_diffs(call.name, call.arguments, len(steps))
                texts = shown_results(result or "", [s.status for s in steps])
                for step, diff, text, own in zip(steps, diffs, texts, pictures, strict=True):
                    updates.append(tool_start(step, cwd=cwd, status=step.status, arguments=call.arguments))
                    made = (diff,) if diff is not None and step.status == "completed" else ()
                    updates.append(tool_result(step.id, step.status, text, made, cwd=cwd, pictures=own))
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
