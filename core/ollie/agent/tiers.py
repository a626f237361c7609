"""Result tiers and the context gate: what tool output stays verbatim and what collapses to a line."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ollie.backend.types import Image, Message
from ollie.sessions.session import Session

COLLAPSED = "collapsed"
_SUMMARY_HEAD = 100
# How far back from the end a request's cold results can be: one round's results (and a few notes) follow its call.
# A cold id whose result a compaction or rewind dropped sent the walk through the whole history (~70 ms of the loop
# at 100k messages).
COLD_WINDOW = 2_000


IMAGE_CHARS = 1_600 * 4


def message_chars(message: Message) -> int:
    """The characters of one message that the token estimate counts."""
    chars = len(message.content) + len(message.reasoning)
    for call in message.tool_calls:
        chars += len(call.name) + len(call.arguments)
    # An image costs the model about 1,600 tokens whatever its base64 length (Anthropic: w*h/750, ~1.15 MP max).
    return chars + IMAGE_CHARS * len(message.images)


def summarize_result(tier: str, message: Message) -> str:
    """The one-line stand-in for a tool result that has been consumed."""
    text = message.content
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(first) > _SUMMARY_HEAD:
        first = first[:_SUMMARY_HEAD] + "…"
    lines = text.count("\n") + (1 if text else 0)
    size = len(text.encode("utf-8"))
    images = f", {len(message.images)} image{'s' if len(message.images) != 1 else ''}" if message.images else ""
    return f"[{tier} result of {message.name or 'tool'} collapsed: {lines} lines, {size} bytes{images}; began: {first}]"


def keep_names(session: Session, call_id: str, images: Sequence[Image]) -> None:
    """What the images of a tool result that leave it were, kept in the session's `step_images` (`image/png 12345`,
    then the batch step's index): the history names them under the step, as live it drew them."""
    if images:
        session.step_images[call_id] = [f"{i.mime} {i.size}" + (f" {i.step}" if i.step is not None else "")
                                        for i in images]


def _collapse(session: Session, message: Message, tier: str) -> None:
    """Put `message` (a tool result) in its summary's place; its images go with its text, what they were stays in
    the session's `step_images` (the history names them)."""
    keep_names(session, message.tool_call_id, message.images)
    message.content, message.images = summarize_result(tier, message), []
    session.result_tiers[message.tool_call_id] = COLLAPSED


def collapse(session: Session, tiers: Iterable[str], messages: list[Message] | None = None) -> int:
    """Collapse every tool result of the given tiers to its summary; returns how many changed."""
    wanted = set(tiers)
    in_history = messages is None
    changed = 0
    for index, message in enumerate(session.messages if messages is None else messages):
        if message.role != "tool":
            continue
        tier = session.result_tiers.get(message.tool_call_id)
        if tier in wanted:
            _collapse(session, message, tier)
            if in_history:
                # Saved messages changed in place: persistence records just these.
                session.mark_edited(index)
            changed += 1
    return changed


def collapse_consumed(session: Session) -> int:
    """After a request: the cold results it carried have been seen once, so they collapse (looked for from the end,
    at most COLD_WINDOW messages back)."""
    pending = set(session.cold_results())
    changed = 0
    messages = session.messages
    index = len(messages)
    oldest = max(0, index - COLD_WINDOW)
    while pending and index > oldest:
        index -= 1
        message = messages[index]
        if message.role == "tool" and message.tool_call_id in pending:
            pending.discard(message.tool_call_id)
            _collapse(session, message, "cold")
            session.mark_edited(index)  # saved messages changed in place: persistence records just these
            changed += 1
    for call_id in pending:  # its result is no longer in the history (compacted, rewound): nothing to collapse
        session.result_tiers[call_id] = COLLAPSED
    return changed


def context_gate(session: Session, *, budget: int) -> list[str]:
    """Over budget (the caller's check): strip cold material first, then warm; returns the tiers stripped."""
    stripped = []
    for tier in ("cold", "warm"):
        if collapse(session, (tier,)):
            stripped.append(tier)
        if sum(message_chars(m) for m in session.messages) // 4 <= budget:  # characters / 4, as the budget's estimate
            break
    if stripped:
        # The measured size of the last request no longer describes the history.
        session.last_input_tokens = 0
    return stripped
