"""The session history as a client draws it: tool calls and results as readable steps, cut-off replies marked.

Built from the saved messages alone with the live events' step code, so a resumed session shows its steps as they
were shown, with the connections they made and the files they changed (without diffs, which are not saved).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from ollie.agent import steps
from ollie.agent.steps import KindLookup, Location, StepStatus, ToolState, describe, finished, step_states, whole_state
from ollie.backend.images import SHOWN_IMAGE_CHARS, left_out, shown
from ollie.backend.types import IMAGE_TYPES, Message, ToolCall
from ollie.sessions.session import said_before

# Ends the content of a reply an interrupt cut short: the model reads it, a client may show it as a note.
INTERRUPTED_REPLY = "[interrupted by the user: this reply was cut off here]"
_ENDED: dict[str, StepStatus] = {"completed": "completed", "failed": "failed"}


def truncated(text: str, *, dropped_calls: int = 0) -> str:
    """The content of a reply the model's output token limit cut short after `text` (the model reads why)."""
    note = "[ollie: this reply was cut off here: it reached the output token limit (max_tokens)"
    if dropped_calls:
        note += "; its tool calls were not run, their arguments may be cut: make them again, shorter"
    return f"{text}\n\n{note}]" if text.strip() else f"{note}]"


def cut_off(text: str) -> str:
    """The content of a reply an interrupt cut short after `text`."""
    return f"{text}\n\n{INTERRUPTED_REPLY}" if text.strip() else INTERRUPTED_REPLY


def is_cut_off(message: Message) -> bool:
    """Whether `message` is a reply an interrupt cut short (see `cut_off`)."""
    return message.role == "assistant" and not message.tool_calls and message.content.endswith(INTERRUPTED_REPLY)


def reply_text(message: Message) -> str:
    """A reply's text as the live chat showed it: a cut-off one's without the note `cut_off` ended it with."""
    cut = is_cut_off(message)
    return message.content.removesuffix(INTERRUPTED_REPLY).removesuffix("\n\n") if cut else message.content


def typed_text(message: Message) -> str:
    """A user message's own text: its content without the notes ollie added after it (the model reads them)."""
    added = f"\n\n{message.notes}"
    return message.content[:-len(added)] if message.notes and message.content.endswith(added) else message.content


def outcome_marks(inner: Sequence[ToolState]) -> list[str]:
    """How a call's steps ended, as the session keeps it: `completed`, `failed`, `completed:12` (a step's line)."""
    return [s.status + (f":{s.locations[0].line}" if len(s.locations) == 1 and s.locations[0].line else "")
            for s in inner]


def _with_marks(inner: list[ToolState], marks: Sequence[str]) -> list[ToolState]:
    out = []
    for state, mark in zip(inner, marks, strict=True):
        status, _, line = mark.partition(":")
        ended = state.with_status(_ENDED.get(status, "failed"))
        if line.isdigit() and len(ended.locations) == 1:
            ended = attrs.evolve(ended, locations=(Location(ended.locations[0].path, int(line)),))
        out.append(ended)
    return out


def call_steps(call: ToolCall, result: str | None, cwd: Path, kind_of: KindLookup | None,
               marks: Sequence[str] | None = None) -> list[ToolState]:
    """A call's steps as its `tool` event carried them (no diffs); `marks` (else the result's text) say how they
    ended, `pending` while it has no result."""
    inner = step_states(call.id, describe(call.name, call.arguments, cwd, kind_of=kind_of))
    if marks is not None and len(marks) == len(inner):
        return _with_marks(inner, marks)
    return inner if result is None else finished(inner, result)


def _step_fields(inner: list[ToolState], call_id: str, network: Sequence[dict],
                 files: Sequence[str]) -> dict[str, object]:
    tool = attrs.evolve(whole_state(call_id, inner), network=tuple(network)).to_wire()
    wired = [s.to_wire() for s in inner]
    if files:  # a batch's steps each name theirs as its live diffs were split: by path, the rest its last writer's
        tool["files"] = list(files)
        shares = steps.attribute([steps.Diff(p, None, None) for p in files], inner)
        for step, share in zip(wired, shares, strict=True):
            if share:
                step["files"] = [d.path for d in share]
    return {"tool": tool, **({"steps": wired} if len(inner) > 1 else {})}


def page_records(page: Sequence[Message], *records: Mapping[str, Sequence[Any]]) -> tuple[dict[str, tuple[Any, ...]], ...]:
    """What `wire_messages` reads of the session's maps by call id (`step_outcomes`, `step_network`, `step_images`,
    `step_files`)
    for `page`'s calls, copied where the session changes (the loop) so that a thread may read them as a turn goes on."""
    ids = {c.id for m in page for c in m.tool_calls}
    ids.update(m.tool_call_id for m in page if m.tool_call_id)
    return tuple({i: tuple(kept[i]) for i in ids if i in kept} for kept in records)


def named_images(marks: Sequence[str]) -> list[dict[str, object]]:
    """A collapsed result's images as its `step_images` marks (`image/png 12345`, then its batch step's index when
    known) name them, `{mime, bytes, step?}`; a mark that is not one (a session log may be hostile) is left out."""
    named = [mark.split(" ") for mark in marks if isinstance(mark, str)] if isinstance(marks, (list, tuple)) else []
    # Short numbers only (int() of 5,000 digits raises), and decimal ones ("²".isdigit() holds, int("²") raises).
    return [{"mime": parts[0], "bytes": int(parts[1]), **({"step": int(parts[2])} if len(parts) == 3 else {})}
            for parts in named if 2 <= len(parts) <= 3 and parts[0] in IMAGE_TYPES
            and all(n.isdecimal() and len(n) < 16 for n in parts[1:])]


def wire_messages(messages: Sequence[Message], start: int, end: int, *, cwd: Path,
                  kind_of: KindLookup | None = None,
                  outcomes: Mapping[str, Sequence[str]] | None = None,
                  network: Mapping[str, Sequence[dict]] | None = None,
                  images: Mapping[str, Sequence[str]] | None = None,
                  files: Mapping[str, Sequence[str]] | None = None) -> list[dict[str, object]]:
    """`messages[start:end]` as `ollie/context` sends them: each call and result with its `tool` (and `steps`), a
    result's images with their data while the page's come to SHOWN_IMAGE_CHARS; `outcomes`, `network`, `images` and
    `files` are the session's `step_outcomes`, `step_network`, `step_images` and `step_files`."""
    page = messages[start:end]
    room = SHOWN_IMAGE_CHARS
    results = {m.tool_call_id: m.content for m in messages if m.role == "tool" and m.tool_call_id}
    wanted = {m.tool_call_id for m in page if m.role == "tool"}
    calls = {c.id: c for m in messages if m.role == "assistant" for c in m.tool_calls if c.id in wanted}
    built: dict[str, dict[str, object]] = {}  # a call and its result in one page share one description

    def fields(call: ToolCall) -> dict[str, object]:
        if call.id not in built:
            marks = (outcomes or {}).get(call.id)
            built[call.id] = _step_fields(call_steps(call, results.get(call.id), cwd, kind_of, marks), call.id,
                                          (network or {}).get(call.id, ()), (files or {}).get(call.id, ()))
        return built[call.id]

    out: list[dict[str, object]] = []
    for message in page:
        data = message.to_dict()
        if message.notes:  # shown as the user typed it, as the live chat showed it; the notes apart
            data["content"] = typed_text(message)
        if message.role == "tool" and message.images:  # drawn under the step, as its `tool` event had them
            data["images"], room = shown(message.images, room)
        elif message.images:  # a prompt's: what they are, not megabytes of base64 on every page
            data["images"] = [{"mime": i.mime, "bytes": i.size} for i in message.images]
        elif message.role == "user" and (named := left_out(message.content)):
            data["images"] = named  # a prompt's the vendor refused: gone, what they were named in its text
        elif message.role == "tool" and (marks := (images or {}).get(message.tool_call_id)):
            data["images"] = named_images(marks)  # collapsed: their data is gone, what they were is not
        if message.tool_calls:
            data["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments, **fields(c)}
                                  for c in message.tool_calls]
        elif message.role == "tool" and (call := calls.get(message.tool_call_id)) is not None:
            data.update(fields(call))
        elif is_cut_off(message):
            data["interrupted"] = True
        out.append(data)
    return out


def prompt_turns(turn_starts: Sequence[int], total: int, *, first: int = 0) -> dict[int, int]:
    """The number of the turn each prompt starts, by message index (as `turn_marks` counts them); a turn whose start
    compaction or /clear rewrote (-1) has none."""
    return {first + start: turn for turn, start in enumerate(turn_starts, 1) if 0 <= start < total}


# The note an undo leaves for the model (saved with the session, then in the next prompt's `notes`): what tells a
# resumed chat that a turn's changes were undone since.
UNDID = "the user undid these changes of yours (turn {turn}): "
_UNDID = re.compile(re.escape(UNDID).replace(re.escape("{turn}"), r"(\d+)"))


def undid(notes: str) -> Iterator[tuple[int, str]]:
    """The undo notes that begin a prompt's `notes` (ollie's own come first, each one line), each with the turn it
    names: what follows them (a hook's output, an MCP resource: the workspace's or a server's text) may quote one."""
    for note in notes.split("\n\n"):
        if (match := _UNDID.match(note)) is None:
            return
        yield int(match[1]), note


def turn_marks(turn_starts: Sequence[int], changed: Sequence[int], total: int, *, first: int = 0,
               notes: Iterable[tuple[int, str]] = (), reasons: Mapping[str, str] | None = None,
               plans: Iterable[str] = ()) -> dict[int, dict[str, Any]]:
    """`turnChanges` by message index (the session's `total` messages from index `first` of those sent): on the last
    message of each turn that changed files, `{turn, files}` (its number and how many now), or `{turn, unknown: true}`
    when its count is not known (UNCOUNTED) with the `reason` its end gave (`reasons`: `turn_unknown`) and `again` when
    the last such turn gave the same, and `undone: true` for one whose changes `notes` ((the session's index of the
    prompt that has them, or `total`: the next prompt's), as UNDID words them) say the user undid since, then with none
    left too; `plan: true` on a turn that changed the plan (`plans`: `plans_before`'s keys), which a rewind puts back;
    a turn whose start compaction or /clear rewrote (-1) has none. Reads no workspace."""
    # A note in a turn's own prompt or before is of a turn of that number that a rewind cut.
    # Each turn number's last note, found once (a hostile log's 20,000 notes were read again for each of its turns).
    said: dict[int, int] = {}
    for at, note in notes:
        for number, _ in undid(note):
            said[number] = max(said.get(number, at), at)
    reasons, plans = reasons or {}, set(plans)
    marks: dict[int, dict[str, Any]] = {}
    for turn, (start, files) in enumerate(zip(turn_starts, changed, strict=False), 1):
        end = turn_starts[turn] if turn < len(turn_starts) else total
        undone = turn in said and said[turn] > start
        plan = str(turn) in plans
        if (files != 0 or undone or plan) and 0 <= start < end <= total:
            count: dict[str, Any] = {"files": files} if files >= 0 else {"unknown": True}
            if files < 0 and str(turn) in reasons:
                again = said_before(reasons, changed, turn_starts, turn)
                count |= {"reason": reasons[str(turn)]} | ({"again": True} if again else {})
            marks[first + end - 1] = {"turn": turn, **count} | ({"undone": True} if undone else {}) | (
                {"plan": True} if plan else {})
    return marks
