"""Elevated steps run outside the sandbox: per agent, allowed, refused, or put to the user each time."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from ollie.tools.base import Approver
from ollie.tools.execute.args import CallRequest, CodeRequest, ExecuteRequest
from ollie.tools.execute.tool import KindAnnotation

ELEVATION_MODES = ("ask", "allow", "deny")
DENIED = 'elevation refused: this agent runs nothing outside the sandbox ("elevation": "deny"); do it inside'
NOBODY = ("elevation refused: running outside the sandbox needs the user's approval, and nobody can give it here; run "
          "it inside")
# What the running call's own approval question already put to the user and they allowed, exactly as each part is
# named here (ollie.agent.approval): each runs once without a second question.
allowed: ContextVar[list[str] | None] = ContextVar("allowed_outside", default=None)
# The running call's steps that leave the sandbox, each as (what it runs there, (id, kind, title)), so an editor shows
# each elevation question with its own step: a batch may hold several (`step_of`). A function giving the same list
# each time (cached), called by the first question only: most calls ask none, so their arguments are not parsed
# once more for it.
steps: ContextVar[Callable[[], list[tuple[str, tuple[str, KindAnnotation, str]]]] | None] = ContextVar(
    "elevated_steps", default=None)


def outside_parts(request: ExecuteRequest | None) -> list[list[str]]:
    """What each step of an executor call runs outside the sandbox, named as the executors name it: one list per step
    `describe` shows (each call of a call_tool batch; execute_code's one step), [] for none."""
    if isinstance(request, CallRequest):
        return [[shlex.join([c.tool, *c.args])] if c.elevated else [] for c in request.calls]
    if isinstance(request, CodeRequest):
        return [[s.code for s in request.code_steps() if s.elevated]]
    return []


def step_of(what: str) -> tuple[str, KindAnnotation, str] | None:
    """The running call's step that runs `what` outside the sandbox (None: no step does), taken from `steps`: the same
    text in two steps names each in turn."""
    leaving = steps.get()
    pending = leaving() if leaving is not None else []
    found = next((n for n, (part, _) in enumerate(pending) if part == what), None)
    return None if found is None else pending.pop(found)[1]


@dataclass(eq=False, repr=False)
class ElevationGate:
    """Decides whether one elevated step may run; `approver` asks the user under "ask" (None: nobody can)."""

    mode: str = "allow"
    approver: Approver | None = None

    async def refusal(self, what: str) -> str | None:
        """Why `what` may not run outside the sandbox, or None when it may."""
        if self.mode == "allow":
            return None
        if self.mode == "deny":
            return DENIED
        if what in (granted := allowed.get() or []):
            granted.remove(what)
            return None
        return NOBODY if self.approver is None else await self.approver(what)
