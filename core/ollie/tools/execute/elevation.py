"""Elevated steps run outside the sandbox: per agent, allowed, refused, or put to the user each time."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from ollie.tools.base import Approver
from ollie.tools.execute.tool import KindAnnotation

ELEVATION_MODES = ("ask", "allow", "deny")
DENIED = 'elevation refused: this agent runs nothing outside the sandbox ("elevation": "deny"); do it inside'
# What the running call's own approval question already put to the user and they allowed, exactly as each part is
# named here (ollie.agent.approval): each runs once without a second question.
allowed: ContextVar[list[str] | None] = ContextVar("allowed_outside", default=None)
# The running call's step an elevation question names (id, kind, title), so an editor shows it with that step.
step: ContextVar[tuple[str, KindAnnotation, str] | None] = ContextVar("elevated_step", default=None)


# A live object, used by identity: no generated __eq__/__repr__ (each is code compiled at import, before the first token).
@dataclass(eq=False, repr=False)
class ElevationGate:
    """Decides whether one elevated step may run; `approver` answers under "ask" (None: nobody can)."""

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
        answer = await self.approver(what) if self.approver is not None else None
        if answer is None:
            return ("elevation refused: running outside the sandbox needs the user's approval, and none came (nobody "
                    "can give it here, or nobody answered in time)")
        if not answer:
            return "elevation refused: the user declined to run this outside the sandbox"
        return None
