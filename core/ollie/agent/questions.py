"""A question put to the user about a step (its wire shape, the answers it offers), the answer, and how long a
question waits for one."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_args

import attrs

from ollie.agent.steps import Diff, Location, StepKind
from ollie.env import env_seconds
from ollie.escapes import escaped

T = TypeVar("T")
# "allow_session" answers only a network question: that host:port for the rest of this session (StepQuestion.outcomes).
Outcome = Literal["allow_once", "allow_session", "allow_always", "reject", "reject_with_feedback"]
OUTCOMES: tuple[str, ...] = get_args(Outcome)
# A question nobody answers (the user away, an editor that never shows it) ends as a refusal after this long.
QUESTION_TIMEOUT_ENV = "OLLIE_QUESTION_TIMEOUT_S"
DEFAULT_QUESTION_TIMEOUT_S = 600.0


@attrs.frozen(eq=False, repr=False, slots=False)
class StepQuestion:
    """One step put to the user: its id, kind, title, files, diff preview and (for a command) its prefix."""

    id: str
    kind: StepKind
    title: str
    locations: tuple[Location, ...] = ()
    diff: Diff | None = None
    # A batch question's previews of its file edits and writes, in order; `diffs_more` counts its edits left without one.
    diffs: tuple[Diff, ...] = ()
    diffs_more: int = 0
    prefix: str = ""
    # A network question's connection: {"host", "port", "scheme": "http" (a plain HTTP request) | "connect" (a tunnel)}.
    network: dict[str, Any] | None = None
    # What the step runs outside the sandbox, exactly (a program, or a tool call as a command line): this question
    # covers the elevation too, so the user is asked once (and, as an elevation is, every time: no "always").
    outside: tuple[str, ...] = ()
    # An execute_code step's programs, whole: its title shows the first line of the first.
    code: str = ""
    # Whether "Allow always" would let this very step go unasked next time: not a command with shell syntax no rule
    # covers (`curl -w '%{http_code}'`, `cd a && make`), which it would ask about again at once.
    lasting: bool = True

    def to_wire(self) -> dict[str, Any]:
        """The `step` object of `ollie/permission` (docs/PROTOCOL.md)."""
        out: dict[str, Any] = {
            "id": self.id, "kind": self.kind, "title": self.title,
            "locations": [{"path": loc.path, **({"line": loc.line} if loc.line else {})} for loc in self.locations],
        }
        if self.diff is not None:
            out["diff"] = self.diff.to_wire()
        if self.diffs or self.diffs_more:
            out["diffs"] = [d.to_wire() for d in self.diffs]
        if self.diffs_more:
            out["diffsMore"] = self.diffs_more
        if self.prefix:
            out["prefix"] = self.prefix
        if self.network is not None:
            out["network"] = dict(self.network)
        # The model's text with its controls and bidi overrides as escapes: an editor obeys a U+202E, so what the
        # user read would not be what runs.
        if self.outside:
            out["outside"] = [escaped(what) for what in self.outside]
        if self.code:
            out["code"] = escaped(self.code)
        return out

    def diffs_more_text(self) -> str:
        """What a batch question says of its edits left without a preview ("" when none)."""
        n = self.diffs_more
        return f"({n} more edit{'s' if n != 1 else ''} not previewed)" if n else ""

    def always_label(self) -> str:
        """What "Allow always" covers: a command's prefix, a host:port, an MCP entry, else the step kind."""
        if self.network is not None:
            return f"connections to {self.prefix} in this and later sessions"
        if self.id.startswith("mcp/"):
            return "this server entry of this workspace, from now on"
        if self.prefix.startswith("mcp__") and self.prefix.count("__") >= 2:  # an MCP tool, named as its step is
            _, server, tool = self.prefix.split("__", 2)
            return f"`{server}: {tool}` calls"
        return f"`{self.prefix}` commands" if self.prefix else f"{self.kind} steps"

    def takes_feedback(self) -> bool:
        """Whether a rejection's feedback can reach the model (a network question's with its `[network]` line): an MCP
        server's answer reaches only the server start, an agent switch's no turn, so neither offers it."""
        return not self.id.startswith(("mcp/", "agent/"))

    def is_steps(self) -> bool:
        """Whether the question is about a step the turn shows (not a connection, a server, an agent switch or an
        elevation no step names): a card of its own ends with the answer."""
        return self.network is None and not self.id.startswith(("mcp/", "agent/", "elevate/"))

    def outcomes(self) -> tuple[str, ...]:
        """The answers this question offers, in order: "allow for this session" a network question's alone, "always"
        none that leaves the sandbox or that it would not cover."""
        return tuple(o for o in OUTCOMES if (o != "allow_session" or self.network is not None)
                     and (o != "allow_always" or (not self.outside and self.lasting))
                     and (o != "reject_with_feedback" or self.takes_feedback()))

    def always_text(self) -> str:
        """`always_label` with how long it lasts, for a question's text."""
        lasting = self.network is not None or self.id.startswith("mcp/")  # (their labels say how long)
        return self.always_label() + ("" if lasting else " in this session")


@dataclass(eq=False, repr=False)
class Answer:
    """The user's answer to one question; `feedback` goes to the model with a rejection."""

    outcome: Outcome
    feedback: str = ""


StepApprover = Callable[[StepQuestion], "Awaitable[Answer] | Answer"]


async def maybe_await(value: Awaitable[T] | T) -> T:
    """`value`, awaited when a callback returned an awaitable (front ends pass plain or async callbacks)."""
    return await value if inspect.isawaitable(value) else value  # type: ignore[return-value]


def question_timeout_s() -> float:
    """How long a question to the user waits for an answer (`$OLLIE_QUESTION_TIMEOUT_S`, default 600)."""
    return env_seconds(QUESTION_TIMEOUT_ENV, DEFAULT_QUESTION_TIMEOUT_S)


async def within_question_timeout(asking: Awaitable[T] | T, denied: T) -> tuple[T, bool]:
    """(the user's answer, True), or (`denied`, False) once nobody answered within `question_timeout_s()`.

    The question itself is cancelled then: the daemon withdraws it from the editor, the terminal stops waiting.
    """
    try:
        async with asyncio.timeout(question_timeout_s()):
            return await maybe_await(asking), True
    except TimeoutError:
        return denied, False
