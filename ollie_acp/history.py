"""A saved session's history as the `session/update`s that replay it on `session/load`."""

from __future__ import annotations

from pathlib import Path

from acp import text_block
from acp.schema import AgentMessageChunk, AgentThoughtChunk, UserMessageChunk

from ollie.agent.steps import KindLookup, describe
from ollie.backend.types import Message
from ollie_acp.updates import Update, step_statuses, tool_result, tool_start


def replay(messages: list[Message], *, cwd: Path, kind_of: KindLookup | None) -> list[Update]:
    """User and agent message chunks, thoughts, and every tool step with its final status, in order."""
    results = {m.tool_call_id: m.content or "" for m in messages if m.role == "tool" and m.tool_call_id}
    updates: list[Update] = []
    for message in messages:
        if message.role == "user" and message.content:
            updates.append(UserMessageChunk(session_update="user_message_chunk", content=text_block(message.content)))
        elif message.role == "assistant":
            if message.reasoning:
                updates.append(AgentThoughtChunk(session_update="agent_thought_chunk",
                                                 content=text_block(message.reasoning)))
            if message.content:
                updates.append(AgentMessageChunk(session_update="agent_message_chunk",
                                                 content=text_block(message.content)))
            for call in message.tool_calls or []:
                steps = describe(call.name, call.arguments, cwd, kind_of=kind_of)
                ids = [call.id] if len(steps) == 1 else [f"{call.id}.{i + 1}" for i in range(len(steps))]
                result = results.get(call.id)
                statuses = step_statuses(result, len(ids)) if result is not None else ["failed"] * len(ids)
                for step_id, step, status in zip(ids, steps, statuses, strict=True):
                    updates.append(tool_start(step_id, step, cwd=cwd, status=status, arguments=call.arguments))
                    updates.append(tool_result(step_id, status, result if len(ids) == 1 and result else ""))
    return updates
