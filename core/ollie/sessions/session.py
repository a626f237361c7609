"""Session: what a saved session holds (the flat message history, the TaskState overlay, token/cost totals) and its id."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields
from itertools import accumulate
from typing import Any

from ollie.backend.types import Message, Usage


def new_session_id() -> str:
    """A session id `<unix-nanoseconds>-<6 hex>`: sortable by creation time, unique in one nanosecond."""
    return f"{time.time_ns():019d}-{os.urandom(3).hex()}"


_SESSION_ID = re.compile(r"[0-9]{1,20}-[0-9a-f]{6}")


def is_valid_session_id(session_id: object) -> bool:
    """Whether `session_id` has the form `<unix-nanoseconds>-<6 hex>` (safe to use in a file name)."""
    return isinstance(session_id, str) and _SESSION_ID.fullmatch(session_id) is not None


def validate_session_id(session_id: object) -> str:
    """Return `session_id` unchanged, or raise ValueError when it is not `<unix-nanoseconds>-<6 hex>`."""
    if not is_valid_session_id(session_id):
        raise ValueError(f"invalid session id {session_id!r}: expected <unix-nanoseconds>-<6 hex>")
    return session_id  # type: ignore[return-value]


@dataclass(repr=False)
class TaskState:
    """The structured overlay compaction produces: what the agent is doing and has decided."""

    goal: str = ""
    plan: list[str] = field(default_factory=list)
    plan_step: str = ""
    completed: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    open_questions: list[str] = field(default_factory=list)
    last_action: str = ""
    notes: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskState:
        """Build from a dict, ignoring unknown keys and coercing list fields."""
        lists = {f.name for f in fields(cls) if f.default_factory is list}
        known = {f.name for f in fields(cls)}
        kwargs: dict[str, Any] = {key: ([str(v) for v in value] if isinstance(value, list) else [str(value)])
                                  if key in lists else str(value) for key, value in data.items() if key in known}
        return cls(**kwargs)


class TrackedDict(dict[str, Any]):
    """A dict that remembers which keys changed, so a save can write just those.

    Used for per-message maps that grow with the history (`result_tiers`): writing
    the whole map every round would make a save cost grow with the history.
    Every change goes through `_changed(key)`, once the dict holds its new state.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.changed_keys: set[str] = set()

    def _changed(self, key: str) -> None:
        self.changed_keys.add(key)

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self._changed(key)

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self._changed(key)

    def __ior__(self, other: Any) -> TrackedDict:
        self.update(other)
        return self

    # dict's own (in C) would go around __setitem__ and __delitem__: MutableMapping's are written with them.
    update = MutableMapping.update  # type: ignore[assignment]
    setdefault = MutableMapping.setdefault  # type: ignore[assignment]
    popitem = MutableMapping.popitem  # type: ignore[assignment]

    def pop(self, key: str, *default: Any) -> Any:
        """dict.pop, recording the removal."""
        if key not in self:
            return super().pop(key, *default)
        value = super().pop(key)
        self._changed(key)
        return value

    def clear(self) -> None:
        """dict.clear, recording every removal (not MutableMapping's: a popitem each, quadratic on a dict)."""
        keys = list(self)
        super().clear()
        for key in keys:
            self._changed(key)

    def changes(self) -> dict[str, Any]:
        """The changed keys with their values now; None marks a removed key."""
        return {key: self.get(key) for key in self.changed_keys}


_COLD = "cold"  # the tier (ollie.agent.tiers) whose results collapse once a request carried them


class TierMap(TrackedDict):
    """`result_tiers`: a TrackedDict that also keeps the set of its cold keys (`cold`), as entries change.

    After each request the cold results collapse; finding them among the tiers of every tool result of the
    history took ~5 ms of the event loop at 100,000 messages.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cold: set[str] = {key for key, tier in dict.items(self) if tier == _COLD}

    def _changed(self, key: str) -> None:
        super()._changed(key)
        if dict.get(self, key) == _COLD:
            self.cold.add(key)
        else:
            self.cold.discard(key)


# Session fields kept as TrackedDict: persistence saves only their changes (`plans_before` too: a step writes the plan,
# up to 256 KiB a turn, and every round's commit carried all the turns' plans, the log growing quadratically).
TRACKED_FIELDS = ("result_tiers", "step_outcomes", "step_network", "step_images", "step_files", "step_trees",
                  "plans_before", "turn_unknown")


@dataclass(eq=False, repr=False)
class Session:
    """One agent conversation. `messages` grows until compaction; nothing is a rolling window."""

    id: str = field(default_factory=new_session_id)
    agent: str = ""
    messages: list[Message] = field(default_factory=list)
    task_state: TaskState | None = None
    total_input_tokens: int = 0
    total_output_tokens: int = 0
    total_requests: int = 0
    total_cached_input_tokens: int = 0
    total_cache_creation_tokens: int = 0
    turn_cost_usd: float = 0.0
    last_turn_cost_usd: float = 0.0
    session_cost_usd: float = 0.0
    # Input tokens of the latest request: the best measure of the context size.
    last_input_tokens: int = 0
    # Retention tier of each tool result by tool_call_id: hot, warm, cold, or
    # collapsed once it has been reduced to a one-line summary.
    result_tiers: dict[str, str] = field(default_factory=dict)
    # How each tool call's steps ended, by tool_call_id (`completed`, `failed`, `completed:12` = an edit at
    # line 12): the history's steps keep them after the result text collapses (ollie.agent.history).
    step_outcomes: dict[str, list[str]] = field(default_factory=dict)
    # The connections each tool call's steps made through the egress proxy (sandbox/egress.py's records), by
    # tool_call_id: a resumed session's steps and `/network` still show them.
    step_network: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # What the images of each collapsed tool result were (`image/png 12345`: type and bytes), by tool_call_id: the
    # history names them under their steps once the result has dropped them (ollie.agent.tiers, ollie.agent.history).
    step_images: dict[str, list[str]] = field(default_factory=dict)
    # The files each tool call's steps changed (their diffs' paths, as `ollie/changes` names them), by tool_call_id:
    # a resumed history names them under the step, whatever changed them (a `sed -i`), for a client to place the
    # turn's diffs there. Text only: never opened.
    step_files: dict[str, list[str]] = field(default_factory=dict)
    # The checkpoints before and after each tool call that changed files, by tool_call_id: a resumed step shows its
    # own diffs (ollie.agent.stepchanges), not its turn's, when two steps changed one file.
    step_trees: dict[str, list[str]] = field(default_factory=dict)
    # The one-line decision index compaction keeps for what it dropped.
    decision_index: list[str] = field(default_factory=list)
    title: str = ""
    # The directory the session works in (absolute); "" for sessions saved before it was kept.
    cwd: str = ""
    # The approval mode (see ollie.agent.approval); "" = the agent's default. Persisted with the session.
    approval: str = ""
    # The backend and model `/backend` and `/model` switched to ("": the defaults'): its resume goes on with them.
    backend: str = ""
    model: str = ""
    # What the user allowed always in this session: `kind:edit`, `command:pytest`.
    approval_always: list[str] = field(default_factory=list)
    # Where each turn's messages start (turn n at index n-1; ollie.agent.review); -1 once compaction
    # rewrote the history, so that turn can no longer be cut back to.
    turn_starts: list[int] = field(default_factory=list)
    # How many files each turn changed (turn n at index n-1), counted as `ollie/changes` lists them when it ended
    # (0: none; UNCOUNTED: not known, as for a turn running or whose end diff failed, or one of a log that has no count
    # for it): the history marks those turns without a diff per turn (ollie.agent.review, ollie.agent.history).
    turn_changed: list[int] = field(default_factory=list)
    # Why each turn whose count is UNCOUNTED is not known (its number as text), as its end said it: a resumed chat says
    # it again (in the home directory every turn that runs a step has one).
    turn_unknown: dict[str, str] = field(default_factory=dict)
    # Turns 1 to this came with the conversation when it was kept or forked from another session: reviewed here, never
    # rewound (a rewind puts back the whole workspace, and its files have moved on since in the other conversation).
    copied_turns: int = 0
    # The task_* tools' plan as each turn that changed it found it (its number as text): a rewind puts it back.
    plans_before: dict[str, str] = field(default_factory=dict)
    # What the user undid of the agent's changes, told to the model with the next prompt (ollie.agent.review).
    review_notes: list[str] = field(default_factory=list)
    # Bumped whenever the history is rewritten rather than appended to (compaction,
    # /clear), so persistence knows to write a fresh snapshot. Not persisted.
    history_generation: int = field(default=0, compare=False)
    # Indices of already-saved messages changed in place (a result tier collapse);
    # the next save records just those. Not persisted.
    edited_indices: set[int] = field(default_factory=set, compare=False, repr=False)
    # The same indices for the running size estimate (ollie.agent.context), which takes them at its own pace.
    resized_indices: set[int] = field(default_factory=set, compare=False, repr=False)
    # Every tool call id the session has had in this process, those compaction dropped too (None: not read yet
    # from the history): a new call never takes one (ollie.agent.loop). Not persisted.
    call_ids: set[str] | None = field(default=None, compare=False, repr=False)

    def begin_turn(self) -> None:
        """Reset the per-turn accumulators."""
        self.turn_cost_usd = 0.0

    def end_turn(self) -> None:
        """Close the turn's cost into `last_turn_cost_usd`."""
        self.last_turn_cost_usd = self.turn_cost_usd

    def add_usage(self, usage: Usage, cost_usd: float) -> None:
        """Account one request's usage and cost."""
        self.total_requests += 1
        self.total_input_tokens += usage.input_tokens
        self.total_output_tokens += usage.output_tokens
        self.total_cached_input_tokens += usage.cached_input_tokens
        self.total_cache_creation_tokens += usage.cache_creation_tokens
        self.turn_cost_usd += cost_usd
        self.session_cost_usd += cost_usd
        self.last_input_tokens = usage.input_tokens + usage.cached_input_tokens + usage.cache_creation_tokens

    def clear(self) -> None:
        """Drop the history and the task state (the totals stay)."""
        self.messages.clear()
        self.task_state = None
        for name in TRACKED_FIELDS:
            getattr(self, name).clear()
        self.decision_index.clear()
        self.last_input_tokens = 0
        self.history_generation += 1
        self.edited_indices.clear()
        # A new conversation: its turns count from 1 (the refs of those before are dropped at its first).
        self.turn_starts, self.turn_changed, self.copied_turns, self.plans_before = [], [], 0, {}

    def replace_messages(self, messages: list[Message]) -> None:
        """Rewrite the history (compaction, a rewind): the next save writes a fresh snapshot."""
        self.messages = list(messages)
        self.last_input_tokens = 0  # the last request's measured size no longer describes it (a rewind's kept it)
        self.history_generation += 1
        self.edited_indices.clear()
        # No turn of it can be rewound now: the plans they found go (kept, each up to 256 KiB a turn, for good).
        self.turn_starts, self.plans_before = [-1] * len(self.turn_starts), {}

    def mark_edited(self, index: int) -> None:
        """Record that `messages[index]` was changed in place, so the next save persists the change."""
        if not -len(self.messages) <= index < len(self.messages):
            raise IndexError(f"message index {index} out of range")
        self.edited_indices.add(index % len(self.messages))
        self.resized_indices.add(index % len(self.messages))

    def __setattr__(self, name: str, value: Any) -> None:
        # Keep the tracked maps tracked even when the engine assigns a plain dict.
        kind = TierMap if name == "result_tiers" else TrackedDict
        if name in TRACKED_FIELDS and not isinstance(value, kind):
            value = kind(value)
        object.__setattr__(self, name, value)

    def cold_results(self) -> set[str]:
        """The ids of the tool results whose tier is cold (kept up to date: no walk over every result's tier)."""
        tiers = self.result_tiers
        assert isinstance(tiers, TierMap)  # __setattr__ keeps it one
        return tiers.cold

    def meta(self) -> dict[str, Any]:
        """Everything but the messages, JSON-ready."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _NOT_META}
        out["task_state"] = self.task_state.to_dict() if self.task_state else None
        return out

    @classmethod
    def from_meta(cls, meta: dict[str, Any], messages: list[Message]) -> Session:
        """Rebuild from `meta()` output and a message list; ValueError names a field of the wrong type."""
        known = {f.name for f in fields(cls)} - _NOT_META
        _check_meta(meta)
        ts = meta.get("task_state")
        # A teammate's log may be hostile: each map a step or turn record reads, sifted (one that is no map: empty).
        meta = {**meta, **{k: sift(v) if isinstance(v := meta[k], dict) else {} for k, sift in _SIFTS.items() if k in meta}}
        if "turn_changed" in meta or "turn_starts" in meta:  # (a log of before the counts were kept has starts alone)
            starts = meta.get("turn_starts", [])
            meta = {**meta, "turn_changed": _settled(_counts(meta.get("turn_changed"), len(starts)), starts, messages)}
        return cls(
            messages=messages,
            task_state=TaskState.from_dict(ts) if ts else None,
            **{k: v for k, v in meta.items() if k in known},
        )


def _check_meta(meta: dict[str, Any]) -> None:
    """Each field a log gives of the type `Session` holds: a crafted `"total_input_tokens": "x"` resumed, then
    failed every turn (its usage is added to it), and a `task_state` that is no map raised an AttributeError."""
    for f in fields(Session):
        if f.name not in meta or f.name in _NOT_META or f.name in _SIFTS or f.name == "turn_changed":  # sifted apart
            continue
        value = meta[f.name]
        default = f.default if f.default_factory is MISSING else f.default_factory()
        kind = type(default)
        if kind is list:
            item = int if f.name == "turn_starts" else str
            ok = type(value) is list and all(type(v) is item for v in value)
        elif kind is dict:
            ok = type(value) is dict and all(
                type(k) is str and (type(v) is str if f.name in ("result_tiers", "plans_before") else
                                    type(v) is list and all(type(o) is str for o in v))
                for k, v in value.items())
        else:  # a float field takes an int (a hand-made log's 1 for 1.0); a bool is no number
            ok = type(value) is kind or (kind is float and type(value) is int)
        if not ok:
            raise ValueError(f"the session's {f.name} is {value!r:.40}, not of type {f.type}")
    ts = meta.get("task_state")
    if ts is not None and type(ts) is not dict:
        raise ValueError(f"the session's task_state is a {type(ts).__name__}, not a map")


# A turn's count of files changed that is not known: never "none" (0), which lets a user rewind it thinking nothing goes.
UNCOUNTED = -1


def said_before(reasons: Mapping[str, str], counts: Sequence[int], starts: Sequence[int], turn: int) -> bool:
    """Whether turn `turn`'s reason its count is not known is the one the last turn before it with one gave (`reasons`:
    `turn_unknown`, `counts`: `turn_changed`), a turn still in the conversation (`starts`: not a compaction's -1): said
    there, a client does not say it again under every turn."""
    for earlier in range(min(turn - 1, len(counts), len(starts)), 0, -1):
        if counts[earlier - 1] == UNCOUNTED and str(earlier) in reasons:
            return reasons[str(earlier)] == reasons.get(str(turn)) and starts[earlier - 1] >= 0
    return False


# More files than a turn may count: a checkpointed tree holds fewer (ollie.workspace.guard), and a client's JSON reads
# each count below it exactly (Neovim's drew 10**30 as -9223372036854775808).
_MAX_COUNT = 1 << 31


def _counts(saved: Any, turns: int) -> list[int]:
    """A log's `turn_changed`, one for each of its `turns` at least, with each count that is not one (a teammate's log
    may be hostile, an older one has none) UNCOUNTED: the session resumes (a count only marks the history)."""
    counts = [n if type(n) is int and UNCOUNTED <= n < _MAX_COUNT else UNCOUNTED
              for n in (saved if isinstance(saved, list) else [])]
    return counts + [UNCOUNTED] * (turns - len(counts))


def _settled(counts: list[int], starts: list[int], messages: list[Message]) -> list[int]:
    """`counts` with each turn UNCOUNTED that called no tool (the daemon died in its reply, a log of before the counts)
    as 0: nothing of it could change a file, and a client would say "changes not known" of a turn that only talked."""
    # The calls before each message, counted once: a hostile log's starts (0, N, 0, N...) scanned the messages per turn.
    calls = [0, *accumulate(bool(m.tool_calls) for m in messages)]
    for n, start in enumerate(starts[:len(counts)]):
        end = starts[n + 1] if n + 1 < len(starts) else len(messages)
        if counts[n] == UNCOUNTED and type(start) is int and type(end) is int and 0 <= start <= end and (
                calls[min(end, len(messages))] == calls[min(start, len(messages))]):
            counts[n] = 0
    return counts


def reason_line(text: str, most: int = 200) -> str:
    """Why a turn's count is not known as it is said and saved: one escaped line cut after `most` characters ("...");
    the same line again when given one (a resumed log's compares equal with a live turn's: said once, whatever its
    length; cut before escaping, a reason whose escapes passed 200 characters was cut again on each load)."""
    from ollie.escapes import escaped

    line = escaped(text[:most + 1], keep="")
    return line if len(line) <= most else line[:most] + "..."


def _reasons(saved: dict[Any, Any]) -> dict[str, str]:
    """A log's `turn_unknown`, each reason one escaped line (a client draws it as one) keyed by a turn's number."""
    return {k: reason_line(v) for k, v in saved.items() if type(k) is str and k.isdecimal() and type(v) is str}


_CONNECTION = {"host": str, "port": int, "verdict": str, "how": str, "sent": int, "received": int}


def _connections(saved: dict[Any, Any]) -> dict[str, list[dict[str, Any]]]:
    """A log's `step_network` without what is not a connection record: a log may be a teammate's (hostile), and
    `/network` and the editors read each record's fields."""
    return {call: [c for c in records if isinstance(c, dict) and all(isinstance(c.get(k), t) for k, t in
                                                                        _CONNECTION.items())]
            for call, records in saved.items() if isinstance(records, list)}


# A step's files as its diffs carry them at most (ollie.workspace.bounds.LISTED: the rest are counted, never named).
_MAX_FILES = 100


def _paths(saved: dict[Any, Any]) -> dict[str, list[str]]:
    """A log's `step_files` without what is not a list of paths (a teammate's log may be hostile): strings only, at
    most _MAX_FILES a call; a call whose list is none is left out and the session resumes (they only place diffs)."""
    return {call: [p for p in paths if type(p) is str][:_MAX_FILES] for call, paths in saved.items()
            if type(call) is str and type(paths) is list}


def _trees(saved: dict[Any, Any]) -> dict[str, list[str]]:
    """A log's `step_trees` with only pairs of checkpoint ids (git would take any other text as an option): a call
    whose pair is not one is left out, and its step shows its turn's diffs as before."""
    return {call: pair for call, pair in saved.items() if type(call) is str and type(pair) is list and len(pair) == 2
            and all(type(t) is str and _CHECKPOINT_ID.fullmatch(t) for t in pair)}


# A checkpoint id, a tree's object id (`ollie.workspace.refs.is_checkpoint`, a layer above this one's reach).
_CHECKPOINT_ID = re.compile(r"[0-9a-f]{40}")


# What a log may get wrong without failing the resume (and `turn_changed`, sifted with `turn_starts`), each sifted.
_SIFTS: dict[str, Callable[[dict[Any, Any]], dict[str, Any]]] = {
    "step_network": _connections, "step_files": _paths, "step_trees": _trees, "turn_unknown": _reasons}


# Fields that meta() leaves out: the history itself and in-memory bookkeeping.
_NOT_META = frozenset({"messages", "task_state", "history_generation", "edited_indices", "resized_indices",
                       "call_ids"})
