"""Fill-in-the-middle through a chat prompt: ghost text from a backend that has no FIM API (Anthropic, chat-only servers)."""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing

from ollie.backend.types import GenerationParams, Message, StreamEvent, Tool

Stream = Callable[[list[Message], list[Tool], GenerationParams], AsyncGenerator[StreamEvent, None]]

# Completions are guesses the user accepts or types over: little randomness.
FIM_TEMPERATURE = 0.2
CURSOR = "<CURSOR>"
_SYSTEM = ("You complete code in an editor. The user's file follows, with " + CURSOR + " where the cursor is. "
           "Reply with only the text to insert at the cursor: no explanation, no code fences, nothing the file "
           "already has before or after it. Reply with nothing when nothing fits.")
_FENCED = re.compile(r"\A\s*```[^\n]*\n(.*?)\n?```\s*\Z", re.DOTALL)


async def chat_fill(stream: Stream, prefix: str, suffix: str, *, max_tokens: int) -> str:
    """The text at the cursor between `prefix` and `suffix`, asked through a backend's chat `stream`."""
    messages = [Message("system", _SYSTEM), Message("user", f"{prefix}{CURSOR}{suffix}")]
    params = GenerationParams(max_tokens=max_tokens, temperature=FIM_TEMPERATURE)
    async with aclosing(stream(messages, [], params)) as events:
        text = "".join([event.content async for event in events])
    return match.group(1) if (match := _FENCED.match(text)) else text  # without the fence a chat model may add anyway
