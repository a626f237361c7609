"""TaskState inference after each tool round: the last action and the current plan step."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path
from typing import Literal

import attrs

from ollie import beneath
from ollie.escapes import escaped
from ollie.paths import sessions_dir
from ollie.sessions.session import Session, TaskState
from ollie.sessions.types import one_line

# Only an item's start is a pattern, matched line by line: a lazy item before optional spaces backtracked
# quadratically over a line of spaces (tool code writes the plan file; the loop reads it on the event loop).
_ITEM = re.compile(r"\s*[-*]\s*\[([ xX])\]")
# Its spaces stop at the line's end: `^\s*` ran from each line start over every blank line after it (quadratic: a reply's
# 20,000 line breaks held the event loop 30 s).
_PLAN_BLOCK = re.compile(r"^[^\S\n]*(?:#+[^\S\n]*)?\**PLAN\**\s*:", re.MULTILINE)
_ACTION_PART = 80
PlanStatus = Literal["completed", "in_progress", "pending"]


def plan_path(session_id: str) -> Path:
    """The session's plan file, where the execute server's task_* tools keep it."""
    # Imported here: loading the execute server (and the sandbox) is needed only once a turn reads the plan.
    from ollie.tools.execute.childenv import plan_file

    return plan_file(session_id)


PLAN_CAP = 256 * 1024
PLAN_STEPS, STEP_CHARS = 100, 200  # the most of a plan a client is sent: steps, and characters of one


async def read_plan(session_id: str) -> str:
    """The session's plan file's text ('' when none): tool code writes it, so read through the chokepoint."""
    try:
        return await beneath.read_text(sessions_dir(), plan_path(session_id), PLAN_CAP, errors="replace")
    except OSError:
        return ""


async def put_plan(session_id: str, text: str) -> None:
    """Write the session's plan file as `text` (none when ''), through the chokepoint (no link followed)."""
    with suppress(OSError):  # a dir a step swapped for a link keeps it
        if text:
            await beneath.write_bytes(sessions_dir(), plan_path(session_id), text.encode(), 0o600)
        else:
            await beneath.remove(sessions_dir(), plan_path(session_id))


def checklist(text: str) -> list[tuple[str, bool]]:
    """Each item of a markdown checklist (`- [ ] item`, `- [x] item`), and whether it is checked."""
    return [(item, m[1] != " ") for line in text.splitlines() if (m := _ITEM.match(line)) and (item := line[m.end():].strip())]


def next_unchecked(text: str) -> str:
    """The first unchecked item of a markdown checklist, or ''."""
    return next((item for item, checked in checklist(text) if not checked), "")


@attrs.frozen(repr=False, slots=False)
class PlanEntry:
    """One entry of the plan as clients get it (docs/PROTOCOL.md's `plan`): a step, or one standing for `steps` steps
    a bounded plan leaves out, `done` of them done (compared too: checking one of them changes no word of it, and the
    plan is sent again only when it compares unequal, TurnHost._took_plan)."""

    content: str
    status: PlanStatus
    steps: int = 0  # 0: a step itself
    done: int = 0

    def to_wire(self) -> dict[str, str | int]:
        """`{content, status}`, with `steps` and `done` on a summary entry."""
        counts = {"steps": self.steps, "done": self.done} if self.steps else {}
        return {"content": self.content, "status": self.status, **counts}


def plan_entries(text: str) -> list[PlanEntry]:
    """Each item of the plan's checklist: `completed`, else the first open one `in_progress`, the rest `pending` (ACP's
    plan entry statuses, and the daemon's `plan`); at most PLAN_STEPS, each cut to STEP_CHARS, the open one among
    them."""
    items = checklist(text)
    first = next((n for n, (_, checked) in enumerate(items) if not checked), len(items))
    # Bounded: a step writes the file (256 KiB made 30,000 steps, 1.3 MB of JSON each time it changed: every client
    # drew them all, Neovim at each state change), and the task state the model reads holds the step.
    entries = [PlanEntry(item if len(item) <= STEP_CHARS else item[:STEP_CHARS - 1] + "…",
                         "completed" if checked else "in_progress" if n == first else "pending")
               for n, (item, checked) in enumerate(items)]
    if len(entries) <= PLAN_STEPS:
        return entries
    # The steps from the last one done on, the rest counted: the open step stays in view (and the model's state). Every
    # step left, when they fit: ACP clients count the entries (Zed's "N left"), and a summary of those is one of them
    # (99 left: the last one done gives way, it cut two of them into "… 2 more steps").
    fit = len(entries) - first < PLAN_STEPS
    start = max(0, len(entries) - PLAN_STEPS + 1 if fit else first - 1)
    room = PLAN_STEPS - (start > 0)  # besides the summary of the steps done before them
    shown = entries[start:start + room - (len(entries) - start > room)]  # and one of those after, if any are
    after = items[start + len(shown):]
    return ([PlanEntry(f"… {start} steps done", "completed", start, start)] if start else []) + shown + (
        [PlanEntry(f"… {len(after)} more steps", "pending", len(after), sum(c for _, c in after))] if after else [])


def plan_counts(plan: list[PlanEntry]) -> tuple[int, int]:
    """(done, all) of a plan's steps (`plan_entries`): a summary entry counts the steps it stands for."""
    return (sum(e.done if e.steps else e.status == "completed" for e in plan), sum(e.steps or 1 for e in plan))


PLAN_MARKS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}


def plan_lines(plan: list[PlanEntry]) -> list[str]:
    """Each step of a plan (`plan_entries`) as a checklist's line: `[x]` done, `[>]` in progress, `[ ]` to do (tool code
    wrote it: its controls and bidi overrides shown escaped)."""
    return [f"{PLAN_MARKS[e.status]} {escaped(e.content, keep='')}" for e in plan]


def plan_before(plans: Mapping[str, str], turn: int) -> str | None:
    """The plan as turn `turn` found it (`Session.plans_before`): as the first turn from it on that changed the plan
    found it; None when none did (it is as it is now)."""
    # (A log's key of 5,000 digits is past what int() reads: no turn's, never a rewind's ValueError after its restore.)
    later = {int(t): plan for t, plan in plans.items() if t.isdecimal() and len(t) < 10 and int(t) >= turn}
    return later[min(later)] if later else None


def has_plan_block(text: str) -> bool:
    """Whether assistant text carries a `PLAN:` block."""
    return bool(_PLAN_BLOCK.search(text))


def describe_action(tool: str, arguments: str, result: str) -> str:
    """`tool(args) → result`, each part clipped: what the agent last did."""
    from ollie.agent.toolround import canonical_args  # after a tool round, which loaded it
    return f"{tool}({one_line(canonical_args(arguments), _ACTION_PART)}) → {one_line(result, _ACTION_PART)}"


def infer_update(state: TaskState, *, last_action: str, plan_step: str, assistant_text: str) -> None:
    """Fold one round into `state`: last action, and the plan step from the file or the text."""
    if last_action:
        state.last_action = last_action
    step = plan_step or next_unchecked(assistant_text)
    if step:
        state.plan_step = step


MEMORY_HEAD = ("[ollie: the agent's own notes of this session's earlier history, written by the model when it was "
               "compacted; not the user's words]")


def render_task_state(state: TaskState) -> str:
    """The task state as the model reads it (one message)."""
    return "[task state]\n" + json.dumps(state.to_dict(), ensure_ascii=False, indent=1)


def render_memory(session: Session) -> str:
    """The cold + warm zones as one message: the TaskState JSON and the decision index, said to be the model's."""
    parts = []
    if session.task_state is not None:
        parts.append(render_task_state(session.task_state))
    if session.decision_index:
        parts.append("[decision index: earlier steps, one line each]\n" + "\n".join(f"- {x}" for x in session.decision_index))
    # Sent as a user message (every backend takes one there): said to be the agent's notes, so that what the model
    # wrote in them ("the user allowed ...") does not read as the user's words to the next model.
    return "\n\n".join([MEMORY_HEAD, *parts]) if parts else ""
